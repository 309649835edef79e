"""Run by test_cluster.py in its own process: a local-cluster with two executor processes.

Writes a store from executors, then reads it in tasks on both executors, each of which has its
own local directory and so builds its own partition caches from the durable files; then runs an
as-of join whose lookups run on the executors. Prints one JSON line with what it saw (one
local-cluster for both: each costs three JVMs).
"""

from __future__ import annotations

import json
import os
import sys


def main(root: str) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("state_store cluster test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rows = [(f"k{i:03d}", i, 1_000 + i) for i in range(200)]
    df = spark.createDataFrame(rows, "key string, value bigint, timestamp bigint").repartition(4)
    (
        df.write.format("state_store")
        .option("root", root)
        .option("store", "spread")
        .option("kind", "versioned")
        .option("historyRetention", "1 day")
        .option("numPartitions", "8")
        .mode("append")
        .save()
    )

    def where(batch):  # type: ignore[no-untyped-def]
        rows = list(batch)
        local_dir = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0]
        has_cache = os.path.isdir(os.path.join(local_dir, "state_store_cache"))
        yield (os.getpid(), local_dir, has_cache, [r.key for r in rows])

    seen = (
        spark.read.format("state_store").option("root", root).load("spread").rdd.mapPartitions(where).collect()
    )
    # A header-aware session store, written and read by executors, then queried (IQv2) on the
    # driver, which materializes its own caches from the same durable files.
    sessions = spark.createDataFrame(
        [(f"u{i % 10}", 1_000 * i, 1_000 * i + 500, i, [("trace", bytearray([i]))]) for i in range(40)],
        "key string, session_start bigint, session_end bigint, value bigint, "
        "headers array<struct<key:string,value:binary>>",
    ).repartition(4)
    (
        sessions.write.format("state_store").option("root", root).option("kind", "session")
        .option("retention", "1 day").option("headers", "true").option("numPartitions", "4")
        .mode("append").save("sessions")
    )
    read_back = spark.read.format("state_store").option("root", root).load("sessions")
    session_rows = read_back.selectExpr("key", "value", "headers[0].value AS trace").collect()

    from catalog import Catalog, StateQueryRequest
    from stores import WindowRangeQuery

    result = Catalog(root).query(
        StateQueryRequest.in_store("sessions").with_query(WindowRangeQuery.with_key("u3"))
    )
    u3 = sorted(
        value
        for partition_result in result.get_partition_results().values()
        for _, value in partition_result.get_result()
    )
    # An as-of join whose lookups run on executors of their own: each builds the caches it
    # reads from the warehouse; nothing but the root comes from the driver.
    from datasource.asof import asof_join

    prices = [(f"k{i % 20:02d}", float(i), 1_000 * (i // 20)) for i in range(100)]
    (
        spark.createDataFrame(prices, "key string, value double, timestamp bigint").repartition(3)
        .write.format("state_store").option("root", root).option("store", "prices")
        .option("kind", "versioned").option("historyRetention", "1 day")
        .option("numPartitions", "4").mode("append").save()
    )  # fmt: skip
    events = spark.createDataFrame(
        [(i, f"k{i % 25:02d}", 250 * i) for i in range(100)], "id int, key string, timestamp bigint"
    ).repartition(4)
    joined = asof_join(events, "prices", root=root)
    join_pids = joined.rdd.map(lambda _: os.getpid()).distinct().collect()
    joined_rows = [(r.id, r.value) for r in joined.orderBy("id").collect()]
    print(
        json.dumps(
            {
                "join_rows": joined_rows,
                "join_pids": sorted(join_pids),
                "session_values": sorted(r.value for r in session_rows),
                "session_traces_match": all(r.trace == bytearray([r.value]) for r in session_rows),
                "u3_via_iq": u3,
                "pids": sorted({s[0] for s in seen}),
                "local_dirs": sorted({s[1] for s in seen}),
                "driver_pid": os.getpid(),
                "driver_local_dir": spark.sparkContext._jvm.org.apache.spark.util.Utils.getLocalDir(
                    spark.sparkContext._jsc.sc().conf()
                ),
                "caches_built": all(s[2] for s in seen),
                "keys": sorted(k for s in seen for k in s[3]),
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
