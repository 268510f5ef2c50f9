#!/usr/bin/env python3
"""Speed of `prefetch sim`'s text reader against its binary reader and libCacheSim's readers.

Side by side, alternated ROUNDS times, on the same 10M-request zipf trace as libCacheSim's
binary oracleGeneral and as its text form (one object id per line; scripts/bench_cli.sh writes
it next to the binary one), LRU at CACHE objects: `prefetch sim` on each form, then
libCacheSim's `LRU.process_trace` (PyPI libcachesim) with its binary and its plain-text reader.
Prints each round, then the median wall and CPU seconds (user + system: on a loaded machine the
wall time mostly measures the wait for a core), the miss counts, and the CPU ratios.

    python3 -m venv venv && venv/bin/pip install libcachesim numpy
    venv/bin/python scripts/bench_text.py [PREFETCH [TRACE [TEXT [CACHE [ROUNDS]]]]]
"""

import json
import resource
import statistics
import subprocess
import sys
import time

import libcachesim as lcs

KINDS = {"txt": lcs.TraceType.PLAIN_TXT_TRACE, "bin": lcs.TraceType.ORACLE_GENERAL_TRACE}


def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def ours(binary, path, cache):
    begin, cpu_begin = time.perf_counter(), cpu(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [binary, "sim", "--trace", path, "--policy", "lru", "--cache", str(cache), "--jobs", "1",
         "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    misses = json.loads(out)[0]["misses"]
    return time.perf_counter() - begin, cpu(resource.RUSAGE_CHILDREN) - cpu_begin, misses


def theirs(kind, path, cache):
    begin, cpu_begin = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    reader = lcs.TraceReader(path, KINDS[kind], lcs.ReaderInitParam(ignore_obj_size=True))
    miss_ratio, _ = lcs.LRU(cache_size=cache).process_trace(reader)
    misses = round(miss_ratio * reader.get_num_of_req())
    return time.perf_counter() - begin, cpu(resource.RUSAGE_SELF) - cpu_begin, misses


def main():
    args = sys.argv[1:] + [None] * 5
    binary = args[0] or "target/release/prefetch"
    trace = args[1] or "/var/tmp/zipf-10m.oracleGeneral.bin"
    text = args[2] or "/var/tmp/zipf-10m.txt"
    cache = int(args[3] or 10_000)
    rounds = int(args[4] or 3)
    runs = {
        "sim binary": lambda: ours(binary, trace, cache),
        "sim text": lambda: ours(binary, text, cache),
        "libCacheSim binary": lambda: theirs("bin", trace, cache),
        "libCacheSim text": lambda: theirs("txt", text, cache),
    }
    results = {name: [] for name in runs}
    for round_ in range(1, rounds + 1):
        for name, run in runs.items():
            results[name].append(run())
        row = ", ".join(f"{n} {r[-1][0]:.2f} s ({r[-1][1]:.2f} s CPU)" for n, r in results.items())
        print(f"round {round_}: {row}", flush=True)
    cpu_median = {}
    for name, rows in results.items():
        wall = statistics.median(r[0] for r in rows)
        cpu_median[name] = statistics.median(r[1] for r in rows)
        print(f"{name}: wall {wall:.2f} s, CPU {cpu_median[name]:.2f} s, {rows[0][2]} misses")
    print(f"CPU, sim text / sim binary: {cpu_median['sim text'] / cpu_median['sim binary']:.2f}x; "
          f"libCacheSim text / sim text: "
          f"{cpu_median['libCacheSim text'] / cpu_median['sim text']:.2f}x")


if __name__ == "__main__":
    main()
