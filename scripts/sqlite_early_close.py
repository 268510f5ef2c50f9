"""A query whose cursor the application closes early: Python's sqlite3 reads N rows of QUERY, cold, and
closes, stock and with the extension alternated (docs/repro.md, "A table about the memory's size").

Each run is a child process, in the v1 memory cgroup CGROUP if given; the database's pages are dropped
before each (POSIX_FADV_DONTNEED: only clean pages leave, the file is not changed). Prints each run's
seconds and the pages the process read. Needs a Python whose sqlite3 loads extensions (Debian's
/usr/bin/python3 does; a pyenv build may not).

    /usr/bin/python3 scripts/sqlite_early_close.py DB "SELECT * FROM t ORDER BY c" EXT [EXT2 ...] --rows 1000,30000

Several extensions (builds to compare) run in turn after stock, named ext0, ext1, ... in that order.
"""

import argparse
import os
import subprocess
import sys

CHILD = r"""
import sqlite3, sys, time
def read_bytes():
    for line in open('/proc/self/io'):
        if line.startswith('read_bytes'):
            return int(line.split()[1])
db, sql, rows, ext = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if ext:
    loader = sqlite3.connect(':memory:')
    loader.enable_load_extension(True)
    loader.load_extension(ext)
    loader.close()
began, before = time.monotonic(), read_bytes()
con = sqlite3.connect(db)
cursor = con.execute(sql)
for i, _ in enumerate(cursor):
    if i + 1 >= rows:
        break
cursor.close()
con.close()
print(time.monotonic() - began, read_bytes() - before)
"""


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def run(args, rows, ext):
    drop_cache(args.db)
    command = [sys.executable, "-c", CHILD, args.db, args.sql, str(rows), ext]
    enter = None
    if args.cgroup:
        tasks = f"/sys/fs/cgroup/memory/{args.cgroup}/tasks"
        enter = lambda: open(tasks, "w").write(str(os.getpid()))  # noqa: E731
    out = subprocess.run(command, check=True, capture_output=True, text=True, preexec_fn=enter)
    seconds, read = out.stdout.split()
    return float(seconds), int(read) // 4096


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("sql")
    parser.add_argument("ext", nargs="+", help="the extension (libprefetch_sqlite.so); several builds alternate")
    parser.add_argument("--rows", default="1000,3000,10000,30000", help="rows read before closing")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cgroup", help="a v1 memory cgroup's name to run in")
    args = parser.parse_args()
    for rows in [int(n) for n in args.rows.split(",")]:
        for _ in range(args.runs):
            for name, ext in [("stock", "")] + [(f"ext{i}", ext) for i, ext in enumerate(args.ext)]:
                seconds, pages = run(args, rows, ext)
                load = os.getloadavg()[0]
                print(f"{rows:>8} {name:>9} {seconds:8.3f} s {pages:>8} pages  load {load:.1f}")


if __name__ == "__main__":
    main()
