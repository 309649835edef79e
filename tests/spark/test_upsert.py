"""``upsert_into``: streaming ``update`` mode through ``foreachBatch``, one commit per
micro-batch, exactly once (``datasource.upsert``)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalog import Catalog
from catalog.log.records import Txn
from datasource import upsert_into
from datasource.upsert import QUERY_ID_PROPERTY

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


def _add(base: Path, name: str, rows: list[tuple[str, int]]) -> None:
    """A JSON file of events (key, ts in epoch seconds) in the stream's input folder."""
    folder = base / "in"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps({"key": k, "ts": t}) + "\n" for k, t in rows))


def _counts(df: Any, timestamped: bool) -> Any:
    """The running aggregate: events per key (and the latest event's time, as the record's)."""
    from pyspark.sql import functions as F

    df = df.withColumn("ts", F.timestamp_seconds("ts"))
    if timestamped:
        return df.groupBy("key").agg(F.count("*").alias("value"), F.max("ts").alias("timestamp"))
    return df.groupBy("key").agg(F.count("*").alias("value"))


def _stream(
    spark: Any, base: Path, store: str, checkpoint: str = "checkpoint", **options: Any
) -> Any:
    """The running count into ``store``; ``files`` (if given): input files per micro-batch."""
    reader = spark.readStream.schema("key string, ts long")
    if "files" in options:
        reader = reader.option("maxFilesPerTrigger", options.pop("files"))
    events = reader.json(str(base / "in"))
    timestamped = options.get("kind") == "timestamped"
    return (
        _counts(events, timestamped).writeStream.outputMode("update")
        .foreachBatch(upsert_into(store, root=str(base / "wh"), **options))
        .option("checkpointLocation", str(base / checkpoint))
        .trigger(availableNow=True).start()
    )  # fmt: skip


def _run(spark: Any, base: Path, store: str, **options: Any) -> Any:
    query = _stream(spark, base, store, **options)
    query.awaitTermination()
    assert query.exception() is None
    return query


def _aware(value: Any) -> Any:
    return value.astimezone(UTC) if isinstance(value, dt.datetime) else value


def _rows(spark: Any, base: Path, store: str) -> list[tuple[Any, ...]]:
    df = spark.read.format("state_store").option("root", str(base / "wh")).load(store)
    return sorted(tuple(_aware(v) for v in r) for r in df.collect())


def _batch_answer(spark: Any, base: Path, timestamped: bool) -> list[tuple[Any, ...]]:
    events = spark.read.schema("key string, ts long").json(str(base / "in"))
    return sorted(tuple(_aware(v) for v in r) for r in _counts(events, timestamped).collect())


def _txns(base: Path, store: str) -> list[Txn | None]:
    log = Catalog(str(base / "wh")).load(store).log
    return [log.read(i).txn for i in log.ids()]


def _files_match_the_log(base: Path, store: str) -> None:
    """Nothing under the store but the files its records list."""
    log = Catalog(str(base / "wh")).load(store).log
    listed = {f.path for i in log.ids() for f in log.read(i).files}
    folder = base / "wh" / store
    assert {str(p.relative_to(folder)) for p in folder.rglob("*.arrow*")} == listed


@pytest.mark.parametrize("kind", ["keyvalue", "timestamped"])
def test_a_running_count_in_update_mode_equals_the_batch_answer(
    spark: Any, tmp_path: Path, kind: str
) -> None:
    _add(tmp_path, "0.json", [("a", 1), ("b", 2), ("a", 3)])
    query = _run(spark, tmp_path, "counts", kind=kind)
    _add(tmp_path, "1.json", [("a", 4), ("c", 5)])
    _run(spark, tmp_path, "counts", kind=kind)  # restarted from its checkpoint: batch 1
    timestamped = kind == "timestamped"
    assert _rows(spark, tmp_path, "counts") == _batch_answer(spark, tmp_path, timestamped)
    assert _rows(spark, tmp_path, "counts")[0][:2] == ("a", 3)
    # One commit per micro-batch, its transaction the query's id and the batch id.
    app = f"stream-{query.id}"
    assert _txns(tmp_path, "counts") == [Txn(app, 0), Txn(app, 1)]
    assert Catalog(str(tmp_path / "wh")).load("counts").spec.kind == kind


def test_a_new_checkpoint_commits_under_a_new_transaction_id(spark: Any, tmp_path: Path) -> None:
    _add(tmp_path, "0.json", [("a", 1)])
    first = _run(spark, tmp_path, "counts")
    _add(tmp_path, "1.json", [("b", 2)])
    # A new checkpoint: a new query id, batch ids from 0 again. Under the old id, its batch 0
    # would be taken for the old query's and skipped.
    second = _stream(spark, tmp_path, "counts", checkpoint="checkpoint-2")
    second.awaitTermination()
    assert first.id != second.id
    assert _txns(tmp_path, "counts") == [
        Txn(f"stream-{first.id}", 0),
        Txn(f"stream-{second.id}", 0),
    ]
    assert _rows(spark, tmp_path, "counts") == [("a", 1), ("b", 1)]


def test_a_given_txn_app_id_replaces_the_query_id(spark: Any, tmp_path: Path) -> None:
    _add(tmp_path, "0.json", [("a", 1)])
    _run(spark, tmp_path, "counts", txnAppId="counts-job-1")
    assert _txns(tmp_path, "counts") == [Txn("counts-job-1", 0)]


@pytest.fixture
def in_query(spark: Any) -> Iterator[str]:
    """This thread as a streaming query's (the local property Spark's stream thread has)."""
    context = spark.sparkContext
    context.setLocalProperty(QUERY_ID_PROPERTY, "0f0e0d0c-0000-4000-8000-000000000001")
    yield "stream-0f0e0d0c-0000-4000-8000-000000000001"
    context.setLocalProperty(QUERY_ID_PROPERTY, None)


def test_a_batch_run_again_is_skipped(spark: Any, tmp_path: Path, in_query: str) -> None:
    root = str(tmp_path / "wh")
    put = upsert_into("counts", root=root)
    first = spark.createDataFrame([("a", 1), ("b", 1)], "key string, value bigint").repartition(2)
    put(first, 0)
    put(first, 0)  # Spark runs a batch again after a failure
    put(spark.createDataFrame([("a", 7)], "key string, value bigint"), 0)  # whatever it holds
    assert _txns(tmp_path, "counts") == [Txn(in_query, 0)]
    put(spark.createDataFrame([("a", 2)], "key string, value bigint"), 1)
    assert _txns(tmp_path, "counts") == [Txn(in_query, 0), Txn(in_query, 1)]
    assert _rows(spark, tmp_path, "counts") == [("a", 2), ("b", 1)]
    _files_match_the_log(tmp_path, "counts")  # the skipped batches' files were deleted


def test_an_empty_batch_commits_nothing(spark: Any, tmp_path: Path, in_query: str) -> None:
    put = upsert_into("counts", root=str(tmp_path / "wh"))
    empty = spark.createDataFrame([], "key string, value bigint").repartition(2)
    put(empty, 0)
    assert Catalog(str(tmp_path / "wh")).find("counts") is None  # not even created
    put(spark.createDataFrame([("a", 1)], "key string, value bigint"), 1)
    put(empty, 2)
    assert _txns(tmp_path, "counts") == [Txn(in_query, 1)]


def _at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 5, 1, 9, minute, tzinfo=UTC)


#: Per kind: creation options, the micro-batch's schema and rows, and the store read back.
KINDS: dict[str, tuple[dict[str, str], str, list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {
    "keyvalue": ({}, "key string, value bigint", [("a", 1), ("b", 2)], [("a", 1), ("b", 2)]),
    "timestamped": (
        {}, "key string, value bigint, timestamp timestamp",
        [("a", 1, _at(1)), ("b", 2, _at(2))], [("a", 1, _at(1)), ("b", 2, _at(2))],
    ),
    "versioned": (
        {"historyRetention": "1 day"}, "key string, value bigint, timestamp timestamp",
        [("a", 1, _at(1)), ("a", 2, _at(3))], [("a", 2, _at(3), None)],
    ),
    "window": (
        {"windowSize": "5 minutes", "retention": "1 day"},
        "key string, window_start timestamp, value bigint",
        [("a", _at(0), 1), ("a", _at(5), 2)], [("a", _at(0), _at(5), 1), ("a", _at(5), _at(10), 2)],
    ),
    "session": (
        {"retention": "1 day"}, "key string, session_start timestamp, session_end timestamp, value bigint",
        [("u", _at(0), _at(7), 2)], [("u", _at(0), _at(7), 2)],
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_takes_a_micro_batch_as_one_commit(
    spark: Any, tmp_path: Path, in_query: str, kind: str
) -> None:
    options, schema, rows, expected = KINDS[kind]
    put = upsert_into("s", root=str(tmp_path / "wh"), kind=kind, numPartitions=2, **options)
    batch = spark.createDataFrame(rows, schema).repartition(2)
    put(batch, 0)
    put(batch, 0)
    assert _txns(tmp_path, "s") == [Txn(in_query, 0)]
    assert Catalog(str(tmp_path / "wh")).load("s").spec.kind == kind
    assert _rows(spark, tmp_path, "s") == expected


@pytest.mark.parametrize(
    ("options", "code", "named"),
    [
        ({"txnVersion": "3"}, "[UNEXPECTED_OPTION]", "txnVersion"),
        ({"TXNVERSION": 3}, "[UNEXPECTED_OPTION]", "TXNVERSION"),
        ({"numPartition": 2}, "[UNKNOWN_OPTION]", "did you mean 'numPartitions'"),
        ({"path": "other"}, "[UNEXPECTED_OPTION]", "as the first argument"),
        ({"versionAsOf": "1"}, "[INVALID_OPTION]", "reads (spark.read, readStream) only"),
        ({"readChangeFeed": True}, "[INVALID_OPTION]", "'readChangeFeed' applies to reads"),
        ({"startingVersion": 1}, "[INVALID_OPTION]", "'startingVersion' applies to reads"),
        ({"ignoreDeletes": False}, "[INVALID_OPTION]", "'ignoreDeletes' applies to reads"),
        ({"maxRowsPerTrigger": 5}, "[INVALID_OPTION]", "'maxRowsPerTrigger' applies to reads"),
        ({"kafkaStateDir": "/x"}, "[INVALID_OPTION]", "'kafkaStateDir' applies to reads"),
        ({"overwriteSchema": True}, "[OVERWRITE_SCHEMA_NEEDS_OVERWRITE]", "overwriteSchema"),
        ({"writeFrom": "kafkaChangelog"}, "[UNEXPECTED_OPTION]", "writeFrom"),
        ({"numPartitions": 0}, "[INVALID_OPTION]", "numPartitions"),
        ({"txnAppId": " "}, "[INVALID_OPTION]", "txnAppId"),
    ],
)
def test_bad_options_are_refused_before_anything_runs(
    tmp_path: Path, options: dict[str, Any], code: str, named: str
) -> None:
    from stores.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError) as refused:
        upsert_into("counts", root=str(tmp_path / "wh"), **options)
    assert str(refused.value).startswith(code) and named in str(refused.value)
    assert not (tmp_path / "wh").exists()


def test_a_batch_that_does_not_fit_writes_nothing(
    spark: Any, tmp_path: Path, in_query: str
) -> None:
    from stores.errors import InvalidOptionError

    put = upsert_into("counts", root=str(tmp_path / "wh"), kind="timestamped")
    with pytest.raises(InvalidOptionError, match=r"^\[MISSING_COLUMN\].*'timestamp'"):
        put(spark.createDataFrame([("a", 1)], "key string, value bigint"), 0)
    assert not (tmp_path / "wh").exists()


def test_without_a_query_id_the_batch_fails_saying_to_give_txn_app_id(
    spark: Any, tmp_path: Path
) -> None:
    from stores.errors import InvalidOptionError

    assert spark.sparkContext.getLocalProperty(QUERY_ID_PROPERTY) is None
    put = upsert_into("counts", root=str(tmp_path / "wh"))
    with pytest.raises(InvalidOptionError, match=r"^\[NO_QUERY_ID\].*txnAppId"):
        put(spark.createDataFrame([("a", 1)], "key string, value bigint"), 0)
    assert not (tmp_path / "wh").exists()
    upsert_into("counts", root=str(tmp_path / "wh"), txnAppId="job")(
        spark.createDataFrame([("a", 1)], "key string, value bigint"), 0
    )
    assert _txns(tmp_path, "counts") == [Txn("job", 0)]


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        # A task's Python worker killed after staging its files: the job fails.
        ("stage.done kill", "Python worker exited unexpectedly"),
        # The commit (on the driver) fails before its record, or after it landed.
        ("commit.before_record error", "commit.before_record"),
        ("commit.after_record error", "commit.after_record"),
    ],
)
def test_a_query_failed_mid_batch_restarts_and_commits_each_batch_once(
    spark: Any, tmp_path: Path, spark_faults: Path, rule: str, error: str
) -> None:
    from pyspark.errors import StreamingQueryException

    _add(tmp_path, "0.json", [("a", 1), ("b", 2)])
    query = _run(spark, tmp_path, "counts", kind="timestamped")
    _add(tmp_path, "1.json", [("a", 3), ("c", 4)])
    spark_faults.write_text(f"{rule}\n")
    failed = _stream(spark, tmp_path, "counts", kind="timestamped")
    with pytest.raises(StreamingQueryException, match=error):
        failed.awaitTermination()
    assert Path(f"{spark_faults}.fired").exists(), f"the fault {rule!r} never fired"
    os.unlink(f"{spark_faults}.fired")
    _run(spark, tmp_path, "counts", kind="timestamped")  # the same checkpoint: batch 1 again
    assert _rows(spark, tmp_path, "counts") == _batch_answer(spark, tmp_path, True)
    app = f"stream-{query.id}"
    assert _txns(tmp_path, "counts") == [Txn(app, 0), Txn(app, 1)]  # batch 1 committed once
    _files_match_the_log(tmp_path, "counts")


def test_an_application_killed_after_a_batch_committed_restarts_exactly_once(
    spark: Any, tmp_path: Path, spark_env: dict[str, str]
) -> None:
    # The commit runs in the driver's Python process: a kill there is the whole application's.
    _add(tmp_path, "0.json", [("a", 1), ("b", 2)])
    _add(tmp_path, "1.json", [("a", 3), ("c", 4)])
    rules = tmp_path / "app-faults"
    rules.write_text("commit.after_record killgroup\n")  # batch 0's record landed, then death
    app = subprocess.Popen(
        [sys.executable, __file__, str(tmp_path)],
        env={**spark_env, "STATE_STORE_FAULTS": str(rules)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    out, err = app.communicate(timeout=300)
    assert app.returncode == -9 and "not killed" not in out, err[-3000:]
    assert Path(f"{rules}.fired").exists()
    assert len(_txns(tmp_path, "counts")) == 1  # batch 0, committed; Spark never learned it
    query = _run(spark, tmp_path, "counts", files=1)  # restarted: batch 0 again
    app_id = f"stream-{query.id}"
    assert _txns(tmp_path, "counts") == [Txn(app_id, 0), Txn(app_id, 1)]
    assert _rows(spark, tmp_path, "counts") == _batch_answer(spark, tmp_path, False)
    _files_match_the_log(tmp_path, "counts")


def _killed_app(base: Path) -> None:
    """The application the test above kills: the running count, one input file per batch."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]").appName("state_store upsert kill test")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )  # fmt: skip
    _run(spark, base, "counts", files=1)
    print("the application was not killed", flush=True)


if __name__ == "__main__":
    _killed_app(Path(sys.argv[1]))
