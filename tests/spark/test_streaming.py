"""Streaming writes through the shared session: one commit per micro-batch, exactly once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from catalog import Catalog
from catalog.log.records import Txn
from datasource.spark_features import ADMISSION_CONTROL

pytestmark = pytest.mark.spark


def _add(folder: Path, name: str, rows: list[tuple[str, int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in rows))


def _run(spark: Any, base: Path, store: str, mode: str = "append", aggregate: bool = False) -> None:
    stream = spark.readStream.schema("key string, value long").json(str(base / "in"))
    if aggregate:
        stream = stream.groupBy("key").sum("value").withColumnRenamed("sum(value)", "value")
    query = (
        stream.writeStream.format("state_store")
        .option("root", str(base / "wh"))
        .option("store", store)
        .option("checkpointLocation", str(base / f"checkpoint-{store}"))
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None


def _rows(spark: Any, base: Path, store: str) -> list[tuple[str, int]]:
    df = spark.read.format("state_store").option("root", str(base / "wh")).load(store)
    return sorted((r["key"], r["value"]) for r in df.collect())


def test_each_micro_batch_is_one_commit_and_a_restart_adds_only_new_rows(
    spark: Any, tmp_path: Path
) -> None:
    _add(tmp_path / "in", "0.json", [("a", 1), ("b", 2)])
    _run(spark, tmp_path, "s")
    _add(tmp_path / "in", "1.json", [("c", 3), ("a", 10)])
    _run(spark, tmp_path, "s")  # restarted from its checkpoint
    assert _rows(spark, tmp_path, "s") == [("a", 10), ("b", 2), ("c", 3)]
    log = Catalog(str(tmp_path / "wh")).load("s").log
    records = [log.read(i) for i in log.ids()]
    assert [r.operation for r in records] == ["create", "append"]
    app = records[0].txn.app_id if records[0].txn else ""
    assert app.startswith("stream-") and [r.txn for r in records] == [Txn(app, 0), Txn(app, 1)]


def test_complete_mode_replaces_the_store_each_batch(spark: Any, tmp_path: Path) -> None:
    _add(tmp_path / "in", "0.json", [("a", 1), ("b", 2), ("a", 10)])
    _run(spark, tmp_path, "totals", mode="complete", aggregate=True)
    _add(tmp_path / "in", "1.json", [("a", 5)])
    _run(spark, tmp_path, "totals", mode="complete", aggregate=True)
    assert _rows(spark, tmp_path, "totals") == [("a", 16), ("b", 2)]
    log = Catalog(str(tmp_path / "wh")).load("totals").log
    assert [log.read(i).operation for i in log.ids()] == ["create", "overwrite"]


def _tail(
    spark: Any,
    base: Path,
    seen: list[tuple[int, str, str, int]],
    checkpoint: str = "tail-checkpoint",
    **options: str,
) -> Any:
    reader = spark.readStream.format("state_store").option("root", str(base / "wh"))
    for name, value in {"readChangeFeed": "true", **options}.items():
        reader = reader.option(name, value)

    def collect(batch: Any, batch_id: int) -> None:
        seen.extend((batch_id, r["_change_type"], r["key"], r["value"]) for r in batch.collect())

    query = (
        reader.load("src").writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(base / checkpoint))
        .trigger(availableNow=True).start()
    )  # fmt: skip
    query.awaitTermination()
    assert query.exception() is None
    return query


def test_a_store_streams_its_changes_and_resumes_from_its_checkpoint(
    spark: Any, tmp_path: Path
) -> None:
    table = Catalog(str(tmp_path / "wh")).create_store("src", "keyvalue", "string", "long")
    import pyarrow as pa

    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))  # 2
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([2, 3]), None))  # 3
    seen: list[tuple[int, str, str, int]] = []
    if ADMISSION_CONTROL.available:  # Spark 4.2 on
        _tail(spark, tmp_path, seen, startingVersion="2", maxCommitsPerTrigger="1")
        second = 1  # one commit per micro-batch
    else:  # 4.0 and 4.1: the option is refused by name; every new commit in one micro-batch
        with pytest.raises(Exception, match=r"\[SPARK_TOO_OLD\] option 'maxCommitsPerTrigger'"):
            _tail(spark, tmp_path, [], startingVersion="2", maxCommitsPerTrigger="1",
                  checkpoint="refused-checkpoint")  # fmt: skip
        _tail(spark, tmp_path, seen, startingVersion="2")
        second = 0
    assert sorted(seen) == sorted([
        (0, "insert", "a", 1),
        (second, "insert", "b", 3), (second, "update_postimage", "a", 2),
        (second, "update_preimage", "a", 1),
    ])  # fmt: skip
    table.commit(table.stage(pa.array(["b"]), pa.array([None], pa.int64()), None))  # 4
    seen.clear()
    _tail(spark, tmp_path, seen)  # restarted: only what came after its checkpoint
    assert seen == [(second + 1, "delete", "b", 3)]

