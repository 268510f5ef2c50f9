#!/usr/bin/python3
"""What a warm connection costs from open to close: opens a read-only connection, runs a short query on
the cached file, closes it, N times in one process, and prints the median in microseconds. With
`--vfs unix` the connections use stock SQLite (the extension loaded but not used); by default the
extension's `prefetch` VFS. Run it alternately for the builds to compare, a process each (two builds'
extensions cannot share one process: both register the VFS `prefetch`). docs/repro.md, "SQLite on real
schemas" (paper section 5.4: the extension must cost nothing where there is nothing to prefetch).

Needs a Python whose sqlite3 module can load extensions (Debian's /usr/bin/python3 can).

Usage: sqlite_connection_cost.py EXTENSION DB [--vfs unix|prefetch] [--connections N] [--sql QUERY]
"""

import argparse
import sqlite3
import statistics
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("extension")
    parser.add_argument("db")
    parser.add_argument("--vfs", default="prefetch")
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--sql", default="SELECT * FROM chars ORDER BY code DESC LIMIT 20")
    args = parser.parse_args()
    loader = sqlite3.connect(":memory:")
    loader.enable_load_extension(True)
    loader.load_extension(args.extension)
    seconds = []
    for _ in range(args.connections):
        start = time.perf_counter()
        conn = sqlite3.connect(f"file:{args.db}?mode=ro&vfs={args.vfs}", uri=True)
        conn.execute(args.sql).fetchall()
        conn.close()
        seconds.append(time.perf_counter() - start)
    print(f"{statistics.median(seconds) * 1e6:.1f}")


if __name__ == "__main__":
    main()
