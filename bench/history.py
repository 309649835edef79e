"""A versioned store's whole history (versions=all) read through Spark, against parquet.

    python bench/history.py --keys 200000 --versions 5

Rows: ``keys x versions`` version rows (16-byte keys, 100-byte values, 4 store partitions,
local[2]). The store is written once; then a parquet file of the same rows (the history as a
table: key, value, valid_from, valid_to) is written and scanned. Each read is a full read
(Spark's ``noop`` sink), median of 3. The first store read after the write builds the
executors' caches; later ones read them. Ratios are parquet time / store time (goal of issue
13: second read >= 0.5x, first read >= 0.4x).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from _spark import full_read, seconds, session
from pyspark.sql import functions as F


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--versions", type=int, default=5)
    args = parser.parse_args()
    rows = args.keys * args.versions
    work = Path(tempfile.mkdtemp(prefix="bench-history-"))
    os.environ["STATE_STORE_CACHE_DIR"] = str(work / "cache")
    spark = session("bench history")
    try:
        df = spark.range(rows).select(
            F.format_string("key-%011d", F.col("id") % args.keys).alias("key"),
            F.format_string("value-%093d", F.col("id")).alias("value"),
            (F.lit(1_714_564_800_000) + (F.col("id") / args.keys).cast("long") * 60_000 + F.col("id") % 997)
            .alias("timestamp"),
        )  # fmt: skip
        root = str(work / "wh")
        write_s = seconds(lambda: df.write.format("state_store").option("root", root)
                          .option("kind", "versioned").option("historyRetention", "365 days")
                          .option("numPartitions", "4").mode("append").save("h"))  # fmt: skip
        history = spark.read.format("state_store").option("root", root).option("versions", "all")
        noop = full_read
        # Warm up the read path (Python workers, imports, the JVM's Arrow reader and its JIT)
        # on a twin store of the same size, as the parquet figure is a median of warm runs:
        # the first read below then measures what a first read does, computing the history.
        df.write.format("state_store").option("root", root).option("kind", "versioned") \
            .option("historyRetention", "365 days").option("numPartitions", "4") \
            .mode("append").save("warm")  # fmt: skip
        noop(history.load("warm"))
        first = seconds(lambda: noop(history.load("h")))
        store_runs = [seconds(lambda: noop(history.load("h"))) for _ in range(3)]
        count = history.load("h").count()
        history.load("h").write.parquet(str(work / "h.parquet"))
        parquet_runs = [seconds(lambda: noop(spark.read.parquet(str(work / "h.parquet"))))
                        for _ in range(3)]  # fmt: skip
        second, parquet = statistics.median(store_runs), statistics.median(parquet_runs)
        print(f"{rows:,} version rows written in {write_s:.2f} s; the history holds {count:,}")
        print(f"parquet read          median {parquet:.2f} s   (runs: {parquet_runs})")
        print(f"history read, first          {first:.2f} s   -> {parquet / first:.2f}x  (goal >= 0.4x)")
        print(f"history read, second  median {second:.2f} s   -> {parquet / second:.2f}x  (goal >= 0.5x)")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
