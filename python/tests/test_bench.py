"""The benchmark's limit reads exactly the pages of the records it is given, the windowed limit a
window of them at a time in their order; its warm passes read every
record and nothing from disk; each pass's device line counts the device's requests, their size and
its time busy; ``--detail`` accounts for every worker of a pass; any prefetch factor reads every
record once, and one below 1 is refused."""

import os
import re

import pytest

from libprefetch import Records, epoch_order, worker_indices
from libprefetch._bench_loaders import (
    WINDOW_LIMIT,
    Warm,
    device_counters,
    device_load,
    direct_read,
    extents,
    timed,
    windows_in_order,
    workers_modes,
)
from libprefetch.bench import drop_cache, main

PAGE = 4096


def test_the_limit_reads_each_touched_page_once_in_offset_order_in_requests_of_at_most_1_mib():
    ranges = [(9000, 5000), (0, 10), (4090, 10), (5 << 20, 0), (3 << 20, (1 << 20) + 1)]
    requests = extents(ranges, PAGE)
    assert requests == [(0, 4 * PAGE), (3 << 20, 1 << 20), ((4 << 20), PAGE)]
    touched = {p for offset, length in ranges if length for p in range(offset // PAGE, (offset + length - 1) // PAGE + 1)}
    read = {p for offset, length in requests for p in range(offset // PAGE, (offset + length) // PAGE)}
    assert read == touched


def test_the_windowed_limit_reads_the_records_a_window_at_a_time_in_their_order():
    # Four records of one page each in read order; a window holds two pages.
    ranges = [(7 * PAGE, 10), (PAGE, PAGE), (3 * PAGE, 5), (2 * PAGE, 1)]
    windows = windows_in_order(ranges, 2 * PAGE, PAGE)
    assert windows == [[(PAGE, PAGE), (7 * PAGE, PAGE)], [(2 * PAGE, 2 * PAGE)]]  # sorted and merged inside each
    assert windows_in_order([(0, 5 * PAGE)], PAGE, PAGE) == [[(0, 5 * PAGE)]]  # a record larger than one


def test_the_windowed_limit_runs_only_where_a_window_is_given_and_reads_every_record(records_file):
    path, offsets, lengths, _ = records_file
    with Records(path, offsets, lengths) as records:
        order = epoch_order(len(records), 3, 0)
        assert WINDOW_LIMIT not in workers_modes(records, 3, order, workers=2, batch=8)
        modes = workers_modes(records, 3, order, workers=2, batch=8, window=64 * PAGE)
        assert modes[WINDOW_LIMIT]() >= sum(lengths)  # whole pages, each record's at least once


def test_a_failed_read_of_the_limit_is_raised_not_counted_short(records_file):
    path = records_file[0]
    assert direct_read(path, [(0, PAGE), (PAGE, PAGE)]) == 2 * PAGE
    with pytest.raises(OSError):  # O_DIRECT refuses an offset off a block's start
        direct_read(path, [(0, PAGE), (1, PAGE)])


def test_the_device_line_counts_the_requests_their_size_and_the_time_busy():
    assert device_load((10, 40960, 100), (20, 122880, 600), 1.0) == "     10 requests of   8.0 KiB, device busy  50%"
    assert device_load(None, (20, 122880, 600), 1.0) == device_load((10, 40960, 100), None, 1.0) == ""


def test_the_device_counters_count_a_direct_read_of_the_file(records_file):
    """The counters are the file's block device's (None for a file on none): an O_DIRECT read of two
    pages of the file is at least one more request and two more pages read."""
    path = records_file[0]
    device = os.stat(path).st_dev
    before = device_counters(path)
    assert (before is None) == (not os.path.exists(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}"))
    if before is not None:
        assert direct_read(path, [(0, 2 * PAGE)]) == 2 * PAGE
        after = device_counters(path)
        assert after[0] >= before[0] + 1 and after[1] >= before[1] + 2 * PAGE and after[2] >= before[2]


def test_a_warm_pass_runs_with_every_page_of_the_file_cached(records_file):
    path, offsets, lengths, _ = records_file

    def read_without_waiting() -> int:
        # RWF_NOWAIT fails with EAGAIN instead of reading a page that is not in the cache.
        fd = os.open(path, os.O_RDONLY)
        try:
            return sum(os.preadv(fd, [bytearray(n)], o, os.RWF_NOWAIT) for o, n in zip(offsets, lengths) if n)
        finally:
            os.close(fd)

    with open(path, "rb+") as file:
        os.fsync(file.fileno())  # dirty pages are not dropped
    drop_cache(path)
    with pytest.raises(BlockingIOError):
        read_without_waiting()
    drop_cache(path)
    timed(path, Warm(read_without_waiting))  # raises if a page was not cached


def test_the_warm_modes_read_every_record(records_file):
    path, offsets, lengths, _ = records_file
    with Records(path, offsets, lengths) as records:
        order = epoch_order(len(records), 3, 0)
        modes = workers_modes(records, 3, order, workers=2, batch=8)
        for name in ("warm-stock-2w", "warm-libprefetch-2w"):
            assert isinstance(modes[name], Warm)
            assert modes[name]() == sum(lengths)


def test_detail_accounts_for_every_worker_of_a_pass(records_file, capfd, monkeypatch):
    from libprefetch import _native

    monkeypatch.setattr(_native, "far_request_bytes", lambda fd: 0)  # a device without seek cost
    path, offsets, lengths, _ = records_file
    with Records(path, offsets, lengths) as records:
        order = epoch_order(len(records), 3, 0)
        # A budget below the records' pages and a cold file: each worker advises its list by phases.
        modes = workers_modes(records, 3, order, workers=2, batch=8, detail=True, max_memory=1 << 20)
        drop_cache(path)
        assert modes["libprefetch-2w"]() == modes["stock-2w"]() == sum(lengths)
    lines = capfd.readouterr().err.splitlines()

    def threads(line):
        return len(line.split("threads on a core/waiting for one (s): ")[1].split(", "))

    plain = [threads(line) for line in lines if "plain worker: waiting for batches" in line]
    for worker in range(2):
        (line,) = [line for line in lines if f"library worker {worker}: waiting for batches" in line]
        assert [threads(line)] * 2 == [t + 1 for t in plain]  # its phases' thread beside the plain threads
        mine = worker_indices(order, 8, False, worker, 2)
        (summary,) = [line for line in lines if line.strip().startswith(f"{len(mine)}/{len(mine)} records")]
        assert re.search(r"; advised in \d+ phases of at most [\d.]+ MiB, no client$", summary)
    assert sum("plain worker: waiting for batches" in line for line in lines) == 2


def test_every_prefetch_factor_reads_every_record_once(records_file):
    path, offsets, lengths, _ = records_file
    with Records(path, offsets, lengths) as records:
        order = epoch_order(len(records), 3, 0)
        for factor in (1, 5):
            modes = workers_modes(records, 3, order, workers=2, batch=8, prefetch_factor=factor)
            assert modes["libprefetch-2w"]() == modes["stock-2w"]() == sum(lengths)


def test_a_prefetch_factor_below_one_is_one_clear_error(capfd):
    with pytest.raises(SystemExit):
        main(["workers", "--prefetch-factor", "0"])
    (line,) = [line for line in capfd.readouterr().err.splitlines() if "error" in line]
    assert "--prefetch-factor: expected a whole number of at least 1, got '0'" in line
