#!/bin/sh
# Speed of `prefetch sim`'s conveniences (a benchmark, not a test; numbers in docs/sim.md):
#
# 1. the same 10M-request zipf trace as libCacheSim's binary oracleGeneral and as its text
#    form (one object id per line), LRU at one cache size, end to end, against libCacheSim's
#    binary and text readers (PyPI libcachesim), alternated ROUNDS times;
# 2. `--mrc` of a policy (POLICY, default fifo) at 100 sizes against one run of it.
#
# The trace is the one scripts/bench_speed.sh writes ($TRACE); its text form is written next to
# it.
#
#   python3 -m venv venv && venv/bin/pip install libcachesim
#   PYTHON=venv/bin/python PREFETCH=target/release/prefetch scripts/bench_cli.sh
set -eu
PYTHON=${PYTHON:-python3}
PREFETCH=${PREFETCH:-target/release/prefetch}
TRACE=${TRACE:-/var/tmp/zipf-10m.oracleGeneral.bin}
TEXT=${TRACE%.oracleGeneral.bin}.txt
CACHE=${CACHE:-10000}
POLICY=${POLICY:-fifo}
ROUNDS=${ROUNDS:-3}

[ -f "$TRACE" ] || { echo "no $TRACE: run scripts/bench_speed.sh first" >&2; exit 1; }
if [ ! -f "$TEXT" ]; then
    "$PYTHON" - "$TRACE" "$TEXT" <<'PY'
import sys
import numpy as np
records = np.fromfile(sys.argv[1], dtype=[("time", "<u4"), ("obj_id", "<u8"), ("obj_size", "<u4"), ("next", "<i8")])
np.savetxt(sys.argv[2], records["obj_id"], fmt="%d")
PY
fi

seconds() { # command...: wall seconds of one run, its output discarded
    "$PYTHON" -c 'import subprocess, sys, time
t = time.perf_counter(); subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.2f}")' "$@"
}
lcs() { # kind path
    "$PYTHON" - "$1" "$2" "$CACHE" <<'PY'
import sys, time
import libcachesim as lcs
kind, path, cache = sys.argv[1], sys.argv[2], int(sys.argv[3])
begin = time.perf_counter()
kinds = {"txt": lcs.TraceType.PLAIN_TXT_TRACE, "bin": lcs.TraceType.ORACLE_GENERAL_TRACE}
reader = lcs.TraceReader(path, kinds[kind], lcs.ReaderInitParam(ignore_obj_size=True))
miss_ratio, _ = lcs.LRU(cache_size=cache).process_trace(reader)
n = reader.get_num_of_req()
print(f"{time.perf_counter() - begin:.2f} ({round(miss_ratio * n)} misses)")
PY
}
ours() { # path: one thread, as libCacheSim reads
    seconds "$PREFETCH" sim --trace "$1" --cache "$CACHE" --policy lru --json --jobs 1
}

echo "round | prefetch sim binary | prefetch sim text | libCacheSim binary | libCacheSim text"
for round in $(seq "$ROUNDS"); do
    echo "$round | $(ours "$TRACE") | $(ours "$TEXT") | $(lcs bin "$TRACE") | $(lcs txt "$TEXT")"
done

echo "round | one $POLICY run at 10% | --mrc $POLICY, 100 sizes"
for round in $(seq "$ROUNDS"); do
    one=$(seconds "$PREFETCH" sim --trace "$TRACE" --cache 10% --policy "$POLICY")
    curve=$(seconds "$PREFETCH" sim --trace "$TRACE" --mrc --policy "$POLICY" --mrc-sizes 100)
    echo "$round | $one | $curve"
done
"$PREFETCH" sim --trace "$TRACE" --mrc --policy "$POLICY" --mrc-sizes 100 | grep 'sampling error'
