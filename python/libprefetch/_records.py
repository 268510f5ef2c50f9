"""Records and epochs: a file of variable-size records read in a known order (a data loader's epoch).

A training epoch visits every record once in a shuffled order that is known before the first read: the
whole future access list of the paper (ATC 2009, section 4.2). ``Records.epoch(order)`` hands the pages
of the epoch's records, in that order, to a libprefetch client and then reads the records one after
another from the calling thread; the callback (section 4.3, Figure 7) hands the rest of the list from
the current record on whenever the library asks, so an epoch longer than the library's list is
disclosed piece by piece, and the next epoch's order (``next_order``) continues the list without a gap.
Where the epoch's records fit in what the page cache may hold, their union is swept in offset order
instead (``_sweep``: section 3.3's C-LOOK order over the whole list) and no client starts.

``Records`` is also a map-style dataset (``__len__``, ``__getitem__``) and ``Records.order(seed)`` a
shuffled order to pass as a sampler, so a PyTorch ``DataLoader`` takes it as is; the package imports
no torch.

Deviations: infill (section 3.3) is off by default for epochs (see ``Records.epoch``).
"""

from __future__ import annotations

import array
import errno
import os
import random
import stat
from typing import Iterable, Iterator, Optional, Sequence

from . import _native
from ._client import Client, Region, Stats
from ._summary import summary_line
from ._sweep import Sweep, fits, share, union_extents

#: Entries handed to the library per request (Figure 7's BATCH_SIZE).
_BATCH = 1 << 16


class Records:
    """The records of the file at ``path``: record ``i`` is ``lengths[i]`` bytes at ``offsets[i]``.

    Raises ``ValueError`` if the sequences differ in length, hold a negative value, or a record
    reaches past the end of the file, or if the path is not a regular file; ``OSError`` if the file cannot be
    opened (``IsADirectoryError`` for a directory). Reading is
    thread-safe; ``epoch`` reads from the calling thread.
    """

    def __init__(self, path: "str | os.PathLike[str]", offsets: Iterable[int], lengths: Iterable[int]) -> None:
        self.path = os.fspath(path)
        self._offsets = _as_int64(offsets, "offsets")
        self._lengths = _as_int64(lengths, "lengths")
        if len(self._offsets) != len(self._lengths):
            raise ValueError(f"{len(self._offsets)} offsets but {len(self._lengths)} lengths")
        self._fd = self._advice = -1
        self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            status = os.fstat(self._fd)
            if stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError(errno.EISDIR, "records are read from a file, not a directory", self.path)
            if not stat.S_ISREG(status.st_mode):
                raise ValueError(f"records are read from a regular file; {self.path} is not one")
            self._size = status.st_size
            ends = (o + n for o, n in zip(self._offsets, self._lengths))
            if self._offsets and max(ends) > self._size:
                raise ValueError(f"a record reaches past the end of {self.path} ({self._size} bytes)")
            self._page = os.sysconf("SC_PAGE_SIZE")
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self._offsets)

    def __getitem__(self, index: int) -> bytes:
        """The bytes of record ``index`` (negative indexes count from the end)."""
        offset, length = self._offsets[index], self._lengths[index]
        return self._read(offset, length)

    def order(self, seed: Optional[int] = None) -> list[int]:
        """A shuffled order of all records (a sampler for ``DataLoader(records, sampler=...)``)."""
        indexes = list(range(len(self)))
        random.Random(seed).shuffle(indexes)
        return indexes

    def epoch(
        self,
        order: Sequence[int],
        next_order: Optional[Sequence[int]] = None,
        *,
        max_memory: Optional[int] = None,
        infill: int = 0,
        list_capacity: Optional[int] = None,
    ) -> "Epoch":
        """An iterator over the bytes of the records in ``order``, prefetched by libprefetch.

        The library is told the whole order (and ``next_order``, the epoch after this one, whose
        first records are then prefetched before this epoch ends). ``max_memory``, ``infill`` and
        ``list_capacity`` are passed to the ``Client``; infill is off by default because the gaps
        between the records of one window are other records, whose turn may be far away: when the
        file does not fit in memory they would be fetched, dropped and fetched again. Raises
        ``IndexError`` for an index out of range before reading anything.

        The client and its list wait for the first record the page cache does not hold whole: until
        then each record is one ``RWF_NOWAIT`` read (``_native.pread_cached``), so an epoch over cached
        records costs what plain reads cost, and no list is built. Where the records from that one on
        fit in what the page cache may hold (the system's and the memory cgroup's room, and
        ``max_memory``), no client starts either: their pages are swept in offset order from a thread
        (``_sweep.Sweep``), as the device reads them fastest, and each read finds its record cached or
        waits for its own pages.
        """
        settings = {"max_memory": max_memory, "infill": infill, "list_capacity": list_capacity}
        following = _as_indexes(next_order, len(self)) if next_order else None
        return Epoch(self, _as_indexes(order, len(self)), following, settings)

    def close(self) -> None:
        """Closes the file."""
        advice, self._advice = getattr(self, "_advice", -1), -1
        if advice >= 0:
            os.close(advice)
        fd, self._fd = self._fd, -1
        if fd >= 0:
            _native.note_close(fd)
            os.close(fd)

    def __enter__(self) -> "Records":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> tuple[str, "array.array[int]", "array.array[int]"]:
        """Pickled as path and layout (DataLoader workers started with "spawn" reopen the file)."""
        return self.path, self._offsets, self._lengths

    def __setstate__(self, state: tuple[str, "array.array[int]", "array.array[int]"]) -> None:
        self.__init__(*state)  # type: ignore[misc]

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            self.close()

    def advice_fd(self) -> int:
        """A descriptor of the file that nobody reads, for advice: on FUSE, WILLNEED through a
        descriptor that is read is dropped while the connection is busy (crate libprefetch,
        descriptors.rs). Opened once, closed just before the file's own descriptor (whose close drops
        this process's locks on the file anyway)."""
        if self._advice < 0:
            self._advice = os.open(f"/proc/self/fd/{self._fd}", os.O_RDONLY | os.O_CLOEXEC)
        return self._advice

    def _read(self, offset: int, length: int) -> bytes:
        if length == 0:
            return b""
        return _native.pread(self._fd, length, offset)


class Epoch:
    """One epoch's reads: iterate it (from one thread) for the records' bytes in order.

    A context manager; at the first record not wholly in the page cache (none while every record is)
    the rest of the epoch is swept where it fits, or the client is registered, until the last record
    (or ``close()``); ``stats()`` are the client's counters so far, kept after the end.
    """

    def __init__(
        self,
        records: Records,
        order: "array.array[int]",
        next_order: "Optional[array.array[int]]",
        settings: dict[str, Optional[int]],
    ) -> None:
        self._records = records
        self._order, self._next_order = order, next_order
        self._settings = settings
        self._plan: Optional[_EpochPlan] = None
        self._client: Optional[Client] = None
        self._sweep: Optional[Sweep] = None
        #: The records from the first miss on were swept (no client).
        self._swept = False
        self._next = 0
        #: No record has missed yet: reads are made without a client.
        self._cached = True
        self._stats: Optional[Stats] = None

    def __iter__(self) -> Iterator[bytes]:
        """The records from the next one on (``next()`` on the epoch itself reads one at a time)."""
        return self._reading()

    def __len__(self) -> int:
        return len(self._order)

    def _reading(self) -> Iterator[bytes]:
        """While no record has missed, each is read here without a method call of its own (the warm
        epoch's whole cost is its reads); then as ``__next__`` reads them."""
        fd, lengths, offsets = self._records._fd, self._records._lengths, self._records._offsets
        order, end, cached = self._order, len(self._order), _native.pread_cached
        while self._cached and self._client is None:
            position = self._next
            if position >= end:
                self.close()
                return
            index = order[position]
            record = cached(fd, lengths[index], offsets[index])
            if record is None:
                self._cached = False
                break
            self._next = position + 1
            yield record
        while True:
            try:
                record = self.__next__()
            except StopIteration:
                return
            yield record

    def __next__(self) -> bytes:
        position = self._next
        if position >= len(self._order):
            self.close()
            raise StopIteration
        index = self._order[position]
        fd, length, offset = self._records._fd, self._records._lengths[index], self._records._offsets[index]
        if self._client is None and self._sweep is None:
            record = _native.pread_cached(fd, length, offset) if self._cached else None
            if record is not None:
                self._next = position + 1
                return record
            self._cached = False
            self._start(position)
        if self._plan is not None:
            self._plan.position = position
        # Advanced only once read: a KeyboardInterrupt raised in the read leaves this record next.
        record = _native.pread(fd, length, offset)
        self._next = position + 1
        return record

    def stats(self) -> Optional[Stats]:
        """The library's counters for this epoch, or None before its client started (its first record
        not wholly cached) and for a swept epoch (it has no client)."""
        if self._client is not None:
            return self._client.stats()
        return self._stats

    def summary(self) -> str:
        """One line: records read, pages prefetched, used and wasted, and pages read from the device
        against the epoch's distinct pages (see docs/python.md, "Reading the counters")."""
        stats = self.stats()
        if stats is None and self._swept:
            return f"{self._next}/{len(self._order)} records; swept in offset order, no client"
        if stats is None or self._plan is None:
            if self._next:
                return f"{self._next}/{len(self._order)} records, all cached: no client"
            return "the epoch has not started"
        return summary_line(stats, self._plan.distinct_pages(), self._next, len(self._order))

    def close(self) -> None:
        """Unregisters the epoch's client; iteration ends."""
        self._next = len(self._order)
        sweep, self._sweep = self._sweep, None
        if sweep is not None:
            sweep.stop()
        client, self._client = self._client, None
        if client is not None:
            self._stats = client.stats()
            client.close()

    def __enter__(self) -> "Epoch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self, position: int) -> None:
        """The sweep of the records from ``position`` on where they fit; the client, given the list
        from that record on, where they do not."""
        records = self._records
        union = union_extents(records, self._order[position:])
        if fits(union, self._settings["max_memory"]):
            fd = records.advice_fd()
            self._sweep = Sweep(fd, share(union, records._page, 0, 1, _native.willneed_limit(fd)))
            self._swept = True
            return
        self._plan = _EpochPlan(self._records, self._order, self._next_order)
        self._plan.position = position
        client = Client(self._plan.hand_out, **self._settings)
        try:
            self._plan.region = client.region(self._records._fd, 0, max(self._records._size, 1))
            self._plan.hand_out(client, None)
        except BaseException:
            client.close()
            raise
        self._client = client


class _EpochPlan:
    """The access list of an epoch: every page of every record in order, and where the reader is."""

    def __init__(
        self,
        records: Records,
        order: "array.array[int]",
        next_order: "Optional[array.array[int]]",
        shared_edges: bool = False,
    ) -> None:
        """``order`` and ``next_order``: record indexes checked by ``_as_indexes``."""
        self.order = order
        #: The records' edge pages are other processes' too (``PF_SHARED_EDGES``).
        self.shared_edges = shared_edges
        layout = records._offsets.tobytes(), records._lengths.tobytes()
        pages, first_page = _native.record_pages(*layout, self.order.tobytes(), records._page)
        self.pages = array.array("q", pages)
        self.first_page = array.array("q", first_page)
        self.epoch_pages = len(self.pages)
        if next_order:
            self.pages.frombytes(_native.record_pages(*layout, next_order.tobytes(), records._page)[0])
        self.position = 0
        self.region: Optional[Region] = None

    def distinct_pages(self) -> int:
        """How many distinct pages the epoch's records (not the next epoch's) cover."""
        return len(set(self.pages[: self.epoch_pages]))

    def hand_out(self, client: Client, _info: object) -> None:
        """Figure 7: the list from the current record on, in batches until it is full, then DONE."""
        start = self.first_page[self.position] if self.first_page else 0
        mode = "set"
        view = memoryview(self.pages)
        for batch in range(start, len(self.pages), _BATCH):
            chunk = view[batch : batch + _BATCH]
            accepted = client.request(chunk, fd=self.region, mode=mode, shared_edges=self.shared_edges)
            mode = "append"
            if accepted < len(chunk):
                break
        client.request((), fd=self.region, mode=mode, done=True, shared_edges=self.shared_edges)


def _as_int64(values: Iterable[int], name: str) -> "array.array[int]":
    try:
        result = array.array("q", values)
    except OverflowError:
        raise ValueError(f"{name} must be between 0 and 2**63-1") from None
    if result and min(result) < 0:
        raise ValueError(f"{name} must not be negative")
    return result


def _as_indexes(order: Iterable[int], count: int) -> "array.array[int]":
    indexes = array.array("q", order)
    if indexes and (min(indexes) < 0 or max(indexes) >= count):
        raise IndexError(f"record index out of range 0..{count - 1}")
    return indexes
