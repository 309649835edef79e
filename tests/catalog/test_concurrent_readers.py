"""Several processes read, and catch up, the same partition caches at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pyarrow as pa

from catalog import Catalog


def _read_all(root: str, cache: str, rounds: int) -> list[int]:
    table = Catalog(root, cache_dir=cache).load("kv")
    return [table.to_arrow().num_rows for _ in range(rounds)]


def test_processes_share_one_cache_without_lock_errors(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long", num_partitions=2)
    table.commit(table.stage(pa.array(range(5000)), pa.array(range(5000)), None))
    context = multiprocessing.get_context("spawn")
    with context.Pool(4) as pool:
        results = pool.starmap(
            _read_all, [(catalog.root, str(tmp_path / "cache"), 3) for _ in range(4)]
        )
    assert results == [[5000, 5000, 5000]] * 4
