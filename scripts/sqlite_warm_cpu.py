#!/usr/bin/env python3
"""A short warm query, stock SQLite against builds of the extension, a fresh process each run
(`prefetch sqlite query --json`, the benchmark's child): alternated runs, then each variant's medians
of the query's wall time, the CPU its thread spent in the query (not lengthened while the process waits
for a core, so it holds on a loaded machine), the page faults inside the query, and the whole process's
wall time (loading the extension and opening the file included). docs/repro.md, "SQLite on real
schemas", "Warm queries in a partly reclaimed file".

    python3 scripts/sqlite_warm_cpu.py --db DB --runs 150 --sql "SELECT * FROM chars ORDER BY code DESC LIMIT 20" \\
        --ext main=BASE/libprefetch_sqlite.so --ext this=target/release/libprefetch_sqlite.so
"""

import argparse
import json
import statistics
import subprocess
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True)
    p.add_argument("--sql", required=True)
    p.add_argument("--prefetch", default="target/release/prefetch")
    p.add_argument("--ext", action="append", default=[], metavar="NAME=PATH")
    p.add_argument("--runs", type=int, default=100)
    return p.parse_args()


def run(args, ext):
    cmd = [args.prefetch, "sqlite", "query", "--db", args.db, "--sql", args.sql, "--json"]
    if ext:
        cmd += ["--ext", ext]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    result["process"] = time.perf_counter() - start
    return result


def main():
    args = parse_args()
    variants = [("stock", None)] + [tuple(e.split("=", 1)) for e in args.ext]
    runs = {name: [] for name, _ in variants}
    load = open("/proc/loadavg").read().split()[:3]
    for i in range(args.runs):
        for name, ext in variants if i % 2 == 0 else variants[::-1]:
            runs[name].append(run(args, ext))
    checksums = {r["checksum"] for rs in runs.values() for r in rs}
    print(f"{args.runs} runs each, load {' '.join(load)} -> {open('/proc/loadavg').read().split()[0]}, "
          f"rows identical: {len(checksums) == 1}")
    print(f"{'':8} {'query us':>9} {'cpu us':>8} {'faults':>7} {'process ms':>11}")
    for name, _ in variants:
        med = lambda key: statistics.median(r[key] for r in runs[name])
        print(f"{name:8} {med('seconds') * 1e6:9.1f} {med('cpu_seconds') * 1e6:8.1f} "
              f"{med('minor_faults'):7.0f} {med('process') * 1e3:11.3f}")


if __name__ == "__main__":
    main()
