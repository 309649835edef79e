"""End to end through Spark (one shared local[2] session): format, SQL, errors, commit/abort."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc


def ts(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 5, 1, hour, minute, tzinfo=UTC)


RATES = [
    ("EUR", 1.10, ts(9)),
    ("EUR", 1.12, ts(10)),
    ("EUR", 1.08, ts(11)),
    ("GBP", 1.25, ts(9, 30)),
    ("GBP", 1.27, ts(10, 30)),
    ("JPY", 0.0064, ts(10, 15)),
]


def write(df: Any, root: str, store: str, mode: str = "append", **options: str) -> None:
    writer = df.write.format("state_store").option("root", root).option("store", store)
    for name, value in options.items():
        writer = writer.option(name, value)
    writer.mode(mode).save()


def read(spark: Any, root: str, store: str, **options: str) -> Any:
    reader = spark.read.format("state_store").option("root", root)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(store)


def aware(value: Any) -> Any:
    # PySpark returns TIMESTAMP values as naive datetimes in this process's local time zone.
    return value.astimezone(UTC) if isinstance(value, dt.datetime) else value


def as_dicts(df: Any) -> list[dict[str, Any]]:
    rows = [{k: aware(v) for k, v in r.asDict().items()} for r in df.collect()]
    return sorted(rows, key=lambda r: repr(r["key"]))


@pytest.fixture
def rates(spark: Any, warehouse: str) -> str:
    df = spark.createDataFrame(RATES, "key string, value double, timestamp timestamp").repartition(3)
    write(df, warehouse, "rates", kind="versioned", historyRetention="1 day", numPartitions="4")
    return warehouse


def test_versioned_latest_and_as_of(spark: Any, rates: str) -> None:
    df = read(spark, rates, "rates")
    assert df.schema.simpleString() == (
        "struct<key:string,value:double,valid_from:timestamp,valid_to:timestamp>"
    )
    assert df.rdd.getNumPartitions() == 4
    latest = as_dicts(df)
    assert [(r["key"], r["value"], r["valid_from"], r["valid_to"]) for r in latest] == [
        ("EUR", 1.08, ts(11), None),
        ("GBP", 1.27, ts(10, 30), None),
        ("JPY", 0.0064, ts(10, 15), None),
    ]
    as_of = as_dicts(read(spark, rates, "rates", asOfTimestamp="2024-05-01T10:10:00Z"))
    assert [(r["key"], r["value"], r["valid_from"], r["valid_to"]) for r in as_of] == [
        ("EUR", 1.12, ts(10), ts(11)),
        ("GBP", 1.25, ts(9, 30), ts(10, 30)),
    ]
    epoch_ms = str(int(ts(9, 45).timestamp() * 1000))
    assert [r["value"] for r in as_dicts(read(spark, rates, "rates", asOfTimestamp=epoch_ms))] == [
        1.10,
        1.25,
    ]


def test_sql_views_latest_and_as_of(spark: Any, rates: str) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW rates USING state_store OPTIONS (store 'rates', root '{rates}')")
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW rates_at_ten USING state_store OPTIONS "
        f"(store 'rates', root '{rates}', asOfTimestamp '2024-05-01T10:00:00Z')"
    )
    latest = spark.sql("SELECT key, value FROM rates ORDER BY key").collect()
    assert [(r.key, r.value) for r in latest] == [("EUR", 1.08), ("GBP", 1.27), ("JPY", 0.0064)]
    at_ten = spark.sql("SELECT key, value, valid_to FROM rates_at_ten ORDER BY key").collect()
    assert [(r.key, r.value, aware(r.valid_to)) for r in at_ten] == [
        ("EUR", 1.12, ts(11)),
        ("GBP", 1.25, ts(10, 30)),
    ]


def test_versioned_tombstones_and_epoch_millisecond_timestamps(spark: Any, rates: str) -> None:
    ms = int(ts(12).timestamp() * 1000)
    df = spark.createDataFrame([("EUR", None, ms)], "key string, value double, timestamp bigint")
    write(df, rates, "rates")
    assert [r["key"] for r in as_dicts(read(spark, rates, "rates"))] == ["GBP", "JPY"]
    before = as_dicts(read(spark, rates, "rates", asOfTimestamp="2024-05-01T11:30:00Z"))
    assert ("EUR", 1.08, ts(12)) in [(r["key"], r["value"], r["valid_to"]) for r in before]


def test_keyvalue_append_overwrite_and_struct_values(spark: Any, warehouse: str) -> None:
    df = spark.createDataFrame(
        [(1, ("a", 1.5)), (2, ("b", 2.5)), (3, None)], "key bigint, value struct<name:string,score:double>"
    )
    write(df, warehouse, "scores", numPartitions="2")
    got = as_dicts(read(spark, warehouse, "scores"))
    assert [(r["key"], r["value"].asDict()) for r in got] == [
        (1, {"name": "a", "score": 1.5}),
        (2, {"name": "b", "score": 2.5}),
    ]
    write(spark.createDataFrame([(9, ("z", 0.0))], df.schema), warehouse, "scores", mode="overwrite")
    assert [r["key"] for r in as_dicts(read(spark, warehouse, "scores"))] == [9]


def test_a_rerun_job_with_its_txn_version_appends_once(spark: Any, warehouse: str) -> None:
    df = spark.createDataFrame([(1, 10), (2, 20)], "key bigint, value bigint").repartition(2)
    for _ in range(2):  # the job, then its retry
        write(df, warehouse, "counts", txnAppId="load-counts", txnVersion="7")
    write(spark.createDataFrame([(3, 30)], df.schema), warehouse, "counts",
          txnAppId="load-counts", txnVersion="8")  # fmt: skip
    assert [(r["key"], r["value"]) for r in as_dicts(read(spark, warehouse, "counts"))] == [
        (1, 10), (2, 20), (3, 30)
    ]
    from catalog import Catalog

    assert Catalog(warehouse).load("counts").log.ids() == [1, 2]


def test_partitioner_expression_matches_spark_sql(spark: Any, catalog: Any) -> None:
    from catalog import partition_of, spark_sql_expression
    from stores.serdes import serde_for

    df = spark.createDataFrame(
        [("EUR", 7, -3, 300), ("", -1, 2**40, -7000)], "s string, i int, l bigint, h smallint"
    )
    for column, type_name in (("s", "string"), ("i", "integer"), ("l", "long"), ("h", "short")):
        got = [r[0] for r in df.selectExpr(spark_sql_expression(type_name, 5, column)).collect()]
        values = [r[0] for r in df.select(column).collect()]
        assert got == [partition_of(serde_for(type_name).serialize(v), 5) for v in values]


def assert_error(excinfo: pytest.ExceptionInfo[BaseException], *parts: str) -> None:
    message = str(excinfo.value)
    for part in parts:
        assert part in message, message


def test_read_errors(spark: Any, rates: str) -> None:
    with pytest.raises(Exception) as e:
        read(spark, rates, "ratez").collect()
    assert_error(e, "[STORE_NOT_FOUND]", "existing: rates", "did you mean 'rates'")
    with pytest.raises(Exception) as e:
        spark.read.format("state_store").option("root", rates).option("asOfTimestmp", "5").load("rates")
    assert_error(e, "[UNKNOWN_OPTION]", "'asOfTimestamp'")
    with pytest.raises(Exception) as e:
        read(spark, rates, "rates", asOfTimestamp="last tuesday").collect()
    assert_error(e, "[INVALID_OPTION]", "asOfTimestamp", "last tuesday")


def store_files(root: str, store: str) -> list[str]:
    """The spec, commit records and changelog files of a store (not abort markers)."""
    return sorted(
        str(p.relative_to(root))
        for p in Path(root, store).rglob("*")
        if p.is_file() and p.parent.name != "aborted"
    )


def test_write_errors_leave_nothing_behind(spark: Any, rates: str) -> None:
    before = store_files(rates, "rates")
    cases = [
        (spark.createDataFrame([("EUR", 1.0)], "key string, value double"), "[MISSING_COLUMN]", "timestamp"),
        (
            spark.createDataFrame([("EUR", "x", ts(1))], "key string, value string, timestamp timestamp"),
            "[COLUMN_TYPE_MISMATCH]",
            "column 'value' has type string",
        ),
        (
            spark.createDataFrame([(None, 1.0, ts(1))], "key string, value double, timestamp timestamp"),
            "[NULL_KEY]",
            "column 'key'",
        ),
    ]
    for df, code, detail in cases:
        with pytest.raises(Exception) as e:
            write(df, rates, "rates")
        assert_error(e, code, detail)
    assert store_files(rates, "rates") == before
    kv = spark.createDataFrame([("a", 1)], "key string, value int")
    write(kv, rates, "plain")
    with pytest.raises(Exception) as e:
        read(spark, rates, "plain", asOfTimestamp="5").collect()
    assert_error(e, "[INVALID_OPTION]", "versioned stores only")


def test_one_failing_task_aborts_the_whole_write(spark: Any, warehouse: str) -> None:
    rows = [(f"k{i}", i) for i in range(40)] + [(None, -1)]
    df = spark.createDataFrame(rows, "key string, value int").repartition(4)
    with pytest.raises(Exception) as e:
        write(df, warehouse, "partial", numPartitions="3")
    assert_error(e, "[NULL_KEY]")
    # Spark fails the job without waiting for its other running tasks: wait for them to end.
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 60
    while tracker.getActiveStageIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(warehouse, "partial", "commits").exists()  # no commit: no store
    assert [p for p in Path(warehouse).rglob("*.arrow")] == []  # staged files were deleted


def test_filters_with_python_pushdown_enabled_give_the_same_rows(spark: Any, rates: str) -> None:
    """With the conf on, a filtered query and a later query of the same DataFrame are both
    right (Spark 4.3 would hand a pushed-down reader to the second: see datasource.pushdown)."""
    conf = "spark.sql.python.filterPushdown.enabled"
    df = read(spark, rates, "rates")
    spark.conf.set(conf, "true")
    try:
        picked = df.where("key = 'EUR' and valid_from >= timestamp'2024-05-01 10:00:00'")
        assert [(r["key"], r["value"]) for r in as_dicts(picked)] == [("EUR", 1.08)]
        assert df.count() == 3
        assert df.where("key in ('GBP', 'JPY')").count() == 2
    finally:
        spark.conf.unset(conf)
    assert df.where("key = 'EUR'").count() == 1


def test_the_commit_history_reads_as_a_table(spark: Any, warehouse: str) -> None:
    df = spark.createDataFrame([(1, 10)], "key bigint, value bigint")
    write(df, warehouse, "hist", txnAppId="nightly", txnVersion="3")
    write(df, warehouse, "hist", mode="overwrite")
    history = read(spark, warehouse, "hist", readHistory="true").collect()
    assert [(r["version"], r["operation"], r["rows"], r["txn_app_id"], r["txn_version"])
            for r in history] == [(2, "overwrite", 1, None, None), (1, "create", 1, "nightly", 3)]  # fmt: skip
    from catalog import Catalog

    first = Catalog(warehouse).load("hist").log.read(1).timestamp_ms
    assert int(aware(history[1]["timestamp"]).timestamp() * 1000) == first


def test_the_change_feed_reads_through_spark(spark: Any, warehouse: str) -> None:
    schema = "key string, value bigint"
    write(spark.createDataFrame([("a", 1), ("b", 2)], schema), warehouse, "cdf", numPartitions="2")
    write(spark.createDataFrame([("a", 3)], schema), warehouse, "cdf")
    feed = read(spark, warehouse, "cdf", readChangeFeed="true", startingVersion="2")
    got = sorted((r["_commit_version"], r["_change_type"], r["key"], r["value"]) for r in feed.collect())
    assert got == [(2, "update_postimage", "a", 3), (2, "update_preimage", "a", 1)]
    everything = read(spark, warehouse, "cdf", readChangeFeed="true", startingVersion="1",
                      endingVersion="1")  # fmt: skip
    assert sorted((r["_change_type"], r["key"]) for r in everything.collect()) == [
        ("insert", "a"), ("insert", "b")
    ]
    assert "_commit_timestamp" in feed.columns
    with pytest.raises(Exception, match="needs 'startingVersion' or 'startingTimestamp'"):
        read(spark, warehouse, "cdf", readChangeFeed="true").collect()


def test_the_warehouse_lists_its_stores_in_sql(spark: Any, warehouse: str) -> None:
    write(spark.createDataFrame([(1, 2)], "key bigint, value bigint"), warehouse, "one")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW stores USING state_store "
              f"OPTIONS (root '{warehouse}', list 'stores')")  # fmt: skip
    rows = spark.sql("SELECT name, kind, commits, rows_written FROM stores").collect()
    assert [tuple(r) for r in rows] == [("one", "keyvalue", 1, 1)]
    with pytest.raises(Exception, match="option 'list' is 'tables'; accepted: 'stores'"):
        read(spark, warehouse, "", list="tables").collect()


def test_a_versioned_store_takes_its_own_read_schema_back(spark: Any, rates: str) -> None:
    as_of = read(spark, rates, "rates", asOfTimestamp="2024-05-01T10:30:00Z")  # valid_to set
    write(as_of, rates, "rates_then", kind="versioned", historyRetention="30 days")
    again = as_dicts(read(spark, rates, "rates_then", asOfTimestamp="2024-05-01T10:30:00Z"))
    assert [(r["key"], r["value"]) for r in again] == [(r["key"], r["value"]) for r in as_dicts(as_of)]
    latest = [(r["key"], r["value"]) for r in as_dicts(read(spark, rates, "rates_then"))]
    # EUR's version as of 10:30 ended at 11:00: its valid_to wrote a tombstone there.
    assert latest == [("GBP", 1.27), ("JPY", 0.0064)]


def test_a_versioned_store_s_whole_history_reads_in_sql(spark: Any, rates: str) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW rate_history USING state_store "
              f"OPTIONS (root '{rates}', store 'rates', versions 'all')")  # fmt: skip
    eur = spark.sql("SELECT value, valid_from, valid_to FROM rate_history WHERE key = 'EUR' "
                    "ORDER BY valid_from").collect()  # fmt: skip
    assert [(r["value"], aware(r["valid_from"]), aware(r["valid_to"])) for r in eur] == [
        (1.10, ts(9), ts(10)), (1.12, ts(10), ts(11)), (1.08, ts(11), None)
    ]
    week = read(spark, rates, "rates", versions="all", fromTimestamp="2024-05-01T10:20:00Z",
                toTimestamp="2024-05-01T10:40:00Z")  # fmt: skip
    assert sorted((r["key"], r["value"]) for r in week.collect()) == [
        ("EUR", 1.12), ("GBP", 1.25), ("GBP", 1.27), ("JPY", 0.0064)
    ]
    with pytest.raises(Exception, match="option 'versions' is 'al'; did you mean 'all'"):
        read(spark, rates, "rates", versions="al").collect()


def test_overwrite_schema_replaces_a_store_s_types_in_one_commit(spark: Any, warehouse: str) -> None:
    write(spark.createDataFrame([("a", 1)], "key string, value int"), warehouse, "s")
    doubles = spark.createDataFrame([(7, "seven", ts(9))], "key bigint, value string, timestamp timestamp")
    with pytest.raises(Exception) as e:
        write(doubles, warehouse, "s", mode="overwrite")
    first = str(e.value).splitlines()[0]
    assert "[COLUMN_TYPE_MISMATCH]" in first and 'option("overwriteSchema", "true")' in first
    with pytest.raises(Exception) as e:
        write(doubles, warehouse, "s", overwriteSchema="true")
    assert "[OVERWRITE_SCHEMA_NEEDS_OVERWRITE]" in str(e.value).splitlines()[0]
    write(doubles, warehouse, "s", mode="overwrite", overwriteSchema="true", kind="versioned",
          historyRetention="1 day")  # fmt: skip
    now = read(spark, warehouse, "s")
    assert now.schema.simpleString() == (
        "struct<key:bigint,value:string,valid_from:timestamp,valid_to:timestamp>"
    )
    assert [(r["key"], r["value"]) for r in now.collect()] == [(7, "seven")]
    then = read(spark, warehouse, "s", versionAsOf="1")  # read with the schema of commit 1
    assert [tuple(r) for r in then.collect()] == [("a", 1)]


def test_errors_from_tasks_and_planning_show_our_line_first(spark: Any, warehouse: str) -> None:
    with pytest.raises(Exception) as e:  # raised in a write task on an executor
        write(spark.createDataFrame([(None, 1)], "key string, value int"), warehouse, "t")
    lines = str(e.value).strip().splitlines()
    # Spark's own first line for any Python worker exception (4.0 adds "Please see the stack
    # trace below."), then ours; no traceback.
    assert lines[0].strip().startswith("An exception was thrown from the Python worker")
    assert lines[1].startswith("stores.errors.InvalidOptionError: [NULL_KEY] column 'key'")
    assert "Traceback" not in str(e.value)
    with pytest.raises(Exception) as e:  # raised while Spark plans the read
        read(spark, warehouse, "nothing").collect()
    assert "[STORE_NOT_FOUND] store 'nothing'" in str(e.value).splitlines()[0]
    assert "Traceback" not in str(e.value)


def test_spark_keeps_the_session_s_root_when_the_variable_changes_later(
    spark: Any, warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark's Python workers inherit the environment the session's JVM started with.
    monkeypatch.setenv("STATE_STORE_ROOT", warehouse)
    with pytest.raises(Exception) as e:
        spark.read.format("state_store").load("nothing_here")
    first = str(e.value).splitlines()[0]
    assert "[STORE_NOT_FOUND] store 'nothing_here'" in first
    assert warehouse not in first and "a later change of the variable does not reach Spark" in first
    # The default save mode never reaches the connector: Spark refuses it (README, Troubleshooting).
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        spark.createDataFrame([("a", 1)], "key string, value int").write.format(
            "state_store"
        ).option("root", warehouse).save("s")
    assert not Path(warehouse).exists()
