"""Changelog records in and out of a store: the record shape, offsets kept by the commit log,
bad input refused before anything is staged, and each kind's export layout (Kafka's
``ChangeLogging*BytesStore`` records, in an order its ``restoreBatch`` drops none of)."""

from __future__ import annotations

import datetime as dt
import json
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.kafka.changelog import check_exportable, export_partition, records_from_raw
from catalog.kafka.records import RECORD_SCHEMA, changelog_topic
from catalog.kafka.restore import import_changelog, kafka_offsets
from catalog.log.paths import COMMITS_DIR, record_name
from catalog.log.records import CommitRecord, OffsetsUpdate
from catalog.table import Table
from stores.columns.headers import HEADERS_TYPE
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    SerdeError,
)


def _store(catalog: Catalog, kind: str = "keyvalue", key: str = "string", partitions: int = 1,
           partitioner: str = "kafka", **params: object) -> Table:  # fmt: skip
    return catalog.create_store("s", kind, key, "string", partitions, partitioner=partitioner,
                                **params)  # fmt: skip


def _records(keys: list[bytes | None], values: list[bytes | None], offsets: list[int],
             partition: int = 0, stamps: list[int] | None = None,
             topic: str = "app-s-changelog") -> pa.Table:  # fmt: skip
    n = len(keys)
    return pa.table({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": [topic] * n, "partition": pa.array([partition] * n, pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "timestamp": pa.array(stamps if stamps is not None else [10] * n, pa.int64()),
    })  # fmt: skip


def _export(table: Table) -> pa.Table:
    snapshot = table.log.latest_id()
    batches = [b for p in range(table.spec.num_partitions)
               for b in export_partition(table, p, snapshot, "app")]  # fmt: skip
    return pa.Table.from_batches(batches, schema=RECORD_SCHEMA)


def _staged_files(warehouse: str) -> list[Path]:
    return sorted(p for p in Path(warehouse, "s", "changelog").rglob("*") if p.is_file())


# -- the shape ---------------------------------------------------------------------------------


def test_record_schema_and_topic() -> None:
    # Spark's Kafka sink columns (topic, partition, key, value, headers) and the record time.
    assert RECORD_SCHEMA.names == ["topic", "partition", "key", "value", "timestamp", "headers"]
    assert RECORD_SCHEMA.field("headers").type == HEADERS_TYPE
    # ProcessorStateManager.storeChangelogTopic
    assert changelog_topic("app", "counts") == "app-counts-changelog"
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_TOPIC\]"):
        changelog_topic("my app", "counts")


# -- offsets -----------------------------------------------------------------------------------


def test_offsets_are_kept_carried_forward_and_a_rerun_commits_nothing(catalog: Catalog) -> None:
    table = _store(catalog)
    first = import_changelog(table, _records([b"a", b"b"], [b"1", b"2"], [0, 1]))
    assert first.commit == 2 and first.offsets == {("app-s-changelog", 0): 1}
    assert kafka_offsets(table) == {("app-s-changelog", 0): 1}
    rerun = import_changelog(table, _records([b"a", b"b"], [b"1", b"2"], [0, 1]))
    assert (rerun.commit, rerun.already_applied) == (None, 2)
    assert table.log.latest_id() == 2
    # A plain write afterwards carries the offsets forward.
    files = table.stage(pa.array(["c"]), pa.array(["3"]))
    table.commit(files)
    assert kafka_offsets(table) == {("app-s-changelog", 0): 1}
    # The next offsets continue (records at or below the held offset are skipped).
    more = import_changelog(table, _records([b"b", b"a"], [b"x", None], [1, 2]))
    assert (more.already_applied, more.records) == (1, 2)
    assert kafka_offsets(table) == {("app-s-changelog", 0): 2}
    assert sorted(table.to_arrow().to_pylist(), key=str) == [
        {"key": "b", "value": "2"}, {"key": "c", "value": "3"}]  # fmt: skip


def test_overwrite_replaces_contents_and_offsets(catalog: Catalog) -> None:
    table = _store(catalog)
    import_changelog(table, _records([b"a"], [b"1"], [5], partition=0, topic="t1"))
    result = import_changelog(table, _records([b"b"], [b"2"], [0], topic="t2"), overwrite=True)
    assert result.offsets == {("t2", 0): 0} == kafka_offsets(table)
    assert table.to_arrow().to_pylist() == [{"key": "b", "value": "2"}]
    # A plain overwrite leaves no offsets: they no longer describe the store.
    table.commit(table.stage(pa.array(["c"]), pa.array(["3"])), overwrite=True)
    assert kafka_offsets(table) == {}


def test_offsets_moved_meanwhile_refuse_the_commit(catalog: Catalog) -> None:
    table = _store(catalog)
    import_changelog(table, _records([b"a"], [b"1"], [0]))
    key = "app-s-changelog-0"
    with pytest.raises(CommitConflictError, match=r"\[KAFKA_OFFSETS_MOVED\]"):
        table.commit([], kafka_offsets=OffsetsUpdate({key: 3}, {}))  # read before offset 0
    table.commit([], kafka_offsets=OffsetsUpdate({key: 3}, {key: 0}))
    assert kafka_offsets(table) == {("app-s-changelog", 0): 3}


def test_offsets_are_checksummed_and_old_records_load(catalog: Catalog, warehouse: str) -> None:
    table = _store(catalog)
    import_changelog(table, _records([b"a"], [b"1"], [7]))
    path = Path(warehouse, "s", COMMITS_DIR, record_name(2))
    body = json.loads(path.read_bytes())
    assert body["kafka_offsets"] == {"app-s-changelog-0": 7}
    body["kafka_offsets"] = {"app-s-changelog-0": 8}
    with pytest.raises(CorruptDataError, match="checksum"):
        CommitRecord.from_json(json.dumps(body).encode(), str(path), 2, body["store_id"])
    # A record of an earlier release has no field: it holds no offsets.
    old = CommitRecord.from_json(
        Path(warehouse, "s", COMMITS_DIR, record_name(1)).read_bytes(), "1", 1, None
    )
    assert "kafka_offsets" not in old.body() and old.kafka_offsets == {}


def test_several_partitions_and_topics_each_continue(catalog: Catalog) -> None:
    table = _store(catalog, partitions=2)
    records = pa.concat_tables([
        _records([b"a"], [b"1"], [4], partition=1),
        _records([b"b", b"c"], [b"2", b"3"], [0, 1], partition=0),
        _records([b"d"], [b"4"], [9], partition=0, topic="other"),
    ])  # fmt: skip
    result = import_changelog(table, records)
    assert result.offsets == {("app-s-changelog", 0): 1, ("app-s-changelog", 1): 4,
                              ("other", 0): 9}  # fmt: skip
    again = import_changelog(table, pa.concat_tables(
        [records, _records([b"a"], [None], [5], partition=1)]))  # fmt: skip
    assert (again.already_applied, again.offsets[("app-s-changelog", 1)]) == (4, 5)
    assert sorted(r["key"] for r in table.to_arrow().to_pylist()) == ["b", "c", "d"]


# -- the input ---------------------------------------------------------------------------------


def test_records_out_of_order_apply_in_offset_order(catalog: Catalog) -> None:
    table = _store(catalog)
    # Offsets 2, 0, 1: the record at offset 2 (a delete) is the last.
    import_changelog(table, _records([b"a", b"a", b"a"], [None, b"1", b"2"], [2, 0, 1]))
    assert table.to_arrow().num_rows == 0


def test_null_keys_are_skipped_and_counted(catalog: Catalog) -> None:
    table = _store(catalog)
    result = import_changelog(table, _records([None, b"a", None], [b"x", b"1", None], [0, 1, 2]))
    assert (result.null_keys, result.offsets) == (2, {("app-s-changelog", 0): 2})
    assert table.to_arrow().to_pylist() == [{"key": "a", "value": "1"}]


def test_spark_kafka_source_shape_is_taken(catalog: Catalog) -> None:
    """Spark's Kafka source: ``timestamp`` a TIMESTAMP, ``timestampType``, headers."""
    table = _store(catalog, "timestamped", headers=True)
    when = dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc)
    records = pa.table({
        "key": pa.array([b"a"]), "value": pa.array([b"1"]), "topic": ["t"],
        "partition": pa.array([0], pa.int32()), "offset": pa.array([3], pa.int64()),
        "timestamp": pa.array([when], pa.timestamp("us", tz="UTC")),
        "timestampType": pa.array([0], pa.int32()),
        "headers": pa.array([[("h", b"v"), ("n", None)]], HEADERS_TYPE),
    })  # fmt: skip
    import_changelog(table, records)
    assert table.to_arrow().to_pylist() == [
        {"key": "a", "value": "1", "timestamp": when,
         "headers": [{"key": "h", "value": b"v"}, {"key": "n", "value": None}]}
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda t: t.drop_columns(["offset"]), "MISSING_COLUMN"),
        (lambda t: t.set_column(1, "value", pa.array([1, 2], pa.int64())), "INVALID_COLUMN_TYPE"),
        (lambda t: t.set_column(4, "offset", pa.array([0, None], pa.int64())), "NULL_COLUMN"),
        (lambda t: t.set_column(2, "topic", pa.array(["a b", "a b"])), "INVALID_TOPIC"),
    ],
)
def test_bad_input_is_refused_before_anything_is_staged(
    catalog: Catalog, warehouse: str, change: object, code: str
) -> None:
    table = _store(catalog)
    with pytest.raises(InvalidOptionError, match=rf"\[{code}\]"):
        import_changelog(table, change(_records([b"a", b"b"], [b"1", b"2"], [0, 1])))  # type: ignore[operator]
    assert table.log.latest_id() == 1 and _staged_files(warehouse) == []


def test_a_key_the_type_cannot_decode_names_its_record(catalog: Catalog, warehouse: str) -> None:
    table = _store(catalog, key="long")
    good = struct.pack(">q", 1)
    with pytest.raises(SerdeError, match=r"\[UNDECODABLE_KEY\].*partition 0 offset 8"):
        import_changelog(table, _records([good, b"abc"], [b"1", b"2"], [7, 8]))
    assert table.log.latest_id() == 1 and _staged_files(warehouse) == []
    bad_value = _records([good], [b"\xff"], [0])
    with pytest.raises(SerdeError, match=r"\[UNDECODABLE_VALUE\].*offset 0"):
        import_changelog(table, bad_value)


def test_short_window_keys_and_negative_versions_name_their_record(catalog: Catalog) -> None:
    window = _store(catalog, "window", retention_ms=100, window_size_ms=10)
    key = b"a" + struct.pack(">qi", 0, 0)
    with pytest.raises(InvalidOptionError, match=r"\[MALFORMED_RECORD\].*offset 1"):
        import_changelog(window, _records([key, b"a" * 11], [b"1", b"2"], [0, 1]))
    versioned = Catalog(catalog.root + "2", cache_dir=str(catalog.cache_dir)).create_store(
        "v", "versioned", "string", "string", history_retention_ms=100
    )
    with pytest.raises(InvalidOptionError, match=r"\[MALFORMED_RECORD\].*offset 4"):
        import_changelog(versioned, _records([b"a"], [b"1"], [4], stamps=[-1]))


# -- export ------------------------------------------------------------------------------------


def test_export_needs_kafka_partitioning(catalog: Catalog) -> None:
    crc = _store(catalog, partitioner="crc32")
    with pytest.raises(InvalidOptionError, match=r"\[PARTITIONER_MISMATCH\]"):
        check_exportable(crc, None)
    with pytest.raises(InvalidOptionError, match=r"\[PARTITIONER_MISMATCH\]"):
        list(export_partition(crc, 0, 1, "app"))
    kafka = Catalog(catalog.root + "2").create_store("s", "keyvalue", "string", "string", 3,
                                                     partitioner="kafka")  # fmt: skip
    check_exportable(kafka, 3)
    with pytest.raises(InvalidOptionError, match=r"\[PARTITION_COUNT_MISMATCH\]"):
        check_exportable(kafka, 4)


def test_key_value_records_carry_the_commit_time(catalog: Catalog) -> None:
    table = _store(catalog)
    record = table.commit(table.stage(pa.array(["a"]), pa.array(["1"])))
    assert record is not None
    exported = _export(table).to_pylist()
    assert exported == [{"topic": "app-s-changelog", "partition": 0, "key": b"a", "value": b"1",
                         "timestamp": record.timestamp_ms, "headers": []}]  # fmt: skip


def test_unknown_timestamps_are_refused_on_export(catalog: Catalog) -> None:
    table = _store(catalog, "timestamped")
    table.commit(table.stage(pa.array(["a"]), pa.array(["1"]),
                             {"timestamp": pa.array([None], pa.int64())}))  # fmt: skip
    with pytest.raises(InvalidOptionError, match=r"\[NEGATIVE_TIMESTAMP\].*partition 0"):
        _export(table)


def test_timestamped_values_travel_without_their_time(catalog: Catalog) -> None:
    table = _store(catalog, "timestamped", headers=True)
    table.commit(table.stage(pa.array(["a"]), pa.array(["v"]), {
        "timestamp": pa.array([42], pa.int64()),
        "headers": pa.array([b"\x02\x02h\x02x"], pa.binary())}))  # fmt: skip
    (record,) = _export(table).to_pylist()
    # ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders: plain value, its time, headers.
    assert (record["value"], record["timestamp"]) == (b"v", 42)
    assert record["headers"] == [{"key": "h", "value": b"x"}]


def test_versioned_history_with_tombstones_in_time_order(catalog: Catalog) -> None:
    table = _store(catalog, "versioned", history_retention_ms=1000)
    # a: 1 from 10, deleted at 20, 2 from 30; b: 3 from 15, 4 from 25 (no tombstone between).
    import_changelog(table, _records([b"a", b"b", b"a", b"b", b"a"],
                                     [b"1", b"3", None, b"4", b"2"], [0, 1, 2, 3, 4],
                                     stamps=[10, 15, 20, 25, 30]))  # fmt: skip
    exported = [(r["key"], r["value"], r["timestamp"]) for r in _export(table).to_pylist()]
    assert exported == [(b"a", b"1", 10), (b"b", b"3", 15), (b"a", None, 20), (b"b", b"4", 25),
                        (b"a", b"2", 30)]  # fmt: skip


def test_window_duplicates_are_numbered_and_in_start_order(catalog: Catalog) -> None:
    table = _store(catalog, "window", retention_ms=1000, window_size_ms=10,
                   retain_duplicates=True)  # fmt: skip
    key = lambda k, start, seq: k + struct.pack(">qi", start, seq)
    import_changelog(table, _records(
        [key(b"b", 20, 1), key(b"a", 10, 2), key(b"a", 10, 5), key(b"a", 10, 9)],
        [b"1", b"2", b"3", None], [0, 1, 2, 3]))  # fmt: skip
    exported = [(r["key"], r["value"], r["timestamp"]) for r in _export(table).to_pylist()]
    # Kafka's restore wrote a's 2 and 3 under seqs 2 and 5 (the None under 9 deletes nothing):
    # reads list them in seq order, which the exported 1, 2 keep.
    assert exported == [(key(b"a", 10, 1), b"2", 10), (key(b"a", 10, 2), b"3", 10),
                        (key(b"b", 20, 1), b"1", 20)]  # fmt: skip


def test_session_records_in_end_order(catalog: Catalog) -> None:
    table = _store(catalog, "session", retention_ms=1000)
    key = lambda k, end, start: k + struct.pack(">qq", end, start)
    import_changelog(table, _records([key(b"a", 50, 40), key(b"b", 30, 5)], [b"1", b"2"], [0, 1]))
    exported = [(r["key"], r["timestamp"]) for r in _export(table).to_pylist()]
    assert exported == [(key(b"b", 30, 5), 30), (key(b"a", 50, 40), 50)]


def test_records_from_raw_refuses_a_negative_time() -> None:
    from catalog.log.spec import StoreSpec

    spec = StoreSpec(name="s", kind="timestamped", key_type="string", value_type="string",
                     num_partitions=1, params={"headers": False})  # fmt: skip
    raw = pa.table({"key": [b"k"], "value": [b"v"], "timestamp": pa.array([-5], pa.int64())})
    with pytest.raises(InvalidOptionError, match=r"\[NEGATIVE_TIMESTAMP\].*partition 3.*b'k'"):
        records_from_raw(raw, spec, "t", 3)


def test_versioned_tombstone_after_a_put_at_the_same_time_wins(catalog: Catalog) -> None:
    """RocksDBVersionedStore.put at an existing version's time replaces it: offset order
    decides, though a write applies a time's tombstones before its puts."""
    table = _store(catalog, "versioned", history_retention_ms=1000)
    records = _records([b"a", b"a", b"b", b"b"], [b"1", None, None, b"2"], [0, 1, 2, 3],
                       stamps=[10, 10, 10, 10])  # fmt: skip
    import_changelog(table, records)
    assert table.to_arrow(versions="all").to_pylist() == [
        {"key": "b", "value": "2", "valid_from": dt.datetime(1970, 1, 1, 0, 0, 0, 10000,
                                                             tzinfo=dt.timezone.utc),
         "valid_to": None}]  # fmt: skip
