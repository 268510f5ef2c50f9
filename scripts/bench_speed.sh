#!/bin/sh
# Speed of the simulator against libCacheSim (a benchmark, not a test; numbers in docs/repro.md).
#
# Writes a 10M-request oracleGeneral trace (zipf, alpha 1, 1M objects, 4 KiB each) to
# $TRACE, then, side by side on the same file and cache size, times libCacheSim's
# LRU.process_trace (PyPI libcachesim, reading its binary form) and the simulator end to end
# (crates/sim/examples/speed.rs: the sweep `prefetch sim --policy lru` runs), with their miss
# counts; then the simulator's engine alone (the trace already in memory) and a 4-point sweep
# on 1 and 2 threads, alternated three times. The engine alone, three times, without the rest:
#   cargo run --release -p sim --example speed -- "$TRACE" "$CACHE" alone [POLICY]
#
#   python3 -m venv venv && venv/bin/pip install libcachesim
#   PYTHON=venv/bin/python scripts/bench_speed.sh
set -eu
PYTHON=${PYTHON:-python3}
TRACE=${TRACE:-/var/tmp/zipf-10m.oracleGeneral.bin}
CACHE=${CACHE:-100000}

if [ ! -f "$TRACE" ]; then
    "$PYTHON" - "$TRACE" <<'PY'
import sys
import numpy as np
n, objects, alpha = 10_000_000, 1_000_000, 1.0
rng = np.random.default_rng(42)
weights = 1.0 / np.arange(1, objects + 1) ** alpha
records = np.zeros(n, dtype=[("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next", "<i8")])
records["time"] = np.arange(n, dtype=np.uint32) // 1000
records["obj_id"] = rng.choice(objects, size=n, p=weights / weights.sum()).astype(np.uint64) + 1
records["obj_size"] = 4096
records["next"] = -1
records.tofile(sys.argv[1])
PY
fi

"$PYTHON" - "$TRACE" "$CACHE" <<'PY'
import sys, time
import libcachesim as lcs
path, cache = sys.argv[1], int(sys.argv[2])
begin = time.perf_counter()
reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_obj_size=True))
miss_ratio, _ = lcs.LRU(cache_size=cache).process_trace(reader)
seconds = time.perf_counter() - begin
n = reader.get_num_of_req()
print(f"libCacheSim {lcs.__version__}: LRU, cache {cache}: {n} references, {round(miss_ratio * n)} misses in {seconds:.3f} s ({n / seconds / 1e6:.1f} M refs/s)")
PY

cargo run --quiet --release -p sim --example speed -- "$TRACE" "$CACHE"
