"""The connector's reader and writer called directly, as Spark would, without a session."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from catalog import Catalog
from catalog.log.records import Txn
from datasource.options import StoreOptions
from datasource.reader import StateStoreReader
from datasource.source import DefaultSource
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


def test_a_task_stages_its_batches_as_they_come_into_one_file(warehouse: str) -> None:
    from catalog.log.changelog import read_changelog

    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    batches = [batch([f"k{i % 7}", f"k{i % 5}"], [float(i), -float(i)], [i, i]) for i in range(40)]
    staged = writer.write(iter(batches))
    assert len({f.path for f in staged.files}) == 1  # one file, a piece per partition
    assert not Catalog(warehouse).list()  # nothing published before the commit
    writer.commit([staged])
    storage = Catalog(warehouse).storage
    pieces = {f.partition: read_changelog(storage, "rates", f) for f in staged.files}
    assert sum(p.num_rows for p in pieces.values()) == 80
    for piece in pieces.values():  # each partition's rows in the order they came
        stamps = piece.column("timestamp").to_pylist()
        assert stamps == sorted(stamps)
    reader = StateStoreReader.plan(options(warehouse))
    latest = {r["key"]: r["value"] for r in read_all(reader)}
    assert latest == {f"k{k}": v for k, v in [(0, -35.0), (1, -36.0), (2, -37.0), (3, -38.0),
                                                (4, -39.0), (5, 33.0), (6, 34.0)]}  # fmt: skip


def test_a_bad_batch_after_a_flush_leaves_no_file(
    warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import catalog.operations.write as write_module

    monkeypatch.setattr(write_module, "FLUSH_BYTES", 1)  # a file after every batch
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    good = [batch([f"k{i}"], [1.0], [i]) for i in range(3)]
    with pytest.raises(InvalidOptionError, match=r"\[NULL_KEY\]"):
        writer.write(iter([*good, batch([None], [1.0], [9])]))
    assert list(Path(warehouse).rglob("*.arrow")) == []
    staged = writer.write(iter(good))
    assert len({f.path for f in staged.files}) == 3  # flushed files of one task, in order
    writer.commit([staged])
    assert {r["key"] for r in read_all(StateStoreReader.plan(options(warehouse)))} == {
        "k0",
        "k1",
        "k2",
    }


def test_creation_options_that_contradict_the_store_are_refused(warehouse: str) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
    writer.commit([writer.write(iter([batch(["EUR"], [1.0], [1])]))])
    with pytest.raises(InvalidOptionError, match="option 'numPartitions' is 3 but store 'rates'"):
        StateStoreWriter.plan(options(warehouse, numPartitions="3"), SCHEMA, overwrite=False)
    with pytest.raises(InvalidOptionError, match="option 'kind' is 'keyvalue'"):
        StateStoreReader.plan(options(warehouse, kind="keyvalue"))
    with pytest.raises(InvalidOptionError, match="applies to reads"):
        StateStoreWriter.plan(options(warehouse, asOfTimestamp="5"), SCHEMA, overwrite=False)
    # Options of reads, streams and the Kafka routes are refused by a DataFrame write, naming them.
    for option, value, says in (
        ("readHistory", "true", "'readHistory' applies to reads"),
        ("endingVersion", "1", "'endingVersion' applies to reads"),
        ("ignoreDeletes", "false", "'ignoreDeletes' applies to reads"),
        ("list", "stores", "'list' applies to reads"),
        ("keyType", "string", "'keyType' applies to a Kafka changelog import"),
        ("applicationId", "app", "'applicationId' applies to a Kafka changelog import"),
    ):
        with pytest.raises(InvalidOptionError, match=says):
            StateStoreWriter.plan(options(warehouse, **{option: value}), SCHEMA, overwrite=False)
    # ignoreDeletes is a plain stream's: a batch read refuses it.
    with pytest.raises(InvalidOptionError, match="'ignoreDeletes' applies to a plain stream"):
        DefaultSource({"store": "rates", "root": warehouse, "ignoreDeletes": "true"}).reader(None)
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


def test_a_rerun_with_the_same_txn_version_is_skipped(warehouse: str) -> None:
    def run(version: str, value: float) -> None:
        txn = {"txnAppId": "nightly-fx", "txnVersion": version}
        writer = StateStoreWriter.plan(
            options(warehouse, **VERSIONED, **txn), SCHEMA, overwrite=False
        )
        writer.commit([writer.write(iter([batch(["EUR"], [value], [100 + int(version)])]))])

    run("1", 1.1)
    run("1", 9.9)  # the retried job: skipped, its staged files deleted
    run("0", 9.9)  # an older version: skipped too
    run("2", 1.2)
    table = Catalog(warehouse).load("rates")
    assert [table.log.read(i).txn for i in table.log.ids()] == [  # the first run created it
        Txn("nightly-fx", 1),
        Txn("nightly-fx", 2),
    ]
    assert [
        (r["key"], r["value"]) for r in read_all(StateStoreReader.plan(options(warehouse)))
    ] == [("EUR", 1.2)]
    staged = {p.name for p in Path(warehouse, "rates", "changelog").rglob("*.arrow")}
    listed = {Path(f.path).name for i in table.log.ids() for f in table.log.read(i).files}
    assert staged == listed


def test_a_backend_without_atomic_commits_is_refused_before_any_task() -> None:
    from fsspec import register_implementation
    from fsspec.implementations.memory import MemoryFileSystem

    class NoCreateIfAbsent(MemoryFileSystem):
        protocol = "nocreateifabsent"

    register_implementation("nocreateifabsent", NoCreateIfAbsent, clobber=True)
    root = "nocreateifabsent://warehouse"
    with pytest.raises(InvalidOptionError, match=r"\[NO_ATOMIC_COMMIT\].*'singleWriter'"):
        StateStoreWriter.plan(options(root, **VERSIONED), SCHEMA, overwrite=False)
    writer = StateStoreWriter.plan(
        options(root, singleWriter="true", **VERSIONED), SCHEMA, overwrite=False
    )
    writer.commit([writer.write(iter([batch(["EUR"], [1.1], [100])]))])
    assert Catalog(root).list() == ["rates"]


def test_time_travel_by_commit_with_version_and_timestamp(warehouse: str) -> None:
    def append(keys: list[str], values: list[float], stamp: int) -> None:
        writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), SCHEMA, overwrite=False)
        writer.commit([writer.write(iter([batch(keys, values, [stamp] * len(keys))]))])

    append(["EUR"], [1.1], 100)
    append(["EUR", "GBP"], [1.2, 1.5], 200)
    append(["GBP"], [1.6], 300)
    log = Catalog(warehouse).load("rates").log

    def at(**extra: str) -> list[tuple[object, object]]:
        return [
            (r["key"], r["value"])
            for r in read_all(StateStoreReader.plan(options(warehouse, **extra)))
        ]

    assert at(versionAsOf="1") == [("EUR", 1.1)]
    assert at(versionAsOf="2") == [("EUR", 1.2), ("GBP", 1.5)]
    assert at(versionAsOf="2", asOfTimestamp="150") == [("EUR", 1.1)]  # the two clocks combine
    second = log.read(2).timestamp_ms
    assert at(timestampAsOf=str(second)) == at(versionAsOf="2")
    assert at(timestampAsOf=str(log.read(3).timestamp_ms + 60_000)) == [("EUR", 1.2), ("GBP", 1.6)]
    with pytest.raises(
        InvalidOptionError, match="'versionAsOf' is 4 but store 'rates' has commits 1 to 3"
    ):
        StateStoreReader.plan(options(warehouse, versionAsOf="4"))
    with pytest.raises(InvalidOptionError, match="before store 'rates' was created"):
        StateStoreReader.plan(options(warehouse, timestampAsOf=str(log.read(1).timestamp_ms - 1)))
    with pytest.raises(InvalidOptionError, match="give one"):
        options(warehouse, versionAsOf="1", timestampAsOf="0")
    with pytest.raises(
        InvalidOptionError, match=r"'versionAsOf' applies to reads \(spark.read, readStream\) only"
    ):
        StateStoreWriter.plan(options(warehouse, versionAsOf="1"), SCHEMA, overwrite=False)


HISTORY = StructType(
    [
        StructField("key", StringType()),
        StructField("value", DoubleType()),
        StructField("valid_from", LongType()),
        StructField("valid_to", LongType()),
    ]
)


def history(rows: list[tuple[str, float | None, int, int | None]]) -> pa.RecordBatch:
    names = ["key", "value", "valid_from", "valid_to"]
    return pa.RecordBatch.from_arrays(
        [pa.array([r[i] for r in rows], t) for i, t in enumerate(
            [pa.string(), pa.float64(), pa.int64(), pa.int64()])],
        names=names,
    )  # fmt: skip


def test_a_history_shaped_frame_writes_back_into_a_versioned_store(warehouse: str) -> None:
    # An SCD2 dimension: EUR changes at 200 and is closed at 400; GBP has a gap (300, 350).
    rows = [
        ("EUR", 1.1, 100, 200), ("EUR", 1.2, 200, 400),
        ("GBP", 1.5, 100, 300), ("GBP", 1.6, 350, None),
    ]  # fmt: skip
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), HISTORY, overwrite=False)
    half = writer.write(iter([history(rows[:1]), history(rows[3:])]))  # tasks split a key
    other = writer.write(iter([history(rows[1:3])]))
    writer.commit([half, other])

    def at(instant: int) -> list[tuple[object, object]]:
        reader = StateStoreReader.plan(options(warehouse, asOfTimestamp=str(instant)))
        return [(r["key"], r["value"]) for r in read_all(reader)]

    assert at(150) == [("EUR", 1.1), ("GBP", 1.5)]
    assert at(250) == [("EUR", 1.2), ("GBP", 1.5)]
    assert at(320) == [("EUR", 1.2)]  # GBP's gap
    assert at(500) == [("GBP", 1.6)]  # EUR closed at 400
    # Its own read schema goes back in: read, write into a new store, read the same.
    latest = read_all(StateStoreReader.plan(options(warehouse)))
    frame = history([(r["key"], r["value"], int(r["valid_from"].timestamp() * 1000),
                      None) for r in latest])  # fmt: skip
    copy = StateStoreWriter.plan(
        StoreOptions.parse({"store": "copy", "root": warehouse, **VERSIONED}),
        HISTORY,
        overwrite=False,
    )
    copy.commit([copy.write(iter([frame]))])
    again = read_all(
        StateStoreReader.plan(StoreOptions.parse({"store": "copy", "root": warehouse}))
    )
    assert [(r["key"], r["value"], r["valid_from"]) for r in again] == [
        (r["key"], r["value"], r["valid_from"]) for r in latest
    ]


def test_overlapping_or_inverted_intervals_are_refused_and_nothing_is_written(
    warehouse: str,
) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), HISTORY, overwrite=False)
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_INTERVAL\] key 'EUR' has overlapping "
                       r"intervals \[100, 300\) and \[200, open\)"):  # fmt: skip
        writer.write(iter([history([("EUR", 1.1, 100, 300), ("EUR", 1.2, 200, None)])]))
    with pytest.raises(InvalidOptionError, match=r"valid_to 100 not after its valid_from 100"):
        writer.write(iter([history([("EUR", 1.1, 100, 100)])]))
    assert not Catalog(warehouse).list()
    assert not list(Path(warehouse).rglob("*.arrow"))


def test_intervals_of_one_key_overlapping_across_tasks_are_refused_at_commit(
    warehouse: str,
) -> None:
    writer = StateStoreWriter.plan(options(warehouse, **VERSIONED), HISTORY, overwrite=False)
    first = writer.write(iter([history([("EUR", 1.1, 100, 300), ("GBP", 1.5, 100, None)])]))
    second = writer.write(iter([history([("EUR", 1.2, 200, None), ("GBP", 1.6, 50, 100)])]))
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_INTERVAL\] key 'EUR' has overlapping "
                       r"intervals starting at 100 and 200 .*different tasks"):  # fmt: skip
        writer.commit([first, second])
    assert not Catalog(warehouse).list()  # nothing committed, the staged files are gone
    assert not list(Path(warehouse).rglob("*.arrow"))
