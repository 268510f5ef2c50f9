#!/usr/bin/env python3
"""One query on the emulated 7200 RPM disk, each run in a memory cgroup of its own: stock SQLite and
one or more builds of the extension, rotated (docs/repro.md, "SQLite on real schemas", the emulated
6 MiB rows; the libprefetch paper's section 4.6 setting of a process whose memory is short).

`prefetch bench sqlite --settings emulated` has no cgroup; this mounts `prefetch emulate` over a
directory holding only the database, and for each run evicts the file (mount and backing), makes a
cgroup v1 memory group of `--cgroup-bytes`, and runs `prefetch sqlite query` in it. Per run it prints
the seconds, the emulated disk's requests (`.emulate-stats`, exact), the rows' checksum and the
extension's statistics line (`PREFETCH_SQLITE_STATS=1`); then each build's medians. Needs root,
cgroup v1 memory at /sys/fs/cgroup/memory, fusermount3 and vmtouch.

    python3 scripts/sqlite_emulated_cgroup.py --db /tmp/pfreal/unicode.db --time-scale 0.5 \\
        --rounds 3 --ext main=BASE/libprefetch_sqlite.so --ext this=target/release/libprefetch_sqlite.so
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import emulated_requests

CGROUP_ROOT = "/sys/fs/cgroup/memory"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="the database (copied into the backing directory)")
    p.add_argument("--sql", default="SELECT * FROM chars ORDER BY name")
    p.add_argument("--prefetch", default="target/release/prefetch")
    p.add_argument("--ext", action="append", default=[], metavar="NAME=PATH",
                   help="an extension build to run beside stock (repeatable)")
    p.add_argument("--time-scale", default="0.5")
    p.add_argument("--cgroup-bytes", type=int, default=6 << 20)
    p.add_argument("--rounds", type=int, default=3, help="rotations of stock and every build")
    p.add_argument("--whole-scans", action="store_true")
    p.add_argument("--work", default="/tmp/pfemu-cgroup", help="scratch: backing dir and mount point")
    p.add_argument("--name", default="pfemu-cgroup", help="the cgroup's name")
    p.add_argument("--request-log", metavar="FILE",
                   help="the emulated disk's request log (docs/emulate.md); then each run's requests "
                        "by size, sweeps and idle time (scripts/emulated_requests.py)")
    return p.parse_args()


def stats(mount):
    with open(os.path.join(mount, ".emulate-stats")) as f:
        return json.load(f)


def mount_disk(args, backing, mount):
    """Starts `prefetch emulate` and waits until the mount answers."""
    log = ["--request-log", args.request_log] if args.request_log else []
    daemon = subprocess.Popen(
        [args.prefetch, "emulate", "--model", "st3500320as", "--time-scale", args.time_scale,
         "--backing", backing, mount] + log,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            stats(mount)
            return daemon
        except OSError:
            time.sleep(0.05)
    daemon.kill()
    sys.exit("the emulated disk did not mount")


def run_once(args, mount, db, ext):
    """One cold run in a fresh cgroup: (seconds, requests, the disk's busy model seconds, rows,
    checksum, statistics line, the run's span in model seconds since the mount)."""
    subprocess.run(["vmtouch", "-q", "-e", db, os.path.join(args.work, "backing",
                                                            os.path.basename(db))], check=True)
    group = os.path.join(CGROUP_ROOT, args.name)
    if os.path.isdir(group):
        os.rmdir(group)
    os.mkdir(group)
    with open(os.path.join(group, "memory.limit_in_bytes"), "w") as f:
        f.write(str(args.cgroup_bytes))
    command = [args.prefetch, "sqlite", "query", "--json", "--sql", args.sql, "--db", db]
    if ext:
        command += ["--ext", ext]
    if args.whole_scans:
        command.append("--whole-scans")
    shell = 'echo $$ > "$0/tasks"; exec "$@"'
    env = dict(os.environ, PREFETCH_SQLITE_STATS="1")
    before = stats(mount)
    done = subprocess.run(["sh", "-c", shell, group] + command, env=env, capture_output=True,
                          text=True, check=True)
    after = stats(mount)
    requests = after["requests"] - before["requests"]
    busy = after["busy_seconds"] - before["busy_seconds"]
    os.rmdir(group)
    run = json.loads(done.stdout)
    line = next((l for l in done.stderr.splitlines() if "database closed" in l), "")
    span = (before["elapsed_seconds"], after["elapsed_seconds"])
    return run["seconds"], requests, busy, run["rows"], run["checksum"], line, span


def main():
    args = parse_args()
    builds = [("stock", None)] + [tuple(e.split("=", 1)) for e in args.ext]
    backing, mount = os.path.join(args.work, "backing"), os.path.join(args.work, "mnt")
    os.makedirs(backing, exist_ok=True)
    os.makedirs(mount, exist_ok=True)
    copy = os.path.join(backing, os.path.basename(args.db))
    if not os.path.exists(copy):
        shutil.copyfile(args.db, copy)
    daemon = mount_disk(args, backing, mount)
    results = {name: [] for name, _ in builds}
    checksums = set()
    spans = []
    try:
        for r in range(args.rounds):
            order = builds[r % len(builds):] + builds[:r % len(builds)]
            for name, ext in order:
                with open("/proc/loadavg") as f:
                    load = f.read().split()[0]
                seconds, requests, busy, rows, checksum, line, span = run_once(
                    args, mount, os.path.join(mount, os.path.basename(args.db)), ext)
                spans.append((name, span))
                checksums.add((rows, checksum))
                results[name].append((seconds, requests))
                print(f"{name:>8} {seconds:8.2f} s {requests:7d} requests {busy:6.1f} s busy (model)  load {load}  {line}",
                      flush=True)
    finally:
        subprocess.run(["fusermount3", "-u", mount], check=False)
        daemon.wait()
    print(f"rows identical in every run: {len(checksums) == 1}")
    if args.request_log:
        emulated_requests.print_runs(args.request_log, spans)
    stock = statistics.median(s for s, _ in results["stock"])
    for name, runs in results.items():
        seconds = statistics.median(s for s, _ in runs)
        requests = [q for _, q in runs]
        print(f"{name:>8} median {seconds:8.2f} s  stock/this {stock / seconds:5.2f}x  "
              f"requests {min(requests)}-{max(requests)}")


if __name__ == "__main__":
    main()
