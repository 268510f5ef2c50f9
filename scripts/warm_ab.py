#!/usr/bin/python3
"""Warm rows of docs/design.md ("Resting while the cache holds everything"), builds side by side: the
`stock` and `libprefetch` passes of `prefetch bench random|strided`, run as the benchmark's own child
processes (`prefetch bench __child`, a request on stdin) on a data file already cached. Each pair runs
every build in turn (the order of the builds, and of the two modes, reversed every other pair); prints,
per build, the median wall time (the child's own timer) and CPU time (user + system, all its threads)
of each mode, and the median of the pairs' ratios (stock's over the library's) with the sign test's 95%
interval, and the load.

Warm means warm: the machine may reclaim page cache left idle (a DAMON scheme here pages out what was
not touched for about a minute), so every page of the file is read again right before each pair, and
a run that still read from the disk (the child's `read_bytes`) is counted as a miss and reported;
pairs with a miss are left out of the medians.

Usage: warm_ab.py random|strided FILE PAIRS PREFETCH [PREFETCH ...]
  e.g. warm_ab.py random /var/tmp/data-256M.bin 30 /var/tmp/main/prefetch target/release/prefetch
(FILE: written by `prefetch bench random|strided --file FILE --file-size 256M` first; random: 100,000
reads of 4 KiB pages, seed 1; strided: the largest square of 16 KiB tiles.)
"""

import json
import math
import os
import statistics
import subprocess
import sys


def request(workload: str, path: str, mode: str) -> bytes:
    """The benchmark child's request for one pass of `mode` over the file."""
    size = os.path.getsize(path)
    if workload == "random":
        shape = {"kind": "random", "pages": 100000, "seed": 1, "span_bytes": size}
    else:
        shape = {"kind": "strided", "tile_bytes": 16384, "tiles_per_side": math.isqrt(size // 16384)}
    wanted = {"file": path, "workload": shape, "mode": mode, "window_bytes": None, "infill_bytes": None}
    return json.dumps(wanted).encode()


def touch(path: str) -> None:
    """Reads every page of the file, so that the pair finds it all cached."""
    with open(path, "rb", buffering=0) as data:
        while data.read(1 << 20):
            pass


def run(build: str, wanted: bytes) -> tuple[float, float, int]:
    """One pass: the child's wall seconds, its CPU seconds and the bytes it read from the disk."""
    child = subprocess.Popen([build, "bench", "__child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(wanted)
    child.stdin.close()
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = 0  # reaped here, with its usage
    if status != 0:
        raise RuntimeError(f"{build} failed")
    found = json.loads(out)
    return found["wall_seconds"], usage.ru_utime + usage.ru_stime, found["read_bytes"]


def interval(ratios: list[float]) -> tuple[float, float]:
    """The sign test's 95% interval of the median."""
    ratios, k, low = sorted(ratios), len(ratios), 0
    while low < k // 2 and sum(math.comb(k, x) for x in range(low + 1)) / 2**k <= 0.025:
        low += 1
    return (ratios[low - 1], ratios[k - low]) if low else (ratios[0], ratios[-1])


def main() -> None:
    workload, path, count, builds = sys.argv[1], os.path.abspath(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    wanted = {mode: request(workload, path, mode) for mode in ("stock", "libprefetch")}
    for build in builds:  # the file cached, both modes warmed up
        run(build, wanted["libprefetch"])
        run(build, wanted["stock"])
    pairs: dict[str, list[dict[str, tuple[float, float, int]]]] = {build: [] for build in builds}
    loads, missed = [], []
    for pair in range(count):
        touch(path)
        runs = {}
        for build in builds if pair % 2 == 0 else builds[::-1]:
            modes = ["stock", "libprefetch"] if (pair // 2) % 2 == 0 else ["libprefetch", "stock"]
            runs[build] = {mode: run(build, wanted[mode]) for mode in modes}
        misses = [f"{build} {mode} {r[2] >> 10} KiB" for build, modes in runs.items() for mode, r in modes.items() if r[2]]
        missed.extend(misses)
        if not misses:
            for build, modes in runs.items():
                pairs[build].append(modes)
        with open("/proc/loadavg") as loadavg:
            loads.append(float(loadavg.read().split()[0]))
    for build, found in pairs.items():
        if not found:
            continue
        line = [f"{build}: {workload}, {len(found)} pairs"]
        for what, k in (("wall", 0), ("cpu", 1)):
            ratios = [p["stock"][k] / p["libprefetch"][k] for p in found]
            low, high = interval(ratios)
            stock = statistics.median(p["stock"][k] for p in found)
            library = statistics.median(p["libprefetch"][k] for p in found)
            line.append(f"{what} stock {stock:.3f} s, libprefetch {library:.3f} s, ratio {statistics.median(ratios):.3f} [{low:.2f}, {high:.2f}]")
        print("; ".join(line))
    left_out = count - len(next(iter(pairs.values())))
    print(f"load {min(loads):.2f}-{max(loads):.2f}; {left_out} of {count} pairs left out, runs that read from the disk: {', '.join(missed) or 'none'}")


if __name__ == "__main__":
    main()
