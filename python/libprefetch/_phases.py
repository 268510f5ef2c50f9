"""Phases: a reader's records advised WILLNEED a phase ahead, each phase's union in offset order.

Where an epoch's records do not fit in what the page cache may hold, a ``RecordDataset`` worker cuts
its list into phases of a few MiB of pages and, from a thread, advises the union of the phase after
the one it reads, in offset order: the paper's window (ATC 2009, section 4.5: a budget of unique
pages, the next round once the reader is through the last) with each round in C-LOOK order
(section 3.3). The distance ahead is at most two phases, so the pages advised are read before the
cache is full enough to evict them, and the advice is one WILLNEED per range with no list, no
client and no page dropped (the kernel reclaims the pages read, the oldest first).

Deviations: the budget is fixed at the start (``phase_bytes``), not grown and cut as the paper's
(section 4.6); a phase's pages are not dropped after their read.
"""

from __future__ import annotations

import array
import queue
import threading
from typing import TYPE_CHECKING, Optional

from . import _native
from ._sweep import _batches, share, union_extents

if TYPE_CHECKING:
    from ._records import Records


class Phases:
    """A thread advising the records ``order`` names (record indexes in the order they are read)
    phase by phase: phase ``k + 1`` once the reader enters phase ``k`` (``entered``), the first two at
    once. Phases hold at most ``phase_bytes`` of pages (``phase_starts``)."""

    def __init__(self, fd: int, records: "Records", order: "array.array[int]", phase_bytes: int) -> None:
        self._fd, self._records, self._order = fd, records, order
        self.phase_bytes = phase_bytes
        self.starts = phase_starts(records, order, phase_bytes)
        self._entered = 0
        #: The reader's position at which it enters the next phase (past the end: none is left).
        self.next_start = self._start_of(1)
        self._limit = _native.willneed_limit(fd)
        #: The records' layout as the native union takes it, made once (not once a phase).
        self._layout = records._offsets.tobytes(), records._lengths.tobytes()
        self._wanted: "queue.SimpleQueue[Optional[int]]" = queue.SimpleQueue()
        for phase in (0, 1):
            self._wanted.put(phase)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="libprefetch-phases", daemon=True)
        self._thread.start()

    def entered(self, position: int) -> None:
        """The reader is at ``position``, at or past ``next_start``: the phase after each phase it has
        entered is queued for advice."""
        while self._entered + 1 < len(self.starts) and position >= self.starts[self._entered + 1]:
            self._entered += 1
            self._wanted.put(self._entered + 1)
        self.next_start = self._start_of(self._entered + 1)

    def stop(self) -> None:
        """Ends the advice after the batch under way (the descriptor may be closed after)."""
        self._stopped.set()
        self._wanted.put(None)
        self._thread.join()

    def ranges(self, phase: int) -> list[tuple[int, int]]:
        """The WILLNEED calls of ``phase``: its records' pages as byte ranges in offset order, touching
        ones merged, cut in calls of what one call loads on the device."""
        end = self._start_of(phase + 1)
        union = union_extents(self._records, self._order[self.starts[phase] : end], self._layout)
        return share(union, self._records._page, 0, 1, self._limit)

    def _start_of(self, phase: int) -> int:
        return self.starts[phase] if phase < len(self.starts) else len(self._order) + 1

    def _run(self) -> None:
        while (phase := self._wanted.get()) is not None:
            if phase >= len(self.starts):
                continue
            for batch in _batches(self.ranges(phase)):
                if self._stopped.is_set():
                    return
                _native.willneed(self._fd, batch)


def phase_starts(records: "Records", order: "array.array[int]", phase_bytes: int) -> list[int]:
    """The positions in ``order`` where phases start: a phase holds records from its start on while
    their pages (each record's whole pages) come to at most ``phase_bytes``, and at least one."""
    page, offsets, lengths = records._page, records._offsets, records._lengths
    starts, filled = [0] if order else [], 0
    for position, index in enumerate(order):
        offset = offsets[index]
        size = -(-(offset + lengths[index]) // page) * page - offset // page * page
        if filled and filled + size > phase_bytes:
            starts.append(position)
            filled = 0
        filled += size
    return starts
