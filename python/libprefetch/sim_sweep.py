"""Sweeps: every (trace, policy, cache) cell of many traces, on the local cores or on a Dask cluster.

Shape: one task per trace. A task reads its trace once and runs all of the trace's cells (every device,
cache size and policy) in the native simulator, so a worker holds one trace in memory per task it runs at a
time and never reads a trace twice. Tasks are independent; their rows are put back in the order of the
traces given, each trace's rows in ``prefetch sim``'s order (device, cache, policy), so a sweep gives the
same rows wherever it runs. Without a client the tasks run on a thread pool of the local cores (the native
run releases the GIL); with a ``dask.distributed.Client`` (a ``LocalCluster``, dask-jobqueue's Slurm or PBS
clusters, any scheduler address) they run on its workers, which must see the trace paths.

Failures: a trace that cannot be read or parsed fails its cells with the error naming the file and line
(``Rows.failed``), and the other traces complete; that error is not retried (it would fail again). A task
that fails otherwise (a worker lost, memory exhausted) is retried ``retries`` times, then reported by its
trace's name.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

from .sim import Failure, Row, Rows, _run_native


def _task(trace: str, policies, caches, device, options: dict):
    """Runs one trace's cells: ``("rows", [Row, ...])``, or ``("failed", message)`` for a bad trace or setting."""
    try:
        return "rows", _run_native([trace], policies, caches, device, dict(options))
    except (OSError, ValueError) as error:
        return "failed", str(error)


class _Progress:
    """A one-line count of finished traces on standard error, when it is shown."""

    def __init__(self, total: int, shown: Optional[bool]):
        self.total, self.done, self.failed = total, 0, 0
        self.shown = sys.stderr.isatty() if shown is None else shown

    def step(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        if self.shown:
            failures = f", {self.failed} failed" if self.failed else ""
            end = "\n" if self.done == self.total else ""
            print(f"\rsweep: {self.done}/{self.total} traces{failures}", end=end, file=sys.stderr, flush=True)


def sweep(
    traces,
    policies="all",
    caches=(),
    device=None,
    client=None,
    *,
    retries: int = 2,
    workers: Optional[int] = None,
    progress: Optional[bool] = None,
    **options,
) -> Rows:
    """Runs ``policies`` at each of ``caches`` on ``device`` for every trace path, one task per trace.

    ``policies``, ``caches``, ``device`` and ``options`` are ``libprefetch.sim.run``'s (``jobs``, the threads
    of one task, defaults to 1 here: the tasks are the parallelism). ``client``: a
    ``dask.distributed.Client``, or None for a pool of ``workers`` threads (default: the cores).
    ``progress``: a count of finished traces on stderr (default: when stderr is a terminal). Returns the rows
    of every trace that ran, in the order of ``traces``; ``rows.failed`` lists the traces whose cells failed,
    each with its error.
    """
    paths = [os.fsdecode(trace) for trace in traces]
    options.setdefault("jobs", 1)
    arguments = (policies, caches, device, options)
    if not options.get("fetch_time_from_trace"):
        # Bad settings (an unknown policy or device) raise here, once, instead of failing every trace.
        _run_native([("settings", [])], policies, caches, device, dict(options))
    bar = _Progress(len(paths), progress)
    if client is None:
        outcomes = _local(paths, arguments, retries, workers, bar)
    else:
        outcomes = _dask(client, paths, arguments, retries, bar)
    rows, failed = [], []
    for path, (kind, value) in zip(paths, outcomes):
        if kind == "rows":
            rows.extend(value)
        else:
            failed.append(Failure(trace=os.path.basename(path), error=value))
    return Rows(rows, failed)


def _attempts(path: str, arguments: tuple, retries: int):
    """``_task`` on this thread, tried again up to ``retries`` times when it raises."""
    for _ in range(retries):
        try:
            return _task(path, *arguments)
        except Exception:  # a failure other than the trace's: tried again
            pass
    try:
        return _task(path, *arguments)
    except Exception as error:
        return "failed", f"task failed {retries + 1} times: {error!r}"


def _local(paths: list, arguments: tuple, retries: int, workers: Optional[int], bar: _Progress) -> list:
    """The outcome of each trace's task, run on a thread pool; Ctrl-C starts no further task."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    pool = ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    try:
        futures = [pool.submit(_attempts, path, arguments, retries) for path in paths]
        for future in as_completed(futures):
            bar.step(future.result()[0] == "failed")
        return [future.result() for future in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _dask(client, paths: list, arguments: tuple, retries: int, bar: _Progress) -> list:
    """The outcome of each trace's task, run on ``client``'s cluster with Dask's retries."""
    from distributed import as_completed

    policies, caches, device, options = arguments
    futures = client.map(
        _task,
        paths,
        policies=policies,
        caches=caches,
        device=device,
        options=options,
        retries=retries,
        pure=False,
        key=[f"libprefetch-sim-{i}-{os.path.basename(p)}" for i, p in enumerate(paths)],
    )
    outcomes = {}
    for future in as_completed(futures):
        try:
            outcomes[future.key] = future.result()
        except Exception as error:  # the task failed retries + 1 times
            outcomes[future.key] = ("failed", f"task failed {retries + 1} times: {error!r}")
        bar.step(outcomes[future.key][0] == "failed")
    return [outcomes[future.key] for future in futures]


__all__ = ["Row", "Rows", "Failure", "sweep"]
