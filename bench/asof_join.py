"""As-of join of events against a versioned store, against the same join in Spark SQL.

    python bench/asof_join.py                         # 1000 keys x 100 versions, double values
    python bench/asof_join.py --value-bytes 100       # 100-byte string values instead
    python bench/asof_join.py --keys 10000 --versions 10    # the range join's best case
    python bench/asof_join.py --method lookups        # one of asof_join's methods, not auto

A versioned store of ``keys`` 16-byte keys x ``versions`` versions (double values, or strings of
``--value-bytes``; one per minute per key, 4 store partitions; history retention 1 day, so
every event is within it) and
``events`` events (a random key each, a random time within the history and up to 10 minutes
past it; 8 Spark partitions, cached before timing) on local[2]. The default shape is KIP-889's
case: few keys (currency pairs), each with a long history (a rate a minute), many events
(orders). Every value the join returns crosses from Python to the JVM, so wide values cost
``asof_join`` more than the JVM-only joins. Three ways to give each event
the value valid at its time, each run into Spark's ``noop`` sink:

- ``asof_join``: this library (``datasource.asof``), ``--method`` ``auto`` (the default;
  here it holds each partition's history in each Python worker's memory), ``history`` or
  ``lookups`` (batched, key-ordered RocksDB lookups in each partition's local cache);
- range join: ``events LEFT JOIN versions ON key = key AND valid_from <= t AND (valid_to IS NULL
  OR t < valid_to)`` over the store's ``versions=all`` table (``spark.read...option("versions",
  "all")``);
- window: events and versions unioned, ``last(value, ignorenulls)`` over a window by key
  ordered by time (the usual Spark SQL as-of join).

Each is run once untimed (caches and the versions table's columnar file are built then; that
first run is printed too), then ``--repeat`` times interleaved; medians. The three agree on how
many events find a version (checked). Prints events/s and the ratios asof_join / each
baseline (the goal of issue 8: >= 200k events/s, and faster than the Spark SQL join).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from _spark import full_read, seconds, session
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from datasource.asof import asof_join

BASE_MS = 1_714_564_800_000
MINUTE_MS = 60_000


def noop(df: DataFrame) -> Callable[[], object]:
    return lambda: full_read(df)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--value-bytes", type=int, default=0, help="string values of this size (0: doubles)"
    )
    parser.add_argument("--method", default="auto", choices=["auto", "history", "lookups"])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-asof-join-"))
    os.environ["STATE_STORE_CACHE_DIR"] = str(work / "cache")
    root = str(work / "warehouse")
    spark = session("bench asof join", **{"spark.sql.shuffle.partitions": "8"})
    try:
        rows = args.keys * args.versions
        versions = spark.range(rows).select(
            F.format_string("key-%012d", F.col("id") % args.keys).alias("key"),
            (F.format_string(f"value-%0{args.value_bytes - 6}d", F.col("id"))
             if args.value_bytes else (F.col("id") / 7).cast("double")).alias("value"),
            (F.lit(BASE_MS) + (F.col("id") / args.keys).cast("long") * MINUTE_MS
             + F.col("id") % 997).alias("timestamp"),
        )  # fmt: skip
        (
            versions.write.format("state_store").option("root", root).option("store", "rates")
            .option("kind", "versioned").option("historyRetention", "1 day")
            .option("numPartitions", "4").mode("append").save()
        )  # fmt: skip
        span_ms = (args.versions + 10) * MINUTE_MS
        events = (
            spark.range(args.events, numPartitions=8).select(
                F.col("id").alias("event_id"),
                F.format_string("key-%012d", (F.rand(1) * args.keys).cast("long")).alias("key"),
                F.timestamp_millis(F.lit(BASE_MS) + (F.rand(2) * span_ms).cast("long"))
                .alias("ts"),
            )
        ).cache()  # fmt: skip
        events.count()

        joined = asof_join(
            events, "rates", key="key", timestamp="ts", root=root, method=args.method
        )
        history = spark.read.format("state_store").option("root", root).option(
            "versions", "all"
        ).load("rates")
        e, h = events.alias("e"), history.alias("h")
        ranged = e.join(
            h,
            (F.col("e.key") == F.col("h.key")) & (F.col("h.valid_from") <= F.col("e.ts"))
            & (F.col("h.valid_to").isNull() | (F.col("e.ts") < F.col("h.valid_to"))),
            "left",
        ).select("e.*", "h.value", "h.valid_from", "h.valid_to")  # fmt: skip
        # Window: versions (with their start) and events in one frame, by key and time; each
        # event takes the last version started at or before it, if it has not ended.
        marks = history.select(
            "key", F.col("valid_from").alias("at"), F.lit(0).alias("order"),
            F.lit(None).cast("long").alias("event_id"), F.lit(None).cast("timestamp").alias("ts"),
            F.struct("value", "valid_from", "valid_to").alias("version"),
        ).unionByName(events.select(
            "key", F.col("ts").alias("at"), F.lit(1).alias("order"), "event_id", "ts",
            F.lit(None).cast(
                f"struct<value:{'string' if args.value_bytes else 'double'},"
                "valid_from:timestamp,valid_to:timestamp>"
            )
            .alias("version"),
        ))  # fmt: skip
        window = Window.partitionBy("key").orderBy("at", "order").rowsBetween(
            Window.unboundedPreceding, 0
        )
        found = F.last("version", ignorenulls=True).over(window)
        filled = marks.select("event_id", "key", "ts", "order", found.alias("v")).where(
            F.col("order") == 1
        )
        alive = F.col("v.valid_to").isNull() | (F.col("ts") < F.col("v.valid_to"))
        windowed = filled.select(
            "event_id", "key", "ts",
            *[F.when(alive, F.col(f"v.{c}")).alias(c) for c in ("value", "valid_from", "valid_to")],
        )  # fmt: skip

        ways = {"asof_join": joined, "range join": ranged, "window": windowed}
        matched = {
            name: df.where(F.col("value").isNotNull()).count() for name, df in ways.items()
        }
        assert len(set(matched.values())) == 1, matched  # the three agree

        first = {name: seconds(noop(df)) for name, df in ways.items()}
        runs: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.repeat):
            for name, df in ways.items():
                runs[name].append(seconds(noop(df)))
        rate = {name: args.events / statistics.median(t) for name, t in runs.items()}
        print(
            f"as-of join: {args.events} events, store of {args.keys} keys x {args.versions} "
            f"versions ({f'{args.value_bytes}-byte strings' if args.value_bytes else 'doubles'}"
            f", 4 partitions), local[2], median of {args.repeat}, method {args.method}; "
            f"{matched['asof_join']} events found a version"
        )
        for name in ways:
            print(
                f"  {name:10s} {rate[name]:>10,.0f} events/s   "
                f"(first run {args.events / first[name]:,.0f} events/s)"
            )
        for name in ("range join", "window"):
            print(f"  ratio asof_join / {name}: {rate['asof_join'] / rate[name]:.2f}x")
        print(f"  goal: >= 200,000 events/s ({rate['asof_join'] / 200_000:.2f}x of it)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
