"""Records and epochs: every record once, in the given order, byte-identical."""

import os
import pickle

import pytest

import libprefetch


def expected(records_file, order):
    _, offsets, lengths, data = records_file
    return [data[offsets[i] : offsets[i] + lengths[i]] for i in order]


def evict(path):
    """Drops the file's pages from the page cache (written back first: dirty pages stay)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def below(data):
    """A budget below the records' pages: the epoch's client follows its list (nothing is swept)."""
    return len(data) // 4


def test_an_epoch_yields_every_record_once_in_order(records_file):
    path, offsets, lengths, data = records_file
    evict(path)
    with libprefetch.Records(path, offsets, lengths) as records:
        order = records.order(seed=1)
        assert sorted(order) == list(range(len(records)))
        epoch = records.epoch(order, next_order=records.order(seed=2), max_memory=below(data))
        assert list(epoch) == expected(records_file, order)
        stats = epoch.stats()
        assert stats.rounds >= 1 and stats.tracked_reads == sum(1 for i in order if lengths[i])


def test_an_epoch_over_cached_records_starts_no_client(records_file):
    path, offsets, lengths, data = records_file
    with open(path, "rb") as file:
        assert file.read() == data  # every page cached
    with libprefetch.Records(path, offsets, lengths) as records:
        order = records.order(seed=5)
        epoch = records.epoch(order)
        assert list(epoch) == expected(records_file, order)
        assert epoch.stats() is None
        assert epoch.summary() == f"{len(order)}/{len(order)} records, all cached: no client"


def test_an_epoch_starts_its_client_at_the_first_record_not_cached(records_file):
    """The records before the first miss are read without a client; from that record on the client
    follows every read, given the list from there (no divergence)."""
    path, offsets, lengths, data = records_file
    with libprefetch.Records(path, offsets, lengths) as records:
        order = [i for i in records.order(seed=6) if lengths[i]]
        with open(path, "rb") as file:
            assert file.read() == data
        epoch = records.epoch(order, max_memory=below(data))
        got = [next(epoch) for _ in range(len(order) // 2)]
        assert epoch.stats() is None
        evict(path)
        got += list(epoch)
        assert got == expected(records_file, order)
        stats = epoch.stats()
        assert stats.tracked_reads == len(order) - len(order) // 2 and stats.divergences == 0


def test_an_epoch_longer_than_the_list_is_handed_out_by_the_callback(records_file):
    path, offsets, lengths, data = records_file
    # Cold: with every page cached the client rests and never needs more of the list.
    evict(path)
    with libprefetch.Records(path, offsets, lengths) as records:
        order = records.order(seed=3)
        epoch = records.epoch(order, list_capacity=64, max_memory=below(data))
        assert list(epoch) == expected(records_file, order)
        assert epoch.stats().callbacks >= 1


def test_an_epoch_that_fits_sweeps_its_records_in_offset_order_without_a_client(records_file, advised):
    """From the first record not cached on, the pages of the epoch's records (only those: here every
    other record) are advised WILLNEED in offset order, from a thread; no client starts and the bytes
    are the same."""
    path, offsets, lengths, _ = records_file
    page = os.sysconf("SC_PAGE_SIZE")
    evict(path)
    with libprefetch.Records(path, offsets, lengths) as records:
        order = [i for i in records.order(seed=7) if i % 2 == 0]
        epoch = records.epoch(order)
        assert list(epoch) == expected(records_file, order)
        assert epoch.stats() is None
        assert epoch.summary() == f"{len(order)}/{len(order)} records; swept in offset order, no client"
    wanted = {p for i in order if lengths[i] for p in range(offsets[i] // page, (offsets[i] + lengths[i] - 1) // page + 1)}
    swept = [p for offset, length in advised for p in range(offset // page, (offset + length - 1) // page + 1)]
    assert advised == sorted(advised) and len(swept) == len(set(swept)) and set(swept) == wanted


def test_records_are_a_map_style_dataset(records_file):
    path, offsets, lengths, _ = records_file
    with libprefetch.Records(path, offsets, lengths) as records:
        assert len(records) == len(offsets)
        assert [records[i] for i in range(len(records))] == expected(records_file, range(len(offsets)))
        assert records[-1] == expected(records_file, [len(offsets) - 1])[0]


def test_records_pickle_as_their_layout_and_reopen_the_file(records_file):
    path, offsets, lengths, _ = records_file
    with libprefetch.Records(path, offsets, lengths) as records:
        copy = pickle.loads(pickle.dumps(records))
    with copy:
        order = copy.order(seed=4)
        assert [copy[i] for i in order] == expected(records_file, order)


def test_bad_records_and_orders_are_refused(records_file, tmp_path):
    path, offsets, lengths, data = records_file
    with pytest.raises(ValueError):
        libprefetch.Records(path, offsets, lengths[:-1])
    with pytest.raises(ValueError):
        libprefetch.Records(path, [-1], [1])
    with pytest.raises(ValueError):
        libprefetch.Records(path, [len(data)], [1])
    with pytest.raises(OSError):
        libprefetch.Records(tmp_path / "missing", [0], [1])
    with libprefetch.Records(path, offsets, lengths) as records:
        with pytest.raises(IndexError):
            records.epoch([0, len(records)])
        with pytest.raises(IndexError):
            records.epoch([-1])


def test_records_cut_short_by_a_shrunk_file_read_as_os_pread_reads_them(records_file, tmp_path):
    _, offsets, lengths, data = records_file
    path = tmp_path / "shrinking.bin"
    path.write_bytes(data)
    with libprefetch.Records(path, offsets, lengths) as records:
        cut = len(data) // 2
        os.truncate(path, cut)  # the records were checked against the file's old size
        order = records.order(seed=4)
        fd = os.open(path, os.O_RDONLY)
        try:
            stock = [os.pread(fd, lengths[i], offsets[i]) for i in order]
        finally:
            os.close(fd)
        assert list(records.epoch(order)) == stock
        assert [records[i] for i in order] == stock
        assert any(0 < len(got) < lengths[i] for got, i in zip(stock, order))
