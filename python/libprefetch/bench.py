"""Benchmark: one shuffled epoch over a file of packed records, stock readers against libprefetch.

``python -m libprefetch.bench records`` makes (or reuses) a 2 GiB file of records of 4-64 KiB (about
140,000; sizes log-skewed towards small ones, as images and serialized samples are), and reads one
shuffled epoch with a cold page cache (the file's pages are dropped before each pass) in these modes,
side by side in one run:

- ``stock-1``: ``os.pread`` of each record in order from one thread;
- ``stock-pool-8``: the same reads from a pool of 8 threads (what DataLoader workers give);
- ``torch-8``: ``torch.utils.data.DataLoader(records, sampler=order, num_workers=8)``, only if torch
  is installed (the package never imports it otherwise);
- ``libprefetch-1``: ``Records.epoch(order)`` from one thread;
- two limits, which read the same pages (every record: the whole file) but hand no record to Python:
  ``limit-cache-seq``, the whole file read in order with 1 MiB reads (the page cache's best: the
  kernel's readahead, no seek, no Python per record), and ``limit-direct-32``, the device's own best,
  the whole file read with ``O_DIRECT`` in 1 MiB requests, 32 in flight.

Each pass runs on the machine as it is ("disk") and inside a memory cgroup limited to a quarter of the
file ("cgroup", needs root and cgroup v1 or v2), made for the run and removed after it. The table gives
seconds, throughput, speed-up over ``stock-1`` and the bytes the process read from disk
(``/proc/self/io``; a torch pass's workers are not counted). This is the paper's Figure 9/10 setting
(section 5: data larger than memory, a known order) for a data loader.

Deviations: the paper's benchmarks are C programs; this one measures the Python package end to end.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import mmap
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

from ._records import Records

GIB = 1 << 30
MIB = 1 << 20


def record_layout(total_bytes: int, seed: int) -> tuple[list[int], list[int]]:
    """Offsets and lengths of records of 4-64 KiB (4 KiB * 16**(u*u)) packed up to ``total_bytes``."""
    rng = random.Random(seed)
    offsets: list[int] = []
    lengths: list[int] = []
    at = 0
    while True:
        length = int(4096 * 16 ** (rng.random() ** 2))
        if at + length > total_bytes:
            break
        offsets.append(at)
        lengths.append(length)
        at += length
    return offsets, lengths


def ensure_file(path: Path, size: int) -> None:
    """Writes ``size`` random bytes to ``path`` unless it already has that size."""
    if path.exists() and path.stat().st_size == size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"writing {size / GIB:.1f} GiB to {path} ...", file=sys.stderr)
    with open(path, "wb") as out:
        left = size
        while left:
            chunk = os.urandom(min(left, 16 * MIB))
            out.write(chunk)
            left -= len(chunk)
        out.flush()
        os.fsync(out.fileno())


def drop_cache(path: Path) -> None:
    """Evicts the file's pages from the page cache (cold cache for the next pass)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def disk_read_bytes() -> int:
    """Bytes this process has caused to be read from storage (``read_bytes`` of /proc/self/io)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    return 0


def stock_one(records: Records, order: list[int]) -> int:
    return sum(len(records[i]) for i in order)


def stock_pool(records: Records, order: list[int]) -> int:
    with ThreadPoolExecutor(max_workers=8) as pool:
        return sum(map(len, pool.map(records.__getitem__, order, chunksize=64)))


def with_library(records: Records, order: list[int]) -> int:
    epoch = records.epoch(order)
    total = sum(len(record) for record in epoch)
    print(f"        libprefetch counters: {epoch.stats()}", file=sys.stderr)
    return total


#: Request size and requests in flight of the limit modes.
_LIMIT_REQUEST = MIB
_LIMIT_DEPTH = 32


def cache_sequential(records: Records, order: list[int]) -> int:
    """The page cache's best for the same pages: the whole file in order, 1 MiB reads."""
    fd = os.open(records.path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        total = 0
        while chunk := os.read(fd, _LIMIT_REQUEST):
            total += len(chunk)
        return total
    finally:
        os.close(fd)


def direct_depth_32(records: Records, order: list[int]) -> int:
    """The device's best for the same pages: the whole file with O_DIRECT, 32 requests in flight."""
    fd = os.open(records.path, os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECT)
    size = os.fstat(fd).st_size
    starts = range(0, size, _LIMIT_REQUEST)

    def read_at(start: int, buffer: mmap.mmap) -> int:
        # O_DIRECT needs an aligned buffer: an anonymous mapping is page-aligned.
        return os.preadv(fd, [buffer], start)

    try:
        with ThreadPoolExecutor(max_workers=_LIMIT_DEPTH) as pool:
            buffers = threading.local()

            def read_one(start: int) -> int:
                if not hasattr(buffers, "map"):
                    buffers.map = mmap.mmap(-1, _LIMIT_REQUEST)
                return read_at(start, buffers.map)

            return sum(pool.map(read_one, starts))
    finally:
        os.close(fd)


def torch_loader(records: Records, order: list[int]) -> int:
    data = importlib.import_module("torch.utils.data")
    loader = data.DataLoader(records, sampler=order, batch_size=None, num_workers=8, collate_fn=len)
    return sum(loader)


def modes() -> list[tuple[str, Callable[[Records, list[int]], int]]]:
    found: list[tuple[str, Callable[[Records, list[int]], int]]] = [
        ("stock-1", stock_one),
        ("stock-pool-8", stock_pool),
    ]
    if importlib.util.find_spec("torch") is not None:
        found.append(("torch-8", torch_loader))
    found.append(("libprefetch-1", with_library))
    found.append(("limit-cache-seq", cache_sequential))
    found.append(("limit-direct-32", direct_depth_32))
    return found


class MemoryCgroup:
    """A memory cgroup this process joins for a setting and leaves (and removes) afterwards."""

    def __init__(self, limit: int) -> None:
        root = Path("/sys/fs/cgroup")
        if (root / "cgroup.controllers").exists():
            self.mount, self.limit_file = root, "memory.max"
            own = _own_cgroup("0::")
        elif (root / "memory" / "memory.limit_in_bytes").exists():
            self.mount, self.limit_file = root / "memory", "memory.limit_in_bytes"
            own = _own_cgroup("memory")
        else:
            raise SystemExit("no memory cgroup controller under /sys/fs/cgroup; run without --cgroup")
        self.parent = self.mount / own.lstrip("/")
        self.path = self.parent / f"libprefetch-pybench-{os.getpid()}"
        try:
            self.path.mkdir()
            (self.path / self.limit_file).write_text(str(limit))
        except OSError as error:
            if self.path.exists():
                self.path.rmdir()
            raise SystemExit(f"cannot make a memory cgroup ({error}); run as root, or with --disk-only") from None

    def __enter__(self) -> "MemoryCgroup":
        (self.path / "cgroup.procs").write_text(str(os.getpid()))
        _joined.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _joined.remove(self)
        (self.parent / "cgroup.procs").write_text(str(os.getpid()))
        self.path.rmdir()


#: The memory cgroups this process is in for a setting, innermost last.
_joined: list[MemoryCgroup] = []


@contextmanager
def outside_cgroup() -> Iterator[None]:
    """This process (and what it starts) out of the setting's memory cgroup for the duration, back in
    it after: a pass that must not be limited by it (every page cached)."""
    if not _joined:
        yield
        return
    cgroup = _joined[-1]
    (cgroup.parent / "cgroup.procs").write_text(str(os.getpid()))
    try:
        yield
    finally:
        (cgroup.path / "cgroup.procs").write_text(str(os.getpid()))


def _own_cgroup(wanted: str) -> str:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if wanted == "0::" and number == "0" and not controllers:
            return path
        if wanted in controllers.split(","):
            return path
    return "/"


@dataclass(frozen=True)
class Pass:
    """One mode's pass over the epoch in one setting."""

    setting: str
    mode: str
    seconds: float
    bytes: int
    disk: int


def run_setting(name: str, path: Path, records: Records, order: list[int]) -> list[Pass]:
    rows = []
    for mode, read in modes():
        drop_cache(path)
        before = disk_read_bytes()
        start = time.perf_counter()
        total = read(records, order)
        seconds = time.perf_counter() - start
        rows.append(Pass(name, mode, seconds, total, disk_read_bytes() - before))
        print(f"{name:7} {mode:14} {seconds:8.2f} s", file=sys.stderr)
    return rows


def print_table(rows: list[Pass]) -> None:
    print("| setting | mode | seconds | MiB/s | vs stock-1 | vs pool-8 | read from disk (MiB) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        same = {r.mode: r.seconds for r in rows if r.setting == row.setting}
        print(
            f"| {row.setting} | {row.mode} | {row.seconds:.2f} | {row.bytes / MIB / row.seconds:.0f} | "
            f"{same['stock-1'] / row.seconds:.2f}x | {same['stock-pool-8'] / row.seconds:.2f}x | "
            f"{row.disk / MIB:.0f} |"
        )


def records_benchmark(args: argparse.Namespace) -> None:
    path = Path(args.file)
    size = int(args.size_gib * GIB)
    offsets, lengths = record_layout(size, args.seed)
    ensure_file(path, size)
    print(f"{len(offsets)} records of 4-64 KiB, {size / GIB:.1f} GiB, one shuffled epoch", file=sys.stderr)
    with Records(path, offsets, lengths) as records:
        order = records.order(args.seed)
        rows: list[Pass] = []
        if not args.cgroup_only:
            rows += run_setting("disk", path, records, order)
        if not args.disk_only:
            with MemoryCgroup(size // 4):
                rows += run_setting("cgroup", path, records, order)
    print_table(rows)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m libprefetch.bench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="benchmark", required=True)
    records = sub.add_parser("records", help="one shuffled epoch over packed records")
    records.add_argument("--file", default="libprefetch-bench-records.bin", help="data file (made if missing)")
    records.add_argument("--size-gib", type=float, default=2.0, help="file size in GiB (default 2)")
    records.add_argument("--seed", type=int, default=1, help="seed of the record sizes and the order")
    where = records.add_mutually_exclusive_group()
    where.add_argument("--disk-only", action="store_true", help="skip the memory-cgroup setting")
    where.add_argument("--cgroup-only", action="store_true", help="skip the setting without a cgroup")
    from . import _bench_loaders  # imports this module: not at the top

    _bench_loaders.add_parsers(sub)
    args = parser.parse_args(argv)
    if not _bench_loaders.run(args):
        records_benchmark(args)


if __name__ == "__main__":
    main()
