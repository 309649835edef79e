"""Write/read throughput of a store against parquet, measured in the same Spark session.

    python bench/write_read.py --rows 1000000 --kind keyvalue   # or timestamped, versioned,
                                                               # window, session [--headers]

Rows: those of ``bench/scale.py`` (``scale_rows``): 16-byte string keys, 100-byte string
values, the kind's time columns (with --headers, two headers per row). Keys reach each task
in ascending order, which the store's sorts find cheap; with --random-keys they are a hash of
the row number, in no order. Each
figure is rows/s; ratios are store / parquet, > 1 meaning the store is faster. A "full read"
materializes every column of every row (Spark's ``noop`` sink), so parquet cannot answer from
metadata. The first store read includes computing each partition's state from its changelog.

Two more peers measure the floor of any Python data source in the same session: a do-nothing
Arrow writer (``DataSourceArrowWriter`` that drops its batches) and a do-nothing Arrow source
(that yields ready-made batches of the store's schema): the store's ratios to them say how much
of a gap to parquet is the connector's own.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _spark import full_read, register_floor, session
from pyspark.sql import DataFrame
from scale_rows import spark_columns, store_options


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--kind",
        choices=["keyvalue", "timestamped", "versioned", "window", "session"],
        default="keyvalue",
    )
    parser.add_argument("--headers", action="store_true", help="header-aware store")
    parser.add_argument(
        "--random-keys", action="store_true",
        help="keys in no order (a hash of the row number) instead of ascending ones",
    )  # fmt: skip
    parser.add_argument("--store-partitions", type=int, default=4)
    parser.add_argument("--input-partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    args = parser.parse_args()

    spark = session("state_store bench")
    work = Path(tempfile.mkdtemp(prefix="state-store-bench-"))
    try:
        columns = spark_columns(args.kind, args.random_keys)
        if args.headers:
            columns.append(
                "array(named_struct('key', 'trace', 'value', unhex(hex(id))), "
                "named_struct('key', 'source', 'value', cast(NULL AS binary))) AS headers"
            )
        df = spark.range(0, args.rows, 1, args.input_partitions).selectExpr(*columns).cache()
        df.count()  # generate once, outside the timings

        results: dict[str, float] = {}
        root = str(work / "warehouse")
        options = {"root": root, **store_options(args.kind, args.store_partitions)}
        if args.headers:
            options["headers"] = "true"

        def store_write(data: DataFrame, name: str) -> None:
            data.write.format("state_store").options(store=name, **options).mode("append").save()

        def store_read(name: str) -> None:
            full_read(spark.read.format("state_store").option("root", root).load(name))

        # Warm up both paths on a small store/file: Python workers, imports, JIT, class loading.
        # Warm-ups at full size: the JVM compiles the paths that large batches take (its JIT),
        # which a small warm-up does not reach; every figure below is then of warm runs.
        df.write.parquet(str(work / "warm.parquet"))
        full_read(spark.read.parquet(str(work / "warm.parquet")))
        store_write(df, "warmup")
        store_read("warmup")
        register_floor(spark)
        df.write.format("floor_arrow").mode("append").save()
        full_read(spark.read.format("floor_arrow").options(rows=str(args.rows), parts="2").load())

        n, r = args.rows, args.repeat
        shape = (" with headers" if args.headers else "") + (", random keys" if args.random_keys else "")
        print(f"{n:,} rows, kind={args.kind}{shape}, {args.store_partitions} store partitions, median of {r}")
        timed("parquet write", lambda i: df.write.parquet(str(work / f"pq{i}")), n, r, results)
        timed("store write", lambda i: store_write(df, f"bench{i}"), n, r, results)
        timed("parquet read", lambda i: full_read(spark.read.parquet(str(work / f"pq{i}"))), n, r, results)
        timed("store read (first)", lambda i: store_read(f"bench{i}"), n, r, results)
        timed("store read (second)", lambda i: store_read(f"bench{i}"), n, r, results)
        stored = spark.read.format("state_store").option("root", root).load("bench0").schema
        ddl = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in stored.fields)
        floor = spark.read.format("floor_arrow").options(
            rows=str(n), parts=str(args.store_partitions), schema=ddl
        )
        timed("floor write", lambda i: df.write.format("floor_arrow").mode("append").save(), n, r, results)
        timed("floor read", lambda i: full_read(floor.load()), n, r, results)
        count = spark.read.format("state_store").option("root", root).load("bench0").count()
        assert count == n, f"store returned {count} rows, wrote {n}"

        print()
        print(f"store write / parquet write      {results['store write'] / results['parquet write']:5.2f}x  (target >= 1.0)")
        print(f"first read / parquet read        {results['store read (first)'] / results['parquet read']:5.2f}x  (target >= 0.5)")
        print(f"second read / parquet read       {results['store read (second)'] / results['parquet read']:5.2f}x  (target >= 1.0)")
        print(f"floor write / parquet write      {results['floor write'] / results['parquet write']:5.2f}x  (a Python Arrow writer that drops its rows)")
        print(f"floor read / parquet read        {results['floor read'] / results['parquet read']:5.2f}x  (a Python Arrow source of ready-made batches)")
        print(f"store write / floor write        {results['store write'] / results['floor write']:5.2f}x")
        print(f"second read / floor read         {results['store read (second)'] / results['floor read']:5.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
