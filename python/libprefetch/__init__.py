"""libprefetch: application-directed prefetching for Linux, from Python.

Tell the library which parts of a file you will read, and in what order; it prefetches as much of that
order as memory allows into the page cache, drops what is no longer needed, and follows your reads
(USENIX ATC 2009, "Application-directed prefetching"). See docs/python.md.

- ``Client``, ``Client.region``, ``Client.request``: the paper's API.
- ``Records``: a file of packed records read epoch after epoch in shuffled orders (a data loader).
- ``libprefetch.sqlite.connect``: SQLite through the prefetching VFS, on any CPython.
"""

from ._client import CallbackInfo, Client, Region, Stats, note_close, note_read
from ._records import Epoch, Records

__all__ = ["CallbackInfo", "Client", "Epoch", "Records", "Region", "Stats", "note_close", "note_read"]
