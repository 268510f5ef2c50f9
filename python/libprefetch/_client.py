"""Client, regions and the access list: the paper's API (ATC 2009, section 4.2) made Pythonic.

The application registers a Client, declares the file regions whose reads the library should follow,
and hands over its future reads as byte offsets. The library prefetches as much of that list as memory
allows and follows the application through its reads: reads made with ``Region.pread`` (or announced
with ``note_read``) are the ones it sees. Every library call releases the GIL.

Errors: ``ValueError`` for arguments out of range and for a closed client or region; ``OSError`` with
the library's errno otherwise (EBADF for a descriptor that is not open, ESRCH for a client registered
before ``os.fork()`` in another process).

Deviations: the paper identifies a client by a handle and ends ``ignore_accesses`` with a separate
call; here both are context managers.
"""

from __future__ import annotations

import array
import errno
import operator
import os
import signal
import stat
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence, Union

from . import _native

#: The paper's PF_* flags.
_MODES = {"append": 1, "set": 2, "set_from_mark": 4}
_DONE = 8
_WHOLE_LIST = 16
_SHARED_EDGES = 32

#: Largest offset or size accepted (offsets are signed 64-bit in the kernel).
_MAX_OFFSET = (1 << 63) - 1

#: Reads longer than this are clipped to the file's size before a buffer is allocated.
_CLIP_ABOVE = 1 << 20

FileLike = Union[int, str, "os.PathLike[str]", Any]


class CallbackInfo(NamedTuple):
    """Where the application is when the library calls back (section 4.3)."""

    last_marked: Optional[tuple[int, int]]
    """The last marked entry passed, as (fd, byte offset of its page), or None."""
    requested: tuple[int, int]
    """The read that triggered the callback, as (fd, byte offset)."""


@dataclass(frozen=True)
class Stats:
    """A client's counters (``struct pf_stats``; docs/python.md, "Reading the counters")."""

    rounds: int
    """Prefetching rounds started."""
    callbacks: int
    """Times the library called back for more of the list."""
    tracked_reads: int
    """Reads that fell in a registered region."""
    divergences: int
    """Tracked reads of pages not on the access list."""
    misses: int
    """Tracked reads of pages not in the page cache (the read waited for the device)."""
    premature_evictions: int
    """Prefetched pages evicted before their read."""
    pages_prefetched: int
    """Pages advised with WILLNEED (cached already or not)."""
    pages_dropped: int
    """Pages released with DONTNEED: after their last use, or unused (``prefetched_unused_dropped``)."""
    budget_bytes: int
    """The memory the library plans with now (AIMD)."""
    list_length: int
    """Entries on the access list now."""
    pages_fetched: int
    """Advised pages that were not cached: what prefetching asked of the device."""
    prefetched_used: int
    """Prefetched pages read while the plan kept them."""
    prefetched_unused_dropped: int
    """Prefetched pages dropped before any read: the waste."""
    infill_pages: int
    """Gap pages advised as infill."""


def note_read(fd: int, offset: int, length: int) -> None:
    """Tells the library that ``fd`` is about to be read at ``offset`` for ``length`` bytes.

    What the C library's read interposers do for C programs; call it before a read the library cannot
    see (``mmap``, a read inside another library). May run a client's callback and a round.
    """
    _check_offset("offset", offset)
    _check_offset("length", length)
    _note_read(fd, offset, length)


def note_close(fd: int) -> None:
    """Tells the library that ``fd`` is about to be closed: call it just before ``os.close(fd)`` of a
    descriptor you registered a region on. Its regions stop being followed, and the library's own
    descriptor of the file (on FUSE) is closed with it rather than at the process's exit."""
    _native.note_close(fd)


def instance_id() -> int:
    """Which libprefetch instance this package uses: the same number as ``pf_instance_id()`` of
    ``libprefetch.so`` or of the SQLite extension loaded into the same process when they share one
    (one registry, one advice thread, one memory budget entry per process; docs/api.md)."""
    return _native.instance_id()


#: ``note_read``, which raises what a callback it ran left for the program (see ``_reaches_program``;
#: the native module keeps it per thread, the callback running inside the thread's read).
_note_read = _native.note_read


def _reaches_program(error: BaseException) -> bool:
    """True for what must not end as unraisable: KeyboardInterrupt, SystemExit (anything not an
    ``Exception``), and whatever a Python signal handler raised while the callback ran."""
    if not isinstance(error, Exception):
        return True
    handlers = set()
    for number in signal.valid_signals():
        try:
            handler = signal.getsignal(number)
        except (OSError, ValueError):
            continue
        handlers.add(getattr(getattr(handler, "__func__", handler), "__code__", None))
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code in handlers:
            return True
        frame = frame.tb_next
    return False


def _check_offset(name: str, value: int) -> None:
    if not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 0 or value > _MAX_OFFSET:
        raise ValueError(f"{name} must be between 0 and 2**63-1, got {value}")


def _check_end(offset: int, size: int) -> None:
    """EINVAL where ``offset + size`` passes 2**63-1, as the kernel's ``pread`` says (checked here
    because a large size is clipped to the file's end before the read)."""
    if offset + size > _MAX_OFFSET:
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))


def _kind(mode: int) -> str:
    """What a file that is not regular is, for messages."""
    kinds = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a pipe"), (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "a special file")


def _offsets_as_bytes(offsets: Iterable[int]) -> bytes:
    """The offsets as native 64-bit bytes. A buffer of 8-byte integers is taken as it is (an epoch's
    list has hundreds of thousands of them: ``min``/``max`` over them in Python took 24 ms); the
    native ``request`` refuses any offset past 2**63-1 (where a negative one lands too)."""
    try:
        view = memoryview(offsets)  # type: ignore[arg-type]
    except TypeError:
        view = None
    if view is not None and view.ndim == 1 and view.itemsize == 8 and view.format in "qlQL":
        return view.tobytes()
    try:
        return array.array("q", map(operator.index, offsets)).tobytes()
    except OverflowError:
        raise ValueError("offsets must be between 0 and 2**63-1") from None


def _marks_as_bytes(marks: Optional[Iterable[bool]], count: int) -> Optional[bytes]:
    if marks is None:
        return None
    flags = bytes(1 if mark else 0 for mark in marks)
    if len(flags) != count:
        raise ValueError(f"marks has {len(flags)} entries for {count} offsets")
    return flags


class Client:
    """A libprefetch client: one access list, its regions and counters.

    ``callback(client, info)`` is called, from the thread whose read triggered it, when the library
    needs more of the list; it calls ``client.request(...)`` (an ``Exception`` it raises is reported as
    unraisable and the read goes on; KeyboardInterrupt, SystemExit and what a signal handler raises
    meanwhile are raised by the read's call, before it reads, as they would be without the library). ``max_memory`` caps the bytes the library plans with (default:
    what the system and memory cgroup allow); ``infill`` is the largest gap merged into one prefetch
    (default: the break-even gap of the file's device profile, see ``prefetch device measure``; 0 disables infill); ``list_capacity`` is the most entries the access list holds
    (default 1 Mi; ``request`` accepts fewer once it is full). Thread-safe. Use as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        callback: Optional[Callable[["Client", CallbackInfo], None]] = None,
        *,
        max_memory: Optional[int] = None,
        infill: Optional[int] = None,
        list_capacity: Optional[int] = None,
    ) -> None:
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable (client, info), not {type(callback).__name__}")
        if list_capacity is not None and not 0 < list_capacity <= _MAX_OFFSET:
            raise ValueError(f"list_capacity must be positive, got {list_capacity}")
        for name, value in (("max_memory", max_memory), ("infill", infill)):
            if value is not None:
                _check_offset(name, value)
        self._callback = callback
        self._regions: list[Region] = []
        self._closed = False
        trampoline = _trampoline(weakref.ref(self)) if callback is not None else None
        self._native = _native.NativeClient(trampoline, max_memory, infill, list_capacity)

    def region(self, file: FileLike, start: int = 0, end: Optional[int] = None) -> "Region":
        """Tracks reads of ``[start, end)`` of ``file`` (a file object, a path or a descriptor).

        ``end`` defaults to the file's size. A path is opened read-only and closed with the region.
        """
        return Region(self, file, start, end)

    def request(
        self,
        offsets: Iterable[int],
        *,
        fd: Optional[Union[int, "Region"]] = None,
        marks: Optional[Sequence[bool]] = None,
        mode: str = "set",
        done: bool = False,
        whole_list: bool = False,
        shared_edges: bool = False,
    ) -> int:
        """Updates the access list with the byte ``offsets`` of ``fd`` (any sequence or NumPy array).

        ``fd`` may be omitted when the client has exactly one region. ``mode`` is "set" (replace the
        list), "append" or "set_from_mark"; ``done=True`` starts a prefetching round;
        ``whole_list=True`` (``PF_WHOLE_LIST``) says the application will read the whole list, so
        the window starts at the paper's 90% of memory rather than small; ``shared_edges=True``
        (``PF_SHARED_EDGES``) says the pages its reads begin or end inside are other processes' too
        (records packed back to back and shared out among workers), so the library lets them go
        once read instead of dropping them from under the others. Returns how many entries
        the list accepted (fewer than given once it is full).
        """
        if self._closed:
            raise ValueError("the client is closed")
        if mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
        data = _offsets_as_bytes(offsets)
        flags = _marks_as_bytes(marks, len(data) // 8)
        bits = _MODES[mode] | (_DONE if done else 0) | (_WHOLE_LIST if whole_list else 0)
        bits |= _SHARED_EDGES if shared_edges else 0
        return self._native.request(data, self._descriptor(fd), flags, bits)

    def stats(self) -> Stats:
        """The client's counters."""
        return Stats(*self._native.stats())

    def settle(self) -> None:
        """Waits until the advice of the current round has been issued (never waits for I/O)."""
        self._native.settle()

    def ignore_accesses(self) -> "_Ignoring":
        """Context manager: reads inside it are not followed (section 4.2). Nests."""
        return _Ignoring(self)

    def close(self) -> None:
        """Unregisters the client and closes its regions. Later calls raise ValueError."""
        try:
            for region in list(self._regions):
                region.close()
        finally:
            self._closed = True
            self._native.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _descriptor(self, fd: Optional[Union[int, "Region"]]) -> int:
        if isinstance(fd, Region):
            return fd.fd
        if fd is not None:
            return int(fd)
        if len(self._regions) == 1:
            return self._regions[0].fd
        raise ValueError("fd is required when the client has no region or several")


def _trampoline(client_ref: "weakref.ref[Client]") -> Callable[..., None]:
    """The native callback: calls the user's callback with the Client (held weakly, so no cycle)."""

    def call(last_marked: Optional[tuple[int, int]], requested: tuple[int, int]) -> None:
        client = client_ref()
        if client is None or client._callback is None:
            return
        try:
            client._callback(client, CallbackInfo(last_marked, requested))
        except BaseException as error:
            if not _reaches_program(error):
                raise
            _native.keep_pending(error)

    return call


class _Ignoring:
    def __init__(self, client: Client) -> None:
        self._client = client
        self._held: Optional[Any] = None

    def __enter__(self) -> Client:
        self._held = self._client._native.ignore_accesses()
        return self._client

    def __exit__(self, *exc: object) -> None:
        if self._held is not None:
            self._held.release()
            self._held = None


class Region:
    """A tracked part of a file; reads through ``pread`` are followed by the client.

    Made by ``Client.region``. A context manager: leaving it stops tracking (and closes the file if the
    region opened it from a path).
    """

    def __init__(self, client: Client, file: FileLike, start: int, end: Optional[int]) -> None:
        self.fd, self._owned = _open(file)
        try:
            status = os.fstat(self.fd)
            if stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError(errno.EISDIR, "a region must be part of a file, not a directory")
            if not stat.S_ISREG(status.st_mode):
                raise ValueError(f"a region must be part of a regular file, not {_kind(status.st_mode)}")
            _check_offset("start", start)
            if end is None:
                if status.st_size == 0:
                    raise ValueError("the file is empty: give the region's end")
                end = status.st_size
            _check_offset("end", end)
            if start >= end:
                raise ValueError(f"region start {start} must be below its end {end}")
            self.start, self.end = start, end
            self._client = client
            self._native: Optional[_native.NativeRegion] = client._native.register_region(self.fd, start, end)
            client._regions.append(self)
        except BaseException:
            if self._owned:
                os.close(self.fd)
            raise

    def pread(self, size: int, offset: int) -> bytes:
        """Reads up to ``size`` bytes at ``offset`` (like ``os.pread``), followed by the library."""
        _check_offset("size", size)
        _check_offset("offset", offset)
        _check_end(offset, size)
        if size > _CLIP_ABOVE:
            size = max(0, min(size, os.fstat(self.fd).st_size - offset))
        return _native.pread(self.fd, size, offset)

    def readinto(self, buffer: Any, offset: int) -> int:
        """Reads into ``buffer`` at ``offset`` (like ``os.preadv``); returns the byte count."""
        _check_offset("offset", offset)
        length = memoryview(buffer).nbytes
        _check_end(offset, length)
        _note_read(self.fd, offset, length)
        return os.preadv(self.fd, [buffer], offset)

    def close(self) -> None:
        """Stops tracking the region (and closes the file if the region opened it)."""
        native, self._native = self._native, None
        try:
            if native is not None:
                self._client._regions.remove(self)
                self._client._native.unregister_region(native)
        finally:
            if self._owned and native is not None:
                _native.note_close(self.fd)
                os.close(self.fd)

    def __enter__(self) -> "Region":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open(file: FileLike) -> tuple[int, bool]:
    """The descriptor of a file object, path or descriptor, and whether it was opened here."""
    if isinstance(file, int):
        return file, False
    if isinstance(file, (str, bytes, os.PathLike)):
        return os.open(file, os.O_RDONLY | os.O_CLOEXEC), True
    fileno = getattr(file, "fileno", None)
    if fileno is None:
        raise TypeError(f"expected a file object, a path or a descriptor, not {type(file).__name__}")
    return fileno(), False
