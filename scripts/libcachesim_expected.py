#!/usr/bin/env python3
"""Cross-check numbers for the simulator, computed by an independent simulator, libCacheSim.

For each shipped reference trace traces/NAME.trace.gz (one block number per line), this script
writes the same reference string in libCacheSim's two other forms next to it,

  traces/NAME.oracleGeneral.zst  oracleGeneral records (time = position, size 1), zstd
  traces/NAME.lcs.csv.gz         libCacheSim csv with a header: time,obj_id,obj_size

then runs libCacheSim's LRU, FIFO and Clock (the `libcachesim` package from PyPI, which wraps
the C library) on both forms at several cache sizes, one object per cache slot
(ignore_obj_size), and writes the miss counts to traces/libcachesim_expected.json. The Rust test
crates/sim/tests/libcachesim.rs runs the simulator on the same files and compares.

It also runs libCacheSim's other eviction policies, with their default parameters, on the
oracleGeneral form at three cache sizes and writes their miss counts to
traces/libcachesim_policies.json; crates/sim/tests/libcachesim_policies.rs compares the
simulator's policies of the same names.

Re-run after changing the traces (needs the `zstd` command):

    python3 -m venv venv && venv/bin/pip install libcachesim
    venv/bin/python scripts/libcachesim_expected.py
"""

import gzip
import json
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import libcachesim as lcs

TRACES = ["cs", "cpp", "gli", "ps", "multi1", "multi2"]
CACHE_SIZES = [16, 100, 500, 1000, 2000]
POLICIES = {"lru": lcs.LRU, "fifo": lcs.FIFO, "clock": lcs.Clock}
# The simulator's name for each of libCacheSim's policies, built with libCacheSim's defaults.
EVICTION = {
    "sieve": lcs.Sieve,
    "s3fifo": lcs.S3FIFO,
    "arc": lcs.ARC,
    "lirs": lcs.LIRS,
    "2q": lcs.TwoQ,
    "slru": lcs.SLRU,
    "wtinylfu": lcs.WTinyLFU,
    "lfu": lcs.LFU,
    "lfuda": lcs.LFUDA,
    "lruk": lcs.LRUK,
    "clockpro": lcs.ClockPro,
}
EVICTION_SIZES = [100, 500, 1000]


def reference_string(path):
    """Block numbers of a `blocks` trace, skipping `*` markers, blank and comment lines."""
    with gzip.open(path, "rt") as lines:
        stripped = (line.strip() for line in lines)
        return [int(s) for s in stripped if s and s != "*" and not s.startswith("#")]


def write_oracle_general(ids, path):
    """oracleGeneral records, zstd-compressed: u32 time, u64 id, u32 size, i64 next use."""
    next_use = [-1] * len(ids)
    seen = {}
    for position in range(len(ids) - 1, -1, -1):
        next_use[position] = seen.get(ids[position], -1)
        seen[ids[position]] = position
    records = b"".join(
        struct.pack("<IQIq", position, obj, 1, next_use[position])
        for position, obj in enumerate(ids)
    )
    with tempfile.NamedTemporaryFile(suffix=".oracleGeneral.bin") as raw:
        raw.write(records)
        raw.flush()
        subprocess.run(["zstd", "-q", "-19", "-f", raw.name, "-o", str(path)], check=True)
    path.chmod(0o644)


def csv_text(ids):
    rows = "".join(f"{position},{obj},1\n" for position, obj in enumerate(ids))
    return "time,obj_id,obj_size\n" + rows


def misses(policy, size, reader, policies=POLICIES):
    """Requests libCacheSim's `policy` misses with `size` one-object slots."""
    cache = policies[policy](cache_size=size)
    return sum(0 if cache.get(request) else 1 for request in reader())


def oracle_reader(path):
    params = lcs.ReaderInitParam(ignore_obj_size=True)
    return lambda: lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE, params)


def csv_reader(path):
    params = lcs.ReaderInitParam(
        ignore_obj_size=True, has_header=True, has_header_set=True, delimiter=","
    )
    params.time_field, params.obj_id_field, params.obj_size_field = 1, 2, 3
    return lambda: lcs.TraceReader(str(path), lcs.TraceType.CSV_TRACE, params)


def main():
    root = Path(__file__).resolve().parent.parent / "traces"
    expected = {
        "generator": "scripts/libcachesim_expected.py",
        "libcachesim": lcs.__version__ if hasattr(lcs, "__version__") else "unknown",
        "cache_sizes": CACHE_SIZES,
        "traces": {},
    }
    for name in TRACES:
        ids = reference_string(root / f"{name}.trace.gz")
        oracle = root / f"{name}.oracleGeneral.zst"
        write_oracle_general(ids, oracle)
        text = csv_text(ids)
        csv = root / f"{name}.lcs.csv.gz"
        with gzip.GzipFile(csv, "wb", mtime=0) as out:
            out.write(text.encode())
        # libCacheSim reads csv uncompressed: give it the same text in a plain file.
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as plain:
            plain.write(text)
            plain.flush()
            forms = {"oracleGeneral": oracle_reader(oracle), "csv": csv_reader(plain.name)}
            counts = {
                form: {
                    policy: {str(size): misses(policy, size, reader) for size in CACHE_SIZES}
                    for policy in POLICIES
                }
                for form, reader in forms.items()
            }
        expected["traces"][name] = {"references": len(ids), "misses": counts}
        print(name, counts["oracleGeneral"]["lru"], file=sys.stderr)
    out = root / "libcachesim_expected.json"
    out.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    write_eviction_counts(root, expected["libcachesim"])


def write_eviction_counts(root, version):
    """The other eviction policies' misses on the oracleGeneral form, one object per slot."""
    counts = {
        "generator": "scripts/libcachesim_expected.py",
        "libcachesim": version,
        "cache_sizes": EVICTION_SIZES,
        "traces": {},
    }
    for name in TRACES:
        reader = oracle_reader(root / f"{name}.oracleGeneral.zst")
        counts["traces"][name] = {
            policy: {str(size): misses(policy, size, reader, EVICTION) for size in EVICTION_SIZES}
            for policy in EVICTION
        }
        print(name, counts["traces"][name]["s3fifo"], file=sys.stderr)
    out = root / "libcachesim_policies.json"
    out.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
