#!/usr/bin/python3
"""The cold rows of `plan::readahead`'s "Observed, not assumed" (pages left to a read-ahead the kernel
does not make on a POSIX_FADV_RANDOM descriptor; libprefetch, ATC 2009, section 4.5): a list of
single-page reads stepping around a file, read with POSIX_FADV_RANDOM and with POSIX_FADV_NORMAL set,
stock and through each given libprefetch.so (its C API through ctypes: the list given with PF_SET, each
read told with pf_note_read before its pread). Every pass runs in its own process on a file evicted
first (posix_fadvise DONTNEED); the order of the builds rotates every pair. Prints per advice and build
the median wall time of the pass (the list's hand-over included), the runs, and the last run's
(misses, pages advised).

Usage: fadvise_random_ab.py FILE PAIRS STEP LIBPREFETCH.so [LIBPREFETCH.so ...]
  e.g. fadvise_random_ab.py /var/tmp/data-8M.bin 12 273 /var/tmp/main/libprefetch.so \
           target/release/libprefetch.so
(FILE: 8 MiB, written if missing; 1,024 reads from its last page, each STEP pages below the one
before, around the file: STEP 273 makes 15 interleaved ascending streams of adjacent pages; STEP 2031
is 17 pages up.)
"""

import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

PAGE = 4096
FILE_PAGES = 2048
READS = 1024
PF_SET = 2


class Entry(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_longlong), ("fd", ctypes.c_int), ("mark", ctypes.c_bool)]


class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "rounds callbacks tracked_reads divergences misses premature_evictions pages_prefetched "
        "pages_dropped budget_bytes list_length pages_fetched prefetched_used "
        "prefetched_unused_dropped infill_pages").split()]


def load(path):
    """The C API of the libprefetch.so at `path`, its argument types declared."""
    lib = ctypes.CDLL(path)
    lib.pf_register_client.restype = ctypes.c_void_p
    lib.pf_register_region.restype = ctypes.c_void_p
    lib.pf_register_region.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong,
                                       ctypes.c_longlong]
    lib.pf_request_prefetching.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_int]
    lib.pf_note_read.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_size_t]
    lib.pf_get_stats.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib


def one_pass(path, library, advice, step):
    """One cold pass (this process); prints its wall time and the client's counters as JSON."""
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.posix_fadvise(fd, 0, 0, advice)
    pages = [FILE_PAGES - 1 - (i * step) % FILE_PAGES for i in range(READS)]
    lib = load(library) if library != "stock" else None
    if lib:
        client = lib.pf_register_client(None, None)
        lib.pf_register_region(client, fd, 0, FILE_PAGES * PAGE)
        entries = (Entry * len(pages))(*[Entry(p * PAGE, fd, False) for p in pages])
    start = time.perf_counter()
    if lib:
        lib.pf_request_prefetching(client, entries, len(pages), PF_SET)
    for page in pages:
        if lib:
            lib.pf_note_read(fd, page * PAGE, PAGE)
        os.pread(fd, PAGE, page * PAGE)
    wall = time.perf_counter() - start
    counters = None
    if lib:
        stats = Stats()
        lib.pf_get_stats(client, ctypes.byref(stats))
        counters = [stats.misses, stats.pages_prefetched]
    print(json.dumps({"wall": wall, "counters": counters}))


def main():
    if sys.argv[1] == "--one-pass":
        one_pass(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    path, pairs, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    builds = ["stock"] + sys.argv[4:]
    if not os.path.exists(path) or os.path.getsize(path) != FILE_PAGES * PAGE:
        with open(path, "wb") as out:
            out.write(os.urandom(FILE_PAGES * PAGE))
        os.sync()
    runs = {}
    for pair in range(pairs):
        for name, advice in (("random", os.POSIX_FADV_RANDOM), ("normal", os.POSIX_FADV_NORMAL)):
            turn = pair % len(builds)
            for build in builds[turn:] + builds[:turn]:
                done = subprocess.run([sys.executable, __file__, "--one-pass", path, build,
                                       str(advice), str(step)],
                                      capture_output=True, text=True, check=True)
                runs.setdefault((name, build), []).append(json.loads(done.stdout))
        print(f"pair {pair}: load {open('/proc/loadavg').read().split()[0]}", flush=True)
    for (name, build), results in sorted(runs.items()):
        walls = [r["wall"] * 1000 for r in results]
        print(f"{name} {build}: median {statistics.median(walls):.1f} ms, runs "
              f"{' '.join(f'{w:.1f}' for w in walls)}; (misses, advised) {results[-1]['counters']}")


if __name__ == "__main__":
    main()
