"""A slowly changing dimension (SCD type 2) in a versioned store: loaded from the rows a
warehouse keeps (key, value, valid_from, valid_to), its whole history queried in SQL, and
orders priced with the price that was valid when each was placed (an as-of join).

Runs on an embedded default: a warehouse folder on local disk (``./state-warehouse``, or
``$STATE_STORE_ROOT``), Spark in local mode, no servers.
"""

from __future__ import annotations

import datetime as dt
import os
import sys

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402

UTC = dt.timezone.utc


def at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2024, 5, day, hour, tzinfo=UTC)


def main() -> None:
    root = os.environ.get("STATE_STORE_ROOT", "./state-warehouse")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store scd2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    # The dimension as a warehouse keeps it: one row per version and its validity interval.
    # The lamp was withdrawn on the 6th (its last interval is closed, nothing follows).
    prices = spark.createDataFrame(
        [
            ("chair", 40.0, at(1), at(3)),
            ("chair", 45.0, at(3), None),
            ("lamp", 20.0, at(1), at(2)),
            ("lamp", 18.0, at(2), at(6)),
        ],
        "key string, value double, valid_from timestamp, valid_to timestamp",
    )
    (
        prices.write.format("state_store").option("root", root).option("store", "prices")
        .option("kind", "versioned").option("historyRetention", "365 days")
        .mode("overwrite").save()
    )  # fmt: skip
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW price_history USING state_store "
        f"OPTIONS (root '{root}', store 'prices', versions 'all')"
    )
    print("Price history:")
    for r in spark.sql(
        "SELECT key, value, valid_from, valid_to FROM price_history ORDER BY key, valid_from"
    ).collect():
        until = f"to {r.valid_to:%Y-%m-%d}" if r.valid_to else "(current)"
        print(f"  {r.key:6} {r.value:6.2f}  from {r.valid_from:%Y-%m-%d}  {until}")

    orders = spark.createDataFrame(
        [("o1", "chair", at(2, 12)), ("o2", "chair", at(4)), ("o3", "lamp", at(1, 6)),
         ("o4", "lamp", at(5)), ("o5", "lamp", at(7))],
        "order_id string, product string, placed timestamp",
    )  # fmt: skip
    orders.createOrReplaceTempView("orders")
    # As of each order's time: the version valid then (none for the withdrawn lamp on the 7th).
    priced = spark.sql(
        """
        SELECT o.order_id, o.product, h.value AS price
        FROM orders o LEFT JOIN price_history h
          ON h.key = o.product AND h.valid_from <= o.placed
         AND (h.valid_to IS NULL OR o.placed < h.valid_to)
        ORDER BY o.order_id
        """
    )
    print("Orders priced as of their time:")
    for r in priced.collect():
        print(f"  {r.order_id} {r.product:6} {r.price if r.price is not None else 'no price'}")
    spark.stop()


if __name__ == "__main__":
    main()
