"""A whole versioned store as of an instant, through Spark, against delta-rs computing the
latest version per key at that instant from the same rows (a Delta table), in the same run.

    python bench/asof_read.py --keys 200000 --versions 5

The store holds ``keys x versions`` records (16-byte keys, 100-byte values, 4 partitions,
local[2]); the instant falls between the third and fourth version of every key. The store's
read is ``asOfTimestamp`` (Spark's ``noop`` sink, first read and median of later ones); the peer
is delta-rs (``deltalake``, DataFusion) answering ``SELECT key, last_value(value) ... WHERE
timestamp <= T GROUP BY key``-style SQL over a Delta table of the same records, median of 3.
Both results are counted and must agree. Ratios are peer time / store time (goal of issue 8:
>= 1.0x). A do-nothing Python Arrow source of the same row count (``_spark.register_floor``)
is timed too: its ratio to delta-rs is the most any Python data source can reach. Without
``deltalake`` installed (``pip install '.[bench]'``) the peer is skipped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _spark import full_read, register_floor, seconds, session
from pyspark.sql import functions as F

BASE_MS = 1_714_564_800_000
STEP_MS = 60_000


def delta_latest(path: str, as_of: int) -> tuple[float, int]:
    """delta-rs: the latest version per key at ``as_of`` (ms); (seconds, rows)."""
    from deltalake import DeltaTable, QueryBuilder

    start = time.perf_counter()
    table = DeltaTable(path)
    sql = (
        "SELECT key, value, ts FROM (SELECT key, value, ts, row_number() OVER "
        f"(PARTITION BY key ORDER BY ts DESC) AS n FROM t WHERE ts <= {as_of}) WHERE n = 1 "
        "AND value IS NOT NULL"
    )
    result = QueryBuilder().register("t", table).execute(sql).read_all()  # an Arrow table
    return time.perf_counter() - start, result.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = args.keys * args.versions
    work = Path(tempfile.mkdtemp(prefix="bench-asof-read-"))
    os.environ["STATE_STORE_CACHE_DIR"] = str(work / "cache")
    spark = session("bench as-of read")
    try:
        stamp = F.lit(BASE_MS) + (F.col("id") / args.keys).cast("long") * STEP_MS
        df = spark.range(rows).select(
            F.format_string("key-%011d", F.col("id") % args.keys).alias("key"),
            F.format_string("value-%093d", F.col("id")).alias("value"),
            F.timestamp_millis(stamp).alias("timestamp"),
        )
        root = str(work / "wh")
        # Warm up Python workers, imports and the JVM's paths for large batches (its JIT) on
        # another store of the same size, outside the timings: "first" is then the first read
        # of this store, not of the session.
        df.write.format("state_store").option("root", root).option("kind", "versioned") \
            .option("historyRetention", "365 days").option("numPartitions", "4") \
            .mode("append").save("warm")  # fmt: skip
        spark.read.format("state_store").option("root", root).option(
            "asOfTimestamp", str(BASE_MS)).load("warm").write.format("noop").mode("overwrite").save()
        df.write.format("state_store").option("root", root).option("kind", "versioned") \
            .option("historyRetention", "365 days").option("numPartitions", "4") \
            .mode("append").save("rates")  # fmt: skip
        as_of = BASE_MS + (args.versions // 2) * STEP_MS + STEP_MS // 2
        read = spark.read.format("state_store").option("root", root) \
            .option("asOfTimestamp", str(as_of))  # fmt: skip
        noop = full_read
        first = seconds(lambda: noop(read.load("rates")))
        later = statistics.median(seconds(lambda: noop(read.load("rates"))) for _ in range(args.repeat))
        count = read.load("rates").count()
        print(f"{rows:,} records ({args.keys:,} keys x {args.versions}); as of T: {count:,} rows")
        print(f"store as-of read, first            {first:.2f} s")
        print(f"store as-of read, later  median    {later:.2f} s")
        # The floor of any Python source: the same number of rows, from ready-made batches.
        register_floor(spark)
        floor_read = spark.read.format("floor_arrow").options(rows=str(count), parts="4")
        noop(floor_read.load())
        floor = statistics.median(seconds(lambda: noop(floor_read.load())) for _ in range(args.repeat))
        print(f"do-nothing Python source, median   {floor:.2f} s   (the same row count)")
        try:
            import deltalake
        except ImportError:
            print("delta-rs peer skipped: pip install deltalake (or '.[bench]')")
            return
        records = df.select("key", "value", (F.col("timestamp").cast("double") * 1000)
                            .cast("long").alias("ts")).toArrow()  # fmt: skip
        deltalake.write_deltalake(str(work / "delta"), records)
        runs = [delta_latest(str(work / "delta"), as_of) for _ in range(args.repeat)]
        assert all(n == count for _, n in runs), (runs, count)
        peer = statistics.median(t for t, _ in runs)
        print(f"delta-rs latest per key  median    {peer:.2f} s   ({runs[0][1]:,} rows)")
        print(f"ratio store / delta-rs, first:     {peer / first:.2f}x  (goal >= 1.0x)")
        print(f"ratio store / delta-rs, later:     {peer / later:.2f}x")
        print(f"ratio do-nothing source / delta-rs: {peer / floor:.2f}x  (the most a Python source reaches)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
