"""A table read's order (``StoreKind.scan_columns(..., key_order=False)``, what Spark reads and
``to_arrow`` take): the rows of Kafka's scan, in the order they were written instead of key
order. A DataFrame has no order, and the gather into key order was most of a first read's CPU
(issue 27); exports and RocksDB's rows keep Kafka's key order."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.kinds import STORE_MUST_ANSWER, Scan
from tests.catalog.kafka.test_state_dir import VARIANTS, build, canonical


def _pairs(table: pa.Table) -> list[tuple[Any, Any]]:
    return list(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))


def _in_written_order(read: list[tuple[Any, Any]], written: list[tuple[Any, Any]]) -> bool:
    """Whether ``read`` is a subsequence of ``written``: its rows, in the order written."""
    rows = iter(written)
    return all(any(row == w for w in rows) for row in read)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_table_read_has_kafkas_rows_in_write_order(catalog: Catalog, variant: str) -> None:
    table = build(catalog, variant)
    kind, params = table.kind, table.spec.params
    scans = [Scan(), Scan(all_versions=True)] if kind.supports_as_of else [Scan()]
    reordered = 0
    for partition in range(table.spec.num_partitions):
        runs, commits = table.partition_cache(partition).columns_at(table.log.latest_id())
        written = _pairs(pa.concat_tables(commits))
        for scan in scans:
            kafka = kind.scan_columns(runs, commits, params, scan)
            read = kind.scan_columns(runs, commits, params, scan, key_order=False)
            assert kafka is not STORE_MUST_ANSWER and read is not STORE_MUST_ANSWER
            assert read.schema == kafka.schema
            assert canonical(read.to_pylist()) == canonical(kafka.to_pylist())
            assert _in_written_order(_pairs(read), written)
            reordered += _pairs(read) != _pairs(kafka)
    assert reordered  # (random keys: key order is not the order written)


def test_written_order_is_told_apart_from_key_order() -> None:
    written = [(b"b", 1), (b"a", 2), (b"c", 3)]
    assert _in_written_order([(b"b", 1), (b"c", 3)], written)
    assert not _in_written_order([(b"a", 2), (b"b", 1)], written)


@pytest.mark.parametrize("kind", ["keyvalue", "timestamped"])
def test_a_store_written_once_is_read_in_write_order(catalog: Catalog, kind: str) -> None:
    """No key repeats: every row is its key's last write, served as written (no sort at all,
    ``key_sort.distinct``), deletes of absent keys dropped."""
    table = catalog.create_store("once", kind, "string", "long", num_partitions=1)
    keys = [f"k{i * 7919 % 1000:03d}" for i in range(1000)]  # each once, not in key order
    values = [None if i % 10 == 3 else i for i in range(1000)]
    times = {"timestamp": pa.array(range(1000), pa.int64())} if kind == "timestamped" else None
    table.commit(table.stage(pa.array(keys), pa.array(values, pa.int64()), times))
    read = table.to_arrow()
    live = [(k, v) for k, v in zip(keys, values) if v is not None]
    assert list(zip(read.column("key").to_pylist(), read.column("value").to_pylist())) == live
    runs, commits = table.partition_cache(0).columns_at(table.log.latest_id())
    kafka = table.kind.scan_columns(runs, commits, table.spec.params, Scan())
    assert kafka.column("key").to_pylist() == sorted(k.encode() for k, _ in live)


@pytest.mark.parametrize("variant", ["window", "window-duplicates", "session"])
def test_windows_and_sessions_written_once_are_read_in_write_order(
    catalog: Catalog, variant: str
) -> None:
    """Each store key (key and window start, or key and session bounds) written once: the
    rows as written, with no sort (``key_sort.distinct`` over the key and its suffix), and the
    same rows as Kafka's scan."""
    kind, params = VARIANTS[variant]
    table = catalog.create_store("once", kind, "string", "long", num_partitions=1, **params)
    keys = [f"k{i * 7919 % 100:02d}" for i in range(300)]  # each key 3 times
    times = [1000 * (i // 100) + i % 7 for i in range(300)]  # a new window or session each time
    columns = (
        {"window_start": pa.array([t - t % 100 for t in times], pa.int64())}
        if kind == "window"
        else {
            "session_start": pa.array(times, pa.int64()),
            "session_end": pa.array([t + 5 for t in times], pa.int64()),
        }
    )
    if params.get("timestamped"):
        columns["timestamp"] = pa.array(times, pa.int64())
    table.commit(table.stage(pa.array(keys), pa.array(range(300), pa.int64()), columns))
    read = table.to_arrow()
    assert read.column("value").to_pylist() == list(range(300))  # as written
    runs, commits = table.partition_cache(0).columns_at(table.log.latest_id())
    kafka = table.kind.scan_columns(runs, commits, table.spec.params, Scan())
    values = [int.from_bytes(v, "big") for v in kafka.column("value").to_pylist()]  # (Kafka's)
    assert sorted(values) == list(range(300))
    assert values != list(range(300))  # (Kafka's order is by key)
