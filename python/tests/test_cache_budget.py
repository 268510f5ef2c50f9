"""The page-cache budget (docs/cache-budget.md) for a Python program: the interpreter run with
libprefetch.so preloaded and LIBPREFETCH_CACHE_BUDGET in its environment (what `prefetch run
--cache-budget SIZE -- python3 script.py` sets) keeps the pages its plain `os.pread` calls read within
the budget, in DULO's order (FAST'05 sections 3-4, through `plan::evict`)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

#: Where `cargo build` (or `make build`) put libprefetch.so.
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parents[2] / "target")) / "debug"

#: Reads the file named by argv[1] in 64 KiB `os.pread`s with POSIX_FADV_RANDOM (the kernel reads only
#: the pages asked for), then prints the bytes read.
READER = textwrap.dedent(
    """
    import os, sys
    fd = os.open(sys.argv[1], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    total = 0
    while chunk := os.pread(fd, 65536, total):
        total += len(chunk)
    print(total)
    """
)


def run_reader(path, budget):
    """Runs READER on `path` with libprefetch.so preloaded and the budget's report asked for."""
    library = TARGET / "libprefetch.so"
    assert library.is_file(), f"run `cargo build --workspace` first ({TARGET})"
    env = {name: value for name, value in os.environ.items() if not name.startswith("LIBPREFETCH_")}
    env.update(LD_PRELOAD=str(library), LIBPREFETCH_CACHE_BUDGET_REPORT="1")
    if budget:
        env["LIBPREFETCH_CACHE_BUDGET"] = budget
    return subprocess.run(
        [sys.executable, "-c", READER, str(path)], env=env, capture_output=True, text=True, check=False
    )


def cold_file(path, size):
    """Writes `size` random bytes to `path`, written back and evicted (this file's pages only)."""
    with open(path, "wb") as file:
        file.write(os.urandom(size))
        file.flush()
        os.fsync(file.fileno())
        os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def report_counts(stderr):
    """The budget's counts from its exit line: {'pages read': n, 'missed': n, 'dropped': n, 'held': n}."""
    line = next(line for line in stderr.splitlines() if "cache budget:" in line)
    counts = {}
    for part in line.split(":", 2)[2].split(","):
        number, what = part.strip().split(" ", 1)
        counts[what] = int(number)
    return counts


def test_a_python_program_under_the_preload_keeps_its_budget(tmp_path):
    data = tmp_path / "data.bin"
    cold_file(data, 16 << 20)
    run = run_reader(data, "2M")
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(16 << 20)]
    counts = report_counts(run.stderr)
    # The interpreter's own reads (modules it imports) are counted too: at least the file's 4,096 pages.
    assert counts["pages read"] >= 4096, run.stderr
    assert counts["missed"] >= 4096, run.stderr
    assert counts["held"] <= 512, run.stderr
    assert counts["dropped"] >= counts["missed"] - 512, run.stderr


def test_without_the_variable_there_is_no_budget(tmp_path):
    data = tmp_path / "data.bin"
    cold_file(data, 1 << 20)
    run = run_reader(data, None)
    assert run.returncode == 0, run.stderr
    assert "cache budget" not in run.stderr
