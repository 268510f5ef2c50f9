#!/usr/bin/python3
"""How the page cache holds a file: the order of the folio holding each page (0 a single page, k a
large folio of 2^k pages, as the kernel's read-ahead allocates them; the library's WILLNEED advice
reads single pages, crates/plan/src/readahead.rs). Written to compare the strided pass of libprefetch
(ATC 2009, section 5.3) with stock's; `read_waits.py --folios` matches each read to its folio.

The file is mapped read-only and each page touched (a page not cached is read in: run it on a file
a pass has just read whole); /proc/self/pagemap gives each page's frame and /proc/kpageflags whether
the frame heads or continues a large folio. Needs root.

Usage: folio_orders.py FILE    (prints the file's pages by folio size)
"""

import ctypes
import mmap
import os
import struct
import sys
from collections import Counter

PAGE = 4096
PRESENT = 1 << 63
PFN_MASK = (1 << 55) - 1
COMPOUND_HEAD = 1 << 15
COMPOUND_TAIL = 1 << 16
ABSENT = -1

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def frames(path):
    """The pagemap entry of each page of the file, mapped and touched."""
    fd = os.open(path, os.O_RDONLY)
    try:
        pages = os.fstat(fd).st_size // PAGE
        addr = LIBC.mmap(None, pages * PAGE, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        try:
            for page in range(pages):
                ctypes.string_at(addr + page * PAGE, 1)
            with open("/proc/self/pagemap", "rb") as pagemap:
                pagemap.seek(addr // PAGE * 8)
                raw = pagemap.read(pages * 8)
        finally:
            LIBC.munmap(addr, pages * PAGE)
    finally:
        os.close(fd)
    return struct.unpack(f"{pages}Q", raw)


def orders(path):
    """The order of the folio holding each page of the file (ABSENT if not mapped)."""
    entries = frames(path)
    result = [ABSENT] * len(entries)
    with open("/proc/kpageflags", "rb") as kpageflags:
        def flags(pfn):
            kpageflags.seek(pfn * 8)
            return struct.unpack("Q", kpageflags.read(8))[0]

        page = 0
        while page < len(entries):
            length = 1
            if entries[page] & PRESENT and flags(entries[page] & PFN_MASK) & COMPOUND_HEAD:
                length = folio_length(entries, page, flags)
            order = (length - 1).bit_length() if entries[page] & PRESENT else ABSENT
            result[page:page + length] = [order] * length
            page += length
    return result


def folio_length(entries, head, flags):
    """Pages of the large folio whose head is page `head`: the pages after it whose frames follow
    and are its tails."""
    pfn, length = entries[head] & PFN_MASK, 1
    while (head + length < len(entries) and entries[head + length] & PRESENT
           and entries[head + length] & PFN_MASK == pfn + length
           and flags(pfn + length) & COMPOUND_TAIL):
        length += 1
    return length


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    by_order = Counter(orders(sys.argv[1]))
    absent = by_order.pop(ABSENT, 0)
    sizes = ", ".join(f"{PAGE << order >> 10} KiB {count}" for order, count in sorted(by_order.items()))
    print(f"{sum(by_order.values()) + absent} pages, {absent} not mapped; by folio size: {sizes}")


if __name__ == "__main__":
    main()
