#!/usr/bin/env python3
"""Whole programs, cold, under `prefetch record` / `run --replay` / `run --restore`
(docs/record.md, "Trials").

Each program runs cold (its files evicted from the page cache with `vmtouch -e`)
in these modes, alternated round by round (each round starting at the next
mode), median of the rounds (and of each round's ratio to stock's time):

  stock     the program alone
  replay    `prefetch run --replay REC`, REC recorded cold by `prefetch record`
            (the tracepoint where privileged)
  replay-u  the same with a recording of `prefetch record --no-tracepoint`
  base      the same recording replayed by another build (--base PREFETCH, e.g. main's)
  base-restore  the same snapshot restored by that build (`run --restore`)
  library   `prefetch run -- CMD`: the preloaded library alone, nothing replayed or restored
  other     `prefetch run --replay` of another program's recording (no harm)
  other-restore  `prefetch run --restore` of another program's snapshot (no harm)
  base-other-restore  the same by the --base build
  restore   `prefetch run --restore SNAP`, SNAP taken after a warm run
  vmtouch   `vmtouch -t` of the program's files, then the program
  warm      the program with its files cached

Every run's output is compared with stock's (a difference aborts). With
--cgroup-mib every command runs in a cgroup v1 memory group of that size; with
--cgroup-quarter, in one sized for each program: the memory a warm run of it
charges (its own memory: its files are cached already), plus a quarter of the
pages its recording holds. A second table gives each mode's median disk requests
and MiB read during the run (MNT/.emulate-stats): exact, whatever the machine's load.
A third gives the emulated disk's busy time (the model's service times, in wall
seconds at the time scale) per mode: no run can end before the disk has served its
requests, so stock's time over a mode's busy time bounds what that mode could reach
with the same requests. Where MNT is not an emulated disk (this machine's), the
second table counts the 4 KiB pages the run's processes read from the device
(`getrusage`'s `ru_inblock`, the advice's reads included) and there is no third.

Usage (root; DIR on the emulated disk, see docs/record.md):
  scripts/bench_record.py --prefetch target/release/prefetch --mount MNT [--rounds 3]
      [--cgroup-quarter | --cgroup-mib N] [--cgroup-name NAME] [--python /usr/bin/python3]
      [--only 'grep -rn;git grep'] [--modes stock,replay,other] [--base PREFETCH] [--times FILE]
"""

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time

MODES = ["stock", "library", "replay", "base", "replay-u", "other", "restore", "base-restore", "other-restore",
         "base-other-restore", "vmtouch", "warm"]


def programs(mnt, python):
    """name -> (argv, extra environment, dataset paths, program whose recording is 'other')."""
    return {
        "mmap random": (
            [python, f"{mnt}/mmap_reader.py", f"{mnt}/data96.bin", "3000"],
            {},
            [f"{mnt}/data96.bin", f"{mnt}/mmap_reader.py"],
            "grep -rn",
        ),
        "import numpy, pandas": (
            [python, "-c", "import numpy, pandas"],
            {"PYTHONPATH": f"{mnt}/site"},
            [f"{mnt}/site"],
            "mmap random",
        ),
        "git log -p": (
            ["git", "-C", f"{mnt}/repo", "log", "-p", "-n", "1500"],
            {"GIT_PAGER": "cat"},
            [f"{mnt}/repo"],
            "grep -rn",
        ),
        "git grep": (
            ["git", "-C", f"{mnt}/repo", "grep", "-n", "unsafe"],
            {"GIT_PAGER": "cat"},
            [f"{mnt}/repo"],
            "git log -p",
        ),
        "grep -rn": (
            ["grep", "-rn", "import", f"{mnt}/src"],
            {},
            [f"{mnt}/src"],
            "git log -p",
        ),
    }


class Runner:
    def __init__(self, args):
        self.prefetch = os.path.abspath(args.prefetch)
        self.base = os.path.abspath(args.base) if args.base else None
        self.work = args.work
        self.stats = os.path.join(args.mount, ".emulate-stats")
        self.emulated = os.path.exists(self.stats)
        self.served = (0, 0, 0.0)
        self.cgroup = None
        if args.cgroup_mib or args.cgroup_quarter:
            self.cgroup = f"/sys/fs/cgroup/memory/{args.cgroup_name or f'whole-bench-{os.getpid()}'}"
            os.mkdir(self.cgroup)
            self.limit((args.cgroup_mib or 1 << 20) << 20)

    def limit(self, size):
        """Sets the cgroup's limit to `size` bytes and clears its peak."""
        with open(f"{self.cgroup}/memory.limit_in_bytes", "w") as f:
            f.write(str(size))
        with open(f"{self.cgroup}/memory.max_usage_in_bytes", "w") as f:
            f.write("0")

    def counter(self, name):
        with open(f"{self.cgroup}/memory.{name}_in_bytes") as f:
            return int(f.read())

    def join(self):
        if self.cgroup:
            with open(f"{self.cgroup}/cgroup.procs", "w") as f:
                f.write("0")

    def counters(self):
        """The emulated disk's requests, bytes and busy wall seconds so far; elsewhere the
        4 KiB pages the runs' processes read from the device (`ru_inblock`), bytes and 0."""
        if not self.emulated:
            blocks = resource.getrusage(resource.RUSAGE_CHILDREN).ru_inblock
            return blocks // 8, blocks * 512, 0.0
        with open(self.stats) as f:
            stats = json.load(f)
        return stats["requests"], stats["bytes"], stats["busy_seconds"] * stats["time_scale"]

    def run(self, argv, env, check=True):
        """Wall seconds and a digest of stdout; `served` is the disk's requests and bytes
        during the run (with a replay's or restore's work that outlives the program, which
        the next run's eviction ends)."""
        before = self.counters()
        started = time.monotonic()
        out = subprocess.run(argv, env={**os.environ, **env}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=self.join)
        seconds = time.monotonic() - started
        after = self.counters()
        self.served = tuple(a - b for a, b in zip(after, before))
        if check and out.returncode != 0:
            sys.exit(f"{argv} failed: {out.stderr.decode(errors='replace')[-2000:]}")
        return seconds, hashlib.md5(out.stdout).hexdigest()

    def evict(self, paths):
        subprocess.run(["vmtouch", "-q", "-e", *paths], check=True)

    def close(self):
        if self.cgroup:
            for _ in range(50):
                try:
                    os.rmdir(self.cgroup)
                    return
                except OSError:
                    time.sleep(0.1)


def command(runner, mode, name, progs):
    argv, env, paths, other = progs[name]
    rec = lambda n, kind: os.path.join(runner.work, f"{n.replace(' ', '_')}.{kind}")
    p = runner.prefetch
    if mode == "library":
        return [p, "run", "--", *argv], env
    if mode == "replay":
        return [p, "run", "--replay", rec(name, "rec"), "--", *argv], env
    if mode == "base":
        return [runner.base, "run", "--replay", rec(name, "rec"), "--", *argv], env
    if mode == "replay-u":
        return [p, "run", "--replay", rec(name, "urec"), "--", *argv], env
    if mode == "other":
        return [p, "run", "--replay", rec(other, "rec"), "--", *argv], env
    if mode == "restore":
        return [p, "run", "--restore", rec(name, "snap"), "--", *argv], env
    if mode == "other-restore":
        return [p, "run", "--restore", rec(other, "snap"), "--", *argv], env
    if mode == "base-restore":
        return [runner.base, "run", "--restore", rec(name, "snap"), "--", *argv], env
    if mode == "base-other-restore":
        return [runner.base, "run", "--restore", rec(other, "snap"), "--", *argv], env
    if mode == "vmtouch":
        quoted = " ".join(f"'{a}'" for a in argv)
        tree = " ".join(f"'{a}'" for a in paths)
        return ["sh", "-c", f"vmtouch -q -t {tree} && exec {quoted}"], env
    return argv, env


def recorded_bytes(path):
    """Bytes of the distinct pages a recording holds."""
    page_size, files, pages = 4096, {}, set()
    with open(path) as f:
        for line in f:
            words = line.split()
            if words[0] == "libprefetch-recording":
                page_size = int(words[2].split("=")[1])
            elif words[0] == "file":
                files[words[1]] = (words[2], words[3])
            elif words[0] == "pages":
                first, count = int(words[2]), int(words[3])
                pages.update((files[words[1]], p) for p in range(first, first + count))
    return len(pages) * page_size


def prepare(runner, progs, quarter, snapshots):
    """Recordings (both methods, cold) and snapshots (warm) of every program;
    with `quarter`, each program's cgroup size (name -> bytes)."""
    sizes = {}
    for name, (argv, env, paths, _) in progs.items():
        base = os.path.join(runner.work, name.replace(" ", "_"))
        for kind, extra in (("rec", []), ("urec", ["--no-tracepoint"])):
            runner.evict(paths)
            if quarter:
                runner.limit(1 << 40)
            runner.run([runner.prefetch, "record", "-o", f"{base}.{kind}", *extra, "--", *argv], env)
        if quarter:
            runner.limit(1 << 40)
        before = runner.counter("usage") if quarter else 0
        runner.run(argv, env)
        if quarter:
            files = recorded_bytes(f"{base}.rec")
            own = max(runner.counter("max_usage") - before, 0)
            sizes[name] = own + files // 4
            print(f"{name}: cgroup {sizes[name] >> 20} MiB = its own {own >> 20} MiB"
                  f" + a quarter of {files >> 20} MiB recorded", file=sys.stderr)
        if snapshots:
            subprocess.run([runner.prefetch, "snapshot", "-o", f"{base}.snap", *paths], check=True,
                           stdout=subprocess.DEVNULL)
    return sizes


def busy_table(progs, modes, times, served, setting):
    """The disk's busy wall seconds per mode (median), and the bound they set: stock's time
    over the mode's busy time (no run ends before its disk has served it)."""
    print(f"\n| disk busy, wall s (bound: stock's time / busy) ({setting}, median) | "
          + " | ".join(modes) + " |")
    print("|---|" + "---:|" * len(modes))
    for name in progs:
        stock = statistics.median(times[(name, "stock")])
        cells = []
        for mode in modes:
            busy = statistics.median(s for _, _, s in served[(name, mode)])
            cells.append(f"{busy:.2f} s" + (f" ({stock / busy:.2f}x)" if busy > 0 else ""))
        print(f"| `{name}` | " + " | ".join(cells) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prefetch", required=True)
    parser.add_argument("--base", help="another build's prefetch, for the mode 'base'")
    parser.add_argument("--mount", required=True)
    parser.add_argument("--work", default="/tmp/prefetch-bench-record")
    parser.add_argument("--python", default="/usr/bin/python3", help="the python3 the programs run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cgroup-mib", type=int)
    parser.add_argument("--cgroup-quarter", action="store_true")
    parser.add_argument("--cgroup-name", help="the memory cgroup's name (default: whole-bench-PID)")
    parser.add_argument("--only", help="program names separated by semicolons")
    parser.add_argument("--modes", help="modes separated by commas (default: all)")
    parser.add_argument("--times", help="write every run's seconds and disk counters here (JSON: "
                        "program -> mode -> [[seconds, requests or pages, bytes, busy s], ...] in "
                        "round order), to look at the rounds behind the medians")
    args = parser.parse_args()
    modes = args.modes.split(",") if args.modes else MODES
    if not args.base:
        modes = [m for m in modes if m not in ("base", "base-restore", "base-other-restore")]
    os.makedirs(args.work, exist_ok=True)
    python = os.path.realpath(args.python)
    every = programs(os.path.abspath(args.mount), python)
    progs = {k: v for k, v in every.items() if not args.only or k in args.only.split(";")}
    runner = Runner(args)
    try:
        # The recordings of the programs and of those whose recordings `other` replays.
        others = {"other", "other-restore", "base-other-restore"} & set(modes)
        needed = set(progs) | ({progs[n][3] for n in progs} if others else set())
        needed = {n: v for n, v in every.items() if n in needed}
        snapshots = bool({"restore", "base-restore", "other-restore", "base-other-restore"} & set(modes))
        sizes = prepare(runner, needed, args.cgroup_quarter, snapshots)
        times = {(n, m): [] for n in progs for m in modes}
        served = {(n, m): [] for n in progs for m in modes}
        for round in range(args.rounds):
            for name, (argv, env, paths, other) in progs.items():
                # A cold machine: the files of the program whose recording or snapshot
                # `other` and `other-restore` use are evicted too (a restore of cached
                # pages reads nothing).
                cold = paths + (every[other][2] if others else [])
                if args.cgroup_quarter:
                    runner.limit(sizes[name])
                expected = None
                # Each round starts at another mode: the first run after another program pays
                # for reclaiming that program's pages in the cgroup.
                for mode in modes[round % len(modes):] + modes[:round % len(modes)]:
                    if mode == "warm":
                        runner.run(argv, env)
                    else:
                        runner.evict(cold)
                    seconds, digest = runner.run(*command(runner, mode, name, progs))
                    expected = expected or digest
                    if digest != expected:
                        sys.exit(f"{name}: the output under {mode} differs from the other modes")
                    times[(name, mode)].append(seconds)
                    served[(name, mode)].append(runner.served)
        if args.times:
            with open(args.times, "w") as f:
                json.dump({n: {m: [[t, *c] for t, c in zip(times[(n, m)], served[(n, m)])]
                               for m in modes} for n in progs}, f)
        setting = f"memory cgroup {args.cgroup_mib} MiB" if args.cgroup_mib else "no cgroup"
        setting = "memory cgroup of a quarter" if args.cgroup_quarter else setting
        print(f"| program ({setting}, median of {args.rounds}) | " + " | ".join(modes) + " |")
        print("|---|" + "---:|" * len(modes))
        for name in progs:
            stock = statistics.median(times[(name, "stock")])
            cells = []
            for mode in modes:
                median = statistics.median(times[(name, mode)])
                cells.append(f"{median:.2f} s" + ("" if mode == "stock" else f" ({stock / median:.2f}x)"))
            size = f" ({sizes[name] >> 20} MiB)" if args.cgroup_quarter else ""
            print(f"| `{name}`{size} | " + " | ".join(cells) + " |")
        print(f"\n| per-round ratio, stock / mode ({setting}, median of {args.rounds}) | "
              + " | ".join(modes) + " |")
        print("|---|" + "---:|" * len(modes))
        for name in progs:
            stock = times[(name, "stock")]
            cells = [f"{statistics.median(s / t for s, t in zip(stock, times[(name, mode)])):.2f}x"
                     for mode in modes]
            print(f"| `{name}` | " + " | ".join(cells) + " |")
        what = "disk requests / MiB read" if runner.emulated else "4 KiB pages read from the device"
        print(f"\n| {what} ({setting}, median) | " + " | ".join(modes) + " |")
        print("|---|" + "---:|" * len(modes))
        for name in progs:
            cells = []
            for mode in modes:
                requests = statistics.median(r for r, _, _ in served[(name, mode)])
                mib = statistics.median(b for _, b, _ in served[(name, mode)]) / (1 << 20)
                cells.append(f"{requests:.0f} / {mib:.1f}" if runner.emulated else f"{requests:.0f}")
            print(f"| `{name}` | " + " | ".join(cells) + " |")
        if runner.emulated:
            busy_table(progs, modes, times, served, setting)
    finally:
        runner.close()


if __name__ == "__main__":
    main()
