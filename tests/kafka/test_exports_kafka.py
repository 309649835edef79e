"""Exports equal restores, judged by Kafka Streams 4.3.1 itself (issue 37): for every kind, a
store's exported changelog, restored by Kafka's own store (``ProcessorStateManager.restore``
into the store's restore callback: ``RocksDBStore``, ``RocksDBTimestampedStore``,
``RocksDBVersionedStore``, ``AbstractRocksDBSegmentedBytesStore.restoreAllInternal``), leaves
exactly the column families, byte for byte, of the state directory we export for it, and that
directory reads back as the store (store -> state directory -> store and store -> changelog ->
Kafka restore -> state directory are identities).

The stores keep a retention short enough that their reads have expired rows whose segments
are still live: those are in neither (a restore observes the stream time of the records it
restores and hides or drops them; an instance started on a directory observes none).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.kafka import export_partition
from catalog.kafka.export_dir import write_state_dir
from catalog.kafka.state_dir import read_state_dir
from stores.bytes.foreign import open_foreign
from stores.bytes.rocksdb import column_families_at
from stores.versioned.changelog import changelog_rows
from tests.catalog.kafka.test_state_dir import SHORT, build, canonical, own_reads, typed
from tests.kafka.harness import KafkaHarness

#: Kafka's variant -> ours (``tests.catalog.kafka.test_state_dir.VARIANTS``) and Kafka's params.
SEGMENTS = {"segmentIntervalMs": 1000}
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "key_value": ("keyvalue", {}),
    "timestamped": ("timestamped", {}),
    "timestamped_headers": ("timestamped-headers", {}),
    "versioned": ("versioned", {"historyRetentionMs": SHORT, **SEGMENTS}),
    "window": ("window", {"retentionMs": SHORT, "windowSizeMs": 100, **SEGMENTS}),
    "timestamped_window": (
        "window-timestamped", {"retentionMs": SHORT, "windowSizeMs": 100, **SEGMENTS}
    ),
    "timestamped_window_headers": (
        "window-timestamped-headers", {"retentionMs": SHORT, "windowSizeMs": 100, **SEGMENTS}
    ),
    "session": ("session", {"retentionMs": SHORT, **SEGMENTS}),
    "session_headers": ("session-headers", {"retentionMs": SHORT, **SEGMENTS}),
}
APP = "app"


def harness_records(table: Any, partition: int) -> list[dict[str, Any]]:
    """Partition ``partition`` of the store's exported changelog, as the harness takes records."""
    snapshot = table.log.latest_id()
    rows = [
        row
        for batch in export_partition(table, partition, snapshot, APP, "s")
        for row in batch.to_pylist()
    ]
    return [
        {
            "k": row["key"].hex(),
            "v": None if row["value"] is None else row["value"].hex(),
            "t": row["timestamp"],
            "h": [[h["key"], None if h["value"] is None else h["value"].hex()]
                  for h in row["headers"]],
        }  # fmt: skip
        for row in rows
    ]


def directory_families(task: str, interval: int | None) -> list[list[Any]]:
    """Every entry of every column family of a task directory but ``offsets``, as the harness
    dumps Kafka's (``ColumnFamilyDump``): ``[segment id | None, family, key hex, value hex]``."""
    entries = []
    for root, _, files in sorted(os.walk(task)):
        if "CURRENT" not in files:
            continue
        name = os.path.basename(root)
        segment = None if interval is None else int(name.rsplit(".", 1)[1]) // interval
        with open_foreign(root) as (db, _):
            for family in column_families_at(root):
                if family == "offsets":
                    continue
                entries += [[segment, family, k.hex(), v.hex()] for k, v in db.items(family)]
    return sorted(entries, key=lambda e: (e[0] is not None, e[0] or 0, e[1], e[2], e[3]))


def history(entries: list[list[Any]]) -> list[dict[str, Any]]:
    """A versioned store's dumped rows as the records of the history they hold, tombstone
    entries included (``stores.versioned.changelog.changelog_rows``)."""
    keys = [bytes.fromhex(key) for _, _, key, _ in entries]
    values = [bytes.fromhex(value) for _, _, _, value in entries]
    rows = {"default": (pa.array(keys, pa.large_binary()), pa.array(values, pa.large_binary()))}
    return changelog_rows(rows, {}).drop_columns(["headers"]).to_pylist()


@pytest.mark.parametrize("variant", list(CASES))
def test_kafkas_restore_of_our_changelog_is_our_state_directory(
    kafka_harness: KafkaHarness, tmp_path: Path, variant: str
) -> None:
    ours, params = CASES[variant]
    catalog = Catalog(str(tmp_path / "warehouse"), cache_dir=str(tmp_path / "cache"))
    table = build(catalog, ours, retention=SHORT)
    app_dir = str(tmp_path / "state" / APP)
    write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.1", subtopology=0,
                    offsets={0: 1, 1: 2})  # fmt: skip
    interval = 1000 if table.spec.kind in ("window", "session") else None
    for partition in (0, 1):
        restored = kafka_harness.restore(variant, params, harness_records(table, partition))
        ours_on_disk = directory_families(os.path.join(app_dir, f"0_{partition}"), interval)
        assert ours_on_disk, "the partition holds rows"
        if variant != "versioned":
            assert ours_on_disk == restored.cfs, f"partition {partition}"
            continue
        # A versioned store's rows depend on the order its records came in (a late delete
        # lands in a segment row its later put already ended; in time order it is a
        # degenerate entry and the put the latest value): the same history, entry for entry,
        # tombstones included, which is what a later write of the application meets.
        assert history(ours_on_disk) == history(restored.cfs), f"partition {partition}"
    for state in read_state_dir(app_dir, "s", table.spec):
        assert canonical(typed(table, state)) == own_reads(table, state.partition)


#: The suffix Kafka's window and session changelog keys carry after the key.
SUFFIX = {"window": 12, "session": 16}


@pytest.mark.parametrize(
    "variant", ["key_value", "timestamped_headers", "versioned", "timestamped_window", "session"]
)
def test_a_rescaled_store_is_kafkas_restore_of_each_new_partition(
    kafka_harness: KafkaHarness, tmp_path: Path, variant: str
) -> None:
    """Rescale 2 -> 3: each new partition's state directory is what Kafka's restore builds of
    the records of the keys ``BuiltInPartitioner.partitionForKey`` sends there (Kafka's own
    murmur2), taken from both old partitions in time order: its stream time, and so what it
    expires, is theirs."""
    ours, params = CASES[variant]
    catalog = Catalog(str(tmp_path / "warehouse"), cache_dir=str(tmp_path / "cache"))
    table = build(catalog, ours, retention=SHORT)
    late(table)
    old = [record for p in (0, 1) for record in harness_records(table, p)]
    suffix = SUFFIX.get(table.spec.kind, 0)
    data_keys = [bytes.fromhex(r["k"])[: len(r["k"]) // 2 - suffix] for r in old]
    targets = kafka_harness.murmur2_partitions(data_keys, 3)
    assert table.rescale(3) is not None
    app_dir = str(tmp_path / "state" / APP)
    write_state_dir(catalog.load("s"), app_dir, store_name="s", kafka_version="4.3.1",
                    subtopology=0, offsets={})  # fmt: skip
    interval = 1000 if table.spec.kind in ("window", "session") else None
    kept = 0
    for q in range(3):
        mine = [r for r, t in zip(old, targets, strict=True) if t == q]
        mine.sort(key=lambda r: r["t"])  # stable: one key's records keep their order
        restored = kafka_harness.restore(variant, params, mine)
        task = os.path.join(app_dir, f"0_{q}")
        on_disk = directory_families(task, interval) if os.path.isdir(task) else []
        if variant == "versioned":
            assert history(on_disk) == history(restored.cfs), f"partition {q}"
        else:
            assert on_disk == served(restored.cfs, mine, table.spec.kind), f"partition {q}"
        kept += len(on_disk)
    # Regrouped, windows and sessions their old partition kept are expired by the new one's.
    assert kept < len(old) or table.spec.kind not in SUFFIX


def late(table: Any) -> None:
    """One more row, of key ``late`` at 20 s: its old partition's stream time and its new
    one's jump past every other row's retention, but the other partitions' do not."""
    kind, params = table.spec.kind, table.spec.params
    columns: dict[str, pa.Array] = {}
    at = pa.array([20_000], pa.int64())
    if kind in ("timestamped", "versioned") or params.get("timestamped"):
        columns["timestamp"] = at
    if kind == "window":
        columns["window_start"] = at
    if kind == "session":
        columns["session_start"] = columns["session_end"] = at
    if params.get("headers"):
        columns["headers"] = pa.array([b""], pa.binary())
    table.commit(table.stage(pa.array(["late"]), pa.array([1], pa.int64()), columns))


def served(entries: list[list[Any]], records: list[dict[str, Any]], kind: str) -> list[list[Any]]:
    """Of a restored window or session store's rows, those its reads serve: a restore writes
    every record of a live segment, but the store's reads hide a row whose segment time (a
    window's start, a session's end) is at or before the restore's stream time minus the
    retention (``AbstractRocksDBSegmentedBytesStore.fetch``: ``getActualFrom``). Our
    directory leaves those out (``catalog.kafka.export_dir``)."""
    at = {"window": 12, "session": 16}.get(kind)
    if at is None or not records:
        return entries

    def time_of(key_hex: str) -> int:
        key = bytes.fromhex(key_hex)
        return int.from_bytes(key[len(key) - at : len(key) - at + 8], "big", signed=True)

    stream_time = max(time_of(r["k"]) for r in records)
    return [e for e in entries if time_of(e[2]) > stream_time - SHORT]


def _compacted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What Kafka's log cleaner leaves of a compacted partition: each key's last record (a
    tombstone is kept until ``delete.retention.ms``), in offset order."""
    last = {r["k"]: i for i, r in enumerate(records)}
    return [r for i, r in enumerate(records) if last[r["k"]] == i]


@pytest.mark.parametrize(
    "variant", ["key_value", "timestamped_headers", "versioned", "timestamped_window", "session"]
)
def test_kafkas_restore_after_the_erasures_tombstones_holds_none_of_the_keys(
    kafka_harness: KafkaHarness, tmp_path: Path, variant: str
) -> None:
    """Issue 38: the changelog topic holds the store's records, then the tombstones of the
    erasure (``catalog.kafka.tombstones``). Kafka's restore of it serves none of the keys: a
    key-value, window or session store deletes them as it applies the tombstones, a versioned
    store's latest value is the tombstone; once the log cleaner ran (each key's last record),
    nothing of them is restored but a versioned store's tombstone entry (``RocksDBVersionedStore
    .doPut`` keeps a tombstone within the history retention: a key, no value). The state
    directory we export after the erasure holds none of them either."""
    ours, params = CASES[variant]
    catalog = Catalog(str(tmp_path / "warehouse"), cache_dir=str(tmp_path / "cache"))
    table = build(catalog, ours, retention=SHORT)
    before = {p: harness_records(table, p) for p in (0, 1)}
    erased = [b"k1", b"k2", b"k3", b"k4"]
    report = table.erase([k.decode() for k in erased], reason="test", application_id=APP,
                         kafka_store="s")  # fmt: skip
    stones = report.tombstones
    assert stones is not None and stones.num_rows
    kind = table.spec.kind

    def found(entries: list[list[Any]], with_values: bool = False) -> set[bytes]:
        """The erased keys some entry holds (a dump's keys are Kafka's: a versioned store's
        behind its segment id, a window's and session's before their suffix)."""
        keys = set()
        for entry in entries:
            if "etadata" in entry[1]:
                continue
            key = bytes.fromhex(entry[2])
            key = key[8:] if kind == "versioned" else key[: len(key) - SUFFIX.get(kind, 0)]
            if key in erased and not (with_values and _tombstones_only(entry)):
                keys.add(key)
        return keys

    app_dir = str(tmp_path / "state" / APP)
    write_state_dir(catalog.load("s"), app_dir, store_name="s", kafka_version="4.3.1",
                    subtopology=0, offsets={})  # fmt: skip
    interval = 1000 if kind in SUFFIX else None
    for p in (0, 1):
        mine = [{"k": r["key"].hex(), "v": None, "t": r["timestamp"], "h": []}
                for r in stones.to_pylist() if r["partition"] == p]  # fmt: skip
        topic = before[p] + mine
        # A tombstone is sent for a key the partition's restore holds, and only then.
        held = found(kafka_harness.restore(variant, params, before[p]).cfs)
        stoned = {bytes.fromhex(r["k"])[: len(r["k"]) // 2 - SUFFIX.get(kind, 0)] for r in mine}
        assert stoned == held
        restored = kafka_harness.restore(variant, params, topic).cfs
        cleaned = kafka_harness.restore(variant, params, _compacted(topic)).cfs
        if kind == "versioned":  # the latest value is the tombstone; history is the cleaner's
            latest = [e for e in restored if bytes.fromhex(e[2])[:8] == b"\xff" * 8]
            assert not found(latest)
            assert not found(cleaned, with_values=True)
        else:
            assert not found(restored) and not found(cleaned)
        task = os.path.join(app_dir, f"0_{p}")
        on_disk = directory_families(task, interval) if os.path.isdir(task) else []
        assert on_disk and not found(on_disk)
    assert any(found(kafka_harness.restore(variant, params, before[p]).cfs) for p in (0, 1))


def _tombstones_only(entry: list[Any]) -> bool:
    """Whether a versioned store's dumped row holds tombstones only (a key, no value)."""
    return all(h["value"] is None for h in history([entry]))
