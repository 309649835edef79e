"""A store rewritten to another partition count (``StoreTable.rescale``, issue 37): every kind
keeps what it reads, every key lands in ``BuiltInPartitioner.partitionForKey(key, n)``'s
partition, earlier commits read as before, and each new partition expires what Kafka's
restore of its records would (its stream time is theirs). Kafka's own restore judges the last
point in ``tests/kafka/test_exports_kafka.py``."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from catalog.commit import changelog_files
from catalog.kafka import rescale as rescaling
from catalog.partitioner import partitions_of
from catalog.table import Table
from stores.errors import CommitConflictError, InvalidOptionError
from tests.catalog.kafka.test_state_dir import SHORT, VARIANTS, build, canonical

ALL_VARIANTS = list(VARIANTS)


def everything(table: Table, snapshot: int | None = None) -> list[dict[str, Any]]:
    """Every row the store reads at ``snapshot`` (default: the latest), every version of a
    versioned store, in one order."""
    snapshot = table.log.latest_id() if snapshot is None else snapshot
    at = table.at_commit(snapshot)
    scan = at.kind.supports_as_of
    from catalog.kinds import Scan

    rows = [
        row
        for p in range(at.spec.num_partitions)
        for batch in at.read_partition(p, snapshot, Scan(all_versions=scan))
        for row in batch.to_pylist()
    ]
    return canonical(rows)


def placed(table: Table) -> dict[int, set[int]]:
    """Per partition, the partitions Kafka's partitioner gives the keys it holds."""
    snapshot = table.log.latest_id()
    found = {}
    for p in range(table.spec.num_partitions):
        keys = [r["key"].encode() for b in table.read_partition(p, snapshot) for r in b.to_pylist()]
        found[p] = set(partitions_of(keys, table.spec.num_partitions, "kafka").tolist())
    return found


@pytest.mark.parametrize("variant", ALL_VARIANTS)
@pytest.mark.parametrize("count", [5, 1])
def test_a_rescale_keeps_every_row_and_places_each_key_as_kafka(
    catalog: Catalog, variant: str, count: int
) -> None:
    table = build(catalog, variant)  # 2 partitions, nothing expired
    before, last = everything(table), table.log.latest_id()
    record = table.rescale(count)
    assert record is not None and record.id == last + 1 and record.operation == "overwrite"
    assert table.spec.num_partitions == count
    again = catalog.load("s")
    assert again.spec.num_partitions == count
    assert everything(again) == before
    assert all(found <= {p} for p, found in placed(again).items())
    assert everything(again, last) == before  # time travel: the commit before, as it was
    assert again.at_commit(last).spec.num_partitions == 2
    assert again.rescale(count) is None and again.log.latest_id() == last + 1
    back = again.rescale(2)
    assert back is not None and everything(catalog.load("s")) == before


@pytest.mark.parametrize(
    "variant", [v for v, (kind, _) in VARIANTS.items() if kind in ("window", "session")]
)
def test_each_new_partition_expires_by_its_own_stream_time(catalog: Catalog, variant: str) -> None:
    """Keys regrouped: a new partition's stream time is the largest time of the rows it
    receives (``AbstractRocksDBSegmentedBytesStore.restoreAllInternal`` advances it to the
    batch's latest segment time first), so rows that their old partition kept, a new one
    can expire."""
    table = build(catalog, variant, retention=SHORT, commits=2)
    before = everything(table)
    table.rescale(1)  # one partition: the stream time of both
    after = everything(catalog.load("s"))
    time = "window_start" if VARIANTS[variant][0] == "window" else "session_end"
    stream_time = max(row[time] for row in before)
    horizon = stream_time - pa.scalar(SHORT * 1000, pa.duration("us")).as_py()
    assert after == [row for row in before if row[time] > horizon]
    assert len(after) < len(before)


def test_rescaling_drops_the_kafka_offsets_held(catalog: Catalog) -> None:
    table = catalog.create_store("s", "keyvalue", "string", "long", 2, partitioner="kafka")
    records = pa.table({
        "key": [b"a", b"b"], "value": [b"\0" * 8, b"\0" * 8], "topic": ["app-s-changelog"] * 2,
        "partition": [0, 1], "offset": [7, 9], "timestamp": [1, 2],
    })  # fmt: skip
    table.import_kafka_changelog(records)
    assert table.kafka_offsets() == {("app-s-changelog", 0): 7, ("app-s-changelog", 1): 9}
    table.rescale(3)
    assert catalog.load("s").kafka_offsets() == {}


@pytest.mark.parametrize("count", [0, -1, 10_001, 2.5, "3", True, None])
def test_a_bad_count_is_refused_and_nothing_is_written(catalog: Catalog, count: Any) -> None:
    table = build(catalog, "keyvalue")
    last = table.log.latest_id()
    with pytest.raises(InvalidOptionError, match=r"INVALID_PARTITION_COUNT.*num_partitions is"):
        table.rescale(count)
    assert catalog.load("s").log.latest_id() == last


def test_a_store_not_placed_by_kafka_is_refused(catalog: Catalog) -> None:
    table = catalog.create_store("c", "keyvalue", "string", "long", 2)  # crc32
    table.commit(table.stage(pa.array(["a"]), pa.array([1], pa.int64())))
    with pytest.raises(InvalidOptionError, match=r"PARTITIONER_MISMATCH.*'crc32'"):
        table.rescale(3)
    assert catalog.load("c").log.latest_id() == 2


def test_a_write_meanwhile_refuses_the_rescale_and_its_files_go(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rescale rewrites the state it read: a commit landing meanwhile would be lost, so the
    rescale is refused (STORE_CHANGED) and deletes what it staged."""
    table = build(catalog, "versioned")
    real, writes = rescaling.partition_records, []

    def then_a_write(*args: Any, **kwargs: Any) -> pa.Table:
        if not writes:
            other = catalog.load("s")
            writes.append(other.commit(other.stage(
                pa.array(["late"]), pa.array([1], pa.int64()),
                {"timestamp": pa.array([9000], pa.int64())},
            )))  # fmt: skip
        return real(*args, **kwargs)

    monkeypatch.setattr(rescaling, "partition_records", then_a_write)
    with pytest.raises(CommitConflictError, match=r"STORE_CHANGED.*commit 6"):
        table.rescale(3)
    store = catalog.load("s")
    assert store.spec.num_partitions == 2 and store.log.latest_id() == 6
    listed = {f.path for c in range(1, 7) for f in store.log.read(c).files}
    on_disk = {f"changelog/{d}/{name}" for d, name in changelog_files(catalog.storage, "s")}
    assert on_disk == listed


def test_an_empty_store_rescales(catalog: Catalog) -> None:
    table: StoreTable = catalog.create_store(
        "e", "window", "string", "long", 2, partitioner="kafka", retention_ms=1000,
        window_size_ms=10,
    )  # fmt: skip
    assert table.rescale(4) is not None
    assert catalog.load("e").spec.num_partitions == 4 and catalog.load("e").to_arrow().num_rows == 0


def test_a_store_of_a_long_name_rescales(catalog: Catalog) -> None:
    """A store name may be longer than half a Kafka topic name: the rescale's records name
    a topic of their own."""
    name = "s" * 200
    table = catalog.create_store(name, "keyvalue", "string", "long", 2, partitioner="kafka")
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2], pa.int64())))
    assert table.rescale(3) is not None
    assert canonical(catalog.load(name).to_arrow().to_pylist()) == [
        {"key": "a", "value": 1}, {"key": "b", "value": 2}
    ]  # fmt: skip
