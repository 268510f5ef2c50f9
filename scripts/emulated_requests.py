#!/usr/bin/env python3
"""Takes the emulated disk's request log (`prefetch emulate --request-log`, docs/emulate.md) apart
run by run: requests by size, bytes, bytes read more than once, sweeps (an address below the
previous one starts one), busy and idle model seconds. It sets a live run beside the simulator's
fetches of the same trace (docs/repro.md, "The bound at the memory the cgroup leaves"; the
libprefetch paper's sections 3.2-3.5: fewer, larger, C-LOOK-ordered requests).

    python3 scripts/emulated_requests.py LOG [FROM_S TO_S]
"""

import sys

PAGE = 4096
SIZE_BUCKETS = [(1, 1), (2, 2), (3, 4), (5, 8), (9, 16), (17, 32), (33, 1 << 40)]


def read_log(path):
    """The log's requests as (arrival, start, done, address, bytes), in the order served."""
    with open(path) as f:
        rows = [line.split() for line in f if line.strip() and not line.startswith("#")]
    return [(float(a), float(s), float(d), int(addr), int(n)) for a, s, d, addr, n in rows]


def summary(requests):
    """Counters of one run's requests: a dict of plain numbers and the size histogram."""
    pages_seen, reread = set(), 0
    sweeps, busy, idle, previous, previous_done = 0, 0.0, 0.0, None, None
    sizes = [0] * len(SIZE_BUCKETS)
    for arrival, start, done, address, size in requests:
        pages = range(address // PAGE, (address + size + PAGE - 1) // PAGE)
        reread += sum(1 for p in pages if p in pages_seen)
        pages_seen.update(pages)
        if previous is None or address < previous:
            sweeps += 1
        previous = address
        busy += done - start
        if previous_done is not None:
            idle += max(0.0, start - previous_done)
        previous_done = done
        blocks = len(pages)
        sizes[next(i for i, (lo, hi) in enumerate(SIZE_BUCKETS) if lo <= blocks <= hi)] += 1
    total = sum(size for *_, size in requests)
    return {"requests": len(requests), "pages": total // PAGE, "pages_reread": reread,
            "sweeps": sweeps, "busy_s": busy, "idle_s": idle}, sizes


def print_summary(name, requests):
    counts, sizes = summary(requests)
    head = " ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in counts.items())
    hist = " ".join(f"{lo}-{hi if hi < 1 << 40 else 'up'}:{n}"
                    for (lo, hi), n in zip(SIZE_BUCKETS, sizes))
    print(f"{name:>8} {head}  requests by pages {hist}")


def print_runs(path, spans):
    """One line per run: `spans` is [(name, (from_s, to_s))] in model seconds since the mount."""
    requests = read_log(path)
    for name, (start, end) in spans:
        print_summary(name, [r for r in requests if start <= r[0] < end])


def main():
    path = sys.argv[1]
    requests = read_log(path)
    if len(sys.argv) == 4:
        start, end = float(sys.argv[2]), float(sys.argv[3])
        requests = [r for r in requests if start <= r[0] < end]
    print_summary("log", requests)


if __name__ == "__main__":
    main()
