"""First read of a store through the catalog, against a plain key-value store of the same rows.

    python bench/first_read.py --kind window --rows 200000    # or session, timestamped,
                                                              # versioned, keyvalue
    python bench/first_read.py --kind window --timestamped --headers --duplicates
    python bench/first_read.py --kind session --profile       # cProfile of the store's read

A *first* read finds no local cache: it materializes the partition by applying the changelog
to RocksDB, then scans the store into Arrow. Both are timed together, in this process, without
Spark (``StoreTable.to_arrow``). Rows: 16-byte string keys, 100-byte string values, plus the
kind's time columns (window starts spread over 1000 one-minute windows; sessions 5 s long; with
``--headers``, two headers a row). The baseline is a ``keyvalue`` store of the same keys and
values, measured in the same run; the ratio is store rate / baseline rate (1.0: as fast).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa

from catalog import Catalog
from stores.formats.headers import encode_headers

BASE_MS = 1_714_564_800_000
DAY_MS = 86_400_000
MINUTE_MS = 60_000


def params_of(args: argparse.Namespace) -> dict[str, Any]:
    """Store parameters of ``--kind`` and its flags."""
    headers = {"headers": True} if args.headers else {}
    if args.kind == "window":
        return {
            "retention_ms": 30 * DAY_MS,
            "window_size_ms": MINUTE_MS,
            "retain_duplicates": args.duplicates,
            "timestamped": args.timestamped,
            **headers,
        }
    if args.kind == "session":
        return {"retention_ms": 30 * DAY_MS, **headers}
    if args.kind == "versioned":
        return {"history_retention_ms": DAY_MS}
    if args.kind == "timestamped":
        return headers
    return {}


def columns_of(args: argparse.Namespace, n: int) -> dict[str, pa.Array]:
    """The kind's changelog columns beyond key and value."""
    int64 = pa.int64()
    cols: dict[str, pa.Array] = {}
    if args.kind == "window":
        cols["window_start"] = pa.array([BASE_MS + (i % 1000) * MINUTE_MS for i in range(n)], int64)
        if args.timestamped:
            cols["timestamp"] = pa.array([BASE_MS + i for i in range(n)], int64)
    elif args.kind == "session":
        cols["session_start"] = pa.array([BASE_MS + i for i in range(n)], int64)
        cols["session_end"] = pa.array([BASE_MS + i + 5000 for i in range(n)], int64)
    elif args.kind in ("timestamped", "versioned"):
        cols["timestamp"] = pa.array([BASE_MS + i for i in range(n)], int64)
    if args.headers and args.kind in ("window", "session", "timestamped"):
        two = encode_headers([("trace", b"0123456789abcdef"), ("origin", b"bench")])
        cols["headers"] = pa.array([two] * n, pa.binary())
    return cols


def first_read(
    kind: str, params: dict[str, Any], keys: pa.Array, values: pa.Array,
    columns: dict[str, pa.Array], profile: bool,
) -> float:
    """Seconds of one first read of a new store holding the rows."""
    root = tempfile.mkdtemp(prefix="first-read-")
    try:
        catalog = Catalog(root + "/warehouse", cache_dir=root + "/cache")
        table = catalog.create_store("bench", kind, "string", "string", 1, **params)
        table.commit(table.stage(keys, values, columns))
        profiler = cProfile.Profile() if profile else None
        start = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        out = table.to_arrow()
        if profiler is not None:
            profiler.disable()
        seconds = time.perf_counter() - start
        if out.num_rows != len(keys) and not params.get("retain_duplicates"):
            print(f"warning: read {out.num_rows} rows of {len(keys)}", file=sys.stderr)
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        return seconds
    finally:
        shutil.rmtree(root, ignore_errors=True)


def describe(kind: str, params: dict[str, Any]) -> str:
    """The kind and its flags, for the report."""
    flags = [f for f in ("timestamped", "headers", "retain_duplicates") if params.get(f)]
    return " ".join([kind, *flags])


def report(label: str, runs: list[float], rows: int) -> float:
    """Print the median of ``runs`` (seconds) as rows/s; return it."""
    seconds = statistics.median(runs)
    shown = ", ".join(f"{s:.3f}" for s in runs)
    print(f"{label:<40} median {seconds:7.3f} s {rows / seconds:12,.0f} rows/s   (runs: {shown})")
    return rows / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kind",
        choices=["keyvalue", "timestamped", "versioned", "window", "session"],
        default="window",
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3, help="fresh stores per figure (median)")
    parser.add_argument("--headers", action="store_true", help="header-aware store")
    parser.add_argument("--timestamped", action="store_true", help="timestamped window store")
    parser.add_argument(
        "--duplicates", action="store_true", help="window store retaining duplicates"
    )
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one read")
    args = parser.parse_args()

    n = args.rows
    keys = pa.array([f"{i:016x}" for i in range(n)])
    values = pa.array(["v" * 100] * n)
    params = params_of(args)
    columns = columns_of(args, n)

    # The baseline and the store alternate run by run, so that drift in the machine (disk
    # caches, neighbours) hits both alike.
    baseline: list[float] = []
    store: list[float] = []
    for _ in range(args.repeat):
        baseline.append(first_read("keyvalue", {}, keys, values, {}, False))
        store.append(first_read(args.kind, params, keys, values, columns, False))
    rates = [
        report("keyvalue (baseline)", baseline, n),
        report(describe(args.kind, params), store, n),
    ]
    print(f"ratio {args.kind} / keyvalue: {rates[1] / rates[0]:.2f}")
    if args.profile:
        first_read(args.kind, params, keys, values, columns, True)


if __name__ == "__main__":
    main()
