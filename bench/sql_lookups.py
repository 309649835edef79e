"""SQL lookups (``datasource.sql_lookups``) against do-nothing UDTFs of the same shape.

    python bench/sql_lookups.py                      # 1000 keys x 100 versions, 200k events
    python bench/sql_lookups.py --events 1000000

A versioned store of ``keys`` 16-byte keys x ``versions`` versions (double values, one a minute
per key, 4 store partitions; history retention 1 day) and ``events`` events (a random key,
a random time within the history and up to 10 minutes past it; 8 Spark partitions, cached
before timing) on local[2], the shape of ``bench/asof_join.py``. Two queries, each into
Spark's ``noop`` sink, each against its floor:

- ``LATERAL state_store_get('rates', e.key, e.ts)`` (one ``get(key, as_of)`` per event, in
  each task's open partition caches) vs ``LATERAL noop_get('rates', e.key, e.ts)``: a Python
  UDTF with the same arguments, ``analyze`` and output columns (``value, valid_from,
  valid_to``) that yields one constant row per event;
- ``state_store_asof_join(TABLE(events), 'rates', 'key', 'ts')`` (events gathered, looked up
  per store partition with ``as_of_columns``) vs ``noop_asof_join``: the same TABLE argument,
  output columns and chunked output, with constants for the looked-up columns.

Both sides are regular Python UDTFs (not ``useArrow=True``, which Spark 4.3 makes 5x slower
per row; its vectorized ``@arrow_udtf`` takes neither ``LATERAL`` nor ``analyze``). Each query runs once untimed (the
partition caches are built then), then ``--repeat`` times interleaved; medians. Prints
lookups/s of each and the ratio store / floor (the goal of issue 25: >= 0.5x).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from _spark import seconds, session
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from datasource.sql_lookups import Pinned, register_sql

BASE_MS = 1_714_564_800_000
MINUTE_MS = 60_000


def register_floors(spark: object) -> None:
    """``noop_get`` and ``noop_asof_join``: the shapes of the two functions, doing nothing."""
    import datetime as dt

    from pyspark.sql.functions import udtf
    from pyspark.sql.types import StructType

    stamp = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    added = StructType.fromJson({"type": "struct", "fields": [
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "valid_from", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "valid_to", "type": "timestamp", "nullable": True, "metadata": {}},
    ]})  # fmt: skip

    class NoopGet:
        def __init__(self, analyze_result: Pinned) -> None:
            self.row = (1.0, stamp, None)

        @staticmethod
        def analyze(store, key, as_of=None):  # type: ignore[no-untyped-def]
            return Pinned(schema=added)

        def eval(self, store, key, as_of=None):  # type: ignore[no-untyped-def]
            yield self.row

    class NoopAsofJoin:
        chunk_rows = 1 << 14

        def __init__(self, analyze_result: Pinned) -> None:
            self.rows: list[tuple] = []

        @staticmethod
        def analyze(events, store, key, timestamp, prefix=None):  # type: ignore[no-untyped-def]
            return Pinned(schema=StructType([*events.dataType.fields, *added.fields]))

        def eval(self, row, *arguments):  # type: ignore[no-untyped-def]
            self.rows.append(tuple(row))
            if len(self.rows) >= self.chunk_rows:
                yield from self.flush()

        def terminate(self):  # type: ignore[no-untyped-def]
            yield from self.flush()

        def flush(self):  # type: ignore[no-untyped-def]
            rows, self.rows = self.rows, []
            for row in rows:
                yield (*row, 1.0, stamp, None)

    spark.udtf.register("noop_get", udtf(NoopGet, useArrow=False))  # type: ignore[attr-defined]
    spark.udtf.register("noop_asof_join", udtf(NoopAsofJoin, useArrow=False))  # type: ignore[attr-defined]


def noop(df: DataFrame) -> object:
    return df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-sql-lookups-"))
    os.environ["STATE_STORE_CACHE_DIR"] = str(work / "cache")
    root = str(work / "warehouse")
    spark = session("bench sql lookups", **{"spark.sql.shuffle.partitions": "8"})
    try:
        rows = args.keys * args.versions
        versions = spark.range(rows).select(
            F.format_string("key-%012d", F.col("id") % args.keys).alias("key"),
            (F.col("id") / 7).cast("double").alias("value"),
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
        events.createOrReplaceTempView("events")
        register_sql(spark, root=root)
        register_floors(spark)

        lateral = "SELECT e.*, r.* FROM events e, LATERAL {}('rates', e.key, e.ts) r"
        table = "SELECT * FROM {}(TABLE(events), 'rates', 'key', 'ts')"
        ways = {
            "get (LATERAL)": (lateral.format("state_store_get"), lateral.format("noop_get")),
            "asof_join (TABLE)": (
                table.format("state_store_asof_join"), table.format("noop_asof_join")
            ),
        }  # fmt: skip
        found = spark.sql(ways["get (LATERAL)"][0]).where("value IS NOT NULL").count()
        joined = spark.sql(ways["asof_join (TABLE)"][0]).where("value IS NOT NULL").count()
        assert found == joined > 0, (found, joined)  # the two forms agree
        queries = {q: spark.sql(q) for pair in ways.values() for q in pair}
        for df in queries.values():
            seconds(lambda df=df: noop(df))  # caches built, workers warm
        runs: dict[str, list[float]] = {q: [] for q in queries}
        for _ in range(args.repeat):
            for q, df in queries.items():
                runs[q].append(seconds(lambda df=df: noop(df)))
        print(f"{args.events:,} events, {args.keys:,} keys x {args.versions} versions; "
              f"{found:,} found a version")  # fmt: skip
        for name, (ours, floor) in ways.items():
            mine, base = statistics.median(runs[ours]), statistics.median(runs[floor])
            print(
                f"{name:18s} {args.events / mine:>12,.0f} lookups/s   do-nothing UDTF "
                f"{args.events / base:>12,.0f}/s   ratio {base / mine:.2f}x"
            )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
