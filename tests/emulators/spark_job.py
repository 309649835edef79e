"""Run by tests/catalog/test_clouds_spark.py in its own process (its Spark's Python workers must
inherit the emulators' environment, which the suite's shared session started without): writes
and reads a store of every kind through Spark on each warehouse root given, and prints one JSON
line per root with what it read back; with ``--error ROOT``, prints the error a write there gives."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

UTC = dt.timezone.utc


def at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 5, 1, 9, minute, tzinfo=UTC)


#: Per kind: its write options, its rows and schema, two appends' worth (the second commits on a
#: store that exists), and the columns read back.
KINDS: dict[str, tuple[dict[str, str], str, list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {
    "keyvalue": ({}, "key string, value bigint", [("a", 1), ("b", 2)], [("a", 10)]),
    "timestamped": (
        {}, "key string, value double, timestamp timestamp",
        [("EUR", 1.1, at(1)), ("GBP", 1.2, at(2))], [("EUR", 1.3, at(3))],
    ),
    "versioned": (
        {"historyRetention": "1 day"}, "key string, value double, timestamp timestamp",
        [("EUR", 1.1, at(1)), ("GBP", 1.2, at(2))], [("EUR", 1.3, at(3))],
    ),
    "window": (
        {"windowSize": "5 minutes", "retention": "1 day"},
        "key string, window_start timestamp, value bigint",
        [("clicks", at(0), 3), ("views", at(5), 9)], [("clicks", at(5), 4)],
    ),
    "session": (
        {"retention": "1 hour"}, "key string, session_start timestamp, session_end timestamp, value int",
        [("u1", at(0), at(7), 2), ("u2", at(3), at(3), 1)], [("u1", at(10), at(12), 5)],
    ),
}  # fmt: skip


def plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC).isoformat()
    return value


def main(roots: list[str]) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store clouds test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    if roots[0] == "--error":  # a write that must fail: print what the user sees
        try:
            spark.createDataFrame([("a", 1)], "key string, value bigint").write.format(
                "state_store"
            ).option("root", roots[1]).mode("append").save("kv")
        except Exception as exc:  # noqa: BLE001 - printed for the test to judge
            print(json.dumps({"error": str(exc)}), flush=True)
        spark.stop()
        return
    for root in roots:
        seen: dict[str, Any] = {}
        for kind, (options, schema, first, second) in KINDS.items():
            for rows in (first, second):
                writer = (
                    spark.createDataFrame(rows, schema).write.format("state_store")
                    .option("root", root).option("kind", kind).option("numPartitions", "2")
                )  # fmt: skip
                for name, value in options.items():
                    writer = writer.option(name, value)
                writer.mode("append").save(kind)
            read = spark.read.format("state_store").option("root", root).load(kind)
            columns = [c for c in read.columns if c != "headers"]
            seen[kind] = sorted(
                ([plain(v) for v in row] for row in read.select(*columns).collect()), key=repr
            )
        print(json.dumps({"root": root, "kinds": seen}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
