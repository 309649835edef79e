"""The as-of join's task (``datasource.asof_lookup.AsOfLookup.columns``) called directly, as
Spark's Arrow UDF would, without a session: both methods (a history held in memory, RocksDB
lookups) and ``auto`` give every event what ``get(key, as_of)`` answers, chunk by chunk.

The referee is the store's Python API: Kafka's ``get(key, as_of)`` through IQv2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from catalog import Catalog
from datasource import asof_lookup
from datasource.asof_lookup import AsOfLookup, reads_history
from datasource.options import StoreOptions
from datasource.writer import StateStoreWriter
from tests.asof_cases import EVENTS as CASE_EVENTS
from tests.asof_cases import VERSIONS, python_get

SCHEMA = StructType(
    [
        StructField("key", StringType()),
        StructField("value", DoubleType()),
        StructField("timestamp", LongType()),
    ]
)
EVENTS = [*CASE_EVENTS, ("b", -5)]  # a time before 1970 joins nothing too


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep partition caches inside the test's directory."""
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


def write(root: str, rows: list[tuple[Any, Any, int]]) -> None:
    """Commit ``rows`` to the versioned store ``rates`` (3 partitions), as one Spark write."""
    options = StoreOptions.parse(
        {"store": "rates", "root": root, "kind": "versioned", "historyRetention": "7000",
         "segmentInterval": "1000", "numPartitions": "3"}
    )  # fmt: skip
    writer = StateStoreWriter.plan(options, SCHEMA, overwrite=False)
    keys, values, stamps = zip(*rows)
    staged = writer.write(
        iter([pa.RecordBatch.from_arrays(
            [pa.array(keys, pa.string()), pa.array(values, pa.float64()),
             pa.array(stamps, pa.int64())],
            names=["key", "value", "timestamp"],
        )])
    )  # fmt: skip
    writer.commit([staged])


def task(root: str, method: str, **fields: Any) -> AsOfLookup:
    """The task ``asof_join(events, "rates", key="currency", timestamp="t")`` plans."""
    table = Catalog(root).load("rates")
    snapshot = table.log.latest_id()
    return AsOfLookup(
        table.catalog.root, table.at_commit(snapshot).spec, snapshot, "currency",
        method=method, **fields,
    )  # fmt: skip


def event_batches(events: list[tuple[Any, Any]], size: int = 3) -> list[tuple[pa.Array, ...]]:
    """The (key, time) arrays of ``events``, ``size`` events a batch."""
    keys = pa.array([k for k, _ in events], pa.string())
    times = pa.array([t for _, t in events], pa.int64())
    return [(keys[i : i + size], times[i : i + size]) for i in range(0, len(events), size)]


def joined(lookup: AsOfLookup, batches: list[tuple[pa.Array, ...]]) -> list[tuple[Any, ...]]:
    """``(value, valid_from ms, valid_to ms)`` of each event, in the events' order."""
    out = list(lookup.columns(iter(batches)))
    assert [len(a) for a in out] == [len(b[0]) for b in batches]  # one answer per batch
    found = pa.chunked_array(out).combine_chunks()
    assert found.type.field("valid_from").type == pa.timestamp("us", tz="UTC")
    millis = [
        [None if v is None else v // 1_000 for v in found.field(c).cast(pa.int64()).to_pylist()]
        for c in ("valid_from", "valid_to")
    ]
    return list(zip(found.field("value").to_pylist(), *millis))


@pytest.mark.parametrize("method", ["auto", "history", "lookups"])
def test_every_method_answers_what_get_answers_chunk_by_chunk(warehouse: str, method: str) -> None:
    write(warehouse, VERSIONS)
    # Chunks of 4 events (of batches of 3): a chunk ends inside a batch's neighbour, and each
    # chunk holds events of several store partitions.
    got = joined(task(warehouse, method, chunk_rows=4), event_batches(EVENTS))
    expected = [python_get(warehouse, k, t) for k, t in EVENTS]
    assert got == expected
    # The cases are what they say (the referee could be wrong in the same way).
    assert expected[3] == (2.0, 2_000, 3_000) and expected[1] == (None, None, None)
    assert expected[10] == (5.0, 1_200, 2_500) and expected[12] == (None, None, None)
    assert expected[6] == (3.0, 3_000, None) and expected[13] == (None, None, None)


def test_a_history_kept_by_the_worker_answers_only_its_commit(warehouse: str) -> None:
    write(warehouse, VERSIONS)
    first = task(warehouse, "history")
    before = joined(first, event_batches(EVENTS))
    # A later commit: a's value from 4 s, and b deleted at 9 s.
    write(warehouse, [("a", 4.0, 4_000), ("b", None, 9_000)])
    later = joined(task(warehouse, "history"), event_batches(EVENTS))
    assert later[6] == (4.0, 4_000, None) and later[9] == (10.0, 1_500, 9_000)
    assert later == [python_get(warehouse, k, t) for k, t in EVENTS]
    # The join planned before the commit still reads its own commit, from the kept history.
    assert joined(first, event_batches(EVENTS)) == before
    assert before[6] == (3.0, 3_000, None)


def test_auto_looks_up_partitions_whose_history_outgrows_the_memory_budget(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(warehouse, VERSIONS)
    expected = [python_get(warehouse, k, t) for k, t in EVENTS]
    monkeypatch.setattr(asof_lookup, "HISTORY_BYTES", 10)  # no partition's rows fit
    assert joined(task(warehouse, "auto"), event_batches(EVENTS)) == expected
    # A history asked for by name is read whatever the budget.
    assert joined(task(warehouse, "history"), event_batches(EVENTS)) == expected


def test_auto_reads_a_history_only_for_enough_events_per_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    per_event = asof_lookup.HISTORY_ROWS_PER_EVENT
    assert reads_history(rows=per_event * 100, events=100)
    assert not reads_history(rows=per_event * 100 + 1, events=100)
    assert reads_history(rows=0, events=1)
    monkeypatch.setattr(asof_lookup, "HISTORY_BYTES", 0)  # histories turned off
    assert not reads_history(rows=0, events=1)
