"""``StoreTable.erase`` against a plain write of the rows of the files it rewrites, same run.

    python bench/erase.py                                   # 4M rows, 1,000 keys erased
    python bench/erase.py --keys 400000 --versions 10 --erase 1000 --profile erase

A versioned store (``partitioner=kafka``, 4 partitions) of ``--keys`` keys of 16 characters
with ``--versions`` versions each (values of 100 characters), written as one commit per
version: each commit's file holds every key, so ``--erase`` random keys touch every file.

- **plain write**: the same commits' rows staged and committed into a fresh store (what the
  Spark write tasks of those commits do, ``Stager.add`` then the commit): the issue's floor,
  "a plain write of the affected files' rows";
- **erase**: ``StoreTable.erase`` of the keys (cold: no cache of the store), which reads every
  file, rewrites those holding a key and publishes one ``erase`` commit.

Printed: seconds (median of ``--repeat``) and ``erase / write`` (the issue asks <= 1.5).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import uuid
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from changelog_columns import timed

from catalog import Catalog
from catalog.operations.erase import ErasureReport
from catalog.store_table import StoreTable
from catalog.table import Table

PARTITIONS = 4
PARAMS = {"history_retention_ms": 365 * 86_400_000, "segment_interval_ms": 86_400_000}
BASE_MS = 1_714_564_800_000


def commits_of(keys: int, versions: int) -> list[tuple[pa.Array, pa.Array, dict[str, pa.Array]]]:
    """Per version, every key with a fresh 100-character value, an hour after the last."""
    names = pa.array([f"{i:016x}" for i in range(keys)], pa.string())
    rng = np.random.default_rng(7)
    out = []
    for v in range(versions):
        raw = rng.integers(ord("a"), ord("z") + 1, size=keys * 100, dtype=np.uint8)
        offsets = pa.py_buffer((np.arange(keys + 1, dtype=np.int32) * 100).tobytes())
        values = pa.Array.from_buffers(pa.string(), keys, [None, offsets, pa.py_buffer(raw)])
        stamps = pa.array(np.full(keys, BASE_MS + v * 3_600_000, np.int64))
        out.append((names, values, {"timestamp": stamps}))
    return out


def write_all(table: Table, commits: list[tuple[pa.Array, pa.Array, dict[str, pa.Array]]]) -> None:
    for keys, values, columns in commits:
        write_id = uuid.uuid4().hex
        stager = table.stager(write_id)
        stager.add(keys, values, columns)
        table.commit(stager.flush(), write_id=write_id)


def erase_into(reports: list[ErasureReport], table: StoreTable, keys: list[str]) -> None:
    reports.append(table.erase(keys, reason="bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=400_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--erase", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", choices=["write", "erase"])
    args = parser.parse_args()
    commits = commits_of(args.keys, args.versions)
    gone = [f"{i:016x}" for i in random.Random(3).sample(range(args.keys), args.erase)]
    work = Path(tempfile.mkdtemp(prefix="bench-erase-"))
    runs: dict[str, list[float]] = {"write": [], "erase": []}
    try:
        for i in range(args.repeat + 1):  # run 0 warms up
            root = str(work / f"w{i}")
            catalog = Catalog(root, cache_dir=str(work / f"c{i}"), compact_after_files=0)
            store = catalog.create_store("s", "versioned", "string", "string", PARTITIONS,
                                         partitioner="kafka", **PARAMS)  # fmt: skip
            write_all(store, commits)
            peer = catalog.create_store("p", "versioned", "string", "string", PARTITIONS,
                                        partitioner="kafka", **PARAMS)  # fmt: skip
            last = i == args.repeat
            took_write = timed(partial(write_all, peer, commits), last and args.profile == "write")
            cold = Catalog(root, cache_dir=str(work / f"cold{i}"), compact_after_files=0)
            reports: list[ErasureReport] = []
            took_erase = timed(partial(erase_into, reports, cold.load("s"), gone),
                               last and args.profile == "erase")  # fmt: skip
            report = reports[0]
            assert report.found == args.erase
            if i:
                runs["write"].append(took_write)
                runs["erase"].append(took_erase)
            shutil.rmtree(root, ignore_errors=True)
        write, erased = (statistics.median(runs[k]) for k in ("write", "erase"))
        rows = args.keys * args.versions
        print(f"{rows:,} rows ({args.keys:,} keys x {args.versions} versions), "
              f"{args.erase:,} keys erased, {len(report.files)} files rewritten")  # fmt: skip
        print(f"plain write {write:.2f} s   erase {erased:.2f} s   erase / write {erased / write:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
