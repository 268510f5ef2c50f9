"""libprefetch.sim.sweep gives the rows of one local run in a stable order, on local threads and on a Dask
LocalCluster of two workers; a trace that fails to parse fails its cells with its name and line while the
others complete; a task that raises is retried, then reported by its trace's name; the command line
prints the same rows."""

import json
import pathlib
import subprocess
import sys

import pytest

from libprefetch import sim, sim_sweep

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACES = [REPO / "traces" / name for name in ("cs.trace.gz", "gli.oracleGeneral.zst", "cpp.lcs.csv.gz", "ps.trace.gz")]
POLICIES = "lru,conservative,dulo"
CACHES = [16, 256]


@pytest.fixture(scope="module")
def expected():
    """The rows of the traces run one after another in this process."""
    return [row for trace in TRACES for row in sim.run(trace, POLICIES, CACHES, device=10)]


@pytest.fixture(scope="module")
def client():
    """A Dask client of a LocalCluster of two single-threaded workers (threads of this process: they start
    in a fraction of the time worker processes take, and the native runs release the GIL)."""
    import distributed  # `make test` installs it
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.fixture
def bad_trace(tmp_path):
    path = tmp_path / "bad.trace"
    path.write_text("1\n2\n3\nfour\n5\n")
    return path


def test_a_local_sweep_gives_the_rows_of_the_runs_in_order(expected):
    rows = sim.sweep(TRACES, POLICIES, CACHES, device=10, workers=2, progress=False)
    assert rows == expected and rows.failed == []
    assert [row.trace for row in rows[:: len(rows) // len(TRACES)]] == [t.name for t in TRACES]


def test_a_local_cluster_of_two_workers_gives_the_same_rows(client, expected):
    rows = sim.sweep(TRACES, POLICIES, CACHES, device=10, client=client, progress=False)
    assert rows == expected and rows.failed == []
    assert len(client.scheduler_info()["workers"]) == 2


@pytest.mark.parametrize("on", ["threads", "dask"])
def test_a_malformed_trace_fails_its_cells_and_the_others_complete(request, expected, bad_trace, on):
    client = request.getfixturevalue("client") if on == "dask" else None
    traces = [TRACES[0], bad_trace, *TRACES[1:]]
    rows = sim.sweep(traces, POLICIES, CACHES, device=10, client=client, progress=False)
    assert rows == expected
    [failure] = rows.failed
    assert failure.trace == "bad.trace"
    assert f"{bad_trace}:4:" in failure.error


@pytest.mark.parametrize("on", ["threads", "dask"])
def test_a_task_that_raises_is_retried_then_reported(request, monkeypatch, on):
    client = request.getfixturevalue("client") if on == "dask" else None
    calls = {}
    real = sim_sweep._run_native

    def flaky(traces, *rest):
        name = pathlib.Path(traces[0]).name if isinstance(traces[0], str) else "settings"
        calls[name] = calls.get(name, 0) + 1
        if name == TRACES[0].name and calls[name] <= 2:
            raise RuntimeError("worker lost")  # twice: the third try runs
        if name == TRACES[1].name:
            raise RuntimeError("always lost")
        return real(traces, *rest)

    monkeypatch.setattr(sim_sweep, "_run_native", flaky)
    rows = sim.sweep(TRACES[:3], "lru", [16], device=10, client=client, retries=2, progress=False)
    assert [row.trace for row in rows] == [TRACES[0].name, TRACES[2].name]
    [failure] = rows.failed
    assert failure.trace == TRACES[1].name and "failed 3 times" in failure.error and "always lost" in failure.error
    assert calls[TRACES[0].name] == 3 and calls[TRACES[1].name] == 3


def test_bad_settings_raise_once_before_any_task():
    with pytest.raises(ValueError, match="unknown policy"):
        sim.sweep(TRACES, "lru,nope", CACHES, device=10, progress=False)


def test_the_command_line_prints_the_rows_and_names_a_failed_trace(expected, bad_trace):
    traces = ",".join(str(t) for t in [*TRACES, bad_trace])
    args = ["--trace", traces, "--policy", POLICIES, "--cache", "16,256", "--fetch-time", "10", "--json"]
    done = subprocess.run([sys.executable, "-m", "libprefetch.sim", *args], capture_output=True, text=True)
    assert done.returncode == 1
    assert json.loads(done.stdout) == [row.to_dict() for row in expected]
    assert done.stderr.startswith(f"libprefetch.sim: bad.trace: {bad_trace}:4:")


def test_the_command_line_says_what_is_wrong_in_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "libprefetch.sim", "--trace", str(TRACES[0]), "--cache", "4", "--policy", "nope"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "unknown policy" in done.stderr
