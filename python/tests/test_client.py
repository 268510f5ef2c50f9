"""The paper's API from Python: same bytes as plain reads, errors, threads and fork."""

import array
import errno
import faulthandler
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import libprefetch

PAGE = os.sysconf("SC_PAGE_SIZE")


def test_region_reads_return_the_bytes_of_plain_reads_for_a_file_object_a_path_and_a_descriptor(data_file):
    path, data = data_file
    with open(path, "rb") as file, libprefetch.Client() as client:
        fd = os.open(path, os.O_RDONLY)
        try:
            for target in (file, path, str(path), fd):
                with client.region(target) as region:
                    client.request(range(0, len(data), PAGE), fd=region, done=True)
                    for offset, size in ((0, 1), (4095, 2), (12345, 100_000), (len(data) - 10, 50)):
                        assert region.pread(size, offset) == data[offset : offset + size]
                    buffer = bytearray(7000)
                    assert region.readinto(buffer, 9000) == 7000
                    assert buffer == data[9000:16000]
        finally:
            os.close(fd)


def test_request_takes_lists_ranges_arrays_and_buffers_and_counts_what_the_list_accepted(data_file):
    path, data = data_file
    offsets = list(range(0, len(data), PAGE))
    sources = [offsets, range(0, len(data), PAGE), array.array("Q", offsets), memoryview(array.array("q", offsets))]
    try:
        import numpy
    except ImportError:
        numpy = None
    if numpy is not None:
        sources += [numpy.array(offsets, dtype=numpy.int64), numpy.array(offsets, dtype=numpy.uint64)[::1]]
    with libprefetch.Client() as client, client.region(path) as region:
        for source in sources:
            assert client.request(source, mode="set") == len(offsets)
            assert client.stats().list_length == len(offsets)
        assert client.request(offsets[:5], mode="append") == 5
        assert client.stats().list_length == len(offsets) + 5
        assert client.request(offsets[:3], fd=region, marks=[False, True, False], mode="set", done=True) == 3
        client.settle()
        stats = client.stats()
        assert isinstance(stats, libprefetch.Stats)
        assert stats.rounds >= 1 and stats.list_length == 3


def test_a_full_list_accepts_only_its_capacity(data_file):
    path, _ = data_file
    with libprefetch.Client(list_capacity=10) as client, client.region(path):
        assert client.request(range(0, 100 * PAGE, PAGE)) == 10


def test_a_whole_list_starts_at_the_papers_window(data_file):
    path, _ = data_file
    budgets = []
    for whole_list in (False, True):
        with libprefetch.Client(max_memory=64 << 20) as client, client.region(path):
            client.request(range(0, 8 * PAGE, PAGE), done=True, whole_list=whole_list)
            budgets.append(client.stats().budget_bytes)
    assert budgets == [128 << 10, (64 << 20) * 9 // 10]


def test_shared_edges_let_the_pages_reads_end_inside_go_undropped(data_file):
    """Records of 3.5 pages packed back to back, read in order with a budget far below the list: with
    ``shared_edges`` the pages a record begins or ends inside are let go, not dropped (the drop decision
    itself is counted exactly in crates/plan/tests/shared_pages.rs)."""
    path, _ = data_file
    length = 7 * PAGE // 2
    records = [(offset, length) for offset in range(0, 180 * length, length)]
    pages = [page for offset, size in records for page in range(offset - offset % PAGE, offset + size, PAGE)]
    dropped = []
    for shared in (False, True):
        with libprefetch.Client(max_memory=256 << 10) as client, client.region(path) as region:
            client.request(pages, done=True, shared_edges=shared)
            for offset, size in records:
                assert len(region.pread(size, offset)) == size
            dropped.append(client.stats().pages_dropped)
    assert dropped[0] > 0, "the list is longer than the budget: pages behind the reader are dropped"
    assert dropped[1] < dropped[0], f"the edge pages (one page in seven here) are not dropped: {dropped}"


def test_reads_are_followed_except_inside_ignore_accesses(data_file):
    path, data = data_file
    with libprefetch.Client() as client, client.region(path) as region:
        client.request(range(0, 8 * PAGE, PAGE), done=True)
        region.pread(PAGE, 0)
        assert client.stats().tracked_reads == 1
        with client.ignore_accesses():
            with client.ignore_accesses():
                region.pread(PAGE, PAGE)
            region.pread(PAGE, 2 * PAGE)
        assert client.stats().tracked_reads == 1
        region.pread(PAGE, 3 * PAGE)
        assert client.stats().tracked_reads == 2


def test_the_callback_is_asked_for_more_and_its_exceptions_do_not_break_reads(data_file, monkeypatch):
    path, data = data_file
    calls = []
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def callback(client, info):
        calls.append(info)
        raise RuntimeError("a failing callback")

    with libprefetch.Client(callback) as client, client.region(path) as region:
        client.request([PAGE], done=True)
        assert region.pread(100, 50 * PAGE) == data[50 * PAGE : 50 * PAGE + 100]
    assert calls and calls[0].requested == (region.fd, 50 * PAGE)
    assert isinstance(calls[0], libprefetch.CallbackInfo)
    assert unraisable and isinstance(unraisable[0].exc_value, RuntimeError)


def test_close_waits_for_a_callback_in_another_thread_without_holding_the_gil(data_file):
    path, data = data_file
    entered, proceed = threading.Event(), threading.Event()

    def callback(client, info):
        entered.set()
        proceed.wait()

    fd = os.open(path, os.O_RDONLY)
    faulthandler.dump_traceback_later(60, exit=True)  # a GIL deadlock ends the run instead of hanging it
    try:
        client = libprefetch.Client(callback)
        region = client.region(fd)
        client.request([0], done=True)
        results = []
        reader = threading.Thread(target=lambda: results.append(region.pread(100, 50 * PAGE)))
        reader.start()
        assert entered.wait(30)
        closer = threading.Thread(target=client.close)
        closer.start()
        time.sleep(0.2)  # lets close() reach the library and wait there for the callback
        proceed.set()
        closer.join(30)
        reader.join(30)
        assert not closer.is_alive() and not reader.is_alive(), "close() held the GIL the callback needs"
        assert results == [data[50 * PAGE : 50 * PAGE + 100]]
    finally:
        faulthandler.cancel_dump_traceback_later()
        os.close(fd)


@pytest.mark.parametrize("bad", [-1, -PAGE, 1 << 63, 1 << 64])
def test_offsets_out_of_range_are_value_errors(data_file, bad):
    path, _ = data_file
    with libprefetch.Client() as client, client.region(path) as region:
        with pytest.raises(ValueError):
            client.request([0, bad])
        if -(1 << 63) <= bad < 1 << 64:  # the same offset in a buffer of 8-byte integers
            with pytest.raises(ValueError):
                client.request(array.array("q" if bad < 0 else "Q", [0, bad]))
        with pytest.raises(ValueError):
            region.pread(10, bad)
        with pytest.raises(ValueError):
            client.region(path, start=bad)
        with pytest.raises(ValueError):
            libprefetch.note_read(region.fd, bad, 1)


def test_absurd_sizes_are_value_errors_or_clipped_to_the_file(data_file):
    path, data = data_file
    with libprefetch.Client() as client, client.region(path) as region:
        with pytest.raises(ValueError):
            region.pread(1 << 63, 0)
        with pytest.raises(ValueError):
            region.pread(-1, 0)
        assert region.pread(1 << 40, len(data) - 100) == data[-100:]
        with pytest.raises(ValueError):
            client.region(path, 0, 1 << 64)
        with pytest.raises(ValueError):
            client.region(path, 100, 100)
        with pytest.raises(ValueError):
            libprefetch.Client(max_memory=-1)
        with pytest.raises(ValueError):
            client.request([0], mode="sideways")
        with pytest.raises(ValueError):
            client.request([0, PAGE], marks=[True])
        with pytest.raises(TypeError):
            client.request([0.5])


def test_closed_files_directories_and_closed_clients_are_refused(data_file, tmp_path):
    path, _ = data_file
    with libprefetch.Client() as client:
        file = open(path, "rb")
        file.close()
        with pytest.raises(ValueError):
            client.region(file)
        fd = os.open(path, os.O_RDONLY)
        os.close(fd)
        with pytest.raises(OSError) as closed_fd:
            client.region(fd)
        assert closed_fd.value.errno == errno.EBADF
        with pytest.raises(OSError) as directory:
            client.region(tmp_path)
        assert directory.value.errno == errno.EISDIR
        with pytest.raises(ValueError):
            client.request([0])
    with pytest.raises(ValueError):
        client.stats()
    with pytest.raises(ValueError):
        client.region(path)


def test_a_thread_pool_reads_one_region_concurrently(data_file):
    path, data = data_file
    rng = random.Random(7)
    reads = [(rng.randrange(len(data) - 70_000), rng.randrange(1, 70_000)) for _ in range(400)]
    with libprefetch.Client() as client, client.region(path) as region:
        client.request([offset for offset, _ in reads], done=True)
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda read: region.pread(read[1], read[0]), reads))
        assert client.stats().tracked_reads == len(reads)
    assert results == [data[offset : offset + size] for offset, size in reads]


def test_fork_while_a_round_is_in_flight(data_file):
    path, data = data_file
    with libprefetch.Client() as client, client.region(path) as region:
        client.request(range(0, len(data), PAGE), done=True)
        pid = os.fork()
        if pid == 0:
            os._exit(_child_after_fork(client, path, data))
        _, status = os.waitpid(pid, 0)
        client.settle()
        assert region.pread(1000, 5000) == data[5000:6000]
        assert client.stats().rounds >= 1
    assert os.waitstatus_to_exitcode(status) == 0


def _child_after_fork(parent_client, path, data):
    """In the child: the parent's client is refused with ESRCH; a new client reads the right bytes."""
    try:
        try:
            parent_client.request([0])
            return 2
        except OSError as error:
            if error.errno != errno.ESRCH:
                return 3
        with libprefetch.Client() as client, client.region(path) as region:
            client.request(range(0, 64 * PAGE, PAGE), done=True)
            if region.pread(64 * PAGE, 0) != data[: 64 * PAGE]:
                return 4
        return 0
    except BaseException:
        return 5
