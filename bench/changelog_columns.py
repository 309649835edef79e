"""Changelog import and export at library level, each against its plain peer in the same run.

    python bench/changelog_columns.py                         # every kind, 1M records, 4 partitions
    python bench/changelog_columns.py --kinds window --rows 200000 --profile import

Per kind (string keys of 16 characters, string values of 100, ``partitioner=kafka``):

- **plain write**: what a Spark write task does with the rows (``Stager.add`` of the typed
  columns, ``flush``) and the commit;
- **changelog import**: ``import_changelog`` of the same rows as the kind's changelog records,
  in Spark's Kafka source shape (binary key and value, topic, partition, offset, int64 ms
  timestamp, timestampType), each Kafka partition's in offset order;
- **plain read**: the store's first read of a commit, every partition (``Table.read_partition``;
  a versioned store's latest versions, and, as ``read_all``, its every version, which is what
  its export holds);
- **changelog export**: ``export_partition`` of every partition of the imported store (its
  first read too).

Rows per kind: keyvalue and timestamped one per key; versioned four versions of 250k keys;
window four windows of 250k keys; session four sessions of 250k keys. Times ascend with the
row, so nothing is dropped. Figures are medians of ``--repeat`` runs (fresh stores each).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import statistics
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from catalog import Catalog
from catalog.kafka.changelog import export_partition
from catalog.kafka.restore import import_changelog
from catalog.kinds import Scan
from catalog.partitioner import partitions_of
from catalog.table import Table

PARTITIONS = 4
BASE_MS = 1_714_564_800_000
STEP_MS = 60_000
KINDS: dict[str, dict[str, Any]] = {
    "keyvalue": {},
    "timestamped": {},
    "versioned": {"history_retention_ms": 10 * 86_400_000, "segment_interval_ms": 3_600_000},
    "window": {
        "retention_ms": 86_400_000,
        "window_size_ms": STEP_MS,
        "segment_interval_ms": 3_600_000,
    },
    "session": {"retention_ms": 86_400_000, "segment_interval_ms": 3_600_000},
}


def _strings(items: list[str]) -> pa.Array:
    return pa.array(items, pa.string())


def rows_of(kind: str, n: int) -> tuple[pa.Array, pa.Array, dict[str, pa.Array], pa.Table]:
    """The typed rows of a plain write (keys, values, other columns) and the same rows as
    changelog records (Spark's Kafka source shape)."""
    ids = np.arange(n, dtype=np.int64)
    distinct = n if kind in ("keyvalue", "timestamped") else max(1, n // 4)
    key_ids = ids % distinct
    keys = _strings([f"{i:016x}" for i in key_ids.tolist()])
    values = _strings([f"{'v' * 84}{i:016d}" for i in ids.tolist()])
    plain_keys = keys.cast(pa.binary())
    value_bytes = values.cast(pa.binary())
    times = BASE_MS + ids
    columns: dict[str, pa.Array] = {}
    changelog_keys = plain_keys
    stamps = times
    if kind in ("timestamped", "versioned"):
        columns["timestamp"] = pa.array(times)
    elif kind == "window":
        starts = BASE_MS + (ids // distinct) * STEP_MS
        columns["window_start"] = pa.array(starts)
        stamps = starts
        changelog_keys = _suffixed(plain_keys, [struct.pack(">qi", s, 0) for s in starts.tolist()])
    elif kind == "session":
        starts = BASE_MS + (ids // distinct) * STEP_MS
        ends = starts + 1_000
        columns["session_start"], columns["session_end"] = pa.array(starts), pa.array(ends)
        stamps = ends
        changelog_keys = _suffixed(
            plain_keys, [struct.pack(">qq", e, s) for e, s in zip(ends.tolist(), starts.tolist())]
        )
    parts = partitions_of(plain_keys, PARTITIONS, "kafka")
    order = np.argsort(parts, kind="stable")  # each Kafka partition's records in offset order
    offsets = np.empty(n, np.int64)
    for p in range(PARTITIONS):
        at = order[parts[order] == p]
        offsets[at] = np.arange(len(at))
    take = pa.array(order)
    records = pa.table(
        {
            "key": changelog_keys.take(take),
            "value": value_bytes.take(take),
            "topic": pa.array(["bench-store-changelog"] * n, pa.string()),
            "partition": pa.array(parts[order].astype(np.int32)),
            "offset": pa.array(offsets[order]),
            "timestamp": pa.array(stamps[order]),
            "timestampType": pa.array(np.zeros(n, np.int32)),
        }
    )
    return keys, values, columns, records


def _suffixed(keys: pa.Array, suffixes: list[bytes]) -> pa.Array:
    return pa.array([k + s for k, s in zip(keys.to_pylist(), suffixes)], pa.binary())


def plain_write(
    table: Table, keys: pa.Array, values: pa.Array, columns: dict[str, pa.Array]
) -> None:
    write_id = uuid.uuid4().hex
    stager = table.stager(write_id)
    stager.add(keys, values, columns)
    table.commit(stager.flush(), write_id=write_id)


def plain_read(table: Table, scan: Scan | None = None) -> int:
    snapshot = table.log.latest_id()
    return sum(
        b.num_rows for p in range(PARTITIONS) for b in table.read_partition(p, snapshot, scan)
    )


def export(table: Table) -> int:
    snapshot = table.log.latest_id()
    return sum(
        b.num_rows for p in range(PARTITIONS) for b in export_partition(table, p, snapshot, "bench")
    )


def timed(action: Callable[[], object], profile: bool) -> float:
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    action()
    if profiler:
        profiler.disable()
    took = time.perf_counter() - start
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(35)
    return took


def bench_kind(kind: str, n: int, repeat: int, work: Path, profile: str | None) -> dict[str, float]:
    keys, values, columns, records = rows_of(kind, n)
    catalog = Catalog(str(work / "warehouse"), cache_dir=str(work / "caches"))
    runs: dict[str, list[float]] = {}
    for i in range(repeat + 1):  # run 0 warms up
        plain = catalog.create_store(f"{kind}-plain{i}", kind, "string", "string", PARTITIONS,
                                     partitioner="kafka", **KINDS[kind])  # fmt: skip
        imported = catalog.create_store(f"{kind}-imported{i}", kind, "string", "string",
                                        PARTITIONS, partitioner="kafka", **KINDS[kind])  # fmt: skip
        last = i == repeat
        actions: dict[str, Callable[[], object]] = {
            "write": partial(plain_write, plain, keys, values, columns),
            "import": partial(import_changelog, imported, records),
            "read": partial(plain_read, plain),
            "export": partial(export, imported),
        }
        if kind == "versioned":  # what the export holds: every version
            actions["read_all"] = partial(plain_read, plain, Scan(all_versions=True))
        took = {name: timed(action, last and profile == name) for name, action in actions.items()}
        if i:
            for name, seconds in took.items():
                runs.setdefault(name, []).append(seconds)
    medians = {name: statistics.median(r) for name, r in runs.items()}
    shown = "  ".join(f"{name} {s:5.2f}s" for name, s in medians.items())
    print(
        f"{kind:<12} {shown}   import/write {medians['write'] / medians['import']:4.2f}x"
        f"   export/read {medians['read'] / medians['export']:4.2f}x"
        + (
            f" (all versions {medians['read_all'] / medians['export']:4.2f}x)"
            if "read_all" in medians
            else ""
        ),
        flush=True,
    )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--profile", choices=["write", "import", "read", "export", "read_all"])
    args = parser.parse_args()
    print(f"{args.rows:,} records, {PARTITIONS} partitions (partitioner=kafka), median of "
          f"{args.repeat}; ratios: rate of the changelog route / rate of its plain peer "
          "(target >= 0.8)")  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="changelog-bench-"))
    try:
        for kind in args.kinds.split(","):
            bench_kind(kind, args.rows, args.repeat, work, args.profile)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
