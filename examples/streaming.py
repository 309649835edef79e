"""Streaming: page views counted per user in 1-minute windows by a streaming query into a
window store, read back in SQL while the query runs, and the store's change feed.

Runs on an embedded default: a warehouse folder on local disk (``./state-warehouse``, or
``$STATE_STORE_ROOT``), Spark in local mode, no servers. The views are files a generator drops
into a folder, as a log shipper would.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

MINUTE = 60


def drop_views(folder: str, name: str, views: list[tuple[str, int]]) -> None:
    """Write one file of page views (user, epoch seconds), atomically as a shipper would."""
    tmp = os.path.join(folder, f".{name}")
    with open(tmp, "w") as f:
        f.writelines(json.dumps({"user": user, "ts": second}) + "\n" for user, second in views)
    os.replace(tmp, os.path.join(folder, name))


def main() -> None:
    root = os.environ.get("STATE_STORE_ROOT", "./state-warehouse")
    work = tempfile.mkdtemp(prefix="state-store-streaming-")
    incoming = os.path.join(work, "views")
    os.makedirs(incoming)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("state_store streaming")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from catalog import Catalog

    catalog = Catalog(root)
    if "page_views" in catalog.list():
        catalog.drop("page_views")  # each run starts afresh

    views = spark.readStream.schema("user string, ts long").json(incoming)
    counts = (
        views.withColumn("time", F.col("ts").cast("timestamp"))
        .groupBy(F.window("time", "1 minute").alias("w"), F.col("user"))
        .count()
        .select(
            F.col("user").alias("key"),
            F.col("w.start").alias("window_start"),
            F.col("count").alias("value"),
        )
    )
    # Complete mode: each micro-batch commits the whole aggregate, replacing the store's
    # contents atomically; readers see one micro-batch's result or the next, never a mix.
    query = (
        counts.writeStream.format("state_store")
        .option("root", root)
        .option("store", "page_views")
        .option("kind", "window")
        .option("windowSize", "1 minute")
        .option("retention", "1 day")
        .option("checkpointLocation", os.path.join(work, "checkpoint"))
        .outputMode("complete")
        .trigger(processingTime="1 second")
        .start()
    )
    drop_views(incoming, "0.json", [("ada", 0), ("ada", 10), ("bob", 20), ("ada", 70)])
    wait_for_commits(catalog, "page_views", 1)
    print("While the query runs, per user and minute:")
    show(spark.sql(latest_sql(spark, root)))

    drop_views(incoming, "1.json", [("bob", 30), ("cy", 75)])
    wait_for_commits(catalog, "page_views", 2)
    print("After more views arrived:")
    show(spark.sql(latest_sql(spark, root)))
    query.stop()

    changes = (
        spark.read.format("state_store").option("root", root)
        .option("readChangeFeed", "true").option("startingVersion", "2").load("page_views")
    )  # fmt: skip
    # Complete mode rewrites the whole aggregate each micro-batch, so its change feed reads as
    # deletes of what was there plus inserts of the new result.
    print("Its change feed (what the second micro-batch changed):")
    show(changes.select("_commit_version", "_change_type", "key", "window_start", "value")
         .orderBy("_commit_version", "key", "window_start", "_change_type"))  # fmt: skip
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


def latest_sql(spark: SparkSession, root: str) -> str:
    """(Re)define the view, then return the query. A view, like a DataFrame, reads the commit
    that was latest when Spark first planned it: define it again to see newer commits."""
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW page_views USING state_store "
        f"OPTIONS (root '{root}', store 'page_views')"
    )
    return "SELECT key, window_start, value FROM page_views ORDER BY key, window_start"


def wait_for_commits(catalog: object, store: str, micro_batches: int, timeout_s: float = 120) -> None:
    """Wait until the query has committed ``micro_batches`` non-empty micro-batches."""
    from catalog import Catalog

    assert isinstance(catalog, Catalog)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if store in catalog.list() and catalog.load(store).log.latest_id() >= micro_batches:
            return
        time.sleep(0.2)
    raise TimeoutError(f"the streaming query did not commit {micro_batches} batch(es) in time")


def show(df: object) -> None:
    for row in df.collect():  # type: ignore[attr-defined]
        print("  " + " | ".join(str(v) for v in row))


if __name__ == "__main__":
    main()
