#!/usr/bin/env python3
"""Checks the simulator's prefetchers against libCacheSim's C implementation.

libCacheSim's Python binding has no prefetchers, so this builds its C library (a pinned commit)
in a cache directory, with cmake, and links scripts/libcachesim_prefetch.c to it: a driver
that runs one eviction policy with one prefetcher exactly as its `cachesim` binary does and
prints the counts `cachesim` rounds (requests, misses, prefetched blocks). One run is checked
against `cachesim` itself.

The simulator's prefetchers with a libCacheSim counterpart are OBL, PG and Mithril (`prefetch sim
--policy lru+obl`, `lru+pg`, `lru+mithril`); PG and Mithril are run with libCacheSim's parameters,
and on a disk that fetches in no time, as libCacheSim inserts at once. Mithril runs with
`block-size=4096` (at libCacheSim's default of 1 byte its metadata budget holds nothing and it
aborts) and `cycle-time=1` (the simulator re-inserts no evicted block), at its default
`mining-threshold` and at 256 (it mines more often, so prefetches on every trace). OBL is K+2 after K, K+1, which is libCacheSim's OBL with
`sequential-confidence-k=1` and `block-size=1` (the cache counted in objects); `obl:k=4` is its default, k=4. libCacheSim prefetches only for the eviction
policies whose `get` is `cache_get_base` on the cache itself: of those both tools have, LRU,
FIFO, Clock, Sieve, LFU and LFUDA (S3FIFO, TwoQ, SLRU, LIRS and WTinyLFU never call the
prefetcher; ARC crashes with it; LFUDA never returns on cs, gli and ps).

Two differences are deliberate (docs/sim.md, crates/sim/src/disksim/prefetch/obl.rs):

- libCacheSim's OBL starts its history at UINT64_MAX, one below object 0, so a run from object 0
  at the start of a trace counts one step more (with k=1, object 1 is prefetched at once);
- it prefetches object max+1 after the trace's last pair, which no trace holds and the
  simulator, whose files end at the highest block, never fetches.

Both change a count by one. libCacheSim's PG takes object 0 for an empty history slot (the
simulator records every block), which changes its counts more. So the reference counts (traces/libcachesim_prefetch.json, with
--write) are libCacheSim's on the shipped traces with every id + 1, which the Rust test
crates/sim/tests/libcachesim_prefetch.rs runs with one block past the highest id: there every
count must be equal. Without --write, the script prints the side-by-side table of docs/sim.md
on the shipped traces themselves, our counts by `prefetch sim`.

Needs git, cmake, a C compiler, pkg-config, glib 2 and zstd (Debian: cmake libglib2.0-dev
libzstd-dev zstd) and a built `prefetch` (cargo build --release -p cli).

    python3 scripts/libcachesim_prefetch.py [--source GIT] [--cache DIR] [--write]
"""

import argparse
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

COMMIT = "aa0fc40914b2b786f4b9f4dafb099f8f332b216a"
SOURCE = "https://github.com/1a1a11a/libCacheSim"
TRACES = ["cs", "cpp", "gli", "ps", "multi1", "multi2"]
SIZES = [100, 500, 1000]
POLICIES = ["lru", "fifo", "clock", "sieve", "lfu", "lfuda"]
# Our prefetchers and libCacheSim's with its parameters: `obl:k=K` is its OBL with
# sequential-confidence-k=K (the paper's rule and its default); `pg` is its PG with its defaults
# (a budget of a tenth of a byte per object: nothing is recorded at these sizes) and with the
# budget of 4 KiB objects.
PREFETCHERS = [
    ("obl:k=1", "OBL", "block-size=1,sequential-confidence-k=1"),
    ("obl:k=4", "OBL", "block-size=1,sequential-confidence-k=4"),
    ("pg", "PG", "block-size=1"),
    ("pg:block-size=4096", "PG", "block-size=4096"),
    ("mithril:block-size=4096", "Mithril", "block-size=4096,cycle-time=1"),
    ("mithril:block-size=4096,mining-threshold=256", "Mithril",
     "block-size=4096,cycle-time=1,mining-threshold=256"),
]
# Only in the table: libCacheSim's Mithril with its default cycle-time (2: an unreferenced
# prefetched object evicted is re-inserted once), beside ours, which has none (cycle-time=1).
SECOND_CHANCE = [
    ("mithril:block-size=4096,mining-threshold=256", "Mithril",
     "block-size=4096,mining-threshold=256"),
]
# libCacheSim's LFUDA never returns on these traces (its eviction loop); they are not run.
HANGS = {("lfuda", "cs"), ("lfuda", "gli"), ("lfuda", "ps")}


def prefetch_params(k):
    return f"block-size=1,sequential-confidence-k={k}"
# The driver links what cachesim links (its link.txt), in this order.
LIBS = [
    "cache/libcachelib.a", "cache/eviction/libevictionC.a", "cache/eviction/libevictionCPP.a",
    "traceReader/libtraceReader.a", "profiler/libprofiler.a",
    "dataStructure/libdataStructure.a", "dataStructure/hash/libds_hash.a", "utils/libutils.a",
    "cache/admission/libadmissionC.a", "cache/admission/libadmissionCpp.a",
    "cache/prefetch/libprefetchC.a", "cache/libcachelib.a", "dataStructure/libdataStructure.a",
    "traceReader/libtraceReader.a", "utils/libutils.a",
]
REPO = Path(__file__).resolve().parent.parent


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def pkg_config(*flags):
    out = run("pkg-config", *flags, "glib-2.0", capture_output=True, text=True).stdout
    return out.split()


def fetch(source, src):
    """libCacheSim's sources at COMMIT in `src` (only the trees the build reads)."""
    if (src / "CMakeLists.txt").exists():
        return
    git = Path(source)
    if not (git / "objects").is_dir():  # a URL: fetch the commit alone
        git = src.parent / "git"
        run("git", "init", "-q", "--bare", str(git))
        run("git", f"--git-dir={git}", "fetch", "-q", "--depth", "1", source, COMMIT)
    src.mkdir(parents=True)
    for tree in ["libCacheSim", "cmake", "test"]:
        archive = subprocess.Popen(
            ["git", f"--git-dir={git}", "archive", f"--prefix={tree}/", f"{COMMIT}:{tree}"],
            stdout=subprocess.PIPE)
        run("tar", "x", "-C", str(src), stdin=archive.stdout)
        archive.wait()
    for name in ["CMakeLists.txt", "libCacheSim.cmake.in", "libCacheSim.pc.in"]:
        blob = run("git", f"--git-dir={git}", "show", f"{COMMIT}:{name}", capture_output=True)
        (src / name).write_bytes(blob.stdout)


# PG.c's first-reference test reads a label it never initialises (`current_req_lbl[0]`), so
# what it records in its first lookahead-range references, and so its counts, depend on the
# stack; the reference build initialises it to zero, the test PG.c means.
PG_UNINITIALISED = "current_req_lbl[MAX_OBJ_ID_LEN];"
PG_ZEROED = "current_req_lbl[MAX_OBJ_ID_LEN] = {0};"


def zero_pg_label(src):
    """Initialises PG.c's label; true if it was not yet."""
    pg = src / "libCacheSim" / "cache" / "prefetch" / "PG.c"
    text = pg.read_text()
    if PG_ZEROED in text:
        return False
    pg.write_text(text.replace(PG_UNINITIALISED, PG_ZEROED, 1))
    return True


def build(source, cache):
    """Builds libCacheSim (its `cachesim`) and the driver; returns both binaries."""
    src, out = cache / "src", cache / "build"
    fetch(source, src)
    cachesim, driver = out / "bin" / "cachesim", cache / "libcachesim_prefetch"
    if zero_pg_label(src) or not cachesim.exists():
        out.mkdir(exist_ok=True)
        run("cmake", "-S", str(src), "-B", str(out), "-DCMAKE_BUILD_TYPE=Release",
            "-DENABLE_TESTS=OFF", stdout=subprocess.DEVNULL)
        run("make", "-C", str(out), f"-j{os.cpu_count()}", "cachesim", stdout=subprocess.DEVNULL)
    # The driver includes cachesim's cache_init.h by a path relative to that directory.
    copy = src / "libCacheSim" / "bin" / "cachesim" / "libcachesim_prefetch.c"
    copy.write_bytes((REPO / "scripts" / "libcachesim_prefetch.c").read_bytes())
    obj = cache / "libcachesim_prefetch.o"
    run("cc", "-O2", "-DOS_LINUX", "-DSUPPORT_ZSTD_TRACE=1", *pkg_config("--cflags"),
        f"-I{src / 'include'}", "-c", str(copy), "-o", str(obj))
    libs = [str(out / "libCacheSim" / lib) for lib in LIBS]
    run("c++", "-o", str(driver), str(obj), *libs, "-lzstd", *pkg_config("--libs"), "-lm",
        "-lpthread")
    return cachesim, driver


def shifted(trace, cache):
    """`trace` (oracleGeneral, zstd) with every object id + 1, uncompressed, in `cache`."""
    path = cache / f"{trace}.plus1.oracleGeneral.bin"
    data = run("zstd", "-dc", str(REPO / "traces" / f"{trace}.oracleGeneral.zst"),
               capture_output=True).stdout
    records = bytearray(data)
    for at in range(0, len(records), 24):
        (obj,) = struct.unpack_from("<Q", records, at + 4)
        struct.pack_into("<Q", records, at + 4, obj + 1)
    path.write_bytes(records)
    return path


def libcachesim(driver, path, policy, prefetcher="OBL", params=prefetch_params(1)):
    """{size: (requests, misses, prefetches)} of `policy` with `prefetcher` on `path`, or None
    when libCacheSim does not finish (LFUDA on cs, gli, ps) or crashes (ARC)."""
    sizes = ",".join(map(str, SIZES))
    try:
        done = subprocess.run([str(driver), str(path), policy, sizes, prefetcher, params],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    counts = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) != 5 or fields[0] != policy:
            continue  # Mithril.c prints a line of its own per mining
        _, size, requests, misses, prefetches = fields
        counts[int(size)] = (int(requests), int(misses), int(prefetches))
    return counts


def check_driver(cachesim, driver, cache):
    """The driver counts as cachesim does: cs, LRU, 100 objects, the same miss ratio."""
    path = REPO / "traces" / "cs.oracleGeneral.zst"
    shown = run(str(cachesim), str(path), "oracleGeneral", "lru", "100,500", "--ignore-obj-size",
                "1", "--prefetch", "OBL", "--prefetch-params", prefetch_params(1), cwd=cache,
                capture_output=True, text=True).stdout
    ratio = [l.split("miss ratio ")[1].split(",")[0] for l in shown.splitlines() if "size" in l]
    ours = libcachesim(driver, path, "lru")
    mine = [f"{ours[s][1] / ours[s][0]:.4f}" for s in (100, 500)]
    if ratio != mine:
        sys.exit(f"the driver disagrees with cachesim: {mine} against {ratio}")


def simulator(prefetch, ours):
    """{(trace, policy, size): (misses, prefetches)} of `prefetch sim` on the shipped traces,
    on a disk that fetches at once (libCacheSim inserts prefetched objects at once)."""
    traces = ",".join(str(REPO / "traces" / f"{t}.oracleGeneral.zst") for t in TRACES)
    policies = ",".join(f"{p}+{ours}" for p in POLICIES)
    out = run(str(prefetch), "sim", "--trace", traces, "--policy", policies, "--cache",
              ",".join(map(str, SIZES)), "--device", "fixed:0", "--json", capture_output=True,
              text=True).stdout
    return {(r["trace"].split(".")[0], r["policy"].split("+")[0], r["capacity"]):
            (r["misses"], r["prefetches"]) for r in json.loads(out)}


def table(driver, prefetch):
    """The docs' table: libCacheSim and the simulator on the shipped traces, by policy."""
    print("| pairing | runs | misses | prefetches |")
    print("|---|---:|---|---|")
    for name, prefetcher, params in PREFETCHERS + SECOND_CHANCE:
        ours = simulator(prefetch, name)
        for policy in POLICIES:
            dm, dp, runs = set(), set(), 0
            for trace in TRACES:
                path = REPO / "traces" / f"{trace}.oracleGeneral.zst"
                theirs = None
                if (policy, trace) not in HANGS:
                    theirs = libcachesim(driver, path, policy, prefetcher, params)
                for size, (_, misses, prefetches) in (theirs or {}).items():
                    mine = ours[(trace, policy, size)]
                    dm.add(misses - mine[0])
                    dp.add(prefetches - mine[1])
                    runs += 1
            show = lambda d: ", ".join(map(str, sorted(d)))
            theirs = ""
            if (name, prefetcher, params) in SECOND_CHANCE:
                theirs = " (libCacheSim: cycle-time=2)"
            print(f"| `{policy}+{name}`{theirs} | {runs} | {show(dm)} | {show(dp)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default=SOURCE,
                        help="libCacheSim's git repository: a URL, or a local git directory")
    default_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    parser.add_argument("--cache", type=Path,
                        default=default_cache / "libprefetch" / f"libCacheSim-{COMMIT[:12]}")
    parser.add_argument("--prefetch", type=Path, default=REPO / "target/release/prefetch")
    parser.add_argument("--write", action="store_true",
                        help="write traces/libcachesim_prefetch.json")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    cachesim, driver = build(args.source, args.cache.resolve())
    check_driver(cachesim, driver, args.cache)
    if not args.write:
        table(driver, args.prefetch)
        return
    counts = {}
    for trace in TRACES:
        path = shifted(trace, args.cache)
        for policy in POLICIES:
            for name, prefetcher, params in PREFETCHERS:
                if (policy, trace) in HANGS:
                    continue
                theirs = libcachesim(driver, path, policy, prefetcher, params)
                if theirs is not None:
                    counts.setdefault(trace, {})[f"{policy}+{name}"] = {
                        str(size): {"requests": r, "misses": m, "prefetches": p}
                        for size, (r, m, p) in theirs.items()}
    fixture = {
        "libcachesim": f"{SOURCE} {COMMIT}",
        "command": "python3 scripts/libcachesim_prefetch.py --write",
        "prefetchers": {name: f"{prefetcher} {params}" for name, prefetcher, params in PREFETCHERS},
        "traces_form": "traces/NAME.oracleGeneral.zst with every object id + 1",
        "cache_sizes": SIZES,
        "traces": counts,
    }
    out = REPO / "traces" / "libcachesim_prefetch.json"
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
