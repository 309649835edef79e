"""First read of a store built by many small appends, against the same content in one commit.

    python bench/appends.py --rows 200000 --appends 200 [--kind keyvalue|timestamped|versioned|...]

Without compaction, a fresh reader replays every changelog file since the store was created;
with it (the default: automatic after 64 files per partition, plus one explicit
``Catalog.compact`` at the end), it loads the newest snapshot and replays the tail. Both
stores hold the same final rows; each first read (a fresh cache directory, through the catalog,
no Spark) is timed, median of 3. The ratio is one-commit time / many-appends time (goal of issue
8: >= 0.67, i.e. within 1.5x). ``--no-compaction`` shows the price of the whole history.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa

from catalog import Catalog
from catalog.log import commits as commit_log

DAY_MS = 86_400_000
BASE_MS = 1_714_564_800_000


def _batch(start: int, rows: int, kind: str) -> tuple[pa.Array, pa.Array, dict[str, pa.Array] | None]:
    keys = pa.array([f"key-{i:012d}" for i in range(start, start + rows)])
    values = pa.array([f"value-{i:094d}" for i in range(start, start + rows)])
    times = pa.array([BASE_MS + i for i in range(start, start + rows)], pa.int64())
    if kind in ("timestamped", "versioned"):
        return keys, values, {"timestamp": times}
    if kind == "window":
        return keys, values, {"window_start": times}
    if kind == "session":
        return keys, values, {"session_start": times, "session_end": times}
    return keys, values, None


def _first_read(root: str, cache: Path) -> float:
    commit_log._RECORDS.clear()
    shutil.rmtree(cache, ignore_errors=True)
    table = Catalog(root, cache_dir=str(cache)).load("s")
    started = time.perf_counter()
    rows = table.to_arrow().num_rows
    elapsed = time.perf_counter() - started
    assert rows > 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument(
        "--kind",
        default="keyvalue",
        choices=["keyvalue", "timestamped", "versioned", "window", "session"],
    )
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--no-compaction", action="store_true")
    args = parser.parse_args()
    params = {
        "keyvalue": {},
        "timestamped": {},
        "versioned": {"history_retention_ms": DAY_MS},
        "window": {"retention_ms": DAY_MS, "window_size_ms": 60_000},
        "session": {"retention_ms": DAY_MS},
    }[args.kind]
    threshold = 0 if args.no_compaction else 64
    work = Path(tempfile.mkdtemp(prefix="bench-appends-"))
    try:
        one = Catalog(str(work / "one"), cache_dir=str(work / "c1"), compact_after_files=0)
        table = one.create_store("s", args.kind, "string", "string", args.partitions, **params)
        table.commit(table.stage(*_batch(0, args.rows, args.kind)))
        many = Catalog(str(work / "many"), cache_dir=str(work / "c2"), compact_after_files=threshold)
        table = many.create_store("s", args.kind, "string", "string", args.partitions, **params)
        step = args.rows // args.appends
        started = time.perf_counter()
        for n in range(args.appends):
            table.commit(table.stage(*_batch(n * step, step, args.kind)))
        if not args.no_compaction:
            many.compact("s")
        print(f"{args.appends} appends of {step} rows: {time.perf_counter() - started:.1f} s")
        one_s = statistics.median(_first_read(one.root, work / "r1") for _ in range(3))
        many_s = statistics.median(_first_read(many.root, work / "r2") for _ in range(3))
        print(f"first read, one commit:   {one_s:.3f} s")
        print(f"first read, {args.appends} appends: {many_s:.3f} s")
        print(f"ratio (one / many): {one_s / many_s:.2f}x  (goal >= 0.67x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
