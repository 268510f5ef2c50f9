#!/usr/bin/env python3
"""End-to-end speed of `prefetch sim` against libCacheSim for each eviction policy both have.

For each policy, side by side on the same oracleGeneral trace and cache size (objects), this
times libCacheSim's `POLICY(cache_size).process_trace(reader)` (the PyPI `libcachesim`
package, whose loop runs in C) and `prefetch sim --policy NAME --cache SIZE --device unit:1`
(reading the file and simulating), alternating the two, ROUNDS times; it prints each tool's
median wall time and CPU time (user + system: on a loaded machine the wall time mostly
measures the wait for a core), the ratios libCacheSim / prefetch of both, and both miss
ratios (equal for the policies the simulator matches exactly).

    python3 -m venv venv && venv/bin/pip install libcachesim numpy
    venv/bin/python scripts/bench_policies.py [TRACE [CACHE [ROUNDS [POLICY,...]]]]

Without TRACE it writes a 10M-request zipf trace (alpha 1, 1M objects, seeded) to
/var/tmp/zipf-10m.oracleGeneral.bin, as scripts/bench_speed.sh does.
"""

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import libcachesim as lcs

# The simulator's name for each libCacheSim policy timed (not clockpro: libCacheSim 0.3.5's
# ClockPro never evicts, see docs/sim.md).
SHARED = {
    "lru": "LRU",
    "fifo": "FIFO",
    "clock": "Clock",
    "sieve": "Sieve",
    "s3fifo": "S3FIFO",
    "arc": "ARC",
    "2q": "TwoQ",
    "slru": "SLRU",
    "lfu": "LFU",
    "lfuda": "LFUDA",
    "lruk": "LRUK",
    "wtinylfu": "WTinyLFU",
    "lirs": "LIRS",
}
ROOT = Path(__file__).resolve().parent.parent


def zipf_trace(path):
    import numpy as np

    n, objects = 10_000_000, 1_000_000
    rng = np.random.default_rng(42)
    weights = 1.0 / np.arange(1, objects + 1)
    fields = [("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next", "<i8")]
    records = np.zeros(n, dtype=fields)
    records["time"] = np.arange(n, dtype=np.uint32) // 1000
    ids = rng.choice(objects, size=n, p=weights / weights.sum()).astype(np.uint64) + 1
    records["obj_id"] = ids
    records["obj_size"] = 4096
    records["next"] = -1
    records.tofile(path)


def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def libcachesim(policy, trace, cache):
    begin, cpu_begin = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    params = lcs.ReaderInitParam(ignore_obj_size=True)
    reader = lcs.TraceReader(str(trace), lcs.TraceType.ORACLE_GENERAL_TRACE, params)
    miss_ratio, _ = getattr(lcs, SHARED[policy])(cache_size=cache).process_trace(reader)
    return time.perf_counter() - begin, cpu(resource.RUSAGE_SELF) - cpu_begin, miss_ratio


def prefetch(policy, trace, cache, binary):
    begin, cpu_begin = time.perf_counter(), cpu(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [binary, "sim", "--trace", str(trace), "--policy", policy, "--cache", str(cache),
         "--device", "unit:1", "--json"],
        check=True, capture_output=True, text=True,
    ).stdout
    seconds = time.perf_counter() - begin
    row = __import__("json").loads(out)[0]
    return seconds, cpu(resource.RUSAGE_CHILDREN) - cpu_begin, row["misses"] / row["references"]


def main():
    trace = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/var/tmp/zipf-10m.oracleGeneral.bin")
    cache = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    policies = sys.argv[4].split(",") if len(sys.argv) > 4 else list(SHARED)
    unknown = [p for p in policies if p not in SHARED]
    if unknown:
        sys.exit(f"bench_policies.py: unknown policy {', '.join(unknown)}; known: {', '.join(SHARED)}")
    if not trace.exists():
        zipf_trace(trace)
    binary = ROOT / "target" / "release" / "prefetch"
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "cli"], check=True, cwd=ROOT)
    print(f"trace {trace.name}, cache {cache} objects, libCacheSim {lcs.__version__}, "
          f"medians of {rounds} alternated runs")
    print("| policy | wall s, libCacheSim / sim | ratio | CPU s, libCacheSim / sim | ratio "
          "| miss ratio, libCacheSim / sim |")
    print("|---|---:|---:|---:|---:|---|")
    for policy in policies:
        theirs, ours = [], []
        for _ in range(rounds):
            theirs.append(libcachesim(policy, trace, cache))
            ours.append(prefetch(policy, trace, cache, binary))
        t, o = (statistics.median(r[0] for r in runs) for runs in (theirs, ours))
        tc, oc = (statistics.median(r[1] for r in runs) for runs in (theirs, ours))
        print(f"| {policy} | {t:.2f} / {o:.2f} | {t / o:.2f}x | {tc:.2f} / {oc:.2f} | "
              f"{tc / oc:.2f}x | {theirs[0][2]:.4f} / {ours[0][2]:.4f} |", flush=True)


if __name__ == "__main__":
    main()
