"""Benchmarks of the data-loader shapes, each row beside the device's limit for the same bytes.

``python -m libprefetch.bench workers``: one shuffled epoch over packed records read by one reader and
by N worker processes shaped as DataLoader's (batches handed round-robin, ``--prefetch-factor`` per
worker outstanding, each worker fetching its batches in turn and sending each batch's size back),
stock (plain ``pread``) and with the library (``Records.epoch``, ``RecordDataset``), quiet and with
CPU-bound processes beside them (as a training job; ``--burners``); the limit is the same records read in offset order with ``O_DIRECT``,
32 requests of at most 1 MiB in flight; the warm rows are the N-worker passes with every page of the
file cached and no cgroup, the bound the cores set on a mode that hands records to Python (the CPU's
limit beside the device's). Each pass's line (stderr) gives the requests the file's block device
served, their mean size and the share of the pass it had one in flight (every process's I/O on the
device counts; where it idled, the readers and their advice had left it nothing to read).
``--detail`` prints where each worker's time went: waiting for its next batch, in its reads, each
thread on a core and waiting for one (the advice thread named ``prefetch-phases`` or
``prefetch-sweep``), and its counters.

``python -m libprefetch.bench tokens``: nanoGPT's ``get_batch`` (random windows of ``block_size + 1``
``uint16`` tokens, ``batch_size`` per step): ``numpy.memmap`` with ``MADV_RANDOM``, plain ``pread``
per window, ``TokenWindows``, and the limit (the windows' distinct pages, ``O_DIRECT`` depth 32).

Both run cold (the file's pages dropped before each pass), in a memory cgroup of a third of the file
(at least 128 MiB; made for the run, needs root) and without one; the machine is what it is, so read the ratios of one
run. The paper's section 5 setting (data larger than memory, a known order) for a data loader.

Deviations: workers send back batch sizes, not tensors (DataLoader's shared-memory transfer is not
what is measured).
"""

from __future__ import annotations

import argparse
import ctypes
import itertools
import mmap
import multiprocessing
import os
import signal
import statistics
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from ._loader import RecordDataset, epoch_order
from ._records import Records
from ._tokens import TokenWindows
from .bench import GIB, MIB, MemoryCgroup, disk_read_bytes, drop_cache, ensure_file, outside_cgroup, record_layout

#: O_DIRECT request size and requests in flight of the limit.
_REQUEST = MIB
_DEPTH = 32

#: prctl(2) option: a signal for this process when its parent dies.
_PR_SET_PDEATHSIG = 1

#: The limit of a reader holding the cgroup's memory at a time: the epoch's records in its order, cut
#: into windows of that memory, each window's read in offset order at depth 32 (what any loader with
#: that memory could at best have the device do; a shuffled order leaves few neighbours in a window).
WINDOW_LIMIT = "limit-direct-32-window"

#: The smallest memory cgroup: the processes' own memory (the interpreters, the limit's 32 MiB of
#: buffers) is charged to it too, and a third of a small file would leave it none.
_CGROUP_FLOOR = 128 * MIB


def extents(ranges: list[tuple[int, int]], page: int) -> list[tuple[int, int]]:
    """``(offset, length)`` byte ranges as page-aligned requests of at most 1 MiB, in offset order,
    touching pages merged."""
    merged: list[list[int]] = []
    for offset, length in sorted(ranges):
        if length == 0:
            continue
        first, end = offset - offset % page, -(-(offset + length) // page) * page
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([first, end])
    return [(start, min(_REQUEST, end - start)) for first, end in merged for start in range(first, end, _REQUEST)]


def windows_in_order(ranges: list[tuple[int, int]], window: int, page: int) -> list[list[tuple[int, int]]]:
    """``(offset, length)`` byte ranges, in the order they are read, cut into windows of at most
    ``window`` bytes of pages (one range at least), each window's as ``extents``: what a reader that
    may hold ``window`` bytes at a time could have the device read at once."""
    windows: list[list[tuple[int, int]]] = []
    current: list[tuple[int, int]] = []
    held = 0
    for offset, length in ranges:
        pages = (-(-(offset + length) // page) - offset // page) * page
        if current and held + pages > window:
            windows.append(extents(current, page))
            current, held = [], 0
        current.append((offset, length))
        held += pages
    if current:
        windows.append(extents(current, page))
    return windows


def direct_read(path: Path, requests: list[tuple[int, int]]) -> int:
    """Reads ``requests`` with ``O_DIRECT``, ``_DEPTH`` in flight: the device's best for those bytes.
    Each of ``_DEPTH`` threads takes the next request from one shared iterator (whose ``next`` the GIL
    keeps whole) and holds it in flight: a thread pool's futures cost Python ~60 us a request, which
    bound a limit of small requests by the CPU (48 thousand records: 2.8 s against 1.6 s)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECT)
    pending = iter(requests)
    done = [0] * _DEPTH
    failed: list[BaseException] = []

    def reader(index: int) -> None:
        view = memoryview(mmap.mmap(-1, _REQUEST))  # page-aligned, as O_DIRECT needs
        try:
            for offset, length in pending:
                done[index] += os.preadv(fd, [view[:length]], offset)
        except BaseException as error:  # re-raised by the caller: the limit is never short
            failed.append(error)

    try:
        threads = [threading.Thread(target=reader, args=(i,)) for i in range(min(_DEPTH, len(requests)))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failed:
            raise failed[0]
        return sum(done)
    finally:
        os.close(fd)


class Warm:
    """A mode timed with every page of the file cached, outside the setting's memory cgroup (the
    burners stay): what the cores alone allow it."""

    def __init__(self, read: Callable[[], int]) -> None:
        self.read = read

    def __call__(self) -> int:
        return self.read()


def read_whole(path: Path) -> None:
    """Reads the file from start to end (into the page cache)."""
    with open(path, "rb", buffering=0) as file:
        while file.read(_REQUEST):
            pass


def _die_with(parent: int) -> None:
    """Makes this child process die with its parent (PR_SET_PDEATHSIG), even one killed by SIGKILL."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


def _burn(parent: int) -> None:
    _die_with(parent)
    while True:
        pass


@contextmanager
def burners(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes for the duration (a training job's compute beside the loader)."""
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_burn, args=(os.getpid(),), daemon=True) for _ in range(count)]
    for process in processes:
        process.start()
    try:
        yield
    finally:
        for process in processes:
            process.kill()
            process.join()


class _Account:
    """Where one worker's time went (printed with ``--detail``): waiting for its next batch, inside
    its reads, and each of its threads' time on a core and waiting for one (``schedstat``)."""

    def __init__(self, name: str, detail: bool) -> None:
        self.name, self.detail = name, detail
        self.waiting = self.reading = 0.0

    def next_task(self, tasks: Any) -> Any:
        start = time.perf_counter()
        task = tasks.get()
        self.waiting += time.perf_counter() - start
        return task

    def read(self, read: Callable[[int], bytes], task: list[int]) -> int:
        start = time.perf_counter()
        total = sum(len(read(i)) for i in task)
        self.reading += time.perf_counter() - start
        return total

    def report(self, extra: str = "") -> None:
        if not self.detail:
            return
        threads = []
        for task in sorted(os.listdir("/proc/self/task")):
            name = Path(f"/proc/self/task/{task}/comm").read_text().strip()
            on_cpu, waiting, _ = Path(f"/proc/self/task/{task}/schedstat").read_text().split()
            threads.append(f"{name} {int(on_cpu) / 1e9:.2f}/{int(waiting) / 1e9:.2f}")
        line = (f"        {self.name}: waiting for batches {self.waiting:.2f} s, reading {self.reading:.2f} s; "
                f"threads on a core/waiting for one (s): {', '.join(threads)}{extra}\n")
        os.write(sys.stderr.fileno(), line.encode())  # one write: the workers' lines do not interleave


def _plain_worker(parent: int, records: Records, detail: bool, tasks: Any, results: Any) -> None:
    _die_with(parent)
    account = _Account("plain worker", detail)
    while (task := account.next_task(tasks)) is not None:
        results.put(account.read(records.__getitem__, task))
    account.report()


def _library_worker(parent: int, dataset: RecordDataset, worker: int, workers: int, detail: bool, tasks: Any, results: Any) -> None:
    _die_with(parent)
    account = _Account(f"library worker {worker}", detail)
    dataset.start_worker(worker, workers)
    budgets = []  # the memory this worker planned with after each batch (--detail)
    while (task := account.next_task(tasks)) is not None:
        results.put(account.read(dataset.__getitem__, task))
        if detail and (stats := dataset.stats()) is not None:
            budgets.append(stats.budget_bytes / MIB)
    planned = ""
    if budgets:
        planned = f"; planned with {min(budgets):.1f}-{max(budgets):.1f} MiB (median {statistics.median(budgets):.1f})"
    account.report(f"\n        {dataset.summary()}{planned}")
    dataset.stop()


def loader_shaped(
    targets: list[Callable[..., None]], args: list[tuple[Any, ...]], batches: list[list[int]], prefetch_factor: int = 2
) -> int:
    """DataLoader's dispatch: batch ``t`` to worker ``t % N``, ``prefetch_factor`` per worker outstanding;
    returns bytes."""
    context = multiprocessing.get_context("fork")
    queues = [context.Queue() for _ in targets]
    results = context.Queue()
    processes = [
        context.Process(target=target, args=(os.getpid(), *extra, queue, results), daemon=True)
        for target, extra, queue in zip(targets, args, queues)
    ]
    for process in processes:
        process.start()
    cycle = itertools.cycle(range(len(queues)))
    sent = total = 0
    while sent < min(prefetch_factor * len(queues), len(batches)):
        queues[next(cycle)].put(batches[sent])
        sent += 1
    for _ in batches:
        total += results.get()
        if sent < len(batches):
            queues[next(cycle)].put(batches[sent])
            sent += 1
    for queue in queues:
        queue.put(None)
    for process in processes:
        process.join()
    failed = [process.exitcode for process in processes if process.exitcode]
    if failed:
        raise RuntimeError(f"worker processes failed (exit codes {failed}); see their errors above")
    return total


def workers_modes(
    records: Records,
    seed: int,
    order: list[int],
    workers: int,
    batch: int,
    detail: bool = False,
    prefetch_factor: int = 2,
    max_memory: Optional[int] = None,
    window: Optional[int] = None,
) -> dict[str, Callable[[], int]]:
    """The modes of ``workers``; ``window``: the memory of the cgroup setting, for the limit a reader
    holding that much at a time has (none: the mode is left out)."""
    batches = [order[s : s + batch] for s in range(0, len(order), batch)]
    dataset = RecordDataset(records, batch_size=batch, seed=seed, max_memory=max_memory)
    assert dataset.order() == order
    page = os.sysconf("SC_PAGE_SIZE")
    ranges = [(records._offsets[i], records._lengths[i]) for i in order]
    requests = extents(ranges, page)
    windowed = windows_in_order(ranges, window, page) if window else []
    return {
        "stock-1": lambda: sum(len(records[i]) for i in order),
        "libprefetch-1": lambda: sum(len(r) for r in records.epoch(order)),
        f"stock-{workers}w": lambda: loader_shaped(
            [_plain_worker] * workers, [(records, detail)] * workers, batches, prefetch_factor
        ),
        f"libprefetch-{workers}w": lambda: loader_shaped(
            [_library_worker] * workers,
            [(dataset, w, workers, detail) for w in range(workers)],
            batches,
            prefetch_factor,
        ),
        "limit-direct-32": lambda: direct_read(Path(records.path), requests),
        **({WINDOW_LIMIT: lambda: sum(direct_read(Path(records.path), w) for w in windowed)} if window else {}),
        f"warm-stock-{workers}w": Warm(
            lambda: loader_shaped([_plain_worker] * workers, [(records, detail)] * workers, batches, prefetch_factor)
        ),
        f"warm-libprefetch-{workers}w": Warm(
            lambda: loader_shaped(
                [_library_worker] * workers,
                [(dataset, w, workers, detail) for w in range(workers)],
                batches,
                prefetch_factor,
            )
        ),
    }


def timed(path: Path, read: Callable[[], int]) -> tuple[float, int, str]:
    """Seconds, bytes read from disk (``/proc/self/io`` counts the reaped worker processes too) and
    the device's load (``device_load``) of one pass: cold, or for a ``Warm`` mode with the whole file
    read first, out of the cgroup."""
    if isinstance(read, Warm):
        with outside_cgroup():
            read_whole(path)
            return _timed_pass(path, read)
    drop_cache(path)
    return _timed_pass(path, read)


def _timed_pass(path: Path, read: Callable[[], int]) -> tuple[float, int, str]:
    before, device = disk_read_bytes(), device_counters(path)
    start = time.perf_counter()
    read()
    seconds = time.perf_counter() - start
    return seconds, disk_read_bytes() - before, device_load(device, device_counters(path), seconds)


def device_counters(path: Path) -> Optional[tuple[int, int, int]]:
    """(reads completed, bytes read, milliseconds with a request in flight) of the block device that
    holds ``path`` (``/sys/dev/block/MAJ:MIN/stat``: every process's I/O on it counts); None for a
    file on no block device (FUSE, tmpfs)."""
    device = os.stat(path).st_dev
    try:
        fields = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}/stat").read_text().split()
    except OSError:
        return None
    return int(fields[0]), int(fields[2]) * 512, int(fields[9])


def device_load(before: Optional[tuple[int, int, int]], after: Optional[tuple[int, int, int]], seconds: float) -> str:
    """The device's requests over a pass, their mean size and the share of the pass it had one in
    flight (the rest it idled: the readers had left it nothing to read); empty off a block device."""
    if before is None or after is None:
        return ""
    requests, moved, busy = (now - then for now, then in zip(after, before))
    return (f"{requests:7} requests of {moved / 1024 / max(requests, 1):5.1f} KiB, "
            f"device busy {busy / 1e3 / max(seconds, 1e-9):4.0%}")


def run_rows(settings: list[tuple[str, Callable[[], Any]]], path: Path, modes: dict[str, Callable[[], int]], runs: int) -> list[tuple[str, str, float, float]]:
    """For every setting, the modes alternated ``runs`` times: (setting, mode, median s, median MiB read)."""
    rows = []
    for name, enter in settings:
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        disk: dict[str, list[float]] = {mode: [] for mode in modes}
        with enter():
            for _ in range(runs):
                for mode, read in modes.items():
                    seconds, read_bytes, device = timed(path, read)
                    times[mode].append(seconds)
                    disk[mode].append(read_bytes / MIB)
                    print(f"{name:22} {mode:18} {seconds:7.2f} s {read_bytes / MIB:9.0f} MiB {device}", file=sys.stderr)
        rows += [(name, mode, statistics.median(times[mode]), statistics.median(disk[mode])) for mode in modes]
    return rows


def print_rows(rows: list[tuple[str, str, float, float]], base: str, warm: Optional[str] = None) -> None:
    """The table: each row's speed against ``base``, the device's limits (the windowed one where it
    was run) and (when given) the warm mode."""
    limits = ["limit-direct-32"] + ([WINDOW_LIMIT] if any(mode == WINDOW_LIMIT for _, mode, _, _ in rows) else [])
    against = [base, *limits] + ([warm] if warm else [])
    print(f"| setting | mode | median s | {' | '.join(f'vs {mode}' for mode in against)} | read from disk (MiB) |")
    print("|---|---|---:|" + "---:|" * len(against) + "---:|")
    for setting, mode, seconds, read in rows:
        same = {m: s for st, m, s, _ in rows if st == setting}
        ratios = " | ".join(f"{same[other] / seconds:.2f}x" for other in against)
        print(f"| {setting} | {mode} | {seconds:.2f} | {ratios} | {read:.0f} |")


def cgroup_bytes(size: int) -> int:
    """The memory cgroup's limit for a file of ``size`` bytes: a third of it, at least the floor."""
    return max(size // 3, _CGROUP_FLOOR)


def settings(size: int, burn_counts: tuple[int, ...], where: str) -> list[tuple[str, Callable[[], Any]]]:
    """(name, context) of every setting: with and without the cgroup, with each count of burners."""
    found = []
    for cgroup in {"both": (False, True), "disk": (False,), "cgroup": (True,)}[where]:
        for burn in dict.fromkeys(burn_counts):  # --burners 0: one quiet setting

            def enter(cgroup: bool = cgroup, burn: int = burn) -> Any:
                stack = ExitStack()
                if cgroup:
                    stack.enter_context(MemoryCgroup(cgroup_bytes(size)))
                stack.enter_context(burners(burn))
                return stack

            name = ("cgroup-1/3" if cgroup else "disk") + (f" +{burn} burners" if burn else " quiet")
            found.append((name, enter))
    return found


def workers_benchmark(args: argparse.Namespace) -> None:
    path, size = Path(args.file), int(args.size_gib * GIB)
    offsets, lengths = record_layout(size, args.seed)
    ensure_file(path, size)
    print(f"{len(offsets)} records of 4-64 KiB, {size / GIB:.2f} GiB, {args.workers} workers", file=sys.stderr)
    with Records(path, offsets, lengths) as records:
        order = epoch_order(len(records), args.seed, 0)
        modes = workers_modes(
            records,
            args.seed,
            order,
            args.workers,
            args.batch_size,
            args.detail,
            args.prefetch_factor,
            window=None if args.where == "disk" else cgroup_bytes(size),
        )
        rows = run_rows(settings(size, (0, args.burners), args.where), path, modes, args.runs)
    print_rows(rows, f"stock-{args.workers}w", f"warm-stock-{args.workers}w")


def tokens_modes(path: Path, draws: list[Any], block: int) -> dict[str, Callable[[], int]]:
    import numpy

    row = (block + 1) * 2
    starts = [int(s) for step in draws for s in step]

    def memmap_random() -> int:
        data = numpy.memmap(path, dtype=numpy.uint16, mode="r")
        data._mmap.madvise(mmap.MADV_RANDOM)  # the mapping numpy made
        return sum(numpy.stack([data[s : s + block + 1] for s in step]).nbytes for step in draws)

    def pread_one() -> int:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return sum(len(os.pread(fd, row, s * 2)) for s in starts)
        finally:
            os.close(fd)

    def windows() -> int:
        with TokenWindows(path, block_size=block, dtype=numpy.uint16) as tokens:
            return sum(x.size * 2 for x, _ in tokens.batches(draws))

    page = os.sysconf("SC_PAGE_SIZE")
    requests = extents([(s * 2, row) for s in starts], page)
    return {
        "memmap-random": memmap_random,
        "pread-1": pread_one,
        "token-windows": windows,
        "limit-direct-32": lambda: direct_read(path, requests),
    }


def tokens_benchmark(args: argparse.Namespace) -> None:
    import numpy

    path, size = Path(args.file), int(args.size_gib * GIB) // MIB * MIB  # whole tokens
    ensure_file(path, size)
    rng = numpy.random.default_rng(args.seed)
    draws = [rng.integers(size // 2 - args.block_size, size=args.batch_size) for _ in range(args.steps)]
    page = os.sysconf("SC_PAGE_SIZE")
    row = (args.block_size + 1) * 2
    distinct = {p for step in draws for s in step for p in range(int(s) * 2 // page, (int(s) * 2 + row - 1) // page + 1)}
    print(f"{args.steps} steps of {args.batch_size} windows of {args.block_size + 1} tokens, {size / GIB:.2f} GiB; "
          f"distinct pages {len(distinct) * page / MIB:.0f} MiB", file=sys.stderr)
    modes = tokens_modes(path, draws, args.block_size)
    rows = run_rows(settings(size, (0,), args.where), path, modes, args.runs)
    print_rows(rows, "memmap-random")
    print(f"\nthe windows' distinct pages: {len(distinct) * page / MIB:.0f} MiB")


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def add_parsers(sub: Any) -> None:
    """The ``workers`` and ``tokens`` subcommands of ``python -m libprefetch.bench``."""
    workers = sub.add_parser("workers", help="one reader and N DataLoader-shaped workers, stock/library/limit")
    workers.add_argument("--file", default="libprefetch-bench-records.bin", help="data file (made if missing)")
    workers.add_argument("--size-gib", type=float, default=1.0, help="file size in GiB (default 1)")
    workers.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    workers.add_argument("--burners", type=int, default=2, help="CPU-bound processes beside them (default 2)")
    workers.add_argument("--detail", action="store_true",
                         help="print where each worker's time went and its counters (to stderr)")
    workers.add_argument("--batch-size", type=int, default=32, help="records per batch (default 32)")
    workers.add_argument("--prefetch-factor", type=_positive, default=2,
                         help="batches outstanding per worker, DataLoader's prefetch_factor (default 2, its default)")
    tokens = sub.add_parser("tokens", help="nanoGPT-style token windows: memmap, pread, TokenWindows, limit")
    tokens.add_argument("--file", default="libprefetch-bench-tokens.bin", help="token file (made if missing)")
    tokens.add_argument("--size-gib", type=float, default=1.0, help="file size in GiB (default 1)")
    tokens.add_argument("--steps", type=int, default=500, help="training steps (default 500)")
    tokens.add_argument("--batch-size", type=int, default=12, help="windows per step (default 12)")
    tokens.add_argument("--block-size", type=int, default=1024, help="tokens per window minus one (default 1024)")
    for parser in (workers, tokens):
        parser.add_argument("--seed", type=int, default=1, help="seed of the layout and the draws")
        parser.add_argument("--runs", type=int, default=3, help="alternated runs per setting; medians (default 3)")
        parser.add_argument("--where", choices=("both", "disk", "cgroup"), default="both",
                            help="without a cgroup, in a cgroup of a third of the file, or both")


def run(args: argparse.Namespace) -> Optional[bool]:
    """Runs ``args.benchmark`` if it is one of this module's; None otherwise."""
    if args.benchmark == "workers":
        workers_benchmark(args)
        return True
    if args.benchmark == "tokens":
        tokens_benchmark(args)
        return True
    return None
