"""libprefetch: application-directed prefetching for Linux, from Python.

Tell the library which parts of a file you will read, and in what order; it prefetches as much of that
order as memory allows into the page cache, drops what is no longer needed, and follows your reads
(USENIX ATC 2009, "Application-directed prefetching"). See docs/python.md.

- ``Client``, ``Client.region``, ``Client.request``: the paper's API.
- ``Records``: a file of packed records read epoch after epoch in shuffled orders (a data loader).
- ``RecordDataset``, ``worker_init``: a map-style dataset whose DataLoader workers each prefetch the
  records they will be asked for.
- ``TokenWindows``: random windows of a token file (nanoGPT's ``get_batch``) as NumPy arrays, prefetched.
- ``libprefetch.sqlite.connect``: SQLite through the prefetching VFS, on any CPython.
"""

from ._client import CallbackInfo, Client, Region, Stats, instance_id, note_close, note_read
from ._loader import EpochSampler, RecordDataset, epoch_order, worker_indices, worker_init
from ._records import Epoch, Records
from ._tokens import TokenWindows

__all__ = [
    "CallbackInfo",
    "Client",
    "Epoch",
    "EpochSampler",
    "RecordDataset",
    "Records",
    "Region",
    "Stats",
    "TokenWindows",
    "epoch_order",
    "instance_id",
    "note_close",
    "note_read",
    "worker_indices",
    "worker_init",
]
