"""A DataLoader-ready dataset: every worker prefetches the records it will be asked for, in that order.

A map-style dataset (``__len__``, ``__getitem__``) and its sampler, duck-typed to what
``torch.utils.data.DataLoader`` expects (the package never imports torch). The order of an epoch is a
function of a seed and the epoch number, so every worker process computes the whole epoch's order
itself; DataLoader hands the batches of that order to its workers round-robin (batch ``t`` to worker
``t % num_workers``, each worker reading its batches in turn), so each worker knows the exact list of
records it will read before its first read: the paper's whole future access list (ATC 2009, section
4.2). The workers share one memory budget (section 5.6's concurrent instances). A worker whose share
is all cached when it starts hands its list to a client of its own at its first record not cached,
disclosed by the callback of section 4.3 as in ``Records.epoch``: the library divides the budget by
the processes of the memory cgroup that hold a list, so the dataset passes it through undivided; a
page holding the end of one worker's record and the start of another's is on both lists, each given
with ``PF_SHARED_EDGES``, so a worker lets such a page go once read instead of dropping it from under
the other's prefetch.

Each worker's list is an N-th of the records, spread over the whole file: advised alone, its pages go to
the device about one record a request (15-18 KiB for records of 4-64 KiB, against 100-500 KiB for the
same bytes in offset order). When the epoch's records fit in what the page
cache may hold (the library's own reading of the system's and the memory cgroup's room, and
``max_memory``), each worker instead advises WILLNEED its N-th of the epoch's union, in offset order, from a
thread, and registers no client: together the workers read the union as the device's limit does
(section 3.3's C-LOOK order, over all workers' lists), one prefetcher, and a record read before its
turn in the sweep waits for its own pages (a client's record-sized advice beside the sweeps split the
device's queue into small requests). Where the records do not fit (a page swept long before its read
would be evicted first), on a device where a seek costs less than reading a record each worker
advises its own list a phase of a few MiB ahead of its reads, each phase's union in offset order
(``_phases``), and registers no client either: the distance ahead fits the memory, and the advice
costs one WILLNEED per range, no list, no page dropped. On a seek-bound device worker 0's client
holds every worker's records in the epoch's order (the batches are handed out in that order, so the
workers read them about together) with the whole budget, its position mapped into that list, and the
other workers advise nothing: one client's rounds sorted over all the records read next (section
3.3), not four sorting a quarter of the budget each over the whole file. On a device not measured
each worker's client follows its own list (where the worker's share is all cached already, from its
first record not cached).

A read that is not the next one of the worker's list (a ``batch_size`` other than the loader's, a
sampler other than ``dataset.sampler``, persistent workers in a later epoch) ends that worker's
prefetching for the epoch (worker 0's, where it leads, ends the prefetching of all): the remaining
reads are plain reads, the bytes are the same.
"""

from __future__ import annotations

import array
import os
import random
import sys
from typing import Any, Callable, Iterator, Optional, Sequence

from . import _native
from ._client import Client, Stats
from ._phases import Phases
from ._records import Records, _EpochPlan
from ._summary import summary_line
from ._sweep import Sweep, fits, share, union_extents


def epoch_order(count: int, seed: int, epoch: int) -> list[int]:
    """The shuffled order of ``count`` records in ``epoch`` (the same in every process)."""
    indexes = list(range(count))
    random.Random(f"libprefetch:{seed}:{epoch}").shuffle(indexes)
    return indexes


def worker_indices(
    order: Sequence[int], batch_size: Optional[int], drop_last: bool, worker: int, workers: int
) -> list[int]:
    """The indices worker ``worker`` of ``workers`` reads, in its order, when a DataLoader hands it
    the batches of ``order`` (``batch_size=None``: one index per task) round-robin."""
    if batch_size is None:
        return list(order[worker::workers])
    starts = range(0, len(order), batch_size)
    if drop_last:
        starts = range(0, len(order) - len(order) % batch_size, batch_size)
    return [index for start in starts[worker::workers] for index in order[start : start + batch_size]]


class EpochSampler:
    """The order of the dataset's current epoch (``set_epoch``); pass it as ``sampler=``."""

    def __init__(self, dataset: "RecordDataset") -> None:
        self._dataset = dataset

    def __iter__(self) -> Iterator[int]:
        return iter(self._dataset.order())

    def __len__(self) -> int:
        return len(self._dataset)


class RecordDataset:
    """A map-style dataset over ``records`` (a ``Records``) whose DataLoader workers prefetch.

    ``batch_size`` and ``drop_last`` must be those given to the DataLoader (``None`` when it is given
    ``batch_size=None``); ``seed`` and ``set_epoch`` make the order of ``sampler``; ``transform`` is
    applied to each record's bytes; ``max_memory`` is the budget all workers share (default: what the
    system and memory cgroup allow, as the library reads it during the epoch). Pickles as its settings and epoch (workers
    started with "spawn" reopen the file).
    """

    def __init__(
        self,
        records: Records,
        *,
        batch_size: Optional[int] = 1,
        drop_last: bool = False,
        seed: int = 0,
        transform: Optional[Callable[[bytes], Any]] = None,
        max_memory: Optional[int] = None,
    ) -> None:
        if batch_size is not None and batch_size <= 0:
            raise ValueError(f"batch_size must be positive or None, got {batch_size}")
        self.records = records
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.seed = seed
        self.transform = transform
        self.max_memory = max_memory
        self._union = union_extents(records)
        #: Where the records do not fit: "phases", "lead" (worker 0's client holds the epoch's list) or
        #: "clients" (each worker's client its own list).
        self._unfit = self._unfit_advice()
        self._worker: Optional[_Worker] = None
        self.set_epoch(0)

    @property
    def sampler(self) -> EpochSampler:
        """The epoch's order, for ``DataLoader(dataset, sampler=dataset.sampler, ...)``."""
        return EpochSampler(self)

    def set_epoch(self, epoch: int) -> None:
        """Chooses the epoch whose order ``sampler`` gives (call before iterating the loader). The
        order is shuffled here, once: workers inherit it (fork) or unpickle it (spawn)."""
        self.stop()
        self.epoch = epoch
        self._order = epoch_order(len(self.records), self.seed, epoch)

    def order(self) -> list[int]:
        """The current epoch's order."""
        return self._order

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> Any:
        worker = self._worker
        if worker is None or worker.pid != _pid:
            worker = self._worker_here()
        data = worker.read(index)
        return self.transform(data) if self.transform is not None else data

    def start_worker(self, worker_id: int, num_workers: int) -> None:
        """Starts prefetching the indices worker ``worker_id`` of ``num_workers`` will read this epoch
        (what ``worker_init`` calls; other loaders call it themselves)."""
        if not 0 <= worker_id < num_workers:
            raise ValueError(f"worker_id must be in 0..{num_workers - 1}, got {worker_id}")
        self.stop()
        indices = worker_indices(self.order(), self.batch_size, self.drop_last, worker_id, num_workers)
        worker = _Worker(self.records, indices, self.max_memory)
        if not fits(self._union, self.max_memory):
            if self._unfit == "phases":
                fd = self.records.advice_fd()
                worker.advise(phases=Phases(fd, self.records, worker.order, self._phase_bytes(fd, num_workers)))
            elif self._unfit == "lead":
                self._lead(worker, worker_id, num_workers)
        elif calls := self._sweep_calls(worker_id, num_workers):
            worker.advise(sweep=Sweep(self.records.advice_fd(), calls))
        self._worker = worker

    def _sweep_calls(self, worker_id: int, num_workers: int) -> list[tuple[int, int]]:
        """The worker's share of the union (which fits) to sweep: none where the share is all cached."""
        fd = self.records.advice_fd()
        calls = share(self._union, self.records._page, worker_id, num_workers, _native.willneed_limit(fd))
        if calls and _native.missing_pages(fd, calls[0][0], sum(calls[-1]) - calls[0][0]):
            return calls
        return []

    def _unfit_advice(self) -> str:
        """How workers advise where the records do not fit: by phases ("phases") where the device's
        measured far request costs at most the records' mean pages (what one request for a record
        transfers): a phase's records are advised in offset order but a phase is small, so the
        distance between them is left as the shuffle made it, while a client sorts a budget's worth;
        where a seek costs less than reading a record that sorting saves little and the client's
        rounds cost more than they save. Where it costs more (a seek-bound disk), worker 0's client
        holds every worker's records in the epoch's order with the whole budget ("lead"): one client
        sorts each round over all the records read next, where four that each sort a quarter of the
        budget over the whole file keep the disk seeking between four sweeps. Where the device was
        not measured, each worker's client follows its own list, as before ("clients")."""
        far = _native.far_request_bytes(self.records._fd)
        if far is None:
            return "clients"
        records, page = self.records, self.records._page
        pages = sum(-(-(o + n) // page) - o // page for o, n in zip(records._offsets, records._lengths) if n)
        return "phases" if far * len(records) <= pages * page else "lead"

    def _lead(self, worker: "_Worker", worker_id: int, num_workers: int) -> None:
        """Worker 0 follows the whole epoch's reads (every worker's records, in the epoch's order: the
        batches are handed out in that order) with its client, its own position mapped into them;
        the other workers advise nothing."""
        if worker_id != 0:
            worker.advise(led=True)
            return
        epoch = worker_indices(self.order(), self.batch_size, self.drop_last, 0, 1)
        positions = worker_indices(range(len(epoch)), self.batch_size, self.drop_last, 0, num_workers)
        worker.follow_epoch(epoch, positions)

    def _phase_bytes(self, fd: int, num_workers: int) -> int:
        """Each worker's phase where the records do not fit: the workers together advise one
        read-ahead window (what one WILLNEED call loads on the device) a phase ahead, and at most a
        quarter of the room (two phases ahead of every worker, half the room: the pages read and the
        processes' own memory are charged to it too)."""
        room = _native.available_for_cache()
        if self.max_memory is not None:
            room = min(room, self.max_memory)
        return max(1, min(_native.willneed_limit(fd), room // 4) // num_workers)

    def stats(self) -> Optional[Stats]:
        """This process's worker counters (None before its first read, and for a worker that sweeps
        its share of the union, advises its list by phases or is led by worker 0: it has no client)."""
        return self._worker.stats() if self._worker is not None else None

    def summary(self) -> str:
        """One line: what this process's worker prefetched, used and wasted against its records' pages."""
        if self._worker is None:
            return "no reads yet in this process"
        return self._worker.summary()

    def stop(self) -> None:
        """Ends this process's prefetching (reads go on, plain)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_worker"] = None
        return state

    def _worker_here(self) -> "_Worker":
        """This process's worker, started from DataLoader's worker info on the first read."""
        if self._worker is not None and self._worker.pid != _pid:
            self._worker = None  # the parent's, inherited by fork: its client is not ours
        if self._worker is None:
            worker_id, num_workers = _torch_worker_info(self)
            self.start_worker(worker_id, num_workers)
        assert self._worker is not None
        return self._worker


#: This process's id, kept current across fork (``os.getpid`` is a system call on every read otherwise).
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def worker_init(worker_id: int) -> None:
    """A ``worker_init_fn`` for DataLoader: starts the worker's prefetching before its first task."""
    data = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    if info is None:
        raise RuntimeError("libprefetch.worker_init runs in DataLoader worker processes only")
    dataset = info.dataset
    if isinstance(dataset, RecordDataset):
        dataset.start_worker(info.id, info.num_workers)


def _torch_worker_info(dataset: RecordDataset) -> tuple[int, int]:
    """(id, num_workers) from DataLoader's ``get_worker_info()`` in a worker; (0, 1) elsewhere."""
    data = sys.modules.get("torch.utils.data")
    info = data.get_worker_info() if data is not None else None
    if info is None or info.dataset is not dataset:
        return 0, 1
    return info.id, info.num_workers


#: Bound once: looked up on every record of a warm worker.
_pread_cached = _native.pread_cached


class _Worker:
    """One process's reads of an epoch: its list of records, its client (none while its share of the
    union is swept, its list advised by phases or prefetched by worker 0's client), and where it is."""

    def __init__(self, records: Records, indices: list[int], max_memory: Optional[int]) -> None:
        self.pid = _pid
        self._records = records
        self.order = array.array("q", indices)
        self._length = len(self.order)
        self._fd, self._offsets, self._lengths = records._fd, records._offsets, records._lengths
        self._max_memory = max_memory
        self._next = 0
        self._stats: Optional[Stats] = None
        self.sweep: Optional[Sweep] = None
        self.phases: Optional[Phases] = None
        #: The position at which the reader enters the next of ``phases`` (past the end: none).
        self._phase_at = self._length + 1
        self._plan: Optional[_EpochPlan] = None
        #: Whether the reads are still those of the list (with or without a client).
        self._following = True
        #: No record has missed yet: the client and its list wait for the first that does.
        self._cached = True
        self._client: Optional[Client] = None
        #: The records the client's list holds (this worker's, or the whole epoch's for worker 0 where
        #: it leads) and, for the epoch's, where each of this worker's positions is in it.
        self._listed, self._at = self.order, None
        #: Worker 0's client prefetches this worker's records (it leads): none here.
        self.led = False

    def advise(self, sweep: Optional[Sweep] = None, phases: Optional[Phases] = None, led: bool = False) -> None:
        """The worker's records are advised by ``sweep``, ``phases`` or (``led``) worker 0's client,
        not by a client of its own."""
        self.sweep, self.phases, self.led, self._cached = sweep, phases, led, False
        if phases is not None:
            self._phase_at = phases.next_start

    def follow_epoch(self, epoch: list[int], positions: list[int]) -> None:
        """The client (at the first record not wholly cached) holds ``epoch``, every worker's records
        in the order they are read, and this worker's record at position ``p`` is ``epoch[positions[p]]``."""
        self._listed, self._at = array.array("q", epoch), array.array("q", positions)

    def read(self, index: int) -> bytes:
        """Record ``index``: followed by the client while it is the next of the list, plain after
        (every worker's hot path: no call but the read's own). Until a record is not wholly cached,
        each is one ``RWF_NOWAIT`` read and no client exists."""
        position = self._next
        if position < self._length and self.order[position] == index and self._following:
            fd, length, offset = self._fd, self._lengths[index], self._offsets[index]
            if position >= self._phase_at:
                self._phase_at = self._entered(position)
            if self._cached:
                data = _pread_cached(fd, length, offset)
                if data is not None:
                    self._next = position + 1
                    return data
                self._cached = False
                self._start(position)
            if self._plan is not None:
                self._plan.position = position if self._at is None else self._at[position]
            data = _native.pread(fd, length, offset)
            self._next = position + 1
            return data
        self.close()
        return self._records[index]

    def _entered(self, position: int) -> int:
        """The reader entered a phase at ``position``: the next phase is advised; where it enters the
        one after."""
        if self.phases is None:
            return self._length + 1
        self.phases.entered(position)
        return self.phases.next_start

    def _start(self, position: int) -> None:
        """The client, given the list from the record at ``position`` on."""
        # Shuffled records' edge pages are mostly other workers' too: let them go, do not drop them.
        self._plan = _EpochPlan(self._records, self._listed, None, shared_edges=True)
        self._plan.position = position if self._at is None else self._at[position]
        self._client = Client(self._plan.hand_out, max_memory=self._max_memory, infill=0)
        try:
            self._plan.region = self._client.region(self._fd, 0, max(self._records._size, 1))
            self._plan.hand_out(self._client, None)
        except BaseException:
            self.close()
            raise

    def stats(self) -> Optional[Stats]:
        return self._client.stats() if self._client is not None else self._stats

    def summary(self) -> str:
        stats = self.stats()
        if stats is None and self.sweep is not None:
            return f"{self._next}/{self._length} records; its share of the epoch's union swept, no client"
        if stats is None and self.phases is not None:
            return (f"{self._next}/{self._length} records; advised in {len(self.phases.starts)} phases of at most "
                    f"{self.phases.phase_bytes / (1 << 20):.1f} MiB, no client")
        if stats is None and self.led:
            return f"{self._next}/{self._length} records; prefetched by worker 0's client, none here"
        if stats is None and self.pid == _pid:
            return f"{self._next}/{self._length} records, all cached: no client"
        if stats is None or self._plan is None:
            return "prefetching was started in another process"
        line = summary_line(stats, self._plan.distinct_pages(), self._next, self._length)
        if self._at is not None:  # "used" counts this worker's reads of them only
            return line + "; its list holds every worker's records"
        return line

    def close(self) -> None:
        self._following = False
        self._phase_at = self._length + 1
        for advice in (self.sweep, self.phases):
            if advice is not None and self.pid == _pid:
                advice.stop()
        client, self._client = self._client, None
        if client is not None and self.pid == _pid:
            self._stats = client.stats()
            client.close()
