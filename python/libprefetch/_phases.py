"""Phases: a reader's records advised WILLNEED a phase ahead, each phase's union in offset order.

Where an epoch's records do not fit in what the page cache may hold, a ``RecordDataset`` worker cuts
its list into phases of a few MiB of pages and, from a thread, advises the union of the phase after
the one it reads, in offset order: the paper's window (ATC 2009, section 4.5: a budget of unique
pages, the next round once the reader is through the last) with each round in C-LOOK order
(section 3.3). The distance ahead is at most two phases, so the pages advised are read before the
cache is full enough to evict them, and the advice is one WILLNEED per range with no list, no
client and no page dropped (the kernel reclaims the pages read, the oldest first).

The schedule (the phases, which are due when, each phase's calls) is the ``plan`` crate's
(``plan::loader::Phases``, through ``_native.LoaderPhases``), which the simulator's
``loader-phases`` policy runs too; this module keeps the thread that advises.

Deviations: the budget is fixed at the start (``phase_bytes``), not grown and cut as the paper's
(section 4.6); a phase's pages are not dropped after their read.
"""

from __future__ import annotations

import array
import queue
import threading
from typing import TYPE_CHECKING, Optional

from . import _native
from ._sweep import _batches, _pairs, name_this_thread

if TYPE_CHECKING:
    from ._records import Records


class Phases:
    """A thread advising the records ``order`` names (record indexes in the order they are read)
    phase by phase: phase ``k + 1`` once the reader enters phase ``k`` (``entered``), the first two at
    once. Phases hold at most ``phase_bytes`` of pages (``starts``)."""

    def __init__(self, fd: int, records: "Records", order: "array.array[int]", phase_bytes: int) -> None:
        self._fd = fd
        self.phase_bytes = phase_bytes
        layout = records._offsets.tobytes(), records._lengths.tobytes()
        self._plan = _native.LoaderPhases(*layout, order.tobytes(), records._page, phase_bytes)
        self.starts = self._plan.starts
        #: The reader's position at which it enters the next phase (past the end: none is left).
        self.next_start = self._plan.next_start()
        self._limit = _native.willneed_limit(fd)
        self._wanted: "queue.SimpleQueue[Optional[int]]" = queue.SimpleQueue()
        for phase in range(*self._plan.first_due()):
            self._wanted.put(phase)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="libprefetch-phases", daemon=True)
        self._thread.start()

    def entered(self, position: int) -> None:
        """The reader is at ``position``, at or past ``next_start``: the phase after each phase it has
        entered is queued for advice."""
        for phase in range(*self._plan.enter(position)):
            self._wanted.put(phase)
        self.next_start = self._plan.next_start()

    def stop(self) -> None:
        """Ends the advice after the batch under way (the descriptor may be closed after)."""
        self._stopped.set()
        self._wanted.put(None)
        self._thread.join()

    def ranges(self, phase: int) -> list[tuple[int, int]]:
        """The WILLNEED calls of ``phase``: its records' pages as byte ranges in offset order, touching
        ones merged, cut in calls of what one call loads on the device."""
        return _pairs(self._plan.calls(phase, self._limit))

    def _run(self) -> None:
        name_this_thread("prefetch-phases")
        while (phase := self._wanted.get()) is not None:
            if self._stopped.is_set():  # a phase still queued when the reader stopped: not computed
                return
            for batch in _batches(self.ranges(phase)):
                if self._stopped.is_set():
                    return
                _native.willneed(self._fd, batch)
