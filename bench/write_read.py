"""Write/read throughput of a store against parquet, measured in the same Spark session.

    python bench/write_read.py --rows 1000000 --kind keyvalue   # or timestamped, versioned,
                                                               # window, session [--headers]

Rows: 16-byte string keys, 100-byte string values (+ the kind's time columns; with --headers,
two headers per row). Each
figure is rows/s; ratios are store / parquet, > 1 meaning the store is faster. A "full read"
materializes every column of every row (Spark's ``noop`` sink), so parquet cannot answer from
metadata. The first store read includes building the executors' local RocksDB caches.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])
)
sys.path.insert(0, str(REPO))

from pyspark.sql import DataFrame, SparkSession  # noqa: E402


def timed(label: str, action: Callable[[int], object], rows: int, repeat: int, results: dict[str, float]) -> None:
    """Run ``action(i)`` for i in range(repeat); record the median rate."""
    seconds = []
    for i in range(repeat):
        start = time.perf_counter()
        action(i)
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    results[label] = rows / median
    runs = ", ".join(f"{s:.2f}" for s in seconds)
    print(f"{label:<22} median {median:6.2f} s {rows / median:12,.0f} rows/s   (runs: {runs})", flush=True)


def full_read(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--kind",
        choices=["keyvalue", "timestamped", "versioned", "window", "session"],
        default="keyvalue",
    )
    parser.add_argument("--headers", action="store_true", help="header-aware store")
    parser.add_argument("--store-partitions", type=int, default=4)
    parser.add_argument("--input-partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = parser.parse_args()

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="state-store-bench-"))
    try:
        columns = [
            "lpad(hex(id), 16, '0') AS key",
            "concat(repeat('v', 84), lpad(cast(id AS string), 16, '0')) AS value",
        ]
        if args.kind in ("versioned", "timestamped"):
            columns.append("timestamp_millis(1714564800000 + id) AS timestamp")
        if args.kind == "window":
            columns.append("timestamp_millis(1714564800000 + (id % 1000) * 60000) AS window_start")
        if args.kind == "session":
            columns.append("timestamp_millis(1714564800000 + id) AS session_start")
            columns.append("timestamp_millis(1714564800000 + id + 5000) AS session_end")
        if args.headers:
            columns.append(
                "array(named_struct('key', 'trace', 'value', unhex(hex(id))), "
                "named_struct('key', 'source', 'value', cast(NULL AS binary))) AS headers"
            )
        df = spark.range(0, args.rows, 1, args.input_partitions).selectExpr(*columns).cache()
        df.count()  # generate once, outside the timings

        results: dict[str, float] = {}
        root = str(work / "warehouse")
        options = {"root": root, "kind": args.kind, "numPartitions": str(args.store_partitions)}
        if args.kind == "versioned":
            options["historyRetention"] = "1 day"
        if args.kind in ("window", "session"):
            options["retention"] = "30 days"
        if args.kind == "window":
            options["windowSize"] = "1 minute"
        if args.headers:
            options["headers"] = "true"

        def store_write(data: DataFrame, name: str) -> None:
            data.write.format("state_store").options(store=name, **options).mode("append").save()

        def store_read(name: str) -> None:
            full_read(spark.read.format("state_store").option("root", root).load(name))

        # Warm up both paths on a small store/file: Python workers, imports, JIT, class loading.
        small = df.limit(10_000)
        small.write.parquet(str(work / "warm.parquet"))
        full_read(spark.read.parquet(str(work / "warm.parquet")))
        store_write(small, "warmup")
        store_read("warmup")

        n, r = args.rows, args.repeat
        print(f"{n:,} rows, kind={args.kind}{' with headers' if args.headers else ''}, {args.store_partitions} store partitions, median of {r}")
        timed("parquet write", lambda i: df.write.parquet(str(work / f"pq{i}")), n, r, results)
        timed("store write", lambda i: store_write(df, f"bench{i}"), n, r, results)
        timed("parquet read", lambda i: full_read(spark.read.parquet(str(work / f"pq{i}"))), n, r, results)
        timed("store read (first)", lambda i: store_read(f"bench{i}"), n, r, results)
        timed("store read (second)", lambda i: store_read(f"bench{i}"), n, r, results)
        count = spark.read.format("state_store").option("root", root).load("bench0").count()
        assert count == n, f"store returned {count} rows, wrote {n}"

        print()
        print(f"store write / parquet write      {results['store write'] / results['parquet write']:5.2f}x  (target >= 1.0)")
        print(f"first read / parquet read        {results['store read (first)'] / results['parquet read']:5.2f}x  (target >= 0.5)")
        print(f"second read / parquet read       {results['store read (second)'] / results['parquet read']:5.2f}x  (target >= 1.0)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
