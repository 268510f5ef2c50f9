"""``python -m libprefetch.sim``: a sweep of ``prefetch sim``'s policies over many traces, on the local cores
or on a Dask cluster (``--dask ADDRESS``); rows as a table or as ``prefetch sim --json`` prints them.

Exit status: 0 when every trace ran, 1 when some failed (each named on stderr with its error), 2 for a bad
argument.
"""

from __future__ import annotations

import argparse
import json
import sys


def _split(values):
    """Comma-separated and repeated values as one list."""
    return [item for value in values or [] for item in value.split(",") if item]


def parser() -> argparse.ArgumentParser:
    """The arguments, named as ``prefetch sim`` names them."""
    p = argparse.ArgumentParser(prog="python -m libprefetch.sim", description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", action="append", required=True, help="trace file(s), comma-separated")
    p.add_argument("--policy", action="append", help="policies, comma-separated (default: all)")
    p.add_argument("--cache", action="append", required=True, help="cache size(s) in blocks, comma-separated")
    p.add_argument("--device", action="append", help="device(s): unit:F or MODEL[:SCHEDULER]")
    p.add_argument("--fetch-time", action="append", help="fetch time(s) F: short for --device unit:F")
    p.add_argument("--format", help="trace format (default: recognised from each trace)")
    p.add_argument("--block-size", type=int, help="block size in bytes for request traces")
    p.add_argument("--realistic", action="store_true", help="references take the trace's compute times")
    p.add_argument("--fetch-spread", type=int, default=0, help="draw fetch times from F-S..F+S")
    p.add_argument("--depth", type=int, default=1, help="fetches in flight at most for Cao's policies")
    p.add_argument("--dask", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS (tcp://host:8786)")
    p.add_argument("--workers", type=int, help="threads without --dask (default: the cores)")
    p.add_argument("--retries", type=int, default=2, help="tries again a task that failed other than by its trace")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--plot", metavar="FILE", help="draw miss ratio and elapsed time against cache size (matplotlib)")
    return p


COLUMNS = ("trace", "policy", "device", "capacity", "references", "misses", "miss_ratio", "elapsed", "fetches")


def table(rows) -> str:
    """The rows as a Markdown table of the main counters."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [f"{v:.4f}" if isinstance(v, float) else str(v) for v in (getattr(row, c) for c in COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    """Runs the sweep the arguments ask and prints it."""
    from .sim import plot
    from .sim_sweep import sweep

    args = parser().parse_args(argv)
    try:
        caches = [int(c) for c in _split(args.cache)]
        fetch_times = [int(f) for f in _split(args.fetch_time)]
    except ValueError as error:
        print(f"libprefetch.sim: --cache and --fetch-time take whole numbers ({error})", file=sys.stderr)
        return 2
    client = None
    if args.dask:
        from distributed import Client

        client = Client(args.dask)
    try:
        rows = sweep(
            _split(args.trace),
            _split(args.policy) or "all",
            caches,
            [*fetch_times, *(args.device or [])],
            client,
            retries=args.retries,
            workers=args.workers,
            format=args.format,
            block_size=args.block_size,
            realistic=args.realistic,
            fetch_spread=args.fetch_spread,
            depth=args.depth,
        )
    except (TypeError, ValueError) as error:
        print(f"libprefetch.sim: {error}", file=sys.stderr)
        return 2
    finally:
        if client is not None:
            client.close()
    if args.json:
        sys.stdout.write(json.dumps([row.to_dict() for row in rows], indent=2) + "\n")
    else:
        sys.stdout.write("Simulated:\n\n" + table(rows))
    if args.plot and rows:
        plot(rows, y=("miss_ratio", "elapsed")).savefig(args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    for failure in rows.failed:
        print(f"libprefetch.sim: {failure.trace}: {failure.error}", file=sys.stderr)
    return 1 if rows.failed else 0


if __name__ == "__main__":
    sys.exit(main())
