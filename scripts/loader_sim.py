#!/usr/bin/python3
"""The simulator's `loader-phases` beside the live pass it predicts: `python -m libprefetch.bench
workers`'s `libprefetch-4w` (4 DataLoader-shaped workers, batches of 32, seed 1) in a memory cgroup
of a third of the file, where each worker advises its list by phases (`plan::loader::Phases`).

Live: RUNS cold passes in the cgroup, each with the requests the device completed
(the `stat` of the file's block device, other processes' I/O counted too) and the bytes the pass read; the phase
size each worker used. Predicted: each worker's list written as a request trace (one line a record,
the project's CSV), run by `prefetch sim --policy loader-phases:phase=P` with a cache of a quarter of
the cgroup, the workers' simulated requests summed (the simulator runs one stream a trace: the
workers' requests are taken as independent, which they are where no two workers' records touch).

Usage (as root, with the package's interpreter): loader_sim.py FILE GIB RUNS PREFETCH-BINARY
  e.g. target/python-venv/bin/python scripts/loader_sim.py /var/tmp/records.bin 1 3 target/release/prefetch
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from libprefetch import _bench_loaders as B
from libprefetch._loader import RecordDataset, epoch_order, worker_indices
from libprefetch._records import Records
from libprefetch.bench import MemoryCgroup, drop_cache, ensure_file, record_layout

WORKERS, BATCH, SEED = 4, 32, 1


def device(path: str) -> tuple[int, int]:
    """Read requests completed and bytes read on the block device holding `path`."""
    dev = os.stat(path).st_dev
    fields = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat").read_text().split()
    return int(fields[0]), int(fields[2]) * 512


def live(records: Records, order: list[int], cgroup: int, runs: int) -> tuple[list[dict], int]:
    """RUNS cold passes of libprefetch-4w in the cgroup, and the phase size of its workers."""
    passes = []
    with MemoryCgroup(cgroup):
        dataset = RecordDataset(records, batch_size=BATCH, seed=SEED)
        phase = dataset._phase_bytes(records.advice_fd(), WORKERS) if dataset._phased else 0
        read = B.workers_modes(records, SEED, order, WORKERS, BATCH)[f"libprefetch-{WORKERS}w"]
        for _ in range(runs):
            drop_cache(Path(records.path))
            before, start = device(records.path), time.perf_counter()
            read()
            seconds = time.perf_counter() - start
            requests, moved = (now - then for now, then in zip(device(records.path), before))
            passes.append({"s": round(seconds, 2), "requests": requests, "MiB": round(moved / (1 << 20))})
            print("live", passes[-1], "load", open("/proc/loadavg").read().split()[0], flush=True)
    return passes, phase


def predicted(records: Records, order: list[int], cgroup: int, phase: int, prefetch: str) -> dict:
    """The workers' simulated requests and blocks fetched, summed over their traces."""
    total = {"requests": 0, "blocks_fetched": 0, "references": 0}
    with tempfile.TemporaryDirectory() as folder:
        for worker in range(WORKERS):
            trace = Path(folder) / f"worker-{worker}.csv"
            mine = worker_indices(order, BATCH, False, worker, WORKERS)
            lines = [f"0,records,{records._offsets[i]},{records._lengths[i]},R" for i in mine]
            trace.write_text("time_us,file,offset,length,op\n" + "\n".join(lines) + "\n")
            command = [prefetch, "sim", "--trace", str(trace), "--block-size", "4096",
                       "--cache", str(cgroup // WORKERS // 4096),
                       "--device", "ssd:100,8,500", "--policy", f"loader-phases:phase={phase}", "--json"]
            run = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
            found = run[0] if isinstance(run, list) else run
            total["requests"] += found["disk"]["requests"]
            total["blocks_fetched"] += found["disk"]["blocks_fetched"]
            total["references"] += found["references"]
    return total


def main() -> None:
    path, size, runs, prefetch = Path(sys.argv[1]), int(float(sys.argv[2]) * (1 << 30)), int(sys.argv[3]), sys.argv[4]
    offsets, lengths = record_layout(size, SEED)
    ensure_file(path, size)
    cgroup = max(size // 3, B._CGROUP_FLOOR)
    with Records(path, offsets, lengths) as records:
        order = epoch_order(len(records), SEED, 0)
        passes, phase = live(records, order, cgroup, runs)
        if not phase:
            raise SystemExit("the workers did not advise by phases here (no device profile?)")
        sim = predicted(records, order, cgroup, phase, prefetch)
    median = {key: statistics.median(p[key] for p in passes) for key in ("s", "requests", "MiB")}
    print(f"phase {phase / (1 << 20):.2f} MiB a worker; live median {median['s']} s, {median['requests']:.0f} requests, "
          f"{median['MiB']:.0f} MiB; loader-phases {sim['requests']} requests, "
          f"{sim['blocks_fetched'] * 4096 / (1 << 20):.0f} MiB ({len(order)} records)")


if __name__ == "__main__":
    main()
