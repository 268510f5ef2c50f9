"""Token windows: random windows of a file of tokens (nanoGPT's ``get_batch``) read as NumPy arrays.

A language-model training step reads ``batch_size`` windows of ``block_size + 1`` tokens at random
starts. The starts come from the caller's generator, which can draw the next steps' starts before they
are read: ``TokenWindows.batches`` keeps ``lookahead`` steps drawn, hands the pages of their windows to
a libprefetch client in reading order (the paper's access list, ATC 2009 section 4.2, topped up by the
callback of section 4.3), and reads each window with one ``pread`` into the step's array. Python's
memory is ``lookahead`` steps of starts and the arrays the caller keeps; the page cache's is the
client's budget: neither grows with the file.

``numpy.memmap`` reads the same windows through page faults, and each fault makes the kernel read
``read_ahead_kb`` around it (8 MiB here) where a window needs a page or two; ``MADV_RANDOM`` stops that
but leaves one synchronous fault per page. Here the file's descriptor is ``POSIX_FADV_RANDOM`` (a miss
reads only its own pages) and the windows' pages are read ahead of time by the library.

Deviations: infill (section 3.3) is off: the gaps between random windows are not read.
"""

from __future__ import annotations

import collections
import os
import stat
from typing import Any, Iterable, Iterator, Optional

from . import _native
from ._client import Client, Stats, _note_read


class TokenWindows:
    """The windows of ``block_size + 1`` tokens of ``dtype`` (a NumPy dtype) in the file at ``path``.

    ``starts`` is the number of valid window starts (a start ``s`` reads tokens ``s .. s+block_size``;
    nanoGPT's ``torch.randint(len(data) - block_size, ...)`` draws from the same range). ``lookahead``
    is how many steps are drawn ahead of the one read; ``max_memory`` caps the library's budget.
    Imports NumPy. Raises ``ValueError`` if the file holds no window or is not a regular file.
    """

    def __init__(
        self,
        path: "str | os.PathLike[str]",
        *,
        block_size: int,
        dtype: Any = "uint16",
        lookahead: int = 64,
        max_memory: Optional[int] = None,
    ) -> None:
        import numpy

        if block_size <= 0 or lookahead <= 0:
            raise ValueError(f"block_size and lookahead must be positive, got {block_size} and {lookahead}")
        self._numpy = numpy
        self.dtype = numpy.dtype(dtype)
        self.block_size = block_size
        self.lookahead = lookahead
        self.max_memory = max_memory
        self._fd = os.open(os.fspath(path), os.O_RDONLY | os.O_CLOEXEC)
        try:
            status = os.fstat(self._fd)
            if not stat.S_ISREG(status.st_mode):
                raise ValueError(f"token windows are read from a regular file; {os.fspath(path)} is not one")
            self._size = status.st_size
            self.tokens = status.st_size // self.dtype.itemsize
            self.starts = self.tokens - block_size
            if self.starts <= 0:
                raise ValueError(f"{os.fspath(path)} holds {self.tokens} tokens: no window of {block_size + 1}")
            os.posix_fadvise(self._fd, 0, 0, os.POSIX_FADV_RANDOM)
        except BaseException:
            self.close()
            raise
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._stats: Optional[Stats] = None

    def window_pages(self, start: int) -> range:
        """The byte offsets of the pages the window at ``start`` covers."""
        offset = start * self.dtype.itemsize
        end = offset + (self.block_size + 1) * self.dtype.itemsize
        return range(offset - offset % self._page, end, self._page)

    def batches(self, draws: Iterable[Iterable[int]]) -> Iterator[tuple[Any, Any]]:
        """For each step's starts drawn by ``draws``, ``(x, y)``: arrays of shape (starts, block_size),
        ``y`` shifted by one token (views of one array, new at every step). Raises ``IndexError`` for
        a start outside ``0 .. starts - 1`` when it is drawn."""
        steps = _Steps(self, iter(draws))
        client = Client(steps.hand_out, max_memory=self.max_memory, infill=0)
        try:
            steps.region = client.region(self._fd, 0, self._size)
            steps.hand_out(client, None)
            while steps.pending:
                rows = self._read_step(steps)
                if steps.draw():
                    client.request(steps.pages(steps.pending[-1], 0), fd=steps.region, mode="append")
                yield rows[:, :-1], rows[:, 1:]
        finally:
            self._stats = client.stats()
            client.close()

    def stats(self) -> Optional[Stats]:
        """The counters of the last ``batches`` iteration (None before one ends)."""
        return self._stats

    def close(self) -> None:
        """Closes the file."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            _native.note_close(fd)
            os.close(fd)

    def __enter__(self) -> "TokenWindows":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_step(self, steps: "_Steps") -> Any:
        starts = steps.pending[0]
        rows = self._numpy.empty((len(starts), self.block_size + 1), dtype=self.dtype)
        length = rows.itemsize * rows.shape[1]
        for row, start in enumerate(starts):
            steps.window = row
            offset = int(start) * self.dtype.itemsize
            _note_read(self._fd, offset, length)
            if os.preadv(self._fd, [memoryview(rows[row]).cast("B")], offset) != length:
                raise OSError(f"short read of the window at token {start}: was the file truncated?")
        steps.pending.popleft()
        steps.window = 0
        return rows


class _Steps:
    """The drawn steps not yet read, the window being read, and the access list they make."""

    def __init__(self, windows: TokenWindows, draws: Iterator[Iterable[int]]) -> None:
        self.windows = windows
        self.draws = draws
        self.pending: collections.deque[Any] = collections.deque()
        self.window = 0
        self.region: Any = None
        while len(self.pending) < windows.lookahead and self.draw():
            pass

    def draw(self) -> bool:
        """Draws one more step; False when ``draws`` is exhausted."""
        starts = next(self.draws, None)
        if starts is None:
            return False
        array = self.windows._numpy.asarray(starts, dtype="int64").reshape(-1)
        if len(array) and (array.min() < 0 or array.max() >= self.windows.starts):
            raise IndexError(f"window start out of range 0..{self.windows.starts - 1}")
        self.pending.append(array)
        return True

    def pages(self, starts: Any, first: int) -> list[int]:
        return [page for start in starts[first:] for page in self.windows.window_pages(int(start))]

    def hand_out(self, client: Client, _info: object) -> None:
        """The pages of every drawn window from the one being read on, as the new list."""
        offsets = []
        for step, starts in enumerate(self.pending):
            offsets.extend(self.pages(starts, self.window if step == 0 else 0))
        client.request(offsets, fd=self.region, mode="set", done=True)
