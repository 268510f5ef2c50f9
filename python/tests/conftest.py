"""Shared fixtures: a file of random bytes to read back through every path."""

import os

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
