"""The streaming writer called as Spark would: a replayed micro-batch commits once."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from catalog import Catalog
from datasource.options import StoreOptions
from datasource.stream_writer import StagedBatch, StateStoreStreamWriter
from stores.errors import InvalidOptionError

SCHEMA = StructType([StructField("key", StringType()), StructField("value", LongType())])
QUERY = "0b0a4b1e-0000-4000-8000-000000000001"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


def _writer(root: str, **extra: str) -> StateStoreStreamWriter:
    options = StoreOptions.parse({"store": "s", "root": root, **extra}, streaming=True)
    return StateStoreStreamWriter.plan(options, SCHEMA, overwrite=False)


def _task(writer: StateStoreStreamWriter, keys: list[str], values: list[int]) -> StagedBatch:
    """What write() does in a task, with the query id Spark would give it."""
    writer.inner.write_id = "stream-task"
    batch = pa.RecordBatch.from_arrays([pa.array(keys), pa.array(values, pa.int64())], ["key", "value"])
    staged = writer.inner.write(iter([batch]))
    return StagedBatch(staged.files, QUERY, writer.inner.spec)


def _rows(root: str) -> list[tuple[str, int]]:
    return sorted((r["key"], r["value"]) for r in Catalog(root).load("s").to_arrow().to_pylist())


def test_a_replayed_batch_is_skipped_and_its_files_removed(warehouse: str) -> None:
    first = _writer(warehouse)
    first.commit([_task(first, ["a"], [1])], 0)
    replay = _writer(warehouse)  # a restart: Spark runs batch 0 again
    message = _task(replay, ["a"], [99])
    replay.commit([message], 0)
    assert _rows(warehouse) == [("a", 1)]
    assert not any(Path(warehouse, "s", f.path).exists() for f in message.files)
    later = _writer(warehouse)
    later.commit([_task(later, ["b"], [2])], 1)
    assert _rows(warehouse) == [("a", 1), ("b", 2)]


def test_an_abort_after_the_batch_committed_keeps_it(warehouse: str) -> None:
    writer = _writer(warehouse)
    message = _task(writer, ["a"], [1])
    writer.commit([message], 0)
    _writer(warehouse).abort([message], 0)  # the commit's process died after the record
    assert _rows(warehouse) == [("a", 1)]


def test_an_empty_batch_commits_nothing(warehouse: str) -> None:
    writer = _writer(warehouse)
    writer.commit([_task(writer, ["a"], [1])], 0)
    empty = _writer(warehouse)
    empty.commit([StagedBatch((), QUERY, empty.inner.spec), None], 1)
    assert Catalog(warehouse).load("s").log.ids() == [1]


def test_the_application_id_can_be_named_but_not_the_version(warehouse: str) -> None:
    writer = _writer(warehouse, txnAppId="orders-to-store")
    writer.commit([_task(writer, ["a"], [1])], 4)
    assert Catalog(warehouse).load("s").log.read(1).txn.app_id == "orders-to-store"  # type: ignore[union-attr]
    with pytest.raises(InvalidOptionError, match="'txnVersion' does not apply to a streaming write"):
        _writer(warehouse, txnAppId="x", txnVersion="1")
