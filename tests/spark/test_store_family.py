"""The store family through Spark: window, session, timestamped and header-aware stores."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
HEADERS = "array<struct<key:string,value:binary>>"


def at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 5, 1, 9, minute, tzinfo=UTC)


def aware(value: Any) -> Any:
    return value.astimezone(UTC) if isinstance(value, dt.datetime) else value


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(aware(v) for v in r) for r in df.collect())


def test_window_store_with_headers_sql_and_start_range(spark: Any, warehouse: str) -> None:
    trace = [("trace", bytearray(b"\x01")), ("trace", None)]
    df = spark.createDataFrame(
        [("clicks", at(0), 3, trace), ("clicks", at(5), 4, []), ("views", at(5), 9, None)],
        f"key string, window_start timestamp, value bigint, headers {HEADERS}",
    ).repartition(2)
    (
        df.write.format("state_store").option("root", warehouse).option("kind", "window")
        .option("windowSize", "5 minutes").option("retention", "1 day").option("headers", "true")
        .option("numPartitions", "2").mode("append").save("counts")
    )
    read = spark.read.format("state_store").option("root", warehouse).load("counts")
    assert read.schema.simpleString() == (
        "struct<key:string,window_start:timestamp,window_end:timestamp,value:bigint,"
        f"headers:{HEADERS}>"
    )
    got = rows(read.selectExpr("key", "window_start", "window_end", "value", "size(headers)"))
    assert got == [
        ("clicks", at(0), at(5), 3, 2),
        ("clicks", at(5), at(10), 4, 0),
        ("views", at(5), at(10), 9, 0),
    ]
    first = read.where("window_start = '2024-05-01 09:00:00'").first()
    assert [(h.key, h.value) for h in first.headers] == [("trace", bytearray(b"\x01")), ("trace", None)]
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW late_counts USING state_store OPTIONS "
        f"(store 'counts', root '{warehouse}', windowStartFrom '2024-05-01T09:05:00Z')"
    )
    late = spark.sql("SELECT key, value FROM late_counts ORDER BY key").collect()
    assert [(r.key, r.value) for r in late] == [("clicks", 4), ("views", 9)]


def test_session_and_timestamped_stores(spark: Any, warehouse: str) -> None:
    sessions = spark.createDataFrame(
        [("u1", at(0), at(7), 2), ("u2", at(3), at(3), 1)],
        "key string, session_start timestamp, session_end timestamp, value int",
    )
    (
        sessions.write.format("state_store").option("root", warehouse).option("kind", "session")
        .option("retention", "1 hour").mode("append").save("sessions")
    )
    read = spark.read.format("state_store").option("root", warehouse).load("sessions")
    assert rows(read) == [("u1", at(0), at(7), 2), ("u2", at(3), at(3), 1)]

    prices = spark.createDataFrame(
        [("EUR", 1.1, at(1)), ("GBP", 1.2, None)], "key string, value double, timestamp timestamp"
    )
    (
        prices.write.format("state_store").option("root", warehouse)
        .option("kind", "timestamped").mode("append").save("prices")
    )
    read = spark.read.format("state_store").option("root", warehouse).load("prices")
    assert read.schema.simpleString() == "struct<key:string,value:double,timestamp:timestamp>"
    assert rows(read) == [("EUR", 1.1, at(1)), ("GBP", 1.2, None)]
