"""Quickstart: exchange rates in a versioned state store, read latest and *as of* a past time.

Runs on an embedded default: a warehouse folder on local disk (``./state-warehouse``, or
``$STATE_STORE_ROOT``), Spark in local mode, no servers.
"""

from __future__ import annotations

import datetime as dt
import os
import sys

# Spark's Python workers must run this interpreter (it has pyarrow and state-store installed).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

UTC = dt.timezone.utc


def main() -> None:
    root = os.environ.get("STATE_STORE_ROOT", "./state-warehouse")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store quickstart")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    def at(hour: int, minute: int = 0) -> dt.datetime:
        return dt.datetime(2024, 5, 1, hour, minute, tzinfo=UTC)

    rates = spark.createDataFrame(
        [
            ("EUR", 1.0712, at(9)),
            ("EUR", 1.0735, at(10)),
            ("EUR", 1.0698, at(11)),
            ("GBP", 1.2480, at(9, 30)),
            ("GBP", 1.2511, at(10, 45)),
            ("JPY", 0.00641, at(10, 15)),
        ],
        "key string, value double, timestamp timestamp",
    )

    # Each run starts the store afresh: overwrite replaces its contents in one commit.
    (
        rates.write.format("state_store")
        .option("root", root)
        .option("store", "rates")
        .option("kind", "versioned")
        .option("historyRetention", "30 days")
        .option("numPartitions", "4")
        .mode("overwrite")
        .save()
    )

    reader = spark.read.format("state_store").option("root", root)
    print("Latest rates:")
    reader.load("rates").orderBy("key").show(truncate=False)

    print("Rates as of 2024-05-01 10:30 UTC:")
    reader.option("asOfTimestamp", "2024-05-01T10:30:00Z").load("rates").orderBy("key").show(
        truncate=False
    )

    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW rates USING state_store "
        f"OPTIONS (store 'rates', root '{root}')"
    )
    print("Latest rates above 1.0, through a SQL view:")
    spark.sql("SELECT key, value FROM rates WHERE value > 1 ORDER BY key").show()
    spark.stop()


if __name__ == "__main__":
    main()
