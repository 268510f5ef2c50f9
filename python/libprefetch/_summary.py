"""The one-line account of an epoch's prefetching: what was prefetched, used and wasted, and how many
pages the device was asked for against the pages the epoch needs (ATC 2009, section 5's measures:
prefetches used, prefetches wasted, I/O against the optimum).
"""

from __future__ import annotations

from ._client import Stats


def summary_line(stats: Stats, distinct_pages: int, records_read: int, records_planned: int) -> str:
    """``stats`` of a client whose list covered ``distinct_pages`` pages, after ``records_read`` of its
    ``records_planned`` records, as one line."""
    wasted = stats.prefetched_unused_dropped
    after_use = max(stats.pages_dropped - wasted, 0)
    ratio = stats.pages_fetched / distinct_pages if distinct_pages else 0.0
    share = wasted / stats.pages_prefetched if stats.pages_prefetched else 0.0
    return (
        f"{records_read}/{records_planned} records, {distinct_pages} distinct pages; "
        f"prefetched {stats.pages_prefetched} pages: used {stats.prefetched_used}, "
        f"dropped unused {wasted} ({share:.1%} waste); dropped after use {after_use}; "
        f"device reads for prefetching {stats.pages_fetched} pages ({ratio:.2f}x the distinct pages); "
        f"misses {stats.misses}, premature evictions {stats.premature_evictions}, "
        f"divergences {stats.divergences}"
    )
