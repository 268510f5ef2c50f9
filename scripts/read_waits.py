#!/usr/bin/python3
"""What a benchmark pass's reads waited on: every read of one size is traced with the kernel's
read-ahead events and the library's advice (libprefetch, ATC 2009, section 4.5: the advice a round
issues; section 5.3's strided pass is the case this was written for), so that a pass slower than
stock can be told apart as waits on the device, on advice in flight, or neither.

Runs COMMAND under `perf record` (syscalls pread64 and fadvise64, the readahead:* tracepoints; root)
and prints, for the reads of READ_BYTES bytes:
  - their count and the time spent inside them;
  - the time between them, in short gaps (the program's and the library's work at each read) and
    long ones;
  - the reads of a millisecond or more, by what the kernel did inside them: a synchronous read-ahead
    (the read missed), only an asynchronous one (it reached a read-ahead mark), or nothing (its pages
    were already in flight, or it waited for a processor); and those of 10 us to 1 ms that started
    nothing (a cached 16 KiB read takes 3-4 us);
  - the kernel's read-ahead calls by kind (pages, median size);
  - the WILLNEED advice (calls, pages, median and largest call, when the first and last were made
    after the first read), and how long before its read each advised page was advised;
  - with --folios FILE (the file the reads read, whole), after the command: the reads that started
    nothing, by the size of the folio holding their pages, and how many of them took 10 us to 1 ms
    (folio_orders.py).

Usage: read_waits.py [--folios FILE] READ_BYTES COMMAND...
  e.g. read_waits.py --folios DATA 16384 prefetch bench strided --file DATA --runs 1 --no-progress
Tracing slows every read by a microsecond or two: compare passes traced alike, not against untraced
wall times.
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import Counter

import folio_orders

EVENTS = [
    "syscalls:sys_enter_pread64",
    "syscalls:sys_exit_pread64",
    "syscalls:sys_enter_fadvise64",
    "readahead:page_cache_sync_ra",
    "readahead:page_cache_async_ra",
    "readahead:page_cache_ra_unbounded",
]
LINE = re.compile(r"^\s*(\S+)\s+(\d+)\s+([\d.]+):\s+\S+?:(\S+?):\s*(.*)$")
FIELD = re.compile(r"(\w+)[=:] ?(0x[0-9a-f]+|\d+)")
WAIT = 1e-3
SLOW = 10e-6
SHORT_GAP = 20e-6
POSIX_FADV_WILLNEED = 3
PAGE = 4096


def trace(command, data):
    """Records COMMAND's events into DATA; returns perf script's lines."""
    events = sum((["-e", e] for e in EVENTS), [])
    subprocess.run(["perf", "record", "-q", "-m", "16M", "-o", data, *events, "--", *command],
                   check=True)
    script = subprocess.run(["perf", "script", "--ns", "-i", data, "-F", "comm,tid,time,event,trace"],
                            check=True, capture_output=True, text=True)
    return script.stdout.splitlines()


def parse(lines, read_bytes):
    """Reads as (start, end, first page, kinds of read-ahead inside), read-aheads as (kind, pages),
    advice as (time, first page, pages)."""
    reads, readaheads, advice, open_reads = [], [], [], {}
    for line in lines:
        match = LINE.match(line)
        if not match:
            continue
        _comm, tid, time, event, rest = match.groups()
        time, fields = float(time), dict(FIELD.findall(rest))
        if event == "sys_enter_pread64" and int(fields["count"], 16) == read_bytes:
            open_reads[tid] = (time, int(fields["pos"], 16) // PAGE, set())
        elif event == "sys_exit_pread64" and tid in open_reads:
            start, page, kinds = open_reads.pop(tid)
            reads.append((start, time, page, kinds))
        elif event == "sys_enter_fadvise64" and int(fields["advice"], 16) == POSIX_FADV_WILLNEED:
            advice.append((time, int(fields["offset"], 16) // PAGE, int(fields["len"], 16) // PAGE))
        elif event.startswith("page_cache_"):
            kind = event.removeprefix("page_cache_")
            readaheads.append((kind, int(fields.get("size", fields.get("nr_to_read", 0)))))
            if tid in open_reads:
                open_reads[tid][2].add(kind)
    return reads, readaheads, advice


def cause(kinds):
    """What the kernel did inside a read."""
    if "sync_ra" in kinds:
        return "synchronous read-ahead"
    if "async_ra" in kinds:
        return "asynchronous read-ahead only"
    return "nothing (in flight, or no processor)"


def report_reads(reads):
    inside = sum(end - start for start, end, _, _ in reads)
    print(f"reads: {len(reads)}, {inside:.3f} s inside them, "
          f"{reads[-1][1] - reads[0][0]:.3f} s from the first to the last")
    waits = {}
    for start, end, _, kinds in reads:
        if end - start >= WAIT:
            count, total = waits.get(cause(kinds), (0, 0.0))
            waits[cause(kinds)] = (count + 1, total + end - start)
    for what, (count, total) in sorted(waits.items()):
        print(f"  >= 1 ms, the kernel started {what}: {count} reads, {total:.3f} s")
    slow = [end - start for start, end, _, kinds in reads if not kinds and SLOW <= end - start < WAIT]
    print(f"  10 us to 1 ms, the kernel started nothing (pages cached or in flight): {len(slow)} reads, "
          f"{sum(slow):.3f} s")
    gaps = [after[0] - before[1] for before, after in zip(reads, reads[1:])]
    short = sum(gap for gap in gaps if gap < SHORT_GAP)
    print(f"between the reads: {short:.3f} s in gaps under 20 us (the program's own work and the "
          f"library's), {sum(gaps) - short:.3f} s in longer ones (rounds, waits for a processor)")


def report_readahead(readaheads):
    for kind in sorted({kind for kind, _ in readaheads}):
        sizes = [size for k, size in readaheads if k == kind]
        print(f"read-ahead {kind}: {len(sizes)} calls, {sum(sizes)} pages, "
              f"median {statistics.median(sizes):.0f}")


def report_advice(advice, reads):
    if not advice:
        print("WILLNEED: none")
        return
    sizes = [pages for _, _, pages in advice]
    first_read = reads[0][0]
    print(f"WILLNEED: {len(advice)} calls, {sum(sizes)} pages, median {statistics.median(sizes):.0f}, "
          f"largest {max(sizes)}; from {(advice[0][0] - first_read) * 1e3:.1f} to "
          f"{(advice[-1][0] - first_read) * 1e3:.1f} ms after the first read")
    advised_at = {}
    for time, page, pages in advice:
        for advised in range(page, page + pages):
            advised_at.setdefault(advised, time)
    leads = [start - advised_at[page] for start, _, page, _ in reads if page in advised_at]
    if leads:
        late = sum(1 for lead in leads if lead < 0)
        print(f"  reads of advised pages: {len(leads)}, advised after the read began: {late}, "
              f"advised a median {statistics.median(leads) * 1e3:.2f} ms before the read")


def report_folios(reads, pages, path):
    """The reads that started nothing, by the order of the largest folio holding their pages."""
    order_of = folio_orders.orders(path)
    counts, slow = Counter(), Counter()
    for start, end, page, kinds in reads:
        if kinds:
            continue
        order = max(order_of[page:page + pages] or [folio_orders.ABSENT])
        counts[order] += 1
        slow[order] += SLOW <= end - start < WAIT
    for order in sorted(counts):
        print(f"  reads from {folio_orders.PAGE << max(order, 0) >> 10} KiB folios: {counts[order]}, "
              f"{slow[order]} of them 10 us to 1 ms ({100 * slow[order] / counts[order]:.1f}%)")


def main():
    args = sys.argv[1:]
    folios = None
    if args[:1] == ["--folios"] and len(args) > 1:
        folios, args = args[1], args[2:]
    if len(args) < 2:
        sys.exit(__doc__)
    read_bytes, command = int(args[0]), args[1:]
    with tempfile.TemporaryDirectory() as scratch:
        lines = trace(command, os.path.join(scratch, "perf.data"))
    reads, readaheads, advice = parse(lines, read_bytes)
    if not reads:
        sys.exit(f"no read of {read_bytes} bytes was traced")
    report_reads(reads)
    report_readahead(readaheads)
    report_advice(advice, reads)
    if folios:
        report_folios(reads, max(read_bytes // PAGE, 1), folios)


if __name__ == "__main__":
    main()
