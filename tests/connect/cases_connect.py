"""The README's features through Spark Connect (``SparkSession.builder.remote("local[2]")``).

Serverless and shared clusters speak Spark Connect: the client has no ``SparkContext`` and the
data source, the UDFs and ``foreachBatch`` run in the server's Python workers. This module
starts its own local Connect server (one per process, and not beside a classic session), so
the suite runs it in a subprocess of its own per Spark line (``tests/lines``); its name keeps
pytest from collecting it with the rest.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from datasource.spark_features import ADMISSION_CONTROL
from tests.conftest import spark_environment

UTC = dt.timezone.utc
RATES = [
    ("EUR", 1.0712, dt.datetime(2024, 5, 1, 9, 0, tzinfo=UTC)),
    ("EUR", 1.0735, dt.datetime(2024, 5, 1, 10, 0, tzinfo=UTC)),
    ("EUR", 1.0698, dt.datetime(2024, 5, 1, 11, 0, tzinfo=UTC)),
    ("GBP", 1.2480, dt.datetime(2024, 5, 1, 9, 30, tzinfo=UTC)),
]


#: A Spark Connect server: a classic session with Connect's plugin, on a port the system picks
#: (port 0), which it prints once it serves; it stops when its standard input closes.
SERVER = """
import sys
from pyspark.sql import SparkSession

spark = (
    SparkSession.builder.master("local[2]").appName("state_store connect server")
    .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
    .config("spark.connect.grpc.binding.address", "127.0.0.1")
    .config("spark.connect.grpc.binding.port", "0")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.shuffle.partitions", "4")
    .getOrCreate()
)
service = getattr(spark._jvm, "org.apache.spark.sql.connect.service.SparkConnectService$")
print(getattr(service, "MODULE$").localPort(), flush=True)
sys.stdin.read()
spark.stop()
"""


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark Connect client (no JVM in this process) of a server in a process of its own, as
    a serverless cluster serves a notebook."""
    spark_environment()
    from pyspark.sql import SparkSession

    log = tmp_path_factory.mktemp("connect") / "server.log"
    with open(log, "w") as errors:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=errors, text=True,
        )  # fmt: skip
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()  # printed once the server serves
        assert port.isdigit(), f"the Connect server did not start:\n{log.read_text()[-5000:]}"
        session = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        assert not hasattr(session, "_jsc")  # a Connect client
        yield session
        session.stop()
    finally:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.close()
        server.wait(timeout=120)
        server.stdout.close()


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "warehouse")


def _rates(connect: Any, root: str, name: str = "rates") -> None:
    frame = connect.createDataFrame(RATES, "key string, value double, timestamp timestamp")
    (
        frame.write.format("state_store").option("root", root).option("kind", "versioned")
        .option("historyRetention", "30 days").option("numPartitions", "2")
        .mode("append").save(name)
    )  # fmt: skip


def test_write_then_read_latest_as_of_and_history(connect: Any, root: str) -> None:
    _rates(connect, root)
    read = connect.read.format("state_store").option("root", root)
    latest = {r["key"]: r["value"] for r in read.load("rates").collect()}
    assert latest == {"EUR": 1.0698, "GBP": 1.2480}
    as_of = read.option("asOfTimestamp", "2024-05-01T10:30:00Z").load("rates").collect()
    assert {r["key"]: r["value"] for r in as_of} == {"EUR": 1.0735, "GBP": 1.2480}
    history = read.option("readHistory", "true").load("rates").collect()
    assert [(r["version"], r["operation"]) for r in history] == [(1, "create")]


def test_sql_view_and_a_coded_error(connect: Any, root: str) -> None:
    _rates(connect, root)
    connect.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW rates_then USING state_store OPTIONS (store 'rates', "
        f"root '{root}', asOfTimestamp '2024-05-01T09:45:00Z')"
    )
    rows = connect.sql("SELECT key, value FROM rates_then ORDER BY key").collect()
    assert [(r["key"], r["value"]) for r in rows] == [("EUR", 1.0712), ("GBP", 1.2480)]
    with pytest.raises(Exception, match=r"\[STORE_NOT_FOUND\].*'nowhere'"):
        connect.read.format("state_store").option("root", root).load("nowhere").collect()


def test_asof_join(connect: Any, root: str) -> None:
    from datasource import asof_join

    _rates(connect, root)
    orders = connect.createDataFrame(
        [("o1", "EUR", dt.datetime(2024, 5, 1, 10, 30, tzinfo=UTC)),
         ("o2", "GBP", dt.datetime(2024, 5, 1, 9, 0, tzinfo=UTC))],
        "id string, currency string, placed_at timestamp",
    )  # fmt: skip
    priced = asof_join(orders, "rates", key="currency", timestamp="placed_at", root=root,
                       prefix="rate_")  # fmt: skip
    got = {r["id"]: (r["rate_value"], r["rate_valid_from"]) for r in priced.collect()}
    assert got["o1"][0] == 1.0735 and got["o2"] == (None, None)


def test_sql_lookups(connect: Any, root: str) -> None:
    from datasource import register_sql

    _rates(connect, root)
    register_sql(connect, root=root)
    got = connect.sql("SELECT value FROM state_store_get('rates', 'EUR')").collect()
    assert [r["value"] for r in got] == [1.0698]
    connect.createDataFrame(
        [("o1", "EUR", dt.datetime(2024, 5, 1, 9, 30, tzinfo=UTC))],
        "id string, currency string, placed_at timestamp",
    ).createOrReplaceTempView("orders")
    joined = connect.sql(
        "SELECT id, value FROM state_store_asof_join(TABLE(orders), 'rates', 'currency', "
        "'placed_at')"
    ).collect()
    assert [(r["id"], r["value"]) for r in joined] == [("o1", 1.0712)]


def _add(folder: Path, name: str, rows: list[tuple[str, int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in rows))


def _tail(connect: Any, root: str, tmp_path: Path, name: str, **options: str) -> None:
    """Stream store ``counts`` with ``options`` into memory table ``name``, to the commit
    latest at the start (AvailableNow)."""
    query = (
        connect.readStream.format("state_store").option("root", root).options(**options)
        .load("counts").writeStream.format("memory").queryName(name)
        .option("checkpointLocation", str(tmp_path / f"cp-{name}"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    assert query.exception() is None


def test_write_stream_then_read_stream(connect: Any, root: str, tmp_path: Path) -> None:
    _add(tmp_path / "in", "0.json", [("a", 1), ("b", 2)])
    query = (
        connect.readStream.schema("key string, value long").json(str(tmp_path / "in"))
        .writeStream.format("state_store").option("root", root).option("store", "counts")
        .option("checkpointLocation", str(tmp_path / "cp-in"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    assert query.exception() is None
    _tail(connect, root, tmp_path, "counts_tail", startingVersion="1")
    rows = connect.sql("SELECT key, value FROM counts_tail").collect()
    assert sorted((r["key"], r["value"]) for r in rows) == [("a", 1), ("b", 2)]
    feed_options = {"readChangeFeed": "true", "startingVersion": "1"}
    if ADMISSION_CONTROL.available:  # Spark 4.2 on: a micro-batch per commit
        feed_options["maxCommitsPerTrigger"] = "1"
    else:  # 4.0 and 4.1 refuse it by name
        with pytest.raises(Exception, match=r"\[SPARK_TOO_OLD\] option 'maxCommitsPerTrigger'"):
            _tail(connect, root, tmp_path, "refused", maxCommitsPerTrigger="1")
    _tail(connect, root, tmp_path, "counts_feed", **feed_options)
    rows = connect.sql("SELECT _change_type, key, value FROM counts_feed").collect()
    assert sorted(tuple(r) for r in rows) == [("insert", "a", 1), ("insert", "b", 2)]


def test_upsert_into_with_a_transaction_id(connect: Any, root: str, tmp_path: Path) -> None:
    from datasource import upsert_into

    _add(tmp_path / "in", "0.json", [("a", 1), ("b", 2), ("a", 3)])
    counts = (
        connect.readStream.schema("key string, value long").json(str(tmp_path / "in"))
        .groupBy("key").count().withColumnRenamed("count", "value")
    )  # fmt: skip
    query = (
        counts.writeStream.outputMode("update")
        .foreachBatch(upsert_into("counts", root=root, txnAppId="connect-counts"))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    assert query.exception() is None
    read = connect.read.format("state_store").option("root", root).load("counts").collect()
    assert sorted((r["key"], r["value"]) for r in read) == [("a", 2), ("b", 1)]

