"""libprefetch.sim.run gives the rows `prefetch sim --json` prints, for every policy on every shipped trace;
it takes iterables of block numbers, converts to pandas, Arrow and plots, imports none of those unless
used, and stops on Ctrl-C."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import pytest

from libprefetch import sim

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACES = sorted(p for p in (REPO / "traces").iterdir() if p.name.endswith((".gz", ".zst")))
#: Options the competitive prefetchers need on a fixed-time device (it has no transfer rate).
OPTIONS = {"cp": "cp:depth=64K", "cpem": "cpem:depth=64K"}


@pytest.fixture(scope="module")
def prefetch():
    """The `prefetch` command built from this checkout ($PREFETCH_BIN, else the target directory)."""
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = os.environ.get("PREFETCH_BIN") or target / "debug" / "prefetch"
    if not os.path.exists(binary):
        pytest.fail(f"{binary} is missing: build it with `cargo build -p cli` (or `make test`)")
    return str(binary)


def cli(prefetch, *args):
    """`prefetch sim ... --json`'s rows, or its error line."""
    done = subprocess.run([prefetch, "sim", *args, "--json"], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else done.stderr.strip()


@pytest.fixture(scope="module")
def policies(prefetch):
    """Every policy `prefetch sim --list` names, with the options a fixed-time device needs; `optimal`
    (exhaustive, for traces of a few distinct blocks) apart."""
    listing = subprocess.run([prefetch, "sim", "--list"], capture_output=True, text=True, check=True).stdout
    rows = [line for line in listing.splitlines() if line.startswith("| ")][1:]  # the table, past its header
    names = [row.split("|")[1].strip() for row in rows]
    assert "lru" in names and "dulo" in names
    return [OPTIONS.get(name, name) for name in names if name != "optimal"]


def test_the_shipped_traces_are_all_there():
    assert len(TRACES) == 19, [p.name for p in TRACES]


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_rows_equal_the_cli_json_for_every_policy(prefetch, policies, trace):
    expected = cli(prefetch, "--trace", str(trace), "--policy", ",".join(policies), "--cache", "16", "--device", "unit:10")
    rows = sim.run(trace, policies, [16], device=10)
    assert [row.to_dict() for row in rows] == expected
    assert len(rows) == len(policies)


def test_rows_equal_the_cli_json_on_a_disk_model_at_two_sizes(prefetch, policies):
    trace = REPO / "traces" / "cs.trace.gz"
    devices = "unit:10,st3500320as:clook"
    expected = cli(prefetch, "--trace", str(trace), "--policy", ",".join(policies), "--cache", "16,64", "--device", devices)
    rows = sim.run(trace, policies, [16, 64], device=devices)
    assert [row.to_dict() for row in rows] == expected
    assert any(row.disk for row in rows) and {row.time_unit for row in rows} == {"units", "us"}


def test_optimal_and_an_iterable_trace_equal_the_cli_on_the_same_blocks(prefetch, tmp_path):
    blocks = [1, 2, 3, 1, 4, 2, 5, 1, 3, 4, 6, 2, 1]
    path = tmp_path / "small.txt"
    path.write_text("".join(f"{b}\n" for b in blocks))
    expected = cli(prefetch, "--trace", str(path), "--policy", "optimal,lru,conservative", "--cache", "2,3", "--fetch-time", "4")
    rows = sim.run(iter(blocks), "optimal,lru,conservative", [2, 3], fetch_time=4)
    assert [{**row.to_dict(), "trace": "small.txt"} for row in rows] == expected
    assert rows[0].trace == "requests"


def test_defaults_and_cache_shares_equal_the_cli(prefetch):
    trace = REPO / "traces" / "ps.trace.gz"
    expected = cli(prefetch, "--trace", str(trace), "--policy", "lru,fifo", "--cache", "1%,64K,100")
    rows = sim.run(trace, "lru,fifo", ["1%", "64K", 100])
    assert [row.to_dict() for row in rows] == expected
    assert rows[0].device == "unit:1" and rows[0].capacity == 30


def test_a_malformed_trace_raises_the_cli_error_naming_its_line(prefetch, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("1\n2\nthree\n")
    message = cli(prefetch, "--trace", str(path), "--policy", "lru", "--cache", "2", "--device", "unit:1")
    assert ":3:" in message
    with pytest.raises(ValueError) as error:
        sim.run(path, "lru", 2, device=1)
    assert message == f"prefetch: {error.value}"


def test_bad_settings_raise_value_and_type_errors(tmp_path):
    trace = REPO / "traces" / "cs.trace.gz"
    with pytest.raises(ValueError, match="unknown policy"):
        sim.run(trace, "lru,nope", 4, device=1)
    with pytest.raises(ValueError, match="cache size"):
        sim.run(trace, "lru", "many", device=1)
    with pytest.raises(TypeError, match="unknown option"):
        sim.run(trace, "lru", 4, device=1, cache_size=3)
    with pytest.raises(ValueError, match="block or object number"):
        sim.run(["a"], "lru", 4, device=1)
    with pytest.raises(OSError):
        sim.run(tmp_path / "missing", "lru", 4, device=1)


def test_rows_convert_to_pandas_arrow_and_a_plot():
    rows = sim.run(REPO / "traces" / "cs.trace.gz", "lru,dulo", [16, 64, 256], device=10)
    frame = rows.to_pandas()
    assert list(frame["policy"]) == ["lru", "dulo"] * 3
    assert list(frame["miss_ratio"]) == [row.misses / row.references for row in rows]
    assert rows.to_arrow().num_rows == 6
    import matplotlib

    matplotlib.use("Agg")
    figure = sim.plot(rows, y=("miss_ratio", "elapsed"))
    lines = [ax.get_lines() for ax in figure.axes]
    assert [len(panel) for panel in lines] == [2, 2]
    assert list(lines[0][0].get_xdata()) == [16, 64, 256]
    assert list(lines[1][1].get_ydata()) == [row.elapsed for row in rows if row.policy == "dulo"]


def test_importing_sim_imports_no_optional_package():
    code = "import sys, libprefetch.sim, libprefetch.sim_sweep; print(sorted(m for m in ('pandas', 'pyarrow', 'matplotlib', 'dask', 'distributed', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "[]\n"


#: Runs every policy at many sizes on two million references (minutes), printing "started" first; prints
#: "INTERRUPTED" when KeyboardInterrupt leaves the run.
CHILD = textwrap.dedent(
    """
    import random, signal, sys
    from libprefetch import sim
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as at a terminal, even if started with SIGINT ignored
    blocks = [random.randrange(1 << 16) for _ in range(2_000_000)]
    try:
        print("started", flush=True)
        sim.run(blocks, "all", [2 ** k for k in range(4, 16)], device=[10, "st3500320as:clook"])
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        sys.exit(0)
    print("COMPLETED: the KeyboardInterrupt was lost", flush=True)
    """
)


def test_ctrl_c_stops_a_run():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "started\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=600)  # a deadlock detector, not a performance limit
    assert out == "INTERRUPTED\n", err
