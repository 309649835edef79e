"""The routes' edges found in review: a state directory written over an earlier one leaves no
stale checkpoint entry Kafka would trust; an application id is never a path; the Spark import's
record files are gone after an abort, also those of a task that failed midway."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from stores.errors import InvalidOptionError


def store(root: str) -> StoreTable:
    table = Catalog(root).create_store("s", "keyvalue", "string", "string", 1, partitioner="kafka")
    table.import_kafka_changelog(pa.table({
        "key": [b"a"], "value": [b"1"], "topic": ["t"], "partition": pa.array([0], pa.int32()),
        "offset": pa.array([0], pa.int64()), "timestamp": pa.array([1], pa.int64()),
    }))  # fmt: skip
    return Catalog(root).load("s")


def test_no_stale_checkpoint_entry_survives_a_rewrite(tmp_path: Path) -> None:
    """``ProcessorStateManager`` trusts a ``.checkpoint`` entry: one of an earlier state of the
    store, beside the state written now without an offset, would skip its restore."""
    task = tmp_path / "state" / "app" / "0_0"
    task.mkdir(parents=True)
    (task / ".checkpoint").write_text("0\n2\napp-s-changelog 0 99\napp-other-changelog 0 7\n")
    store(str(tmp_path / "w")).export_kafka_state_dir(
        str(tmp_path / "state"), "app", kafka_version="4.2.0", offsets={}
    )
    assert (task / ".checkpoint").read_text().splitlines() == ["0", "1", "app-other-changelog 0 7"]
    assert (task / "rocksdb" / "s").is_dir()


@pytest.mark.parametrize("app", ["../escaped", "a/b", "..", ""])
def test_an_application_id_is_never_a_path(tmp_path: Path, app: str) -> None:
    table = store(str(tmp_path / "w"))
    catalog = Catalog(str(tmp_path / "w"))
    with pytest.raises(InvalidOptionError, match="INVALID_APPLICATION_ID"):
        table.export_kafka_state_dir(str(tmp_path / "state"), app, kafka_version="4.3.1",
                                     offsets={})  # fmt: skip
    with pytest.raises(InvalidOptionError, match="INVALID_APPLICATION_ID"):
        catalog.read_kafka_state_dir(str(tmp_path / "state"), app, "s", "keyvalue")
    with pytest.raises(InvalidOptionError, match="INVALID_APPLICATION_ID"):
        catalog.import_kafka_state_dir(str(tmp_path / "state"), app, "s", "keyvalue", name="c")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "state").exists()


def test_a_failed_tasks_records_are_deleted_on_abort(tmp_path: Path) -> None:
    from pyspark.sql.types import StructType

    from datasource.kafka import CHANGELOG_SPARK_SCHEMA, KafkaChangelogWriter
    from datasource.options import StoreOptions

    schema = StructType.fromJson(CHANGELOG_SPARK_SCHEMA.jsonValue()).add("offset", "long")
    options = StoreOptions.parse({"store": "s", "root": str(tmp_path / "w"),
                                  "writeFrom": "kafkaChangelog", "kind": "keyvalue"})  # fmt: skip
    writer = KafkaChangelogWriter.plan(options, schema, False)
    batch = pa.RecordBatch.from_pydict({
        "key": [b"a"], "value": [b"1"], "topic": ["t"], "partition": pa.array([0], pa.int32()),
        "offset": pa.array([0], pa.int64()), "timestamp": pa.array([1], pa.int64()),
    })  # fmt: skip

    def failing() -> Iterator[pa.RecordBatch]:
        yield batch
        raise RuntimeError("executor lost")

    done = writer.write(iter([batch]))
    with pytest.raises(RuntimeError):
        writer.write(failing())
    assert len(list((tmp_path / "w").rglob("*-records-*"))) == 2
    writer.abort([done])
    assert list((tmp_path / "w").rglob("*-records-*")) == []
    assert not Catalog(str(tmp_path / "w")).exists("s")


def test_records_beyond_kafkas_types_are_named(tmp_path: Path) -> None:
    table = store(str(tmp_path / "w"))
    base = {"key": [b"b"], "value": [b"2"], "topic": ["t"], "offset": pa.array([5], pa.int64())}
    finer = pa.table({**base, "partition": pa.array([0], pa.int32()),
                      "timestamp": pa.array([1_000_500], pa.timestamp("us", "UTC"))})  # fmt: skip
    with pytest.raises(InvalidOptionError, match="INVALID_COLUMN_TYPE.*millisecond"):
        table.import_kafka_changelog(finer)
    wide = pa.table({**base, "partition": pa.array([2**31], pa.int64()),
                     "timestamp": pa.array([1], pa.int64())})  # fmt: skip
    with pytest.raises(InvalidOptionError, match="INVALID_PARTITION"):
        table.import_kafka_changelog(wide)
    assert table.log.latest_id() == Catalog(str(tmp_path / "w")).load("s").log.latest_id()
