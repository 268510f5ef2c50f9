"""The benchmark's limit reads exactly the pages of the records it is given."""

from libprefetch._bench_loaders import extents

PAGE = 4096


def test_the_limit_reads_each_touched_page_once_in_offset_order_in_requests_of_at_most_1_mib():
    ranges = [(9000, 5000), (0, 10), (4090, 10), (5 << 20, 0), (3 << 20, (1 << 20) + 1)]
    requests = extents(ranges, PAGE)
    assert requests == [(0, 4 * PAGE), (3 << 20, 1 << 20), ((4 << 20), PAGE)]
    touched = {p for offset, length in ranges if length for p in range(offset // PAGE, (offset + length - 1) // PAGE + 1)}
    read = {p for offset, length in requests for p in range(offset // PAGE, (offset + length) // PAGE)}
    assert read == touched
