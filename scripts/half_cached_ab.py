#!/usr/bin/python3
"""Half-cached rows of docs/design.md ("Resting while the cache holds everything"), builds side by side:
the `libprefetch` pass of `prefetch bench random` (the benchmark's child, `prefetch bench __child`, as
`warm_ab.py` runs it) on a data file whose first half is cached and second half is not: before each run
the file is dropped from the page cache (`POSIX_FADV_DONTNEED`) and its first half read back. A client
that rests on the cached half must still prefetch the cold one. Each pair runs every build in turn
(reversed every other pair); prints each run (wall seconds, bytes read from the disk, the library's
misses, rounds and pages fetched), then per build the median wall time and the median of the pairs'
ratios (the first build's time over each build's).

Usage: half_cached_ab.py FILE PAIRS PREFETCH [PREFETCH ...]
  e.g. half_cached_ab.py /var/tmp/data-256M.bin 8 /var/tmp/main/prefetch target/release/prefetch
(FILE: written by `prefetch bench random --file FILE --file-size 256M` first.)
"""

import json
import os
import statistics
import subprocess
import sys

from warm_ab import request


def half_cached(path: str) -> None:
    """Drops the file from the page cache and reads its first half back."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        half, done = os.fstat(fd).st_size // 2, 0
        while done < half:
            done += len(os.pread(fd, min(1 << 20, half - done), done))
    finally:
        os.close(fd)


def run(build: str, wanted: bytes) -> float:
    """One pass on the half-cached file: its wall seconds (the child's own timer), printed with its counters."""
    child = subprocess.run([build, "bench", "__child"], input=wanted, capture_output=True, check=True)
    found = json.loads(child.stdout)
    library = found["outcome"]["library"]
    with open("/proc/loadavg") as loadavg:
        load = loadavg.read().split()[0]
    print(f"{build}: {found['wall_seconds']:.3f} s, read {found['read_bytes'] >> 10} KiB, misses {library['misses']}, "
          f"rounds {library['rounds']}, pages fetched {library['pages_fetched']}, load {load}", flush=True)
    return found["wall_seconds"]


def main() -> None:
    path, count, builds = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    wanted = request("random", path, "libprefetch")
    walls: dict[str, list[float]] = {build: [] for build in builds}
    for pair in range(count):
        for build in builds if pair % 2 == 0 else builds[::-1]:
            half_cached(path)
            walls[build].append(run(build, wanted))
    for build, found in walls.items():
        ratios = [first / own for first, own in zip(walls[builds[0]], found)]
        print(f"{build}: median {statistics.median(found):.3f} s, median ratio {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
