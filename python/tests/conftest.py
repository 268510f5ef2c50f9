"""Shared fixtures: a file of random bytes to read back through every path, and a file of packed records."""

import array
import os
import random

import pytest

#: Size of the data file: a few hundred pages, enough for rounds, small enough to stay fast.
DATA_BYTES = 3 << 20


@pytest.fixture(scope="session")
def data_file(tmp_path_factory):
    """(path, bytes) of a file of random bytes whose size is not a multiple of the page size."""
    path = tmp_path_factory.mktemp("data") / "random.bin"
    data = os.urandom(DATA_BYTES + 1234)
    path.write_bytes(data)
    return path, data


@pytest.fixture(scope="session")
def records_file(tmp_path_factory):
    """(path, offsets, lengths, data) of a file of packed records of 0 to 40 KiB."""
    rng = random.Random(16)
    lengths = [rng.choice((0, 1, rng.randrange(1, 40 << 10))) for _ in range(600)]
    offsets, at = [], 0
    for length in lengths:
        offsets.append(at)
        at += length
    data = os.urandom(at)
    path = tmp_path_factory.mktemp("records") / "records.bin"
    with open(path, "wb") as file:
        file.write(data)
        # Written back now: the tests evict the file to read it cold, and a dirty page is not evicted.
        os.fsync(file.fileno())
    return path, offsets, lengths, data


@pytest.fixture
def advised(monkeypatch):
    """The ``(offset, length)`` byte ranges the package advises WILLNEED (``_native.willneed``), in the
    order advised; the advice is still given."""
    from libprefetch import _native

    ranges_advised = []
    willneed = _native.willneed

    def recording(fd, ranges):
        pairs = array.array("q", ranges)
        ranges_advised.extend(zip(pairs[::2], pairs[1::2]))
        return willneed(fd, ranges)

    monkeypatch.setattr(_native, "willneed", recording)
    return ranges_advised
