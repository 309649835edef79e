"""Kafka Streams state directories written from a store and read back (``catalog.kafka.state_dir``):
every kind and variant round trips to the store's own reads, with Kafka's layout on disk
(``StateDirectory``, ``RocksDBStore.DB_FILE_DIR``, ``AbstractSegments.segmentName``,
``OffsetCheckpoint``, KIP-1035's ``offsets`` column family)."""

from __future__ import annotations

import glob
import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from catalog.kafka.export_dir import partition_rows, write_state_dir
from catalog.kafka.state_dir import TaskState, read_state_dir
from catalog.kafka.task_dirs import kafka_families
from catalog.kinds import Scan
from catalog.scans import decoder
from stores.bytes.foreign import open_foreign
from stores.bytes.rocksdb import column_families_at
from stores.formats.headers import encode_headers

APP = "app"
#: Each variant: kind and parameters (segments of 1 s, nothing expires: a Kafka store read
#: after a restart shows every row it holds, as its stream time restarts at -1).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "keyvalue": ("keyvalue", {}),
    "timestamped": ("timestamped", {}),
    "timestamped-headers": ("timestamped", {"headers": True}),
    "versioned": ("versioned", {"history_retention_ms": 10**9, "segment_interval_ms": 1000}),
    "window": ("window", {"window_size_ms": 100, "retention_ms": 10**9, "segment_interval_ms": 1000}),
    "window-timestamped": ("window", {"window_size_ms": 100, "retention_ms": 10**9,
                                      "segment_interval_ms": 1000, "timestamped": True}),
    "window-headers": ("window", {"window_size_ms": 100, "retention_ms": 10**9,
                                  "segment_interval_ms": 1000, "headers": True}),
    "window-timestamped-headers": ("window", {"window_size_ms": 100, "retention_ms": 10**9,
                                              "segment_interval_ms": 1000, "timestamped": True,
                                              "headers": True}),
    "window-duplicates": ("window", {"window_size_ms": 100, "retention_ms": 10**9,
                                     "segment_interval_ms": 1000, "timestamped": True,
                                     "retain_duplicates": True}),
    "session": ("session", {"retention_ms": 10**9, "segment_interval_ms": 1000}),
    "session-headers": ("session", {"retention_ms": 10**9, "segment_interval_ms": 1000,
                                    "headers": True}),
}  # fmt: skip


def build(
    catalog: Catalog, variant: str, seed: int = 1, commits: int = 4, retention: int | None = None
) -> StoreTable:
    """A store of ``variant`` partitioned by Kafka's partitioner, written by a few commits of
    puts and deletes over 40 keys and times spread over 5 segments (``retention``: the
    variant's retention instead, in ms)."""
    kind, params = VARIANTS[variant]
    params = with_retention(params, retention)
    table = catalog.create_store(
        "s", kind, "string", "long", num_partitions=2, partitioner="kafka", **params
    )
    rng = random.Random(seed)
    for _ in range(commits):
        n = 60
        keys = [f"k{rng.randrange(40)}" for _ in range(n)]
        values = [None if rng.random() < 0.15 else rng.randrange(10**6) for _ in range(n)]
        times = [rng.randrange(5000) for _ in range(n)]
        columns: dict[str, pa.Array] = {}
        if kind in ("window", "session"):
            values = [0 if v is None else v for v in values]
        if kind in ("timestamped", "versioned"):
            columns["timestamp"] = pa.array(times, pa.int64())
        if kind == "window":
            columns["window_start"] = pa.array([t - t % 100 for t in times], pa.int64())
            if params.get("timestamped"):
                columns["timestamp"] = pa.array(times, pa.int64())
        if kind == "session":
            columns["session_start"] = pa.array(times, pa.int64())
            columns["session_end"] = pa.array([t + rng.randrange(300) for t in times], pa.int64())
        if params.get("headers"):
            columns["headers"] = pa.array(
                [encode_headers([("h", str(t).encode())] * (t % 3)) for t in times], pa.binary()
            )
        table.commit(table.stage(pa.array(keys), pa.array(values, pa.int64()), columns))
    return table


def with_retention(params: dict[str, Any], retention: int | None) -> dict[str, Any]:
    """``params`` with another retention (a window's or session's, a versioned history's)."""
    if retention is None:
        return params
    key = "history_retention_ms" if "history_retention_ms" in params else "retention_ms"
    return {**params, key: retention} if key in params else params


def own_reads(table: StoreTable, partition: int) -> list[dict[str, Any]]:
    """The store's own typed read of a partition (a versioned store's whole history), in a
    canonical order: a table read has none (a first read gives write order), while Kafka's
    state directory is read in key order."""
    scan = Scan(all_versions=True) if table.kind.supports_as_of else Scan()
    batches = list(table.read_partition(partition, table.log.latest_id(), scan))
    return canonical(pa.Table.from_batches(batches, schema=table.arrow_schema()).to_pylist())


def canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` in one order whatever order they came in."""
    return sorted(rows, key=repr)


def typed(table: StoreTable, state: TaskState) -> list[dict[str, Any]]:
    schema = table.arrow_schema()
    to_typed = decoder(table.spec, schema)
    return pa.Table.from_batches(
        [to_typed(b) for b in state.raw.to_batches()], schema=schema
    ).to_pylist()


def files_of(root: str) -> dict[str, tuple[int, bytes, int]]:
    """Every file under ``root``: size, bytes and mtime (ns)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = (os.path.getsize(path), f.read(),
                                                     os.stat(path).st_mtime_ns)  # fmt: skip
    return found


@pytest.fixture
def app_dir(tmp_path: Path) -> str:
    return str(tmp_path / "state" / APP)


@pytest.mark.parametrize(
    ("variant", "version"),
    [(v, k) for v in VARIANTS for k in ("3.9.1", "4.3.1") if "headers" not in v or k >= "4.3"],
)
def test_write_then_read_equals_the_stores_own_reads(
    catalog: Catalog, app_dir: str, variant: str, version: str
) -> None:
    table = build(catalog, variant)
    written = write_state_dir(
        table, app_dir, store_name="s", kafka_version=version, subtopology=1,
        offsets={0: 17, 1: 41},
    )  # fmt: skip
    assert written == [os.path.join(app_dir, "1_0"), os.path.join(app_dir, "1_1")]
    before = files_of(app_dir)
    states = read_state_dir(app_dir, "s", table.spec)
    assert files_of(app_dir) == before  # nothing written, not even RocksDB's LOG
    assert [s.partition for s in states] == [0, 1]
    for state in states:
        assert canonical(typed(table, state)) == own_reads(table, state.partition)
        assert state.offsets == {(f"{APP}-s-changelog", state.partition): [17, 41][state.partition]}
    assert sum(s.raw.num_rows for s in states) > 0


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_layout_is_kafkas(catalog: Catalog, app_dir: str, variant: str) -> None:
    """Task dir ``<subtopology>_<partition>``, ``rocksdb/<store>`` or ``<store>/<store>.<start>``,
    exactly the families Kafka's store declares, no rocksdict file; 4.3: ``offsets`` family in
    every database and no ``.checkpoint``."""
    kind, params = VARIANTS[variant]
    table = build(catalog, variant)
    write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.0", subtopology=0,
                    offsets={0: 5, 1: 6})  # fmt: skip
    families = kafka_families(kind, params)
    for partition in (0, 1):
        task = os.path.join(app_dir, f"0_{partition}")
        assert sorted(os.listdir(task)) == (["s"] if kind in ("window", "session") else ["rocksdb"])
        if kind in ("window", "session"):
            dbs = sorted(glob.glob(os.path.join(task, "s", "*")))
            names = [os.path.basename(d) for d in dbs]
            assert names and all(n.startswith("s.") and int(n[2:]) % 1000 == 0 for n in names)
        else:
            dbs = [os.path.join(task, "rocksdb", "s")]
        for db in dbs:
            assert not os.path.exists(os.path.join(db, "rocksdict-config.json"))
            assert sorted(column_families_at(db)) == sorted({"default", families.data, "offsets"})
            with open_foreign(db) as (store, _):
                rows = dict(store.items("offsets"))
            topic = f"{APP}-s-changelog-{partition}".encode()
            assert rows == {topic: (5 + partition).to_bytes(8, "big"), b"status": bytes(8)}


def test_kafka_3_gets_a_checkpoint_and_format_version_5(catalog: Catalog, app_dir: str) -> None:
    table = build(catalog, "timestamped")
    write_state_dir(table, app_dir, store_name="s", kafka_version="3.9.1", subtopology=0,
                    offsets={0: 123, 1: 0})  # fmt: skip
    for partition, offset in ((0, 123), (1, 0)):
        task = os.path.join(app_dir, f"0_{partition}")
        with open(os.path.join(task, ".checkpoint")) as f:
            assert f.read() == f"0\n1\n{APP}-s-changelog {partition} {offset}\n"
        db = os.path.join(task, "rocksdb", "s")
        assert sorted(column_families_at(db)) == ["default", "keyValueWithTimestamp"]
        options = max(glob.glob(os.path.join(db, "OPTIONS-*")))
        with open(options) as f:
            versions = {line.strip() for line in f if "format_version" in line}
        assert versions == {"format_version=5"}
    table4 = build(Catalog(catalog.root + "-4", cache_dir=catalog.cache_dir), "timestamped")
    other = os.path.join(os.path.dirname(app_dir), "other")
    write_state_dir(table4, other, store_name="s", kafka_version="4.0.0", subtopology=0,
                    offsets={0: 1})  # fmt: skip
    options = max(glob.glob(os.path.join(other, "0_0", "rocksdb", "s", "OPTIONS-*")))
    with open(options) as f:
        assert {line.strip() for line in f if "format_version" in line} == {"format_version=6"}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_stores_own_answers_give_the_same_directories(
    catalog: Catalog, app_dir: str, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the engine cannot compute rows or scans from columns (``STORE_MUST_ANSWER``), the
    rows come from the partition's cache and the scan from the kind's store over a temporary
    RocksDB: the same directories, the same reads."""
    from catalog.kinds import STORE_MUST_ANSWER, StoreKind

    table = build(catalog, variant)
    write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.1", subtopology=0,
                    offsets={0: 1, 1: 2})  # fmt: skip
    expected = [typed(table, s) for s in read_state_dir(app_dir, "s", table.spec)]
    monkeypatch.setattr(StoreKind, "store_rows", lambda *args, **options: STORE_MUST_ANSWER)
    monkeypatch.setattr(StoreKind, "scan_columns", lambda *args, **options: STORE_MUST_ANSWER)
    other = os.path.join(os.path.dirname(app_dir), "other", APP)
    write_state_dir(table, other, store_name="s", kafka_version="4.3.1", subtopology=0,
                    offsets={0: 1, 1: 2})  # fmt: skip
    states = read_state_dir(other, "s", table.spec)
    assert [typed(table, s) for s in states] == expected
    assert [canonical(rows) for rows in expected] == [own_reads(table, 0), own_reads(table, 1)]


#: A retention under the spread of ``build``'s times (0 to 5 s): a store's reads expire what
#: lies at or before its stream time minus 1.5 s, partly in segments still live.
SHORT = 1500


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_an_export_holds_what_the_store_reads_and_imports_as_the_store(
    catalog: Catalog, app_dir: str, variant: str
) -> None:
    """Exports equal restores (issue 37): a window or session store's rows that its reads have
    expired (a time at or before stream time minus the retention, in a segment still live) stay
    out of the directory. Kafka keeps no stream time on disk, so an instance started on the
    directory would serve them (``AbstractRocksDBSegmentedBytesStore.fetch`` hides them only
    once its stream time is known), where a restore of the store's changelog would not."""
    table = build(catalog, variant, retention=SHORT)
    write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.1", subtopology=0,
                    offsets={0: 1, 1: 2})  # fmt: skip
    states = read_state_dir(app_dir, "s", table.spec)
    for state in states:
        assert canonical(typed(table, state)) == own_reads(table, state.partition)
    kind = table.spec.kind
    if kind in ("window", "session"):  # the store keeps rows its reads expired
        snapshot = table.log.latest_id()
        data = table.kind.column_families(table.spec.params)[0]
        kept = sum(len(partition_rows(table, p, snapshot)[data][0]) for p in (0, 1))
        assert kept > sum(s.raw.num_rows for s in states) > 0
    back = catalog.import_kafka_state_dir(
        os.path.dirname(app_dir), APP, "s", kind, name="back", key_type="string",
        value_type="long", **table.spec.params,
    )  # fmt: skip
    versions = "all" if table.kind.supports_as_of else "latest"
    assert canonical(back.to_arrow(versions=versions).to_pylist()) == canonical(
        table.to_arrow(versions=versions).to_pylist()
    )


SEGMENTED = [v for v, (kind, _) in VARIANTS.items() if kind in ("versioned", "window", "session")]


@pytest.mark.parametrize("variant", SEGMENTED)
def test_a_directory_reads_as_it_imports(catalog: Catalog, app_dir: str, variant: str) -> None:
    """Reads equal imports (issue 37): a directory holding rows that a restore of its records
    would expire (Kafka keeps them until a write moves its stream time) is read, as it is
    imported, with the stream time that restore observes: the largest of the rows' times
    (``AbstractRocksDBSegmentedBytesStore.restoreAllInternal``,
    ``RocksDBVersionedStore.restoreBatch``)."""
    everything = build(catalog, variant)  # a long retention: every row is in the directory
    write_state_dir(everything, app_dir, store_name="s", kafka_version="4.3.1", subtopology=0,
                    offsets={0: 1, 1: 2})  # fmt: skip
    kind, params = everything.spec.kind, with_retention(everything.spec.params, SHORT)
    back = catalog.import_kafka_state_dir(
        os.path.dirname(app_dir), APP, "s", kind, name="back", key_type="string",
        value_type="long", **params,
    )  # fmt: skip
    states = read_state_dir(app_dir, "s", back.spec)
    for state in states:
        assert canonical(typed(back, state)) == own_reads(back, state.partition)
    assert 0 < sum(s.raw.num_rows for s in states) < sum(
        len(own_reads(everything, p)) for p in (0, 1)
    )
    read = catalog.read_kafka_state_dir(
        os.path.dirname(app_dir), APP, "s", kind, key_type="string", value_type="long", **params
    )
    assert canonical(read.to_pylist()) == canonical(back.to_arrow().to_pylist())
