"""One libprefetch per process: libprefetch.so (preloaded or opened last), this package and the SQLite
extension loaded into the same interpreter use one instance (one registry, advice thread and budget
entry), the first copy loaded."""

import ctypes.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: Where `cargo build` (or `make build`) put the libraries of the package's profile: copies of
#: another build keep their own instance, so a release wheel is checked against `target/release`
#: (`make python-test` sets PREFETCH_TEST_PROFILE_DIR from PY_PROFILE).
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parents[2] / "target")) / os.environ.get(
    "PREFETCH_TEST_PROFILE_DIR", "debug"
)

#: Run in an interpreter with libprefetch.so preloaded: prints the instance id each copy reports.
CHECK = textwrap.dedent(
    """
    import ctypes, sys
    import libprefetch
    preloaded, extension, sqlite_library = sys.argv[1:4]
    sqlite = ctypes.CDLL(sqlite_library)
    db = ctypes.c_void_p()
    assert sqlite.sqlite3_open(b":memory:", ctypes.byref(db)) == 0
    sqlite.sqlite3_enable_load_extension(db, 1)
    error = ctypes.c_char_p()
    code = sqlite.sqlite3_load_extension(db, extension.encode(), None, ctypes.byref(error))
    assert code == 0, error.value
    ids = []
    for path in (preloaded, extension):
        library = ctypes.CDLL(path)
        library.pf_instance_id.restype = ctypes.c_uint64
        ids.append(library.pf_instance_id())
    ids.append(libprefetch.instance_id())
    print(*ids)
    """
)


def ids_reported(preload):
    """The instance ids of libprefetch.so, the extension and the package in one interpreter that
    imports the package, loads the extension, then opens libprefetch.so (preloaded if `preload`)."""
    preloaded, extension = TARGET / "libprefetch.so", TARGET / "libprefetch_sqlite.so"
    assert preloaded.is_file() and extension.is_file(), f"run `make build` (or `make release` for a release wheel) first ({TARGET})"
    sqlite_library = ctypes.util.find_library("sqlite3")
    assert sqlite_library, "libsqlite3 not found"
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = str(preloaded)
    run = subprocess.run(
        [sys.executable, "-c", CHECK, str(preloaded), str(extension), sqlite_library],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return [int(word) for word in run.stdout.split()]


def test_the_preloaded_library_the_package_and_the_sqlite_extension_share_one_instance():
    preloaded_id, extension_id, package_id = ids_reported(preload=True)
    assert preloaded_id == extension_id == package_id


def test_without_a_preload_the_copies_join_the_package_loaded_first():
    preloaded_id, extension_id, package_id = ids_reported(preload=False)
    assert preloaded_id == extension_id == package_id
