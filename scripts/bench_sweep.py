#!/usr/bin/env python3
"""Speed-up of a `prefetch sim` sweep on two threads (a benchmark, not a test; numbers in
docs/repro.md).

Runs the 4-point sweep `prefetch sim --policy lru,fifo,clock,lru-obl --cache CACHE --device
unit:1` on TRACE (the 10M-request oracleGeneral file scripts/bench_speed.sh writes) with
`--jobs 1` and then
`--jobs 2`, side by side, alternated ROUNDS times, for each binary given (to compare builds
in the same script). For each run it prints the wall time, the CPU time of the child (user and
system; over the wall time it says how many cores the run had) and the load average; then the
ratio of the best 1-thread time over the best 2-thread time. The two outputs of each binary
must be equal (the rows do not depend on the number of threads). POLICIES (environment) and
CACHE (several sizes comma-separated) choose another sweep, e.g. four points of equal cost:
POLICIES=lru with CACHE=100000,100001,100002,100003.

    python3 scripts/bench_sweep.py TRACE [CACHE] [PREFETCH ...]

PREFETCH defaults to target/release/prefetch (`cargo build --release -p cli`).
"""

import os
import resource
import subprocess
import sys
import time

ROUNDS = 3
POLICIES = os.environ.get("POLICIES", "lru,fifo,clock,lru-obl")


def child_cpu():
    """CPU seconds (user and system) used by finished children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sweep(prefetch, trace, cache, jobs):
    """One sweep: (wall seconds, CPU seconds, stdout)."""
    command = [prefetch, "sim", "--trace", trace, "--policy", POLICIES, "--cache", cache,
               "--device", "unit:1", "--jobs", str(jobs), "--json"]
    cpu, begin = child_cpu(), time.perf_counter()
    done = subprocess.run(command, check=True, stdout=subprocess.PIPE)
    return time.perf_counter() - begin, child_cpu() - cpu, done.stdout


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench_sweep.py TRACE [CACHE] [PREFETCH ...]")
    trace = sys.argv[1]
    cache = sys.argv[2] if len(sys.argv) > 2 else "100000"
    binaries = sys.argv[3:] or ["target/release/prefetch"]
    best = {(b, jobs): float("inf") for b in binaries for jobs in (1, 2)}
    for round_ in range(1, ROUNDS + 1):
        for binary in binaries:
            outputs = []
            for jobs in (1, 2):
                wall, cpu, out = sweep(binary, trace, cache, jobs)
                outputs.append(out)
                best[binary, jobs] = min(best[binary, jobs], wall)
                load = " ".join(f"{x:.2f}" for x in os.getloadavg())
                print(f"round {round_} {binary} --jobs {jobs}: {wall:.3f} s, CPU {cpu:.2f} s "
                      f"({cpu / wall:.2f} cores), load average {load}", flush=True)
            if outputs[0] != outputs[1]:
                sys.exit(f"{binary}: --jobs 1 and --jobs 2 printed different rows")
    for binary in binaries:
        one, two = best[binary, 1], best[binary, 2]
        print(f"{binary}: best --jobs 1 {one:.3f} s, best --jobs 2 {two:.3f} s: {one / two:.2f}x")


if __name__ == "__main__":
    main()
