#!/usr/bin/python3
"""Warm Python rows of docs/python.md, two builds side by side: plain reads against the library with every
page of the records file cached. Each venv's interpreter runs a sitting in turn (the order reversed every
other sitting); a sitting times ROUNDS pairs, plain then library (the other way round every other pair):
`one`, `records[i]` over the epoch's order against `Records.epoch(order)` (its page list included), or
`4w`, the benchmark's `warm-stock-4w` against `warm-libprefetch-4w` (4 worker processes shaped as
DataLoader's). Prints, per venv, the medians and the median of the pairs' ratios (plain's time over the
library's) with the sign test's 95% interval, and the load.

Usage: python_warm_ab.py FILE one|4w SITTINGS ROUNDS VENV [VENV ...]
  e.g. python_warm_ab.py /var/tmp/records.bin one 8 3 /var/tmp/main-venv target/python-venv
(FILE: a records file of `python -m libprefetch.bench workers --file FILE`, 1 GiB.)
"""

import json
import os
import statistics
import subprocess
import sys
from math import comb

#: One sitting, run by each venv's interpreter (argv: file, mode, rounds, sitting).
SITTING = r"""
import json, sys, time
from pathlib import Path
from libprefetch import Records
from libprefetch.bench import record_layout
from libprefetch._bench_loaders import read_whole, workers_modes
from libprefetch._loader import epoch_order

path, mode, rounds, sitting = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
offsets, lengths = record_layout(path.stat().st_size, 0)
read_whole(path)
pairs = []
with Records(path, offsets, lengths) as records:
    order = epoch_order(len(records), 0, 0)
    if mode == "one":
        plain = lambda: sum(len(records[i]) for i in order)
        library = lambda: sum(len(r) for r in records.epoch(order))
    else:
        modes = workers_modes(records, 0, order, workers=4, batch=32)
        plain, library = modes["warm-stock-4w"], modes["warm-libprefetch-4w"]
    for round in range(rounds):
        times = {}
        turns = [("plain", plain), ("library", library)]
        for name, run in turns if (round + sitting) % 2 == 0 else turns[::-1]:
            start = time.perf_counter()
            run()
            times[name] = time.perf_counter() - start
        pairs.append((times["plain"], times["library"]))
print(json.dumps(pairs))
"""


def interval(ratios: list[float]) -> tuple[float, float]:
    """The sign test's 95% interval of the median."""
    ratios, k, low = sorted(ratios), len(ratios), 0
    while low < k // 2 and sum(comb(k, x) for x in range(low + 1)) / 2**k <= 0.025:
        low += 1
    return (ratios[low - 1], ratios[k - low]) if low else (ratios[0], ratios[-1])


def main() -> None:
    path, mode, sittings, rounds, venvs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
    pairs: dict[str, list[tuple[float, float]]] = {venv: [] for venv in venvs}
    loads = []
    for sitting in range(sittings):
        for venv in venvs if sitting % 2 == 0 else venvs[::-1]:
            args = [os.path.join(os.path.abspath(venv), "bin", "python"), "-c", SITTING, path, mode, str(rounds), str(sitting)]
            pairs[venv] += json.loads(subprocess.run(args, capture_output=True, text=True, check=True, cwd="/").stdout)
        with open("/proc/loadavg") as loadavg:
            loads.append(float(loadavg.read().split()[0]))
    for venv, found in pairs.items():
        ratios = [plain / library for plain, library in found]
        low, high = interval(ratios)
        plain = statistics.median(p for p, _ in found)
        library = statistics.median(l for _, l in found)
        print(
            f"{venv}: {mode}, {len(found)} pairs: plain {plain:.3f} s, library {library:.3f} s, "
            f"ratio {statistics.median(ratios):.3f} [{low:.2f}, {high:.2f}]"
        )
    print(f"load {min(loads):.2f}-{max(loads):.2f}")


if __name__ == "__main__":
    main()
