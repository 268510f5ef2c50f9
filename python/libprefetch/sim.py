"""The simulator from Python: ``prefetch sim``'s policies, devices and trace formats, rows as dataclasses.

The policies of Cao et al. (SIGMETRICS 1995), DULO, competitive prefetching and libprefetch's planner run
in the native module, asked exactly as ``prefetch sim`` asks them (one Rust function builds the runs for
both), so a row here holds the numbers ``prefetch sim --json`` prints for the same trace and settings.

- ``run(trace, policies, caches, device=None, **options)``: one trace (a path, or an iterable of block
  numbers) under every policy and cache size; a list of ``Row``.
- ``plot(rows, x="cache", y="miss_ratio", by="policy")``: curves with matplotlib.
- ``sweep(traces, policies, caches, device=None, client=None)``: many traces on local cores or on a Dask
  cluster (``libprefetch.sim_sweep``); ``python -m libprefetch.sim`` runs one from the command line.

pandas, pyarrow, matplotlib and dask are imported only by the functions that need them. See docs/python.md.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any, Iterable, Optional, Sequence, Union

from . import _native

#: The options ``run`` takes besides trace, policies, caches and device, as ``prefetch sim`` names them.
OPTIONS = (
    "format",
    "block_size",
    "fetch_time",
    "fetch_time_from_trace",
    "realistic",
    "fetch_spread",
    "depth",
    "jobs",
)


@dataclasses.dataclass(frozen=True)
class Row:
    """One (trace, policy, cache, device) run: the fields of ``prefetch sim --json``, in its order."""

    setting: str
    trace: str
    policy: str
    device: str
    time_unit: str
    capacity: int
    references: int
    elapsed: int
    stall: int
    hits: int
    misses: int
    inflight_hits: int
    demand_fetches: int
    prefetches: int
    unused_prefetches: int
    cancelled_prefetches: int
    min_fetches: Optional[int]
    normalized_elapsed: Optional[float]
    #: The requests the device served (disk-timed policies), as the JSON's ``disk`` object; else None.
    disk: Optional[dict] = None

    @property
    def cache(self) -> int:
        """The cache size in blocks (``capacity``)."""
        return self.capacity

    @property
    def fetches(self) -> int:
        """Demand fetches plus prefetches: the disk load."""
        return self.demand_fetches + self.prefetches

    @property
    def miss_ratio(self) -> float:
        """Misses over references (0 for an empty run)."""
        return self.misses / self.references if self.references else 0.0

    def to_dict(self) -> dict:
        """The row as ``prefetch sim --json`` prints it (``disk`` only when the device served requests)."""
        row = dataclasses.asdict(self)
        if row["disk"] is None:
            del row["disk"]
        return row


class Rows(list):
    """A list of ``Row`` that converts to a table. ``failed`` lists the cells a sweep could not run."""

    def __init__(self, rows: Iterable[Row] = (), failed: Iterable["Failure"] = ()):
        super().__init__(rows)
        self.failed = list(failed)

    def to_pandas(self):
        """A ``pandas.DataFrame``, one row per run, with ``miss_ratio`` and ``fetches`` columns."""
        import pandas

        return pandas.DataFrame(_records(self))

    def to_arrow(self):
        """A ``pyarrow.Table``, one row per run, with ``miss_ratio`` and ``fetches`` columns."""
        import pyarrow

        return pyarrow.Table.from_pylist(_records(self))


@dataclasses.dataclass(frozen=True)
class Failure:
    """A trace of a sweep whose cells did not run, and why (for a malformed trace: its file and line)."""

    trace: str
    error: str


def _records(rows: Sequence[Row]) -> list:
    """Rows as dicts with the derived columns, ``disk`` as JSON text (its keys vary by run)."""
    records = []
    for row in rows:
        record = dataclasses.asdict(row)
        record["disk"] = None if row.disk is None else json.dumps(row.disk)
        record["miss_ratio"] = row.miss_ratio
        record["fetches"] = row.fetches
        records.append(record)
    return records


def _list(value: Union[str, int, Sequence, None]) -> list:
    """``value`` as a list: a string or number is one item, None none."""
    if value is None:
        return []
    if isinstance(value, (str, int)):
        return [value]
    return list(value)


def _devices(device) -> tuple:
    """(fetch times, device names): an int F is ``unit:F``, a string a device as ``--device`` takes it."""
    fetch_times, names = [], []
    for item in _list(device):
        if isinstance(item, int) and not isinstance(item, bool):
            fetch_times.append(item)
        elif isinstance(item, str):
            names.append(item)
        else:
            raise TypeError(f"device {item!r}: give an int F (unit:F) or a name such as 'st3500320as:clook'")
    return fetch_times, names


def _trace(trace) -> Any:
    """A path as the native module takes it, or (name, requests) for an iterable of block numbers."""
    if isinstance(trace, (str, bytes, os.PathLike)):
        return os.fsdecode(trace)
    if isinstance(trace, Iterable):
        return ("requests", trace)
    raise TypeError(f"trace {trace!r}: give a path or an iterable of block numbers")


def run(trace, policies="all", caches=(), device=None, **options) -> Rows:
    """Runs ``policies`` at each of ``caches`` on ``device``: an int is blocks (objects for object traces),
    a string as ``--cache`` takes it (``"64M"``, ``"1%"`` of the working set).

    ``trace`` is a file in any format ``prefetch sim --trace`` reads (plain, gzip or zstd; see
    docs/traces.md) or an iterable of block numbers. ``policies`` is ``prefetch sim --policy``'s list
    (``"lru,dulo:bank=4M"``, a list of names, or ``"all"``); ``device`` an int F (``unit:F``), a device name
    (``"unit:10"``, ``"st3500320as:clook"``) or a list of them; None takes ``prefetch sim``'s default.
    ``options``: ``format``, ``block_size``, ``fetch_time`` (an int or list, as ``--fetch-time``),
    ``fetch_time_from_trace``, ``realistic``, ``fetch_spread``, ``depth``, ``jobs`` (threads; default the
    cores). Rows come in the order device, cache, policy, as ``prefetch sim --json`` prints them.

    The GIL is released while the simulator works; Ctrl-C raises KeyboardInterrupt at once. Raises
    OSError for a trace that cannot be opened, ValueError for a malformed trace (naming its line), an
    unknown policy, device or option value.
    """
    return Rows(_run_native([_trace(trace)], policies, caches, device, options))


def _run_native(traces: list, policies, caches, device, options: dict) -> list:
    """The native run's rows as ``Row``s."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(OPTIONS)}")
    fetch_times, names = _devices(device)
    fetch_times = _list(options.pop("fetch_time", None)) + fetch_times
    text = _native.sim_run(
        traces,
        [str(p) for p in _list(policies)],
        [c if isinstance(c, str) else int(c) for c in _list(caches)],
        fetch_times,
        names,
        **options,
    )
    return [Row(**row) for row in json.loads(text)]


#: Short names ``plot`` takes for row attributes.
_ALIASES = {"cache": "capacity"}


def plot(rows: Sequence[Row], x: str = "cache", y: Union[str, Sequence[str]] = "miss_ratio", by: str = "policy"):
    """Draws ``y`` against ``x``, one line per value of ``by``, with matplotlib; returns the Figure.

    ``y`` may be several attributes (``("miss_ratio", "elapsed")``, as the CLI's SVG draws miss ratio and
    elapsed time): one column of panels each. Rows of several traces or devices get one row of panels
    per (trace, device).
    """
    import matplotlib.pyplot as pyplot

    ys = [y] if isinstance(y, str) else list(y)
    x, by = _ALIASES.get(x, x), _ALIASES.get(by, by)
    groups = sorted({(row.trace, row.device) for row in rows})
    figure, axes = pyplot.subplots(
        len(groups), len(ys), squeeze=False, figsize=(5 * len(ys), 3.5 * len(groups))
    )
    for (trace, device), panels in zip(groups, axes):
        mine = [row for row in rows if (row.trace, row.device) == (trace, device)]
        for name, ax in zip(ys, panels):
            for key in dict.fromkeys(getattr(row, by) for row in mine):
                line = sorted((getattr(r, x), getattr(r, _ALIASES.get(name, name))) for r in mine if getattr(r, by) == key)
                ax.plot([p[0] for p in line], [p[1] for p in line], marker="o", label=str(key))
            ax.set_xlabel(x)
            ax.set_ylabel(name)
            ax.set_title(f"{trace}, {device} (simulated)")
            ax.legend(fontsize="small")
    figure.tight_layout()
    return figure


def sweep(traces, policies="all", caches=(), device=None, client=None, **options) -> Rows:
    """Every (trace, policy, cache) cell, one task per trace, on local cores or a Dask ``client``.

    See ``libprefetch.sim_sweep.sweep``.
    """
    from .sim_sweep import sweep as run_sweep

    return run_sweep(traces, policies, caches, device, client, **options)


if __name__ == "__main__":
    # The command runs the package's module, not this copy run as __main__: Dask pickles task
    # functions by module name, and workers import libprefetch.sim_sweep.
    from libprefetch.sim_main import main

    sys.exit(main())
