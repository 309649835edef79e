"""Every Python block of the README runs as written, in order, in one namespace, over small
stores this test makes: an import or a call the README shows cannot break unnoticed.

Only where data goes is changed: each ``format("state_store")`` reads and writes the test's
warehouse (option ``root``, as Spark's workers fixed their default root when the session
started), ``/tmp/...`` and ``/chk/...`` paths land in the test's folder, and the working
directory is the test's, so ``./state-warehouse`` and ``$STATE_STORE_ROOT`` name that warehouse.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
UTC = dt.timezone.utc


def python_blocks() -> list[str]:
    """Every ```python block of the README, in order."""
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.MULTILINE | re.DOTALL)


def in_test_folders(block: str, root: str, folder: Path) -> str:
    """The block with its data in the test's warehouse and folder."""
    block = block.replace('format("state_store")', f'format("state_store").option("root", {root!r})')
    return re.sub(r'"/(tmp|chk)/', lambda m: f'"{folder}/{m.group(1)}/', block)


def at(hour: int, minute: int = 0) -> dt.datetime:
    return dt.datetime(2024, 5, 1, hour, minute, tzinfo=UTC)


def test_every_name_the_readme_imports_is_what_it_names() -> None:
    """Each ``from X import a, b`` the README writes (in a block or inline) gives objects, not
    submodules that share a name with them (``from datasource import asof_join`` once did)."""
    import importlib
    import types

    text = README.read_text()
    found = re.findall(r"from ([a-z_][\w.]*) import \(([^)]*)\)", text)
    found += re.findall(r"from ([a-z_][\w.]*) import (\w[\w, ]*)", text)
    names = [(module, name.strip()) for module, group in found for name in group.split(",")]
    names = [(m, n) for m, n in names if n]
    assert ("datasource", "asof_join") in names and ("pyspark_state_store", "DefaultSource") in names
    for module, name in names:
        value = getattr(importlib.import_module(module), name)
        assert not isinstance(value, types.ModuleType), f"from {module} import {name}: a module"


@pytest.mark.spark
def test_every_python_block_of_the_readme_runs(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from catalog import Catalog
    from stores import VersionedRecord

    monkeypatch.chdir(tmp_path)
    root = str(tmp_path / "state-warehouse")
    monkeypatch.setenv("STATE_STORE_ROOT", root)  # the driver's default, as the workers' is not
    rates_df = spark.createDataFrame(
        [("EUR", 1.0712, at(9)), ("EUR", 1.0735, at(10)), ("EUR", 1.0698, at(11)),
         ("GBP", 1.2480, at(9, 30)), ("GBP", 1.2511, at(10, 45)), ("JPY", 0.00641, at(10, 15))],
        "key string, value double, timestamp timestamp",
    )  # fmt: skip
    clicks_df = spark.createDataFrame(
        [("home", at(9), 3), ("home", at(9, 5), 5), ("cart", at(9), 1)],
        "key string, window_start timestamp, value bigint",
    )
    orders_df = spark.createDataFrame(
        [("o1", "EUR", at(10, 30)), ("o2", "JPY", at(9))],
        "order_id string, currency string, placed_at timestamp",
    )
    clicks_in = tmp_path / "clicks_in"
    clicks_in.mkdir()
    (clicks_in / "0.json").write_text('{"key": "cart", "window_start": "2024-05-01T09:10:00Z", "value": 2}\n')
    events = spark.readStream.schema("key string, window_start timestamp, value bigint").json(
        str(clicks_in)
    )
    df = spark.createDataFrame([(1, "one")], "key bigint, value string")
    namespace: dict[str, Any] = {
        "spark": spark, "rates_df": rates_df, "clicks_df": clicks_df, "orders_df": orders_df,
        "events": events, "df": df,
    }  # fmt: skip
    blocks = python_blocks()
    assert len(blocks) >= 8 and any("from datasource import asof_join" in b for b in blocks)
    try:
        for block in blocks:
            exec(compile(in_test_folders(block, root, tmp_path), "README.md", "exec"), namespace)
            for query in spark.streams.active:  # the streaming block's query: run it, then stop
                query.processAllAvailable()
                query.stop()
    finally:
        for query in spark.streams.active:
            query.stop()

    catalog = Catalog(root)
    assert sorted(catalog.list()) == [
        "addresses", "clicks", "counts", "counts_copy", "counts_mirror", "counts_v2", "page_counts",
        "prices", "rates", "s",
    ]  # fmt: skip
    # Writes without Spark: two appends, the delete's tombstone, the overwrite's one row.
    prices = catalog.load("prices")
    assert [(r["key"], r["value"]) for r in prices.to_arrow().to_pylist()] == [("AAPL", 191.0)]
    assert [prices.log.read(c).operation for c in prices.log.ids()] == [
        "create", "append", "append", "append", "overwrite"
    ]  # fmt: skip
    assert sorted(r["key"] for r in catalog.load("counts_copy").to_arrow().to_pylist()) == [
        "alice", "bob", "carol"
    ]  # fmt: skip
    # Rescale and move: both stores on 3 partitions, the move's records and directories there.
    assert [catalog.load(n).spec.num_partitions for n in ("counts_copy", "counts_v2")] == [3, 3]
    plan = namespace["plan"]
    assert plan.num_partitions == 3 and sum(plan.rows_by_partition.values()) == 3
    assert (tmp_path / "tmp" / "clicks-v2-counts.parquet").exists()
    assert all(Path(d).parent == tmp_path / "tmp" / "kafka-state-v2" / "clicks-v2"
               for d in plan.task_dirs)  # fmt: skip
    assert set(namespace["new_records"].column("partition").to_pylist()) <= {0, 1, 2}
    # The erasure: ada gone from every commit, bob (a dry run) kept, the audit in the log.
    addresses = catalog.load("addresses")
    from catalog.kinds import Scan

    for version in (1, 2):  # the write's commit, and the erasure's
        kept = [r["key"] for p in range(addresses.spec.num_partitions)
                for b in addresses.read_partition(p, version, Scan(all_versions=True))
                for r in b.to_pylist()]  # fmt: skip
        assert kept == ["bob"]
    assert [r.operation for r in map(addresses.log.read, addresses.log.ids())][-1] == "erase"
    assert namespace["planned"].commit is None and namespace["planned"].commits == [1]
    mirror = {r["key"]: r["value"] for r in catalog.load("counts_mirror").to_arrow().to_pylist()}
    assert mirror == {"alice": 3, "bob": 5, "carol": 1}
    priced = sorted(tuple(r)[:4] for r in namespace["priced"].collect())
    naive = at(10, 30).replace(tzinfo=None), at(9).replace(tzinfo=None)  # collect()'s, in UTC
    assert priced == [("o1", "EUR", naive[0], 1.0735), ("o2", "JPY", naive[1], None)]
    assert namespace["changes"].isStreaming
    clicks = catalog.load("clicks").to_arrow().to_pylist()
    assert sorted((r["key"], r["value"]) for r in clicks) == [("cart", 1), ("cart", 2), ("home", 3),
                                                              ("home", 5)]  # fmt: skip
    assert [r["headers"] for r in clicks] == [[]] * 4
    answer = namespace["result"].get_only_partition_result().get_result()
    assert isinstance(answer, VersionedRecord) and answer.value == 1.0735
    reopened = namespace["TransactionalStore"].of(
        tmp_path / "tmp" / "tv", namespace["VersionedKeyValueStore"], history_retention_ms=300_000
    )
    try:
        assert reopened.committed_offset() is not None
        assert reopened.store.get(b"k", as_of=1000).value == b"v"  # committed, so durable
    finally:
        reopened.close()
