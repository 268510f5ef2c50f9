"""``python -m libprefetch.sim_bench``: the cost of running the simulator from Python and on Dask, measured
side by side with ``prefetch sim`` in one run (alternating, medians; docs/sim.md has the table).

- ``sweep``: the traces x policies x caches on a Dask LocalCluster of ``--workers`` single-threaded worker
  processes (started once, before timing, as a cluster already running) against ``prefetch sim --jobs N``
  on the same cells; the rows are checked equal; each worker's resident memory, idle and at its peak,
  beside the largest trace's in-memory size (the simulator's own accounting, ``sim::memory``).
- ``run``: ``libprefetch.sim.run`` against ``prefetch sim`` on one trace (references per second).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from . import sim, sim_sweep

#: Bytes a trace held in memory costs per reference and per distinct block (crate sim's `memory.rs`).
BYTES_PER_REFERENCE, BYTES_PER_BLOCK = 16, 128


def cli_rows(prefetch: str, traces, policies, caches, fetch_time: int, jobs: int):
    """``prefetch sim --json``'s rows and its wall time in seconds."""
    args = [prefetch, "sim", "--trace", ",".join(traces), "--policy", policies, "--cache",
            ",".join(map(str, caches)), "--fetch-time", str(fetch_time), "--jobs", str(jobs), "--json"]
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out), time.perf_counter() - start


def rss_kib() -> tuple:
    """(resident now, peak resident) of this process in KiB."""
    import resource

    with open("/proc/self/statm") as statm:
        now = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    return now, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def in_memory_bytes(trace: str) -> int:
    """The trace's size in the simulator's memory: references x 16 + distinct blocks x 128 (the distinct
    blocks: LRU's misses with a cache as large as the trace)."""
    [first] = sim.run(trace, "lru", [1], device=1)
    [whole] = sim.run(trace, "lru", [first.references], device=1)
    return whole.references * BYTES_PER_REFERENCE + whole.misses * BYTES_PER_BLOCK


def sweep_bench(args) -> None:
    """Dask LocalCluster against ``prefetch sim --jobs`` on the same cells."""
    import distributed

    traces = args.trace
    cluster = distributed.LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    idle = client.run(rss_kib)
    times = {"cli": [], "dask": []}
    for _ in range(args.rounds):
        expected, seconds = cli_rows(args.prefetch, traces, args.policy, args.cache, 1, args.workers)
        times["cli"].append(seconds)
        start = time.perf_counter()
        rows = sim_sweep.sweep(traces, args.policy, args.cache, 1, client, progress=False)
        times["dask"].append(time.perf_counter() - start)
        assert [row.to_dict() for row in rows] == expected, "the sweep's rows differ from the CLI's"
    peak = client.run(rss_kib)
    client.close()
    cluster.close()
    cli, dask = statistics.median(times["cli"]), statistics.median(times["dask"])
    cells = len(expected)
    print(f"| cells | prefetch sim --jobs {args.workers} (s) | LocalCluster, {args.workers} workers (s) | speed ratio |")
    print("|---|---|---|---|")
    print(f"| {cells} | {cli:.2f} | {dask:.2f} | {cli / dask:.2f}x |")
    print(f"rounds: cli {[round(t, 2) for t in times['cli']]}, dask {[round(t, 2) for t in times['dask']]}")
    largest = max(in_memory_bytes(t) for t in traces) / 2**20
    print(f"largest trace in memory: {largest:.1f} MiB")
    for worker in peak:
        idle_now, _ = idle[worker]
        _, top = peak[worker]
        print(f"worker {worker}: idle {idle_now / 1024:.0f} MiB, peak {top / 1024:.0f} MiB, "
              f"growth {(top - idle_now) / 1024:.0f} MiB (bound: {largest + 64:.0f} MiB)")


def run_bench(args) -> None:
    """``libprefetch.sim.run`` against ``prefetch sim`` on one trace."""
    [trace] = args.trace
    times = {"cli": [], "python": []}
    for _ in range(args.rounds):
        expected, seconds = cli_rows(args.prefetch, [trace], args.policy, args.cache, 1, 1)
        times["cli"].append(seconds)
        start = time.perf_counter()
        rows = sim.run(trace, args.policy, args.cache, device=1, jobs=1)
        times["python"].append(time.perf_counter() - start)
        assert [row.to_dict() for row in rows] == expected, "Python's rows differ from the CLI's"
    cli, python = statistics.median(times["cli"]), statistics.median(times["python"])
    references = sum(row["references"] for row in expected)
    print("| references | prefetch sim (s) | libprefetch.sim.run (s) | speed ratio |")
    print("|---|---|---|---|")
    print(f"| {references:,} | {cli:.2f} | {python:.2f} | {cli / python:.2f}x |")
    print(f"rounds: cli {[round(t, 2) for t in times['cli']]}, python {[round(t, 2) for t in times['python']]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m libprefetch.sim_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("sweep", "run"))
    p.add_argument("--prefetch", required=True, help="the prefetch command (target/release/prefetch)")
    p.add_argument("--trace", nargs="+", required=True, help="trace file(s)")
    p.add_argument("--policy", default="lru,fifo,clock,opt-demand,lru-obl,conservative")
    p.add_argument("--cache", type=lambda s: [int(c) for c in s.split(",")], default=[100, 1000, 10000, 100000])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    (sweep_bench if args.what == "sweep" else run_bench)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
