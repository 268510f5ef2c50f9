#!/usr/bin/python3
"""Alternates builds of the Python package over one mode of `python -m libprefetch.bench workers`:
each venv runs one pass in turn (the order reversed every other round), each pass in a fresh
interpreter, cold (the bench's own cold-cache step) or, for a `warm-*` mode, with the file read first.
Prints each pass (seconds, requests the device served and their mean size: `/sys/block/vda/stat`, or
the emulated disk's `.emulate-stats` beside the file) and each venv's medians: the side-by-side runs
of docs/python.md's workers section.

Usage: loader_ab.py FILE GIB MODE RUNS BURNERS VENV [VENV ...]
  e.g. loader_ab.py /var/tmp/records.bin 1 libprefetch-4w 5 2 main-venv target/python-venv
"""

import json
import os
import statistics
import subprocess
import sys

#: One pass, run by each venv's interpreter (argv: file, GiB, mode).
PASS = r"""
import json, sys, time
from pathlib import Path
from libprefetch import _bench_loaders as B
from libprefetch.bench import ensure_file, record_layout
from libprefetch._loader import epoch_order
from libprefetch._records import Records

path, size, mode = Path(sys.argv[1]), int(float(sys.argv[2]) * (1 << 30)), sys.argv[3]

def device():
    stats = path.parent / ".emulate-stats"
    if stats.exists():
        found = json.loads(stats.read_text())
        return found["requests"], found["bytes"]
    fields = Path("/sys/block/vda/stat").read_text().split()
    return int(fields[0]), int(fields[2]) * 512

offsets, lengths = record_layout(size, 1)
ensure_file(path, size)
with Records(path, offsets, lengths) as records:
    read = B.workers_modes(records, 1, epoch_order(len(records), 1, 0), 4, 32)[mode]
    B.read_whole(path) if isinstance(read, B.Warm) else B.drop_cache(path)
    requests, moved = device()
    start = time.perf_counter()
    read()
    seconds = time.perf_counter() - start
    requests, moved = (now - before for now, before in zip(device(), (requests, moved)))
print(json.dumps({"s": round(seconds, 3), "requests": requests, "kib": round(moved / 1024 / max(requests, 1), 1)}))
"""


def main() -> None:
    path, gib, mode, runs, burn, venvs = *sys.argv[1:4], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6:]
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burn)]
    passes: dict[str, list[dict]] = {venv: [] for venv in venvs}
    try:
        for run in range(runs):
            for venv in venvs if run % 2 == 0 else venvs[::-1]:
                python = os.path.join(venv, "bin", "python")
                out = subprocess.run([python, "-c", PASS, path, gib, mode], capture_output=True, text=True, check=True)
                found = json.loads(out.stdout.splitlines()[-1])
                found["load"] = open("/proc/loadavg").read().split()[0]
                passes[venv].append(found)
                print(venv, found, flush=True)
    finally:
        for burner in burners:
            burner.kill()
    for venv, found in passes.items():
        median = {key: statistics.median(p[key] for p in found) for key in ("s", "requests", "kib")}
        print(f"{mode} +{burn} burners {venv}: {median['s']:.3f} s, {median['requests']:.0f} requests of {median['kib']:.1f} KiB")


if __name__ == "__main__":
    main()
