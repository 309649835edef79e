"""``asof_join``: events joined with the version of their key valid at their time.

The referee is the store's Python API: Kafka's ``get(key, as_of)`` through IQv2
(``VersionedKeyQuery``), asked about every event.
"""

from __future__ import annotations

from typing import Any

import pytest

from catalog import Catalog
from datasource.asof import asof_join
from tests.asof_cases import EVENTS, VERSIONS, python_get

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def rates(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A warehouse with a versioned store ``rates`` (3 partitions) and a key-value ``plain``."""
    root = str(tmp_path_factory.mktemp("asof") / "warehouse")
    df = spark.createDataFrame(VERSIONS, "key string, value double, timestamp bigint")
    (
        df.write.format("state_store").option("root", root).option("store", "rates")
        .option("kind", "versioned").option("historyRetention", "7000")
        .option("segmentInterval", "1000").option("numPartitions", "3").mode("append").save()
    )  # fmt: skip
    plain = spark.createDataFrame([("a", 1.0)], "key string, value double")
    plain.write.format("state_store").option("root", root).option("store", "plain").mode(
        "append"
    ).save()
    return root


def answers(joined: Any, prefix: str = "") -> list[tuple[Any, Any, Any]]:
    """``(value, valid_from ms, valid_to ms)`` of each row (epoch ms computed by Spark)."""
    rows = joined.selectExpr(
        f"{prefix}value AS v", f"unix_millis({prefix}valid_from) AS f",
        f"unix_millis({prefix}valid_to) AS t",
    ).collect()  # fmt: skip
    return [(r.v, r.f, r.t) for r in rows]


@pytest.mark.parametrize("method", ["auto", "history", "lookups"])
def test_each_event_gets_what_get_as_of_answers(spark: Any, rates: str, method: str) -> None:
    events = spark.createDataFrame(
        [(i, key, t) for i, (key, t) in enumerate(EVENTS)], "id int, currency string, t bigint"
    ).repartition(3)  # several tasks, each with events of every store partition
    joined = asof_join(
        events, "rates", key="currency", timestamp="t", root=rates, prefix="r_", method=method
    )
    assert joined.columns == ["id", "currency", "t", "r_value", "r_valid_from", "r_valid_to"]
    ordered = joined.orderBy("id")
    got = dict(zip([r.id for r in ordered.select("id").collect()], answers(ordered, "r_")))
    expected = {i: python_get(rates, key, t) for i, (key, t) in enumerate(EVENTS)}
    assert got == expected
    # The cases are what they say (the referee could be wrong in the same way).
    assert expected[3] == (2.0, 2_000, 3_000) and expected[1] == (None, None, None)
    assert expected[10] == (5.0, 1_200, 2_500) and expected[12] == (None, None, None)
    assert expected[6] == (3.0, 3_000, None) and expected[13] == (None, None, None)


@pytest.mark.parametrize("method", ["history", "lookups"])
def test_a_store_with_kafkas_partitioner_joins_the_same(
    spark: Any, rates: str, method: str
) -> None:
    # Spark SQL has no murmur2 over bytes: the tasks compute Kafka's partition of each key
    # (catalog.partitioner.partitions_of) where a crc32 store gets it from Spark SQL.
    from catalog.partitioner import partition_of

    df = spark.createDataFrame(VERSIONS, "key string, value double, timestamp bigint")
    (
        df.write.format("state_store").option("root", rates).option("store", f"kafka_{method}")
        .option("kind", "versioned").option("historyRetention", "7000")
        .option("segmentInterval", "1000").option("numPartitions", "3")
        .option("partitioner", "kafka").mode("append").save()
    )  # fmt: skip
    assert Catalog(rates).load(f"kafka_{method}").spec.partitioner == "kafka"
    keys = {k.encode() for k, _, _ in VERSIONS}
    # The placements differ, so a join that looked in crc32's partition would miss keys.
    assert any(partition_of(k, 3, "kafka") != partition_of(k, 3) for k in keys)
    events = spark.createDataFrame(
        [(i, key, t) for i, (key, t) in enumerate(EVENTS)], "id int, currency string, t bigint"
    ).repartition(3)
    joined = asof_join(
        events, f"kafka_{method}", key="currency", timestamp="t", root=rates, method=method
    )
    ordered = joined.orderBy("id")
    assert ordered.columns == ["id", "currency", "t", "value", "valid_from", "valid_to"]
    got = dict(zip([r.id for r in ordered.select("id").collect()], answers(ordered)))
    assert got == {i: python_get(rates, key, t) for i, (key, t) in enumerate(EVENTS)}


def test_timestamp_columns_join_by_their_instant(spark: Any, rates: str) -> None:
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        events = spark.sql(
            "SELECT 1 AS id, 'a' AS key, timestamp_millis(3000) - INTERVAL 1 MICROSECOND AS "
            "timestamp UNION ALL SELECT 2, 'a', timestamp_millis(3000) "
            "UNION ALL SELECT 3, 'a', CAST(NULL AS TIMESTAMP)"
        )
        got = answers(asof_join(events, "rates", root=rates).orderBy("id"))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    # 2999.999 ms is still version 2.0's time; a null time joins nothing.
    assert got == [(2.0, 2_000, 3_000), (3.0, 3_000, None), (None, None, None)]
    # TIMESTAMP_NTZ is read as UTC wall time (in this UTC session, the same instants).
    ntz = events.selectExpr("id", "key", "CAST(timestamp AS TIMESTAMP_NTZ) AS timestamp")
    assert answers(asof_join(ntz, "rates", root=rates).orderBy("id")) == got


def test_bad_input_is_refused_with_a_code_that_names_it(spark: Any, rates: str) -> None:
    events = spark.createDataFrame([("a", 1_000)], "currency string, t bigint")
    with pytest.raises(Exception, match=r"\[MISSING_COLUMN\].*key='key'.*currency, t"):
        asof_join(events, "rates", timestamp="t", root=rates)
    with pytest.raises(Exception, match=r"\[MISSING_COLUMN\].*timestamp='when'"):
        asof_join(events, "rates", key="currency", timestamp="when", root=rates)
    with pytest.raises(Exception, match=r"\[NOT_VERSIONED\].*store 'plain' is a keyvalue"):
        asof_join(events, "plain", key="currency", timestamp="t", root=rates)
    with pytest.raises(Exception, match=r"\[STORE_NOT_FOUND\].*'ratez'.*did you mean 'rates'"):
        asof_join(events, "ratez", key="currency", timestamp="t", root=rates)
    numbers = spark.createDataFrame([(1, 1_000)], "currency int, t bigint")
    with pytest.raises(Exception, match=r"\[KEY_TYPE_MISMATCH\].*'currency' is int.*string"):
        asof_join(numbers, "rates", key="currency", timestamp="t", root=rates)
    texts = spark.createDataFrame([("a", "1000")], "currency string, t string")
    with pytest.raises(Exception, match=r"\[TIMESTAMP_TYPE\].*'t' is string"):
        asof_join(texts, "rates", key="currency", timestamp="t", root=rates)
    clash = spark.createDataFrame([("a", 1_000, 1.0)], "key string, t bigint, value double")
    with pytest.raises(Exception, match=r"\[COLUMN_EXISTS\].*'value'.*prefix"):
        asof_join(clash, "rates", timestamp="t", root=rates)
    with pytest.raises(Exception, match=r"\[ASOF_METHOD\].*'fast'.*'auto', 'history'"):
        asof_join(events, "rates", key="currency", timestamp="t", root=rates, method="fast")


@pytest.mark.parametrize("method", ["history", "lookups"])
def test_events_keep_their_order_within_their_spark_partition(
    spark: Any, rates: str, method: str
) -> None:
    # Events in no order of key or time, two Spark partitions: each task yields its events
    # in the order it was given them (no orderBy here).
    import random

    shuffled = [(i, key, t) for i, (key, t) in enumerate(EVENTS * 5)]
    random.Random(7).shuffle(shuffled)
    events = spark.createDataFrame(shuffled, "id int, currency string, t bigint").coalesce(2)
    given = [r.id for r in events.collect()]
    joined = asof_join(events, "rates", key="currency", timestamp="t", root=rates, method=method)
    rows = joined.selectExpr(
        "id", "currency", "t", "value AS v", "unix_millis(valid_from) AS f",
        "unix_millis(valid_to) AS u",
    ).collect()  # fmt: skip
    assert [r.id for r in rows] == given
    assert [(r.v, r.f, r.u) for r in rows] == [python_get(rates, r.currency, r.t) for r in rows]


def test_keys_spark_sql_cannot_partition_are_partitioned_by_the_tasks(
    spark: Any, rates: str
) -> None:
    # Double keys have no Spark SQL partition expression: each task hashes them itself.
    versions = spark.createDataFrame(
        [(0.5, "half", 1_000), (0.5, "half'", 2_000), (2.0, "two", 1_500)],
        "key double, value string, timestamp bigint",
    )
    (
        versions.write.format("state_store").option("root", rates).option("store", "by_double")
        .option("kind", "versioned").option("historyRetention", "1 day")
        .option("numPartitions", "4").mode("append").save()
    )  # fmt: skip
    events = spark.createDataFrame(
        [(1, 0.5, 1_500), (2, 0.5, 2_000), (3, 2.0, 1_499), (4, 2.0, 9_000), (5, 3.0, 9_000)],
        "id int, key double, timestamp bigint",
    ).repartition(2)
    for method in ("history", "lookups"):
        joined = asof_join(events, "by_double", root=rates, method=method).orderBy("id")
        assert answers(joined) == [
            ("half", 1_000, 2_000), ("half'", 2_000, None), (None, None, None),
            ("two", 1_500, None), (None, None, None),
        ]  # fmt: skip
