"""libprefetch.sqlite.connect: the rows of sqlite3.connect, through the prefetching VFS, from any Python."""

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import libprefetch
import libprefetch.sqlite

#: The index-scan query: the rows in the order of a secondary index.
QUERY = "SELECT id, customer, note FROM orders ORDER BY customer, id"

#: Run by each interpreter under test: stock rows and prefetching rows must match, and the VFS must say
#: it followed the scan (its counters on stderr at close).
CHECK = textwrap.dedent(
    """
    import os, sqlite3, sys
    import libprefetch.sqlite
    database, query = sys.argv[1], sys.argv[2]
    print("enable_load_extension:", hasattr(sqlite3.Connection, "enable_load_extension"))
    stock = sqlite3.connect(database).execute(query).fetchall()
    # The VFS leaves a wholly cached file alone (no cost when warm): drop the file from the cache first.
    fd = os.open(database, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    connection = libprefetch.sqlite.connect(database)
    rows = connection.execute(query).fetchall()
    connection.close()
    assert rows == stock, "rows differ"
    print("rows:", len(rows))
    """
)


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """A table of 20,000 rows with a secondary index whose order is unrelated to the rowid."""
    path = tmp_path_factory.mktemp("sqlite") / "orders.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, note TEXT)")
    connection.execute("CREATE INDEX orders_customer ON orders (customer)")
    connection.executemany(
        "INSERT INTO orders (customer, note) VALUES (?, ?)",
        ((i * 7919 % 2003, f"note {i} " + "x" * (i % 200)) for i in range(20_000)),
    )
    connection.commit()
    connection.close()
    return path


def test_connect_returns_the_rows_of_sqlite3_connect(database):
    stock = sqlite3.connect(database).execute(QUERY).fetchall()
    with libprefetch.sqlite.connect(database) as connection:
        assert isinstance(connection, sqlite3.Connection)
        assert connection.execute(QUERY).fetchall() == stock
    with libprefetch.sqlite.connect(f"file:{database}?mode=ro", uri=True) as connection:
        assert connection.execute(QUERY).fetchall() == stock


def test_the_vfs_leaves_other_connections_alone(database):
    libprefetch.sqlite.connect(database).close()
    with pytest.raises(ValueError):
        libprefetch.sqlite.connect(f"file:{database}?vfs=unix", uri=True)
    library = libprefetch.sqlite._interpreters_sqlite()
    default = library.sqlite3_vfs_find(None)
    assert default != library.sqlite3_vfs_find(libprefetch.sqlite.VFS_NAME.encode())


def test_a_python_whose_sqlite_cannot_be_reached_gets_a_clear_error(monkeypatch, database):
    class NoSymbols:
        def __init__(self, path):
            pass

        def __getattr__(self, name):
            raise AttributeError(name)

    monkeypatch.setattr(libprefetch.sqlite, "_registered", False)
    monkeypatch.setattr(libprefetch.sqlite.ctypes, "CDLL", NoSymbols)
    with pytest.raises(libprefetch.sqlite.SQLiteUnavailable, match="shared libsqlite3"):
        libprefetch.sqlite.connect(database)


def run_check(python, database, env_path):
    """Runs CHECK with `python` and this package importable; returns its stdout and stderr."""
    env = dict(os.environ, PYTHONPATH=str(env_path), PREFETCH_SQLITE_STATS="1")
    done = subprocess.run(
        [str(python), "-c", CHECK, str(database), QUERY], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


@pytest.fixture(scope="module")
def package_only(tmp_path_factory):
    """A directory holding only this package, to put on another interpreter's PYTHONPATH."""
    where = tmp_path_factory.mktemp("package")
    shutil.copytree(Path(libprefetch.__file__).parent, where / "libprefetch")
    return where


def assert_scanned_through_the_vfs(stdout, stderr):
    assert "rows: 20000" in stdout
    counters = [line for line in stderr.splitlines() if line.startswith("prefetch VFS: database closed")]
    assert counters, f"the prefetch VFS did not report: {stderr}"
    assert not counters[-1].endswith("reads followed 0"), counters[-1]


def test_the_python3_first_on_path_in_a_fresh_virtual_environment(database, package_only, tmp_path):
    python3 = shutil.which("python3", path=os.environ.get("PATH", "").replace(str(Path(sys.executable).parent) + os.pathsep, ""))
    assert python3, "no python3 on PATH"
    subprocess.run([python3, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True, timeout=120)
    stdout, stderr = run_check(tmp_path / "venv" / "bin" / "python", database, package_only)
    assert_scanned_through_the_vfs(stdout, stderr)


def test_debians_python3(database, package_only):
    debian = Path("/usr/bin/python3")
    assert debian.exists(), "no /usr/bin/python3: install Debian's python3 (apt-get install python3), as .ci/run does"
    stdout, stderr = run_check(debian, database, package_only)
    assert_scanned_through_the_vfs(stdout, stderr)
