#!/usr/bin/env python3
"""The table pages an index scan looks up, and how many of them a page cache of a given size must read
(libprefetch paper s5.4: the scan's table lookups are what the extension lists; Belady's MIN is the
optimum of Cao et al.'s integrated prefetching and caching, s2).

For `SELECT * FROM TABLE ORDER BY KEY` on a database of scripts/real_sqlite_db.py (or any rowid table):
the table's leaf pages in row order come from SQLite's `dbstat` table, each row's page from its rank,
and the scan's page sequence from the rowids in KEY order. SQLite's own cache (LRU, `--sqlite-pages`)
serves repeats first; what it misses are the reads the VFS sees, and the page cache (`--pages`, one
size or several) must read at least MIN's misses of them and, kept LRU, LRU's. Index pages are not
counted (the index is read once, in order).

    python3 scripts/sqlite_reuse.py DB --table chars --key name --pages 12000,16000
"""

import argparse
import bisect
import collections
import heapq
import sqlite3


def leaf_pages(conn, table):
    """(first rowid rank of each leaf, page number of each leaf), in the table's b-tree order."""
    rows = conn.execute(
        "SELECT pageno, ncell FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY path",
        (table,),
    ).fetchall()
    starts, pages, rank = [], [], 0
    for pageno, ncell in rows:
        starts.append(rank)
        pages.append(pageno)
        rank += ncell
    return starts, pages


def scan_pages(conn, table, key):
    """The table page of each row of the scan in KEY order, consecutive repeats merged."""
    rank_of = {
        rowid: i
        for i, (rowid,) in enumerate(conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid"))
    }
    starts, pages = leaf_pages(conn, table)
    seq, last = [], None
    for (rowid,) in conn.execute(f"SELECT rowid FROM {table} ORDER BY {key}"):
        page = pages[bisect.bisect_right(starts, rank_of[rowid]) - 1]
        if page != last:
            seq.append(page)
            last = page
    return seq


def lru_misses(seq, capacity):
    """The accesses of `seq` an LRU cache of `capacity` pages misses, in order."""
    cache, misses = collections.OrderedDict(), []
    for page in seq:
        if page in cache:
            cache.move_to_end(page)
            continue
        misses.append(page)
        cache[page] = True
        if len(cache) > capacity:
            cache.popitem(last=False)
    return misses


def min_misses(seq, capacity):
    """Belady's MIN: misses of a cache of `capacity` pages that evicts the page used again last."""
    never = len(seq)
    next_use, seen = [0] * len(seq), {}
    for i in range(len(seq) - 1, -1, -1):
        next_use[i] = seen.get(seq[i], never)
        seen[seq[i]] = i
    cache, heap, misses = {}, [], 0
    for i, page in enumerate(seq):
        if page not in cache:
            misses += 1
            if len(cache) >= capacity:
                while True:
                    use, victim = heapq.heappop(heap)
                    if cache.get(victim) == -use:
                        del cache[victim]
                        break
        cache[page] = next_use[i]
        heapq.heappush(heap, (-next_use[i], page))
    return misses


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db")
    parser.add_argument("--table", required=True)
    parser.add_argument("--key", required=True, help="the ORDER BY expression")
    parser.add_argument("--pages", default="16000", help="page-cache sizes in pages, comma-separated")
    parser.add_argument("--sqlite-pages", type=int, default=500, help="SQLite's own cache (2000 KiB)")
    args = parser.parse_args()
    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    seq = scan_pages(conn, args.table, args.key)
    reads = lru_misses(seq, args.sqlite_pages)
    print(f"table page accesses (repeats merged) {len(seq)}, distinct pages {len(set(seq))}")
    print(f"reads past SQLite's cache of {args.sqlite_pages} pages: {len(reads)}")
    for capacity in (int(p) for p in args.pages.split(",")):
        lru = len(lru_misses(reads, capacity))
        print(f"page cache {capacity} pages: LRU reads {lru}, MIN reads {min_misses(reads, capacity)}")


if __name__ == "__main__":
    main()
