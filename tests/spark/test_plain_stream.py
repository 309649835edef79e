"""A plain ``readStream...load(store)``, as Delta's table source: each new commit's rows as the
store holds them after it (the change feed's post-images, in the read schema), deletes skipped
or refused with ``ignoreDeletes=false``; offsets, checkpoints and AvailableNow as the change
feed's stream. The reader is driven directly (no Spark) where Spark adds nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from datasource.options import StoreOptions
from datasource.spark_features import ADMISSION_CONTROL
from datasource.stream_reader import StoreStreamReader
from datasource.writer import StateStoreWriter
from stores.errors import InvalidOptionError

pytestmark = pytest.mark.spark

HOUR = 3_600_000
Put = Callable[[StoreTable, list[tuple[Any, ...]]], None]


def _put(*time_columns: str) -> Put:
    """A commit of rows ``(key, value, *time_columns in epoch ms)``."""

    def put(table: StoreTable, rows: list[tuple[Any, ...]]) -> None:
        keys = pa.array([r[0] for r in rows])
        values = pa.array([r[1] for r in rows], pa.int64())
        columns = {
            c: pa.array([r[2 + i] for r in rows], pa.int64()) for i, c in enumerate(time_columns)
        }
        table.commit(table.stage(keys, values, columns or None))

    return put


#: kind -> (its parameters, how a commit is put, commit 2 (before the stream starts), commit 3,
#: commit 4 (deletes only), the rows streamed: commit 3's post-images in the read schema's order).
SCENARIOS: dict[str, tuple[dict[str, int], Put, list[Any], list[Any], list[Any], list[Any]]] = {
    "keyvalue": (
        {}, _put(),
        [("a", 1), ("b", 2)],
        [("a", 10), ("b", 2), ("c", 3)],  # b left equal: not streamed again
        [("b", None)],
        [("a", 10), ("c", 3)],
    ),
    "timestamped": (
        {}, _put("timestamp"),
        [("a", 1, 100), ("b", 2, 100)],
        [("a", 10, 200), ("b", 2, 100), ("c", 3, 300)],
        [("b", None, 400)],
        [("a", 10, 200), ("c", 3, 300)],  # key, value, timestamp
    ),
    "versioned": (
        {"history_retention_ms": HOUR}, _put("timestamp"),
        [("a", 1, 100), ("b", 2, 100)],
        # a: two versions, the latest view is the newer; b: a version behind its latest one
        # leaves the latest view as it was: nothing streamed for b.
        [("a", 5, 50), ("a", 10, 200), ("b", 0, 50), ("c", 3, 300)],
        [("b", None, 500)],
        [("a", 10, 200, None), ("c", 3, 300, None)],  # key, value, valid_from, valid_to
    ),
    "window": (
        {"window_size_ms": HOUR, "retention_ms": 2 * HOUR}, _put("window_start"),
        [("a", 1, 0), ("b", 2, 0)],
        [("a", 10, 0), ("c", 3, HOUR)],
        [("b", None, 0)],
        [("a", 0, HOUR, 10), ("c", HOUR, 2 * HOUR, 3)],  # key, window_start, window_end, value
    ),
    "session": (
        {"retention_ms": 10 * HOUR}, _put("session_start", "session_end"),
        [("a", 1, 0, 10), ("b", 2, 0, 10)],
        [("a", 10, 0, 10), ("c", 3, 20, 30)],
        [("b", None, 0, 10)],
        [("a", 0, 10, 10), ("c", 20, 30, 3)],  # key, session_start, session_end, value
    ),
}  # fmt: skip


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return int(value.replace(tzinfo=value.tzinfo or dt.timezone.utc).timestamp() * 1000)
    return value


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(_plain(v) for v in r) for r in df.collect()), key=str)


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_a_plain_stream_tails_new_commits_of_every_kind(
    spark: Any, tmp_path: Path, kind: str
) -> None:
    params, put, before, writes, deletes, expected = SCENARIOS[kind]
    root = str(tmp_path / "wh")
    table = Catalog(root).create_store("s", kind, "string", "long", **params)
    put(table, before)  # 2: before the stream: not streamed
    stream = spark.readStream.format("state_store").option("root", root).load("s")
    batch_schema = spark.read.format("state_store").option("root", root).load("s").schema
    assert stream.isStreaming and stream.schema == batch_schema
    name = f"plain_{kind}"
    query = (
        stream.writeStream.format("memory").queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint")).start()
    )  # fmt: skip
    try:
        query.processAllAvailable()
        assert spark.table(name).count() == 0  # a stream starts after the latest commit
        put(table, writes)  # 3
        query.processAllAvailable()
        put(table, deletes)  # 4: deletes are skipped
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    streamed = _rows(spark.table(name))
    assert streamed == sorted(expected, key=str)
    # Every row streamed for commit 3 is a row of the batch read of commit 3.
    then = spark.read.format("state_store").option("root", root).option("versionAsOf", "3")
    assert set(streamed) <= set(_rows(then.load("s")))


def _tail(spark: Any, root: str, checkpoint: Path, **options: str) -> list[tuple[int, str, int]]:
    reader = spark.readStream.format("state_store").option("root", root)
    for name, value in options.items():
        reader = reader.option(name, value)
    seen: list[tuple[int, str, int]] = []

    def collect(batch: Any, batch_id: int) -> None:
        seen.extend((batch_id, r["key"], r["value"]) for r in batch.collect())

    query = (
        reader.load("src").writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    assert query.exception() is None
    return sorted(seen)


def test_a_plain_stream_resumes_from_its_checkpoint_and_skips_deletes(
    spark: Any, tmp_path: Path
) -> None:
    root = str(tmp_path / "wh")
    table = Catalog(root).create_store("src", "keyvalue", "string", "long")
    put = _put()
    put(table, [("a", 1)])  # 2
    put(table, [("a", 2), ("b", 3)])  # 3
    checkpoint = tmp_path / "checkpoint"
    if ADMISSION_CONTROL.available:  # Spark 4.2 on
        # AvailableNow, a micro-batch per commit (at least one commit each, even over the limit).
        first = _tail(spark, root, checkpoint, startingVersion="2", maxRowsPerTrigger="1")
        assert first == [(0, "a", 1), (1, "a", 2), (1, "b", 3)]
    else:  # 4.0 and 4.1: the option is refused by name; every new commit in one micro-batch
        with pytest.raises(Exception, match=r"\[SPARK_TOO_OLD\] option 'maxRowsPerTrigger'"):
            _tail(spark, root, tmp_path / "refused", startingVersion="2", maxRowsPerTrigger="1")
        first = _tail(spark, root, checkpoint, startingVersion="2")
        assert first == [(0, "a", 1), (0, "a", 2), (0, "b", 3)]
    batch = first[-1][0] + 1
    put(table, [("b", None)])  # 4: a tombstone, skipped
    table.commit(table.stage(pa.array(["z"]), pa.array([7]), None), overwrite=True)  # 5
    put(table, [("d", 4)])  # 6
    # Restarted from its checkpoint: only what came after it; the overwrite streams what it
    # wrote, not what it removed.
    assert _tail(spark, root, checkpoint) == [(batch, "d", 4), (batch, "z", 7)]


def test_ignore_deletes_false_fails_the_query_naming_the_change_feed(
    spark: Any, tmp_path: Path
) -> None:
    root = str(tmp_path / "wh")
    table = Catalog(root).create_store("src", "keyvalue", "string", "long")
    _put()(table, [("a", 1)])  # 2
    _put()(table, [("a", None)])  # 3
    with pytest.raises(Exception) as failure:
        _tail(spark, root, tmp_path / "c", startingVersion="2", ignoreDeletes="false")
    message = str(failure.value)
    assert "[DELETE_IN_STREAM] commit 3 of store 'src' deletes 1 row(s)" in message
    assert ".option('readChangeFeed', 'true')" in message
    # The same commits, deletes skipped (the default, or said so).
    assert _tail(spark, root, tmp_path / "d", startingVersion="2", ignoreDeletes="true") == [
        (0, "a", 1)
    ]


def test_a_stream_error_reaches_the_user_as_its_coded_line(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    Catalog(root).create_store("src", "keyvalue", "string", "long")
    with pytest.raises(Exception) as failure:
        _tail(spark, root, tmp_path / "c", versionAsOf="1")
    message = str(failure.value)
    assert (
        "stores.errors.InvalidOptionError: [INVALID_OPTION] option 'versionAsOf' shapes a batch "
        "read and does not apply to a stream, which streams the rows of each new commit: start "
        "it at a commit with 'startingVersion'"
    ) in message
    # Not buried under Spark's own UnboundLocalError, nor under our traceback.
    assert "UnboundLocalError" not in message and "Traceback" not in message


# -- the reader driven directly ----------------------------------------------------------------


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


def _drive(reader: StoreStreamReader, start: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """One micro-batch from ``start`` (default: the initial offset): its rows and end offset."""
    offset = reader.initialOffset() if start is None else {"version": start}
    if ADMISSION_CONTROL.available:
        end = reader.latestOffset(offset, reader.getDefaultReadLimit())
    else:  # Spark 4.0 and 4.1: every new commit
        end = reader.latestOffset()
    rows: list[dict[str, Any]] = []
    for partition in reader.partitions(offset, end):
        for batch in reader.read(partition):
            rows += batch.to_pylist()
    return sorted(rows, key=str), int(end["version"])


def test_building_the_reader_never_fails_its_first_hook_does(tmp_path: Path) -> None:
    # Spark's streaming runner replaces an error raised while it builds the reader.
    reader = StoreStreamReader({"store": "missing", "root": str(tmp_path), "bogus": "1"})
    with pytest.raises(InvalidOptionError, match=r"\[UNKNOWN_OPTION\] unknown option 'bogus'"):
        reader.initialOffset()


def test_window_expiry_is_a_delete_skipped_or_refused(tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    table = Catalog(root).create_store("src", "window", "string", "long", window_size_ms=HOUR,
                                       retention_ms=2 * HOUR)  # fmt: skip
    put = _put("window_start")
    put(table, [("old", 1, 0)])  # 2
    put(table, [("new", 5, 10 * HOUR)])  # 3: stream time passes the old window's retention
    options = {"store": "src", "root": root, "startingVersion": "3"}
    rows, end = _drive(StoreStreamReader(options))
    assert [(r["key"], r["value"]) for r in rows] == [("new", 5)] and end == 3
    strict = StoreStreamReader({**options, "ignoreDeletes": "false"})
    with pytest.raises(InvalidOptionError, match=r"\[DELETE_IN_STREAM\] commit 3 .* key 'old'"):
        _drive(strict)


def test_an_overwrite_streams_what_it_changed_and_deletes_only_what_it_removed(
    tmp_path: Path,
) -> None:
    root = str(tmp_path / "wh")
    table = Catalog(root).create_store("src", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None))  # 2
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None), overwrite=True)  # 3
    options = {"store": "src", "root": root}
    # The same rows again (what complete mode commits each batch): nothing streamed, no delete.
    same = {**options, "startingVersion": "3", "ignoreDeletes": "false"}
    rows, end = _drive(StoreStreamReader(same))
    assert rows == [] and end == 3
    table.commit(table.stage(pa.array(["a", "c"]), pa.array([1, 3]), None), overwrite=True)  # 4
    # a left equal, b removed (skipped), c new.
    rows, _ = _drive(StoreStreamReader({**options, "startingVersion": "4"}))
    assert [(r["key"], r["value"]) for r in rows] == [("c", 3)]
    strict = StoreStreamReader({**options, "startingVersion": "4", "ignoreDeletes": "false"})
    with pytest.raises(InvalidOptionError, match=r"commit 4 .* deletes 1 row\(s\) .* key 'b'"):
        _drive(strict)


def test_options_a_stream_cannot_honour_are_refused(tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    Catalog(root).create_store("src", "versioned", "string", "long", history_retention_ms=HOUR)
    base = {"store": "src", "root": root}
    for extra, refused in (
        ({"asOfTimestamp": "1970-01-01T00:00:01Z"}, "option 'asOfTimestamp' shapes a batch read"),
        ({"versions": "all"}, "option 'versions' shapes a batch read"),
        ({"readHistory": "true"}, "option 'readHistory' applies to batch reads"),
        ({"endingVersion": "1"}, "option 'endingVersion' does not apply to a stream"),
        ({"readChangeFeed": "true", "ignoreDeletes": "false"}, "shows deletes as rows"),
        ({"startingVersion": "3"}, "'startingVersion' is 3 but store 'src' has commits 1 to 1"),
    ):
        with pytest.raises(InvalidOptionError, match=refused):
            StoreStreamReader({**base, **extra}).initialOffset()


def _write(root: str, rows: pa.RecordBatch, **extra: str) -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType(
        [StructField(f.name, LongType() if pa.types.is_integer(f.type) else StringType())
         for f in rows.schema]
    )  # fmt: skip
    options = StoreOptions.parse({"store": "src", "root": root, **extra})
    writer = StateStoreWriter.plan(options, schema, overwrite="overwriteSchema" in extra)
    writer.commit([writer.write(iter([rows]))])


def test_a_stream_across_a_schema_overwrite_is_refused(tmp_path: Path) -> None:
    root = str(tmp_path / "wh")
    _write(root, pa.RecordBatch.from_pydict({"key": ["a"], "value": ["x"]}))  # 1
    _write(root, pa.RecordBatch.from_pydict({"key": [1], "value": [2]}),
           overwriteSchema="true")  # 2: key and value become longs  # fmt: skip
    _write(root, pa.RecordBatch.from_pydict({"key": [3], "value": [4]}))  # 3
    reader = StoreStreamReader({"store": "src", "root": root})
    # A checkpoint from before the overwrite (the schema Spark has is the new one).
    with pytest.raises(InvalidOptionError, match=r"\[SCHEMA_CHANGED\].*startingVersion 3"):
        _drive(reader, start=0)
    rows, _ = _drive(StoreStreamReader({"store": "src", "root": root, "startingVersion": "3"}))
    assert rows == [{"key": 3, "value": 4}]
