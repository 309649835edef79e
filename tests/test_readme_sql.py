"""The README's SQL (its "Use" example and the SQL cookbook) runs as written, in order, over the
quickstart's ``rates`` store; only the warehouse root is added to each ``OPTIONS``/``WITH``."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark

README = Path(__file__).resolve().parent.parent / "README.md"
UTC = dt.timezone.utc


def sql_statements() -> list[str]:
    """Every statement of the README's ```sql blocks, in order, comments left out."""
    blocks = re.findall(r"^```sql\n(.*?)^```", README.read_text(), flags=re.MULTILINE | re.DOTALL)
    text = "\n".join(
        line for block in blocks for line in block.splitlines() if not line.strip().startswith("--")
    )
    return [s.strip() for s in text.split(";") if s.strip()]


def with_root(statement: str, root: str) -> str:
    """The statement reading the test's warehouse: ``root`` first in every option list."""
    statement = re.sub(r"\bOPTIONS \(", f"OPTIONS (root '{root}', ", statement)
    return re.sub(r"\bWITH \('", f"WITH ('root' = '{root}', '", statement)


def at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 5, 1, hour, minute, tzinfo=UTC)


def test_the_readme_sql_runs_and_says_what_it_shows(spark: Any, warehouse: str) -> None:
    rates = spark.createDataFrame(
        [("EUR", 1.0712, at(9)), ("EUR", 1.0735, at(10)), ("EUR", 1.0698, at(11)),
         ("GBP", 1.2480, at(9, 30)), ("GBP", 1.2511, at(10, 45)), ("JPY", 0.00641, at(10, 15))],
        "key string, value double, timestamp timestamp",
    )  # the quickstart's rates  # fmt: skip
    rates.write.format("state_store").option("root", warehouse).option("kind", "versioned") \
        .option("historyRetention", "30 days").option("numPartitions", "4").mode("append") \
        .save("rates")  # fmt: skip
    from datasource import register_sql

    register_sql(spark, root=warehouse)  # the README's Python line before its lookups
    spark.createDataFrame(
        [(1, "EUR", at(9, 30)), (2, "GBP", at(9)), (3, "JPY", at(10, 30)), (4, "EUR", at(11))],
        "id int, currency string, placed_at timestamp",
    ).createOrReplaceTempView("orders")
    statements = sql_statements()
    assert len(statements) >= 20 and any("CREATE TABLE" in s for s in statements)
    results: list[list[tuple[Any, ...]]] = []
    try:
        for statement in statements:
            rows = spark.sql(with_root(statement, warehouse)).collect()
            if statement.startswith("SELECT"):
                results.append([tuple(r) for r in rows])
    finally:
        spark.sql("DROP TABLE IF EXISTS fx")  # in the suite's own working directory
    (
        eur_latest, lateral, asof, use, side_by_side, eur_versions, after_insert, history, commit_1, changes, stores,
        fx_then, fx_eod,
    ) = results  # fmt: skip
    assert [r[0] for r in eur_latest] == [1.0698]  # value, valid_from, valid_to
    # Each order as of its time; GBP's at 9:00 is before its first version (nulls, kept).
    priced = sorted((r[0], r[-3]) for r in lateral)
    assert priced == [(1, 1.0712), (2, None), (3, 0.00641), (4, 1.0698)]
    assert sorted((r[0], r[-3]) for r in asof) == priced
    assert sorted(r[0] for r in use) == ["EUR", "GBP", "JPY"]
    assert side_by_side == [("EUR", 1.0698, 1.0735), ("GBP", 1.2511, 1.2480),
                            ("JPY", 0.00641, 0.00641)]  # fmt: skip
    assert [r[1] for r in eur_versions] == [1.0712, 1.0735, 1.0698]
    assert eur_versions[-1][3] is None and eur_versions[0][3] == eur_versions[1][2]
    assert [(r[0], r[1]) for r in after_insert] == [("CHF", 0.9105), ("EUR", 1.0698),
                                                    ("GBP", 1.2511), ("JPY", 0.00641)]  # fmt: skip
    assert [(r[0], r[2], r[3]) for r in history] == [(2, "append", 1), (1, "create", 6)]
    assert commit_1 == [(3,)]
    assert changes == [(2, "insert", "CHF", 0.9105)]
    assert [(r[0], r[1], r[6]) for r in stores] == [("rates", "versioned", 2)]
    assert fx_then == [("EUR", 1.0735), ("GBP", 1.2480), ("JPY", 0.00641)]
    assert fx_eod == [("CHF", 0.9105), ("EUR", 1.0698), ("GBP", 1.2511), ("JPY", 0.00641)]
