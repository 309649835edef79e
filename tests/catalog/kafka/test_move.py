"""A stopped application's store moved to a new ``application.id`` and partition count
(``Catalog.move_kafka_application``, issue 37), records to a file: the new application's task
directories read as the old state, each key in ``BuiltInPartitioner.partitionForKey``'s
partition, the records numbered as an empty topic numbers them; a dry run and every refusal
write nothing. The same move against a real broker and application: ``tests/kafka``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from catalog import Catalog
from catalog.kafka.export_dir import write_state_dir
from catalog.partitioner import partitions_of
from stores.errors import InvalidOptionError, StoreAlreadyExistsError
from tests.catalog.kafka.test_state_dir import VARIANTS, build, canonical
from tests.catalog.kafka.test_state_dir_errors import holding_the_lock

OLD, NEW = "old-app", "new-app"


def tree(root: Path) -> list[str]:
    """Every path under ``root``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture
def source(tmp_path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """A state directory of application ``old-app`` holding store ``s`` (versioned: history,
    tombstones), on 2 partitions, and what a read of it gives."""
    catalog = Catalog(str(tmp_path / "origin"), cache_dir=str(tmp_path / "origin-cache"))
    table = build(catalog, "versioned")
    write_state_dir(table, str(tmp_path / "old" / OLD), store_name="s", kafka_version="4.3.1",
                    subtopology=0, offsets={0: 10, 1: 20})  # fmt: skip
    yield str(tmp_path / "old"), {
        "latest": canonical(table.to_arrow().to_pylist()),
        "all": canonical(table.to_arrow(versions="all").to_pylist()),
    }


def move(catalog: Catalog, tmp_path: Path, **given: Any) -> Any:
    kind, params = VARIANTS["versioned"]
    options = {
        "to_state_dir": str(tmp_path / "new"), "to_application_id": NEW,
        "kafka_version": "4.3.1", "records": str(tmp_path / "records.parquet"),
        "num_partitions": 3, "key_type": "string", "value_type": "long", **params, **given,
    }  # fmt: skip
    return catalog.move_kafka_application(str(tmp_path / "old"), OLD, "s", kind, **options)


def test_a_move_rescales_and_writes_the_new_application(
    catalog: Catalog, tmp_path: Path, source: tuple[str, dict[str, Any]]
) -> None:
    _, expected = source
    steps: list[str] = []
    plan = move(catalog, tmp_path, progress=steps.append)
    assert steps == ["import", "rescale", "changelog", "state directory"]
    assert (plan.dry_run, plan.source_partitions, plan.num_partitions) == (False, 2, 3)
    table = catalog.load("s")
    assert table.spec.num_partitions == 3
    assert canonical(table.to_arrow(versions="all").to_pylist()) == expected["all"]
    records = pq.read_table(str(tmp_path / "records.parquet"))
    assert set(records.column("topic").to_pylist()) == {f"{NEW}-s-changelog"}
    keys = records.column("key")
    assert records.column("partition").to_pylist() == partitions_of(keys, 3, "kafka").tolist()
    counts = {p: records.column("partition").to_pylist().count(p) for p in range(3)}
    assert plan.offsets == {p: n - 1 for p, n in counts.items() if n}
    assert sum(plan.rows_by_partition.values()) == plan.rows > 0
    assert sorted(os.path.basename(d) for d in plan.task_dirs) == ["0_0", "0_1", "0_2"]
    read = catalog.read_kafka_state_dir(
        str(tmp_path / "new"), NEW, "s", "versioned", key_type="string", value_type="long",
        **VARIANTS["versioned"][1],
    )  # fmt: skip
    assert canonical(read.to_pylist()) == expected["latest"]


def test_a_dry_run_checks_and_writes_nothing(
    catalog: Catalog, tmp_path: Path, source: tuple[str, dict[str, Any]]
) -> None:
    before = tree(tmp_path)
    plan = move(catalog, tmp_path, dry_run=True)
    assert plan.dry_run and plan.num_partitions == 3 and plan.commits == ()
    assert plan.changelog_topic == f"{NEW}-s-changelog"
    assert sum(plan.rows_by_partition.values()) == plan.rows == len(source[1]["all"])
    assert tree(tmp_path) == before and not catalog.exists("s")


@pytest.fixture
def locked_target(tmp_path: Path) -> Iterator[None]:
    """The new application's directory locked by another process (a running instance)."""
    with holding_the_lock(str(tmp_path / "new" / NEW)):
        yield


def test_a_locked_target_is_refused(
    catalog: Catalog, tmp_path: Path, source: tuple[str, dict[str, Any]], locked_target: None
) -> None:
    before = tree(tmp_path)
    with pytest.raises(InvalidOptionError, match=r"\[STATE_DIR_LOCKED\]"):
        move(catalog, tmp_path)
    assert tree(tmp_path) == before and not catalog.exists("s")


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"num_partitions": 0}, r"\[INVALID_PARTITION_COUNT\]"),
        ({"num_partitions": "3"}, r"\[INVALID_PARTITION_COUNT\]"),
        ({"to_params": {"history_retention_ms": 5}}, r"\[PARAMS_MISMATCH\].*history_retention_ms"),
        ({"kafka_version": "2.8.0"}, r"\[UNSUPPORTED_KAFKA_VERSION\]"),
        ({"to_application_id": OLD, "to_state_dir": None}, r"\[STORE_DIR_EXISTS\]"),
        ({"records": "exists"}, r"\[RECORDS_EXIST\]"),
        ({"target_holds_it": True}, r"\[STORE_DIR_EXISTS\]"),
    ],
)
def test_what_a_move_refuses_it_refuses_before_writing(
    catalog: Catalog, tmp_path: Path, source: tuple[str, dict[str, Any]],
    given: dict[str, Any], error: str,
) -> None:  # fmt: skip
    if given.pop("target_holds_it", False):
        other = Catalog(str(tmp_path / "other"), cache_dir=str(tmp_path / "other-cache"))
        write_state_dir(build(other, "versioned"), str(tmp_path / "new" / NEW), store_name="s",
                        kafka_version="4.3.1", subtopology=0, offsets={})  # fmt: skip
    if given.get("records") == "exists":
        given["records"] = str(tmp_path / "there.parquet")
        Path(given["records"]).write_bytes(b"")
    if "to_state_dir" in given:
        given["to_state_dir"] = str(tmp_path / "old")
    before = tree(tmp_path)
    with pytest.raises(InvalidOptionError, match=error):
        move(catalog, tmp_path, **given)
    assert tree(tmp_path) == before and not catalog.exists("s")


def test_a_store_of_that_name_is_refused(
    catalog: Catalog, tmp_path: Path, source: tuple[str, dict[str, Any]]
) -> None:
    catalog.create_store("s", "keyvalue", "string", "long")
    with pytest.raises(StoreAlreadyExistsError, match="name="):
        move(catalog, tmp_path)
    assert not (tmp_path / "new").exists() and not (tmp_path / "records.parquet").exists()


def test_a_move_that_fails_midway_leaves_nothing(
    catalog: Catalog, tmp_path: Path, source: tuple[str, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from catalog.store_table import StoreTable

    def failing(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(StoreTable, "export_kafka_state_dir", failing)
    with pytest.raises(OSError, match="disk full"):
        move(catalog, tmp_path)
    assert not catalog.exists("s") and catalog.list() == []
    assert not (tmp_path / "records.parquet").exists() and not (tmp_path / "new").exists()
