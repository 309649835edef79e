"""``StoreTable.append`` from Arrow against delta-rs's ``write_deltalake`` of the same rows,
with ``pyarrow.parquet.write_table`` as the floor, same run.

    python bench/python_write.py                      # 1M rows, 4 partitions
    python bench/python_write.py --rows 4000000 --profile append

The rows: 16-character keys and 100-character values (strings), one ``pyarrow.Table``.

- **append**: ``StoreTable.append(table)`` into a key-value store of 4 partitions: every row
  checked, serialized, placed by the partitioner, written as an LZ4 Arrow IPC file and
  published in one commit (``catalog.operations.python_write``);
- **delta-rs**: ``deltalake.write_deltalake`` of the same table, partitioned into 4 by a
  column computed beforehand (its time not counted), in mode ``append``: the peer with the
  same promise of an atomic commit (issue 39);
- **parquet**: ``pyarrow.parquet.write_table`` of the same table to one file: no commit, no
  partitioning, the floor.

Each into a fresh directory per run. Printed: seconds (median of ``--repeat``, after a warm-up)
and the ratios ``append / delta-rs`` (the issue asks <= 1) and ``append / parquet``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from changelog_columns import timed

from catalog import Catalog

PARTITIONS = 4


def strings(n: int, width: int, seed: int) -> pa.Array:
    """``n`` random lowercase strings of ``width`` characters."""
    raw = np.random.default_rng(seed).integers(ord("a"), ord("z") + 1, n * width, np.uint8)
    offsets = pa.py_buffer((np.arange(n + 1, dtype=np.int32) * width).tobytes())
    return pa.Array.from_buffers(pa.string(), n, [None, offsets, pa.py_buffer(raw)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", choices=["append"], default=None)
    args = parser.parse_args()
    from deltalake import write_deltalake  # the bench extra: pip install '.[bench]'

    rows = pa.table({"key": strings(args.rows, 16, 1), "value": strings(args.rows, 100, 2)})
    bucketed = rows.append_column("bucket", pa.array(np.arange(args.rows) % PARTITIONS))
    work = Path(tempfile.mkdtemp(prefix="bench-python-write-"))
    runs: dict[str, list[float]] = {"append": [], "delta-rs": [], "parquet": []}
    try:
        for i in range(args.repeat + 1):  # run 0 warms up
            catalog = Catalog(str(work / f"warehouse{i}"), cache_dir=str(work / "caches"))
            store = catalog.create_store("s", "keyvalue", "string", "string", PARTITIONS)
            actions: dict[str, Callable[[], object]] = {
                "append": lambda store=store: store.append(rows),
                "delta-rs": lambda i=i: write_deltalake(
                    str(work / f"delta{i}"), bucketed, mode="append", partition_by=["bucket"]
                ),
                "parquet": lambda i=i: pq.write_table(rows, str(work / f"rows{i}.parquet")),
            }
            for name, action in actions.items():
                took = timed(action, args.profile == name and i == args.repeat)
                if i:
                    runs[name].append(took)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    median = {name: statistics.median(times) for name, times in runs.items()}
    print(f"{args.rows:,} rows (16-byte keys, 100-byte values), {PARTITIONS} partitions, "
          f"median of {args.repeat}:")  # fmt: skip
    for name, took in median.items():
        print(f"  {name:9s} {took:7.3f} s")
    print(f"  append / delta-rs {median['append'] / median['delta-rs']:.2f}"
          f"   append / parquet {median['append'] / median['parquet']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
