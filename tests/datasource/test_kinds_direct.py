"""Every store kind through the connector's reader and writer, called as Spark would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from catalog import Catalog
from datasource.options import StoreOptions
from datasource.reader import StateStoreReader
from datasource.spark_types import spark_schema
from datasource.writer import StateStoreWriter
from stores.errors import InvalidOptionError

HEADER = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
HEADERS = ArrayType(HEADER)
HEADERS_ARROW = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
H1 = [{"key": "trace", "value": b"\x01"}, {"key": "trace", "value": None}, {"key": "a", "value": b""}]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


def spark_type(arrow_type: pa.DataType) -> DataType:
    if arrow_type == pa.string():
        return StringType()
    if arrow_type == pa.int64():
        return LongType()
    if pa.types.is_timestamp(arrow_type):
        return TimestampType()
    return HEADERS


def write(root: str, rows: dict[str, pa.Array], overwrite: bool = False, **options: str) -> None:
    schema = StructType([StructField(n, spark_type(a.type)) for n, a in rows.items()])
    writer = StateStoreWriter.plan(
        StoreOptions.parse({"store": "s", "root": root, **options}), schema, overwrite
    )
    batch = pa.RecordBatch.from_arrays(list(rows.values()), names=list(rows))
    # Two tasks, each with half of the rows, then one commit; or, as Spark does when a task
    # fails, an abort of the whole write.
    half = batch.num_rows // 2
    messages = []
    try:
        for part in (batch.slice(0, half), batch.slice(half)):
            messages.append(writer.write(iter([part])))
    except Exception:
        writer.abort(messages)
        raise
    writer.commit(messages)


def read(root: str, **options: str) -> list[dict[str, Any]]:
    reader = StateStoreReader.plan(StoreOptions.parse({"store": "s", "root": root, **options}))
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    return sorted(rows, key=lambda r: tuple(str(v) for v in r.values()))


def columns(root: str) -> list[str]:
    return [f.name for f in spark_schema(Catalog(root).load("s"))]


def ms(values: list[int | None]) -> pa.Array:
    return pa.array(values, pa.int64())


def test_timestamped_store_keeps_timestamps_and_unknown_reads_null(warehouse: str) -> None:
    write(
        warehouse,
        {"key": pa.array(["a", "b", "c", "a"]), "value": ms([1, 2, 3, 4]), "timestamp": ms([10, None, 30, 40])},
        kind="timestamped",
        numPartitions="2",
    )
    assert columns(warehouse) == ["key", "value", "timestamp"]
    got = [(r["key"], r["value"], r["timestamp"]) for r in read(warehouse)]
    assert [(k, v, t.timestamp() * 1000 if t else None) for k, v, t in got] == [
        ("a", 4, 40.0), ("b", 2, None), ("c", 3, 30.0)
    ]


def test_timestamped_store_with_headers_round_trips_headers(warehouse: str) -> None:
    write(
        warehouse,
        {
            "key": pa.array(["a", "b"]),
            "value": ms([1, None]),
            "timestamp": ms([5, 6]),
            "headers": pa.array([H1, []], HEADERS_ARROW),
        },
        kind="timestamped",
        headers="true",
    )
    assert columns(warehouse) == ["key", "value", "timestamp", "headers"]
    [row] = read(warehouse)  # "b" was a tombstone
    assert row["key"] == "a" and row["headers"] == H1


def test_window_store_reads_windows_and_narrows_by_start(warehouse: str) -> None:
    rows = {
        "key": pa.array(["a", "a", "b", "a"]),
        "window_start": ms([0, 10, 10, 20]),
        "value": ms([1, 2, 3, 4]),
    }
    write(warehouse, rows, kind="window", windowSize="10", retention="1 day", numPartitions="2")
    assert columns(warehouse) == ["key", "window_start", "window_end", "value"]
    got = [(r["key"], r["window_start"].timestamp() * 1000, r["window_end"].timestamp() * 1000, r["value"]) for r in read(warehouse)]
    assert got == [("a", 0, 10, 1), ("a", 10, 20, 2), ("a", 20, 30, 4), ("b", 10, 20, 3)]
    narrowed = read(warehouse, windowStartFrom="10", windowStartTo="19")
    assert [(r["key"], r["value"]) for r in narrowed] == [("a", 2), ("b", 3)]
    with pytest.raises(InvalidOptionError, match="'windowStartFrom'.*after"):
        read(warehouse, windowStartFrom="20", windowStartTo="10")


def test_window_end_is_checked_and_duplicates_are_kept_when_asked(warehouse: str) -> None:
    bad = {"key": pa.array(["a", "b"]), "window_start": ms([0, 0]), "window_end": ms([10, 11]), "value": ms([1, 2])}
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_WINDOW\]"):
        write(warehouse, bad, kind="window", windowSize="10", retention="100")
    assert not list(Path(warehouse).rglob("*.arrow")) and Catalog(warehouse).list() == []
    # The failed first write left only its abort marker: drop clears it.
    assert Path(warehouse, "s").exists()
    Catalog(warehouse).drop("s")
    assert not Path(warehouse, "s").exists()
    dups = {
        "key": pa.array(["a", "a"]),
        "window_start": ms([0, 0]),
        "value": ms([1, 2]),
        "timestamp": ms([3, None]),
    }
    write(warehouse, dups, kind="window", windowSize="10", retention="100", retainDuplicates="true", timestamped="true")
    assert columns(warehouse) == ["key", "window_start", "window_end", "value", "timestamp"]
    got = sorted((r["value"], r["timestamp"].timestamp() * 1000 if r["timestamp"] else None) for r in read(warehouse))
    assert got == [(1, 3.0), (2, None)]


def test_window_store_with_headers(warehouse: str) -> None:
    rows = {
        "key": pa.array(["a"]),
        "window_start": ms([0]),
        "value": ms([7]),
        "headers": pa.array([H1], HEADERS_ARROW),
    }
    write(warehouse, rows, kind="window", windowSize="5", retention="50", headers="true")
    [row] = read(warehouse)
    assert row["headers"] == H1 and row["value"] == 7


def test_session_store_reads_sessions(warehouse: str) -> None:
    rows = {
        "key": pa.array(["a", "a", "b", "b"]),
        "session_start": ms([0, 100, 5, 5]),
        "session_end": ms([10, 150, 5, 5]),
        "value": ms([1, 2, 3, None]),
    }
    write(warehouse, rows, kind="session", retention="1 day", headers="true")
    assert columns(warehouse) == ["key", "session_start", "session_end", "value", "headers"]
    got = [(r["key"], r["session_start"].timestamp() * 1000, r["session_end"].timestamp() * 1000, r["value"], r["headers"]) for r in read(warehouse)]
    # "b"'s session [5, 5] was written and then removed within one commit (a null value).
    assert got == [("a", 0, 10, 1, []), ("a", 100, 150, 2, [])]
    backwards = {"key": pa.array(["c"]), "session_start": ms([9]), "session_end": ms([8]), "value": ms([1])}
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_SESSION\]"):
        write(warehouse, backwards)


@pytest.mark.parametrize(
    ("options", "rows", "pattern"),
    [
        ({"kind": "window", "windowSize": "5"}, {"window_start": ms([0])}, "needs option 'retention'"),
        ({"kind": "window", "windowSize": "5", "retention": "9"}, {}, r"\[MISSING_COLUMN\].*'window_start'"),
        ({"kind": "session", "retention": "9"}, {"session_start": ms([0])}, r"\[MISSING_COLUMN\].*'session_end'"),
        ({"kind": "timestamped"}, {"timestamp": ms([0]), "headers": pa.array([H1], HEADERS_ARROW)}, r"\[UNEXPECTED_COLUMN\].*headers=true"),
        ({"kind": "keyvalue", "headers": "true"}, {}, "no header-aware plain key-value store"),
        (
            {"kind": "timestamped", "headers": "true"},
            {"timestamp": ms([0]), "headers": pa.array([[{"key": None, "value": b""}]], HEADERS_ARROW)},
            r"\[NULL_HEADER_KEY\]",
        ),
        ({"kind": "versioned", "historyRetention": "5", "retention": "5"}, {"timestamp": ms([0])}, "takes no option 'retention'"),
        ({"kind": "window", "windowSize": "5", "retention": "9", "headers": "maybe"}, {}, "'headers' has value 'maybe'; accepted: true or false"),
    ],
)
def test_bad_kind_options_and_columns_name_what_is_wrong(
    warehouse: str, options: dict[str, str], rows: dict[str, pa.Array], pattern: str
) -> None:
    base = {"key": pa.array(["a"]), "value": ms([1])}
    with pytest.raises(InvalidOptionError, match=pattern):
        write(warehouse, {**base, **rows}, **options)
    assert Catalog(warehouse).list() == []


def test_read_options_for_other_kinds_are_refused(warehouse: str) -> None:
    write(warehouse, {"key": pa.array(["a"]), "value": ms([1])})
    with pytest.raises(InvalidOptionError, match="'windowStartFrom' / 'windowStartTo' apply to window"):
        read(warehouse, windowStartFrom="0")
    with pytest.raises(InvalidOptionError, match="'windowSize' does not apply to store 's', a keyvalue"):
        read(warehouse, windowSize="5")
    assert read(warehouse, headers="false", timestamped="false")  # false asks for nothing


def test_creation_options_are_checked_against_a_window_store(warehouse: str) -> None:
    rows = {"key": pa.array(["a"]), "window_start": ms([0]), "value": ms([1])}
    write(warehouse, rows, kind="window", windowSize="10", retention="1h")
    assert read(warehouse, windowSize="10ms", retention="60min", headers="false")
    with pytest.raises(InvalidOptionError, match="option 'headers' is true but store 's' exists with headers = false"):
        read(warehouse, headers="true")
    with pytest.raises(InvalidOptionError, match="option 'retention' is 60000 ms but .* retention = 3600000 ms"):
        read(warehouse, retention="1 minute")
    with pytest.raises(InvalidOptionError, match="'historyRetention' does not apply to store 's', a window store; its options: .*'retention'"):
        read(warehouse, historyRetention="1h")
    with pytest.raises(InvalidOptionError, match="'windowStartTo' has value .* 64-bit long"):
        read(warehouse, windowStartTo=str(2**63))
