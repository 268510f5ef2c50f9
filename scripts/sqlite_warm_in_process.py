#!/usr/bin/python3
"""Times short warm queries in one process, stock SQLite against the extension's `prefetch` VFS, each on
a fresh connection, alternated pair by pair: what the extension costs a query once it is loaded, apart
from what a process pays once to load it and run its code for the first time (which the per-process
`prefetch bench sqlite --settings warm` rows include). Prints the median of the first and of a second
run of each query on its connection.

Needs a Python whose sqlite3 module can load extensions (Debian's /usr/bin/python3 can).

Usage: sqlite_warm_in_process.py EXTENSION DB [--pairs N] [QUERY ...]
  e.g. sqlite_warm_in_process.py target/release/libprefetch_sqlite unicode.db
"""

import argparse
import sqlite3
import statistics
import time

DEFAULT_QUERIES = [
    "SELECT * FROM chars ORDER BY code DESC LIMIT 20",
    "SELECT * FROM chars ORDER BY name LIMIT 200",
]


def timed_twice(db, query, vfs):
    """Seconds of a first and a second run of `query` on one new read-only connection."""
    uri = f"file:{db}?mode=ro" + (f"&vfs={vfs}" if vfs else "")
    conn = sqlite3.connect(uri, uri=True)
    times = []
    for _ in range(2):
        start = time.perf_counter()
        conn.execute(query).fetchall()
        times.append(time.perf_counter() - start)
    conn.close()
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extension")
    parser.add_argument("db")
    parser.add_argument("queries", nargs="*", default=DEFAULT_QUERIES)
    parser.add_argument("--pairs", type=int, default=201)
    args = parser.parse_args()
    loader = sqlite3.connect(":memory:")
    loader.enable_load_extension(True)
    loader.load_extension(args.extension)
    print("query | first run: stock / extension (us) | second run: stock / extension (us)")
    for query in args.queries:
        runs = {None: [], "prefetch": []}
        for _ in range(args.pairs):
            for vfs in runs:
                runs[vfs].append(timed_twice(args.db, query, vfs))
        medians = {
            vfs: [statistics.median(r[i] for r in samples) * 1e6 for i in range(2)]
            for vfs, samples in runs.items()
        }
        stock, ext = medians[None], medians["prefetch"]
        print(f"{query} | {stock[0]:.0f} / {ext[0]:.0f} | {stock[1]:.0f} / {ext[1]:.0f}")


if __name__ == "__main__":
    main()
