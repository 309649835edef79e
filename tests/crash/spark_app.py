"""A whole Spark application for the crash matrix, run in its own process group by the test:
it writes one append to a store, and a fault rule kills the whole group mid-commit."""

from __future__ import annotations

import sys


def main(root: str) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store crash test")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    df = spark.createDataFrame([("app", 1), ("b", 5)], "key string, value bigint")
    df.write.format("state_store").option("root", root).mode("append").save("s")
    print("the application was not killed", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
