"""Keys erased from Spark (issue 38): a DataFrame of keys written with option ``erase``
(``datasource.erase``) erases them from every commit, in one ``erase`` commit that
``readHistory`` shows with its audit record; bad input is refused by name."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.spark.test_end_to_end import read, write


def test_a_dataframe_of_keys_erases_them_from_every_version(spark: Any, warehouse: str) -> None:
    rows = [(f"c{i}", float(v), dt.datetime(2024, 5, 1, v, tzinfo=dt.timezone.utc))
            for i in range(6) for v in range(1, 4)]  # fmt: skip
    df = spark.createDataFrame(rows, "key string, value double, timestamp timestamp")
    write(df.repartition(3), warehouse, "people", kind="versioned", historyRetention="30 days",
          numPartitions="3")  # fmt: skip
    write(df.where("value = 1.0").repartition(2), warehouse, "people")
    keys = spark.createDataFrame([("c1",), ("c4",), ("nobody",)], "key string").repartition(2)
    write(keys, warehouse, "people", erase="true", eraseReason="GDPR request 7")
    for version in ("1", "2", "3"):
        seen = read(spark, warehouse, "people", versionAsOf=version, versions="all")
        assert {r["key"] for r in seen.collect()} == {"c0", "c2", "c3", "c5"}, version
    history = read(spark, warehouse, "people", readHistory="true").collect()
    latest = history[0]
    assert latest["operation"] == "erase" and latest["version"] == 3
    assert latest["operation_parameters"]["reason"] == "GDPR request 7"
    assert latest["operation_parameters"]["keys"] == "3"
    assert latest["operation_parameters"]["found"] == "2"


@pytest.mark.parametrize(
    ("schema", "options", "mode", "code"),
    [
        ("key string", {}, "append", "MISSING_OPTION"),
        ("key string", {"eraseReason": "r"}, "overwrite", "ERASE_NEEDS_APPEND"),
        ("id string", {"eraseReason": "r"}, "append", "MISSING_COLUMN"),
        ("key bigint", {"eraseReason": "r"}, "append", "COLUMN_TYPE_MISMATCH"),
    ],
)
def test_an_erasure_from_spark_refuses_bad_input_by_name(
    spark: Any, warehouse: str, schema: str, options: dict[str, str], mode: str, code: str
) -> None:
    write(spark.createDataFrame([("a", 1)], "key string, value bigint"), warehouse, "e")
    keys = spark.createDataFrame([("a" if "string" in schema else 1,)], schema)
    with pytest.raises(Exception, match=code):
        write(keys, warehouse, "e", mode=mode, erase="true", **options)
    assert len(read(spark, warehouse, "e", readHistory="true").collect()) == 1


def test_a_read_refuses_the_erase_options(spark: Any, warehouse: str) -> None:
    write(spark.createDataFrame([("a", 1)], "key string, value bigint"), warehouse, "r")
    with pytest.raises(Exception, match="apply to a write of the keys to erase"):
        read(spark, warehouse, "r", erase="true").collect()
