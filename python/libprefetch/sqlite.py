"""SQLite from any Python: ``connect(path)`` opens a ``sqlite3.Connection`` through the prefetching VFS.

The VFS (the project's SQLite extension, paper section 5.4) hands libprefetch the table pages an index
scan is about to read. It must be registered in the very SQLite library that Python's ``sqlite3``
module uses, and many interpreters (pyenv and other source builds without
``--enable-loadable-sqlite-extensions``) have no ``Connection.enable_load_extension``. So the extension's
entry point ships inside this package's native module and is registered through the interpreter's own
SQLite with ctypes:

1. ``_sqlite3``'s shared object is opened with ``ctypes.CDLL``; symbol look-ups through that handle
   search ``_sqlite3`` and the libraries it links, so ``sqlite3_auto_extension`` is the one of the
   SQLite that ``sqlite3`` calls (usually the system's ``libsqlite3.so.0``); its version must be
   ``sqlite3.sqlite_version``.
2. The entry point is installed with ``sqlite3_auto_extension`` and one in-memory connection is
   opened: SQLite calls the entry point with its routines table, and the VFS registers itself.
3. The auto-extension is cancelled and the process's previous default VFS made the default again, so
   only connections made with ``connect`` (``vfs=prefetch`` in their URI) go through the VFS.
4. ``sqlite3.connect`` itself must then find the VFS (proof that it is the module's own SQLite).

Where this cannot work (``_sqlite3`` links SQLite statically without exporting it, or its SQLite was
built without extension support) ``connect`` raises ``SQLiteUnavailable``; it never falls back to a
stock connection.

The VFS is the extension's own, registered by another route than ``load_extension``.
"""

from __future__ import annotations

import ctypes
import os
import sqlite3
import threading
import urllib.parse
from typing import Any

from . import _native

__all__ = ["SQLiteUnavailable", "connect", "VFS_NAME"]

#: The name the VFS is registered under.
VFS_NAME = "prefetch"

_lock = threading.Lock()
_registered = False


class SQLiteUnavailable(RuntimeError):
    """This Python's sqlite3 module offers no way to register the prefetching VFS."""


def connect(database: "str | bytes | os.PathLike[str]", **kwargs: Any) -> sqlite3.Connection:
    """Opens ``database`` like ``sqlite3.connect(database, **kwargs)``, through the prefetching VFS.

    With ``uri=True`` the database is a URI, which must not name another VFS. Raises
    ``SQLiteUnavailable`` if the VFS cannot be registered in this interpreter's SQLite, ``ValueError``
    for a URI with its own ``vfs``, and whatever ``sqlite3.connect`` raises.
    """
    _ensure_registered()
    is_uri = kwargs.pop("uri", False)
    target = _with_vfs(database) if is_uri else _path_uri(database)
    connection: sqlite3.Connection = sqlite3.connect(target, uri=True, **kwargs)
    return connection


def _path_uri(database: "str | bytes | os.PathLike[str]") -> str:
    """A file: URI for a path (special characters escaped) that names the VFS."""
    path = os.fsdecode(database)
    if path in ("", ":memory:"):
        return f"file::memory:?vfs={VFS_NAME}"
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?vfs={VFS_NAME}"


def _with_vfs(uri: "str | bytes | os.PathLike[str]") -> str:
    text = os.fsdecode(uri)
    body, hash_sign, fragment = text.partition("#")
    _, question, query = body.partition("?")
    if any(part.startswith("vfs=") for part in query.split("&")):
        raise ValueError(f"the URI names its own VFS; libprefetch.sqlite.connect uses vfs={VFS_NAME}")
    separator = "&" if question else "?"
    return f"{body}{separator}vfs={VFS_NAME}{hash_sign}{fragment}"


def _ensure_registered() -> None:
    global _registered
    with _lock:
        if not _registered:
            _register(_interpreters_sqlite())
            _registered = True


def _interpreters_sqlite() -> ctypes.CDLL:
    """The SQLite library that this interpreter's sqlite3 module calls, with the routines used here."""
    import _sqlite3

    where = getattr(_sqlite3, "__file__", None)
    if where is None:
        raise SQLiteUnavailable(
            "this Python's sqlite3 module is built into the interpreter; libprefetch.sqlite needs it "
            "as a shared module linking a shared SQLite (use a Python built with a shared libsqlite3)"
        )
    library = ctypes.CDLL(where)
    try:
        library.sqlite3_auto_extension.argtypes = [ctypes.c_void_p]
        library.sqlite3_cancel_auto_extension.argtypes = [ctypes.c_void_p]
        library.sqlite3_vfs_find.argtypes = [ctypes.c_char_p]
        library.sqlite3_vfs_find.restype = ctypes.c_void_p
        library.sqlite3_vfs_register.argtypes = [ctypes.c_void_p, ctypes.c_int]
        library.sqlite3_libversion.restype = ctypes.c_char_p
    except AttributeError as missing:
        raise SQLiteUnavailable(
            f"{where} does not export SQLite's C API ({missing}); libprefetch.sqlite needs a Python "
            "whose sqlite3 module links a shared libsqlite3"
        ) from None
    version = library.sqlite3_libversion().decode()
    if version != sqlite3.sqlite_version:
        raise SQLiteUnavailable(
            f"the SQLite found through {where} is {version} but sqlite3 reports {sqlite3.sqlite_version}"
        )
    return library


def _register(library: ctypes.CDLL) -> None:
    """Registers the VFS through the auto-extension hook, keeping the previous default VFS."""
    previous_default = library.sqlite3_vfs_find(None)
    entry = ctypes.c_void_p(_native.sqlite_auto_extension())
    if library.sqlite3_auto_extension(entry) != 0:
        raise SQLiteUnavailable("sqlite3_auto_extension refused the prefetch VFS's entry point")
    try:
        sqlite3.connect(":memory:").close()
    except sqlite3.Error as error:
        raise SQLiteUnavailable(f"registering the prefetch VFS failed: {error}") from None
    finally:
        library.sqlite3_cancel_auto_extension(entry)
    if not library.sqlite3_vfs_find(VFS_NAME.encode()):
        raise SQLiteUnavailable("the prefetch VFS did not register (SQLite without extension support?)")
    if previous_default:
        library.sqlite3_vfs_register(previous_default, 1)
    _check_seen_by_sqlite3_module()


def _check_seen_by_sqlite3_module() -> None:
    """Raises unless the sqlite3 module itself finds the VFS (it would not if it called another copy
    of SQLite than the one found through ``_sqlite3``'s handle)."""
    try:
        sqlite3.connect(f"file::memory:?vfs={VFS_NAME}", uri=True).close()
    except sqlite3.Error as error:
        raise SQLiteUnavailable(
            f"the prefetch VFS was registered in a SQLite that the sqlite3 module does not use ({error})"
        ) from None
