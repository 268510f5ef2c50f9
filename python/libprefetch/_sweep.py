"""The sweep: the pages of an epoch's records advised WILLNEED in offset order, from a thread.

When an epoch's records fit in what the page cache may hold, reading their union in offset order is
how the device reads them fastest (section 3.3's C-LOOK order over the whole list, ATC 2009): the
records come to the page cache in large requests, as the device's limit reads them, and each read
then finds its record cached or waits for its own pages. ``RecordDataset``'s workers each sweep an
N-th of the union; a ``Records.epoch`` sweeps the union of its records alone. The schedule (the
union, each worker's share, the calls) is the ``plan`` crate's (``plan::loader``), which the
simulator runs too; this module keeps the thread.
"""

from __future__ import annotations

import array
import threading
from typing import TYPE_CHECKING, Optional

from . import _native

if TYPE_CHECKING:
    from ._records import Records


def union_extents(
    records: "Records", indexes: Optional["array.array[int]"] = None, layout: Optional[tuple[bytes, bytes]] = None
) -> list[tuple[int, int]]:
    """The pages of the records ``indexes`` (default: all; an epoch reads every record, with
    ``drop_last`` all but fewer than a batch) as ``(offset, length)`` byte ranges in offset order,
    touching ones merged (``plan::loader::union``). ``layout``: the records' offsets and lengths as
    bytes, where the caller keeps them (made here otherwise: a copy of the whole layout)."""
    if indexes is None:
        indexes = array.array("q", range(len(records)))
    if layout is None:
        layout = records._offsets.tobytes(), records._lengths.tobytes()
    return _pairs(_native.union_extents(*layout, indexes.tobytes(), records._page))


def share(extents: list[tuple[int, int]], page: int, worker: int, workers: int, call: int) -> list[tuple[int, int]]:
    """Worker ``worker``'s N-th of ``extents`` (whole pages) by pages, in offset order, cut in calls
    of at most ``call`` bytes (what one WILLNEED call loads on the device): ``plan::loader::share``."""
    flat = array.array("q", [value for extent in extents for value in extent])
    return _pairs(_native.share(flat.tobytes(), page, worker, workers, call))


def _pairs(native: bytes) -> list[tuple[int, int]]:
    """Native int64 pairs as ``(offset, length)`` tuples."""
    values = array.array("q", native)
    return list(zip(values[::2], values[1::2]))


def fits(extents: list[tuple[int, int]], max_memory: Optional[int]) -> bool:
    """Whether the epoch's pages fit in what the page cache may hold now (and in ``max_memory``)."""
    room = _native.available_for_cache()
    if max_memory is not None:
        room = min(room, max_memory)
    return sum(length for _, length in extents) <= room


#: Bytes of advice per native call of a sweep: the GIL is taken once per batch, and a stopping worker
#: waits for one batch at most.
_SWEEP_BATCH = 64 << 20


class Sweep:
    """A thread advising ``calls`` (byte ranges in offset order) WILLNEED, one after another, until
    stopped (ranges found all cached are skipped): the device reads them in large requests, at the
    depth the block layer allows."""

    def __init__(self, fd: int, calls: list[tuple[int, int]]) -> None:
        self._fd, self._batches = fd, _batches(calls)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="libprefetch-sweep", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        name_this_thread("prefetch-sweep")
        for batch in self._batches:
            if self._stopped.is_set():
                return
            _native.willneed(self._fd, batch)

    def stop(self) -> None:
        """Ends the sweep after the batch under way (the descriptor may be closed after)."""
        self._stopped.set()
        self._thread.join()


def name_this_thread(name: str) -> None:
    """Gives the calling thread ``name`` (at most 15 bytes) where the system names threads (``top -H``,
    ``/proc/PID/task/TID/comm``, the benchmark's ``--detail``), so that an advice thread's time on a
    core and waiting for one can be told from its reader's (CPython 3.11 leaves every thread the
    process's name, as does a system without ``/proc``)."""
    try:
        with open("/proc/thread-self/comm", "w") as comm:
            comm.write(name)
    except OSError:
        pass


def _batches(calls: list[tuple[int, int]]) -> list[bytes]:
    """``calls`` as native int64 pairs, in batches of about ``_SWEEP_BATCH`` bytes of advice."""
    batches, batch, size = [], array.array("q"), 0
    for offset, length in calls:
        batch.extend((offset, length))
        size += length
        if size >= _SWEEP_BATCH:
            batches.append(batch.tobytes())
            batch, size = array.array("q"), 0
    if batch:
        batches.append(batch.tobytes())
    return batches
