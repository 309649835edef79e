"""The connector's reader and writer called directly, as Spark would, without a session."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from catalog import Catalog
from datasource.options import StoreOptions
from datasource.reader import StateStoreReader
from datasource.writer import StagedFiles, StateStoreWriter
from stores.errors import CommitConflictError, InvalidOptionError

SCHEMA = StructType(
    [
        StructField("key", StringType()),
        StructField("value", DoubleType()),
        StructField("timestamp", LongType()),
    ]
)
VERSIONED = {"kind": "versioned", "historyRetention": "1 day", "numPartitions": "2"}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep partition caches inside the test's directory."""
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


def options(root: str, **extra: str) -> StoreOptions:
    return StoreOptions.parse({"store": "rates", "root": root, **extra})


def batch(keys: list[str | None], values: list[float | None], stamps: list[int]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.float64()), pa.array(stamps, pa.int64())],
        names=["key", "value", "timestamp"],
    )


def read_all(reader: StateStoreReader) -> list[dict[str, object]]:
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    return sorted(rows, key=lambda r: str(r["key"]))


def test_two_tasks_one_commit_then_read_latest_and_as_of(warehouse: str) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    first = writer.write(iter([batch(["EUR", "GBP"], [1.1, 1.2], [100, 100])]))
    second = writer.write(iter([batch(["EUR"], [1.3], [200])]))
    assert not Catalog(warehouse).list()  # nothing exists before the driver commits
    writer.commit([first, second])
    reader = StateStoreReader.plan(options(warehouse))
    assert len(reader.partitions()) == 2
    assert [(r["key"], r["value"]) for r in read_all(reader)] == [("EUR", 1.3), ("GBP", 1.2)]
    as_of = read_all(StateStoreReader.plan(options(warehouse, asOfTimestamp="150")))
    assert [(r["key"], r["value"]) for r in as_of] == [("EUR", 1.1), ("GBP", 1.2)]


def test_a_failed_task_cleans_up_and_abort_removes_the_others(warehouse: str) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    good = writer.write(iter([batch(["EUR"], [1.0], [1])]))
    assert isinstance(good, StagedFiles) and good.files
    with pytest.raises(InvalidOptionError, match=r"\[NULL_KEY\]"):
        writer.write(iter([batch(["GBP"], [1.0], [1]), batch([None], [1.0], [1])]))
    writer.abort([good, None])
    assert list(Path(warehouse).rglob("*.arrow")) == []
    assert Catalog(warehouse).list() == []


def test_creation_options_that_contradict_the_store_are_refused(warehouse: str) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    writer.commit([writer.write(iter([batch(["EUR"], [1.0], [1])]))])
    with pytest.raises(InvalidOptionError, match="option 'numPartitions' is 3 but store 'rates'"):
        StateStoreWriter.plan(options(warehouse, numPartitions="3"), SCHEMA, overwrite=False)
    with pytest.raises(InvalidOptionError, match="option 'kind' is 'keyvalue'"):
        StateStoreReader.plan(options(warehouse, kind="keyvalue"))
    with pytest.raises(InvalidOptionError, match="reads only"):
        StateStoreWriter.plan(options(warehouse, asOfTimestamp="5"), SCHEMA, overwrite=False)
    # Matching creation options are fine on later reads and writes.
    StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=True)


def test_column_errors_name_the_column(warehouse: str) -> None:
    no_value = StructType([StructField("key", StringType())])
    with pytest.raises(InvalidOptionError, match=r"\[MISSING_COLUMN\].*'value'"):
        StateStoreWriter.plan(options(warehouse), no_value, overwrite=False)
    extra = StructType([*SCHEMA.fields, StructField("note", StringType())])
    with pytest.raises(InvalidOptionError, match=r"\[UNEXPECTED_COLUMN\].*'note'"):
        StateStoreWriter.plan(options(warehouse, **VERSIONED), extra, overwrite=False)
    with pytest.raises(InvalidOptionError, match=r"\[UNEXPECTED_COLUMN\].*'timestamp'.*keyvalue"):
        StateStoreWriter.plan(options(warehouse), SCHEMA, overwrite=False)
    bad_ts = StructType([*SCHEMA.fields[:2], StructField("timestamp", StringType())])
    with pytest.raises(InvalidOptionError, match=r"\[COLUMN_TYPE_MISMATCH\].*'timestamp'"):
        StateStoreWriter.plan(options(warehouse, **VERSIONED), bad_ts, overwrite=False)


def test_negative_timestamps_are_refused(warehouse: str) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_TIMESTAMP\]"):
        writer.write(iter([batch(["EUR"], [1.0], [-5])]))
    assert list(Path(warehouse).rglob("*.arrow")) == []


def test_a_store_dropped_while_a_write_runs_is_not_brought_back(warehouse: str) -> None:
    first = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    first.commit([first.write(iter([batch(["EUR"], [1.0], [1])]))])
    writer = StateStoreWriter.plan(options(warehouse), SCHEMA, overwrite=False)
    staged = writer.write(iter([batch(["GBP"], [2.0], [2])]))
    Catalog(warehouse).drop("rates")
    with pytest.raises(CommitConflictError, match="was dropped"):
        writer.commit([staged])
    writer.abort([staged])
    assert Catalog(warehouse).list() == []


def test_struct_fields_of_a_new_store_are_recorded_nullable(warehouse: str) -> None:
    from pyspark.sql.types import LongType as Long

    strict = StructType([StructField("a", Long(), nullable=False)])
    schema = StructType([StructField("key", StringType()), StructField("value", strict)])
    writer = StateStoreWriter.plan(
        StoreOptions.parse({"store": "s", "root": warehouse}), schema, overwrite=False
    )
    assert writer.spec.value_type["fields"][0]["nullable"] is True  # type: ignore[index]
