"""``overwriteSchema``: a store's schema replaced by an overwrite, in one commit."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from catalog import Catalog
from datasource.history import ChangeFeedReader
from datasource.options import StoreOptions
from datasource.reader import StateStoreReader
from datasource.source import DefaultSource
from datasource.writer import StateStoreWriter
from stores.errors import CommitConflictError, InvalidOptionError

OLD = StructType([StructField("key", StringType()), StructField("value", DoubleType())])
NEW = StructType(
    [
        StructField("key", LongType()),
        StructField("value", StringType()),
        StructField("timestamp", LongType()),
    ]
)
NEW_KIND = {"kind": "versioned", "historyRetention": "1 day"}


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


def options(root: str, **extra: str) -> StoreOptions:
    return StoreOptions.parse({"store": "s", "root": root, **extra})


def write(root: str, schema: StructType, rows: pa.RecordBatch, overwrite: bool, **extra: str) -> None:
    writer = StateStoreWriter.plan(options(root, **extra), schema, overwrite=overwrite)
    writer.commit([writer.write(iter([rows]))])


def old_rows() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {"key": pa.array(["a", "b"]), "value": pa.array([1.0, 2.0])}
    )


def new_rows() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([7], pa.int64()),
            "value": pa.array(["seven"]),
            "timestamp": pa.array([1000], pa.int64()),
        }
    )


def rows_of(root: str, **extra: str) -> list[dict[str, object]]:
    reader = StateStoreReader.plan(options(root, **extra))
    return sorted(
        (r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()),
        key=str,
    )


def test_an_overwrite_with_overwrite_schema_replaces_types_and_kind_and_old_commits_keep_theirs(
    warehouse: str,
) -> None:
    write(warehouse, OLD, old_rows(), overwrite=False, numPartitions="2")
    assert rows_of(warehouse)  # the cache is at the old kind's commit
    with pytest.raises(InvalidOptionError, match=r"\[COLUMN_TYPE_MISMATCH\].*overwriteSchema"):
        StateStoreWriter.plan(options(warehouse), NEW, overwrite=True)
    write(warehouse, NEW, new_rows(), overwrite=True, overwriteSchema="true", **NEW_KIND)

    described = Catalog(warehouse).describe("s")
    assert (described["kind"], described["key_type"], described["value_type"]) == (
        "versioned", "bigint", "string",
    )
    assert described["num_partitions"] == 2  # not given: kept
    assert rows_of(warehouse) == [
        {"key": 7, "value": "seven", "valid_from": pa.scalar(1000 * 1000, pa.timestamp("us", "UTC")).as_py(), "valid_to": None}
    ]
    # A read pinned to the commit before the schema overwrite reads with the schema of then.
    assert rows_of(warehouse, versionAsOf="1") == [
        {"key": "a", "value": 1.0}, {"key": "b", "value": 2.0}
    ]
    source = DefaultSource({"store": "s", "root": warehouse, "versionAsOf": "1"})
    assert source.schema().simpleString() == "struct<key:string,value:double>"
    assert DefaultSource({"store": "s", "root": warehouse}).schema().fieldNames() == [
        "key", "value", "valid_from", "valid_to",
    ]
    record = json.loads(Path(warehouse, "s", "commits", f"{2:020d}.json").read_bytes())
    assert (record["operation"], record["spec_commit"], record["spec"]["kind"]) == (
        "overwrite", 2, "versioned",
    )
    # Later commits carry the spec forward; appends with the new types work.
    more = pa.RecordBatch.from_pydict(
        {"key": pa.array([8], pa.int64()), "value": pa.array(["eight"]),
         "timestamp": pa.array([2000], pa.int64())}
    )
    write(warehouse, NEW, more, overwrite=False)
    assert [r["key"] for r in rows_of(warehouse)] == [7, 8]
    assert Catalog(warehouse).history("s").column("operation").to_pylist() == [
        "append", "overwrite", "create",
    ]
    # Another kind again (a window store over the versioned store's local cache).
    windows = StructType(
        [StructField("key", StringType()), StructField("value", DoubleType()),
         StructField("window_start", LongType())]
    )
    one = pa.RecordBatch.from_pydict(
        {"key": ["x"], "value": [1.0], "window_start": pa.array([60_000], pa.int64())}
    )
    write(warehouse, windows, one, overwrite=True, overwriteSchema="true", kind="window",
          windowSize="1 minute", retention="1 hour")
    assert [(r["key"], r["value"]) for r in rows_of(warehouse)] == [("x", 1.0)]
    assert [r["key"] for r in rows_of(warehouse, versionAsOf="3")] == [7, 8]


def test_overwrite_schema_with_append_is_refused_naming_the_option(warehouse: str) -> None:
    write(warehouse, OLD, old_rows(), overwrite=False)
    with pytest.raises(InvalidOptionError, match=r"\[OVERWRITE_SCHEMA_NEEDS_OVERWRITE\].*'overwriteSchema'.*mode\(\"overwrite\"\)"):
        StateStoreWriter.plan(options(warehouse, overwriteSchema="true"), NEW, overwrite=False)


def test_a_write_planned_before_a_schema_overwrite_is_refused_at_commit(warehouse: str) -> None:
    write(warehouse, OLD, old_rows(), overwrite=False)
    stale = StateStoreWriter.plan(options(warehouse), OLD, overwrite=False)
    staged = stale.write(iter([old_rows()]))
    write(warehouse, NEW, new_rows(), overwrite=True, overwriteSchema="true", **NEW_KIND)
    with pytest.raises(CommitConflictError, match=r"\[SCHEMA_CHANGED\].*commit 2"):
        stale.commit([staged])
    assert Catalog(warehouse).load("s").log.latest_id() == 2
    assert [r["key"] for r in rows_of(warehouse)] == [7]  # the stale rows were not committed


def test_a_change_feed_across_a_schema_overwrite_is_refused(warehouse: str) -> None:
    write(warehouse, OLD, old_rows(), overwrite=False)
    write(warehouse, NEW, new_rows(), overwrite=True, overwriteSchema="true", **NEW_KIND)
    with pytest.raises(InvalidOptionError, match=r"\[SCHEMA_CHANGED\].*read commits 1 to 1, or from commit 3"):
        ChangeFeedReader.plan(options(warehouse, readChangeFeed="true", startingVersion="1"))
    feed = ChangeFeedReader.plan(options(warehouse, readChangeFeed="true", startingVersion="1",
                                         endingVersion="1"))
    assert feed.spec.kind == "keyvalue"
    with pytest.raises(InvalidOptionError, match=r"\[SCHEMA_CHANGED\].*read from commit 3 \(startingVersion 3\)$"):
        ChangeFeedReader.plan(options(warehouse, readChangeFeed="true", startingVersion="2"))
    more = pa.RecordBatch.from_pydict(
        {"key": pa.array([8], pa.int64()), "value": pa.array(["eight"]),
         "timestamp": pa.array([2000], pa.int64())}
    )
    write(warehouse, NEW, more, overwrite=False)
    after = ChangeFeedReader.plan(options(warehouse, readChangeFeed="true", startingVersion="3"))
    changes = [r for p in after.partitions() for b in after.read(p) for r in b.to_pylist()]
    assert [(r["key"], r["value"], r["_change_type"]) for r in changes] == [(8, "eight", "insert")]
    # The Python API says the same (it used to fail inside Arrow, concatenating two schemas).
    catalog = Catalog(warehouse)
    with pytest.raises(InvalidOptionError, match=r"\[SCHEMA_CHANGED\].*read commits 1 to 1"):
        catalog.changes("s", 1)
    assert catalog.changes("s", 3).column("key").to_pylist() == [8]


def test_the_same_schema_with_overwrite_schema_is_a_plain_overwrite(warehouse: str) -> None:
    write(warehouse, OLD, old_rows(), overwrite=False)
    write(warehouse, OLD, old_rows(), overwrite=True, overwriteSchema="true")
    record = json.loads(Path(warehouse, "s", "commits", f"{2:020d}.json").read_bytes())
    assert record["spec"] is None and "spec_commit" not in record


def test_the_partitioner_of_a_store_is_kept_and_not_changed_by_a_write(warehouse: str) -> None:
    write(warehouse, OLD, old_rows(), overwrite=False, numPartitions="3", partitioner="kafka")
    assert Catalog(warehouse).load("s").spec.partitioner == "kafka"
    # A write (or read) that gives the store's own value is fine; another is refused, naming
    # the option, the store's value and what to do.
    write(warehouse, OLD, old_rows(), overwrite=False, partitioner="KAFKA")
    assert rows_of(warehouse, partitioner="kafka") == [
        {"key": "a", "value": 1.0}, {"key": "b", "value": 2.0}
    ]
    for planned in (
        lambda: StateStoreWriter.plan(options(warehouse, partitioner="crc32"), OLD, overwrite=False),
        lambda: StateStoreWriter.plan(options(warehouse, partitioner="crc32"), OLD, overwrite=True),
        lambda: StateStoreReader.plan(options(warehouse, partitioner="crc32")),
    ):
        with pytest.raises(InvalidOptionError, match=(
            r"option 'partitioner' is 'crc32' but store 's' exists with partitioner = 'kafka'; "
            r"creation options only shape a new store"
        )):  # fmt: skip
            planned()
    # Replacing the store's schema and contents may choose another partitioner, as it may
    # another partition count; a read pinned before it reads with the spec of then.
    write(warehouse, OLD, old_rows(), overwrite=True, overwriteSchema="true", partitioner="crc32")
    described = Catalog(warehouse).describe("s")
    assert (described["partitioner"], described["num_partitions"]) == ("crc32", 3)
    assert [r["key"] for r in rows_of(warehouse)] == ["a", "b"]
    assert StateStoreReader.plan(options(warehouse, versionAsOf="2")).spec.partitioner == "kafka"
    # Not given: an overwriteSchema keeps the store's partitioner.
    write(warehouse, NEW, new_rows(), overwrite=True, overwriteSchema="true", **NEW_KIND)
    assert Catalog(warehouse).load("s").spec.partitioner == "crc32"
