"""A Python write (``StoreTable.append``, issue 39) of rows reads as a Spark write of the same
rows, for every kind: the same rules, the same records, the same store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from catalog import Catalog
from tests.catalog.kafka.test_rescale import everything
from tests.catalog.kafka.test_state_dir import VARIANTS
from tests.catalog.test_python_writes import FORMS, rows_of

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_python_append_reads_as_a_spark_write_of_the_same_rows(
    spark: Any, tmp_path: Path, variant: str
) -> None:
    kind, params = VARIANTS[variant]
    stores = {}
    for name in ("spark", "python"):
        catalog = Catalog(str(tmp_path / name), cache_dir=str(tmp_path / "cache"))
        stores[name] = catalog.create_store("s", kind, "string", "long", 2, partitioner="kafka",
                                            **params)  # fmt: skip
    # One write each of the same rows (a write applies its rows in time order for the kinds
    # that keep a time, so the rows go in one write on both sides; one task: a key-value
    # store's rows of one key in one order).
    rows = rows_of(variant, seed=1, n=400)
    spark.createDataFrame(rows).coalesce(1).write.format("state_store").option(
        "root", str(tmp_path / "spark")
    ).option("store", "s").mode("append").save()
    stores["python"].append(FORMS["pandas"](rows))
    spark_store = Catalog(str(tmp_path / "spark"), cache_dir=str(tmp_path / "cache")).load("s")
    assert spark_store.log.latest_id() == 2
    assert everything(stores["python"]) == everything(spark_store)
