"""Write/read throughput of a store against parquet, measured in the same Spark session.

    python bench/write_read.py --rows 1000000 --kind keyvalue

Rows: 16-byte string keys, 100-byte string values (+ a timestamp for versioned stores). Each
figure is rows/s; ratios are store / parquet, > 1 meaning the store is faster. A "full read"
materializes every column of every row (Spark's ``noop`` sink), so parquet cannot answer from
metadata. The first store read includes building the executors' local RocksDB caches.
"""

from __future__ import annotations

import argparse
import os
import shutil
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


def timed(label: str, action: Callable[[], object], rows: int, results: dict[str, float]) -> None:
    start = time.perf_counter()
    action()
    seconds = time.perf_counter() - start
    results[label] = rows / seconds
    print(f"{label:<28} {seconds:8.2f} s {rows / seconds:14,.0f} rows/s", flush=True)


def full_read(df: DataFrame) -> None:
    df.write.format("noop").mode("overwrite").save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--kind", choices=["keyvalue", "versioned"], default="keyvalue")
    parser.add_argument("--store-partitions", type=int, default=4)
    parser.add_argument("--input-partitions", type=int, default=2)
    args = parser.parse_args()

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store bench")
        .config("spark.ui.enabled", "false")
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
        if args.kind == "versioned":
            columns.append("timestamp_millis(1714564800000 + id) AS timestamp")
        df = spark.range(0, args.rows, 1, args.input_partitions).selectExpr(*columns).cache()
        df.count()  # generate once, outside the timings

        results: dict[str, float] = {}
        root = str(work / "warehouse")
        options = {"root": root, "store": "bench", "kind": args.kind}
        options["numPartitions"] = str(args.store_partitions)
        if args.kind == "versioned":
            options["historyRetention"] = "1 day"
        print(f"{args.rows:,} rows, kind={args.kind}, {args.store_partitions} store partitions")
        timed("parquet write", lambda: df.write.parquet(str(work / "pq")), args.rows, results)
        timed(
            "store write",
            lambda: df.write.format("state_store").options(**options).mode("append").save(),
            args.rows,
            results,
        )
        timed("parquet read", lambda: full_read(spark.read.parquet(str(work / "pq"))), args.rows, results)
        reader = spark.read.format("state_store").option("root", root).option("store", "bench")
        timed("store read (first)", lambda: full_read(reader.load()), args.rows, results)
        timed("store read (second)", lambda: full_read(reader.load()), args.rows, results)
        count = reader.load().count()
        assert count == args.rows, f"store returned {count} rows, wrote {args.rows}"

        print()
        print(f"store write / parquet write      {results['store write'] / results['parquet write']:5.2f}x  (target >= 1.0)")
        print(f"first read / parquet read        {results['store read (first)'] / results['parquet read']:5.2f}x  (target >= 0.5)")
        print(f"second read / parquet read       {results['store read (second)'] / results['parquet read']:5.2f}x  (target >= 1.0)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
