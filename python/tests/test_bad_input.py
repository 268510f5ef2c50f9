"""Bad input gets one clear exception, the one the standard library would raise for the same call."""

import errno
import os

import pytest

import libprefetch


def test_a_callback_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="callback must be callable"):
        libprefetch.Client(5)


def test_records_of_a_directory_are_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        libprefetch.Records(tmp_path, [0], [1])


def test_a_region_on_a_device_says_it_is_not_a_regular_file():
    with libprefetch.Client() as client:
        with pytest.raises(ValueError, match="regular file, not a character device"):
            client.region("/dev/null")


def test_a_closed_client_says_it_is_closed(tmp_path):
    client = libprefetch.Client()
    client.close()
    with pytest.raises(ValueError, match="the client is closed"):
        client.request([0])


def test_a_region_on_an_empty_file_asks_for_its_end(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with libprefetch.Client() as client:
        with pytest.raises(ValueError, match="the file is empty"):
            client.region(empty)


@pytest.mark.parametrize("size", [1, 1 << 20, (1 << 20) + 1, 1 << 40])
def test_a_read_past_the_largest_offset_fails_as_os_pread_does(data_file, size):
    path, _ = data_file
    offset = (1 << 63) - 1
    fd = os.open(path, os.O_RDONLY)
    try:
        if size < (1 << 30):  # os.pread allocates the size first
            with pytest.raises(OSError) as stock:
                os.pread(fd, size, offset)
            assert stock.value.errno == errno.EINVAL
    finally:
        os.close(fd)
    with libprefetch.Client() as client, client.region(path) as region:
        with pytest.raises(OSError) as ours:
            region.pread(size, offset)
        assert ours.value.errno == errno.EINVAL
        with pytest.raises(OSError) as into:
            region.readinto(bytearray(min(size, 1 << 20)), offset)
        assert into.value.errno == errno.EINVAL
        assert region.pread(0, offset) == os.pread(region.fd, 0, offset)
