"""Compaction: snapshots hold a partition's exact state, are published through the log, and
new readers start from them; old commits stay readable."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from catalog import Catalog, StoreTable, scans
from catalog.caches.partitions import PartitionCache
from catalog.cli import main as cli
from catalog.kinds import STORE_MUST_ANSWER
from catalog.log import changelog
from catalog.log import commits as commit_log
from catalog.log.paths import COMMITS_DIR, record_name
from catalog.log.snapshots import dump, load_snapshot
from catalog.operations.compaction import compact, tail_files
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CorruptDataError, InvalidOptionError
from stores.formats.headers import encode_headers

HOUR = 3_600_000

KINDS: dict[str, dict[str, Any]] = {
    "keyvalue": {},
    "timestamped": {},
    "versioned": {"history_retention_ms": 10 * HOUR},
    "window": {"window_size_ms": HOUR, "retention_ms": 6 * HOUR, "retain_duplicates": True},
    "session": {"retention_ms": 6 * HOUR},
}


def _columns(kind: str, n: int, step: int, rng: random.Random) -> dict[str, pa.Array]:
    times = [step * HOUR // 2 + rng.randrange(HOUR) for _ in range(n)]
    if kind in ("timestamped", "versioned"):
        return {"timestamp": pa.array(times, pa.int64())}
    if kind == "window":
        return {"window_start": pa.array([t - t % HOUR for t in times], pa.int64())}
    if kind == "session":
        return {"session_start": pa.array(times, pa.int64()),
                "session_end": pa.array([t + 60_000 for t in times], pa.int64())}  # fmt: skip
    return {}


def _build(catalog: Catalog, kind: str, appends: int = 12) -> StoreTable:
    """A store written by many small appends: updates, deletes and expiring windows."""
    table = catalog.create_store("s", kind, "string", "long", num_partitions=2, **KINDS[kind])
    rng = random.Random(7)
    for step in range(appends):
        keys = [f"k{rng.randrange(20)}" for _ in range(15)]
        values = [None if rng.random() < 0.15 else rng.randrange(1000) for _ in keys]
        if kind in ("window", "session"):
            values = [v if v is not None else 0 for v in values]
        table.commit(table.stage(pa.array(keys), pa.array(values, pa.int64()),
                                 _columns(kind, len(keys), step, rng)))  # fmt: skip
    return table


def _fresh(catalog: Catalog, tmp_path: Path, name: str) -> Catalog:
    commit_log._RECORDS.clear()
    return Catalog(catalog.root, cache_dir=str(tmp_path / name), compact_after_files=0)


def _sorted(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(v) for v in r.values()) for r in table.to_pylist())


@pytest.fixture
def catalog(warehouse: str, tmp_path: Path) -> Catalog:
    return Catalog(warehouse, cache_dir=str(tmp_path / "cache"), compact_after_files=0)


@pytest.fixture(params=["one batch", "batches of 3 rows"])
def batch_rows(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Changelog and snapshot files of one record batch, or of many (a column family's run
    then spans batches: read as one run, loaded a batch at a time)."""
    if request.param != "one batch":
        monkeypatch.setattr(changelog, "FILE_BATCH_ROWS", 3)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.usefixtures("batch_rows")
def test_a_snapshot_holds_exactly_the_state_the_log_gives(
    catalog: Catalog, tmp_path: Path, kind: str
) -> None:
    table = _build(catalog, kind)
    families = table.kind.column_families(table.spec.params)
    for partition in range(2):
        cache = PartitionCache(catalog.storage, table.spec, "s", partition, str(tmp_path / "c"))
        with cache.open_at(table.log.latest_id()) as (store, _):
            snapshot = dump(store.wrapped, families)
            expected = {f: list(store.wrapped.items(f)) for f in families}
        record = compact(table, partitions=[partition])
        assert record is not None and record.base == record.id - 1
        (ref,) = record.files_for(partition)
        assert ref.rows == snapshot.num_rows > 0
        db = RocksDBBytesStore(tmp_path / f"restored-{partition}", families, autocommit=False)
        try:
            load_snapshot(db, catalog.storage, "s", ref)
            db.commit()
            assert {f: list(db.items(f)) for f in families} == expected
        finally:
            db.close()


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.usefixtures("batch_rows")
def test_reads_after_compaction_equal_reads_before_at_every_commit(
    catalog: Catalog, tmp_path: Path, kind: str
) -> None:
    table = _build(catalog, kind)
    latest = table.log.latest_id()
    before = {c: _sorted(table.to_arrow(as_of=None) if c == latest else _at(table, c))
              for c in (2, latest // 2, latest)}  # fmt: skip
    assert catalog.compact("s") is not None
    later = _build_more(catalog, kind)
    fresh = _fresh(catalog, tmp_path, "fresh").load("s")
    for commit_id, rows in before.items():
        assert _sorted(_at(fresh, commit_id)) == rows
    assert _sorted(fresh.to_arrow()) == _sorted(later.to_arrow())


def _at(table: StoreTable, commit_id: int) -> pa.Table:
    batches = [b for p in range(table.spec.num_partitions)
               for b in table.read_partition(p, commit_id)]  # fmt: skip
    return pa.Table.from_batches(batches, schema=table.arrow_schema())


def _build_more(catalog: Catalog, kind: str) -> StoreTable:
    table = catalog.load("s")
    rng = random.Random(11)
    keys = [f"k{rng.randrange(20)}" for _ in range(10)]
    table.commit(table.stage(pa.array(keys), pa.array(range(10), pa.int64()),
                             _columns(kind, 10, 13, rng)))  # fmt: skip
    return table


def test_a_compaction_needs_no_lock_against_writers(catalog: Catalog) -> None:
    table = _build(catalog, "keyvalue", appends=3)
    base = table.log.latest_id()
    real = table.log.latest_id
    # A writer commits while the compaction materializes: the snapshot keeps its own base.
    calls = []

    def latest_then_commit() -> int:
        value = real()
        if not calls:
            calls.append(value)
            other = Catalog(catalog.root, cache_dir=catalog.cache_dir).load("s")
            other.commit(other.stage(pa.array(["late"]), pa.array([1]), None))
        return value

    table.log.latest_id = latest_then_commit  # type: ignore[method-assign]
    record = compact(table)
    assert record is not None and record.base == base and record.id == base + 2
    fresh = Catalog(catalog.root).load("s")
    assert "late" in fresh.to_arrow().column("key").to_pylist()


def test_restore_plans_start_from_the_newest_usable_snapshot(catalog: Catalog) -> None:
    table = _build(catalog, "keyvalue", appends=4)  # commits 1..5
    first = compact(table)  # 6, base 5
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))  # 7
    table.commit(table.stage(pa.array(["b"]), pa.array([2]), None), overwrite=True)  # 8
    table.commit(table.stage(pa.array(["c"]), pa.array([3]), None))  # 9
    log = table.log
    assert first is not None and first.id == 6
    plan = log.restore_plan(0, 7, 0)
    assert plan.reset and plan.snapshot == first and [r.id for r in plan.records] == [7]
    plan = log.restore_plan(5, 7, 0)  # the cache already holds the snapshot's state
    assert plan.snapshot is None and [r.id for r in plan.records] == [7]
    plan = log.restore_plan(0, 9, 0)  # an overwrite after the base wins
    assert plan.snapshot is None and [r.id for r in plan.records] == [8, 9]
    plan = log.restore_plan(0, 4, 0)  # older than the snapshot: the log alone
    assert plan.snapshot is None and [r.id for r in plan.records] == [1, 2, 3, 4]
    assert log.replay_plan(0, 7) == (False, [log.read(i) for i in (1, 2, 3, 4, 5, 7)])
    assert tail_files(log, 0, 7) == len(log.read(7).files_for(0))


def test_commits_compact_automatically_past_the_threshold(warehouse: str, tmp_path: Path) -> None:
    catalog = Catalog(warehouse, cache_dir=str(tmp_path / "cache"), compact_after_files=4)
    table = catalog.create_store("s", "keyvalue", "string", "long")
    for i in range(6):
        table.commit(table.stage(pa.array([f"k{i}"]), pa.array([i]), None))
    operations = [table.log.read(i).operation for i in table.log.ids()]
    assert operations == ["create"] + ["append"] * 5 + ["compact", "append"]
    assert tail_files(table.log, 0, table.log.latest_id()) == 1
    assert len(table.to_arrow()) == 6


def test_an_edited_or_missing_snapshot_is_refused(catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    table = _build(catalog, "keyvalue", appends=3)
    record = compact(table)
    assert record is not None
    path = Path(warehouse, "s", record.files[0].path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    db = RocksDBBytesStore(tmp_path / "db", ("default",), autocommit=False)
    try:
        with pytest.raises(CorruptDataError, match="does not match its commit record"):
            load_snapshot(db, catalog.storage, "s", record.files[0])
    finally:
        db.close()
    raw = json.loads(Path(warehouse, "s", COMMITS_DIR, record_name(record.id)).read_bytes())
    assert raw["operation"] == "compact" and raw["base"] == record.base


def test_vacuum_keeps_listed_snapshots_and_removes_those_of_a_failed_compaction(
    catalog: Catalog, warehouse: str
) -> None:
    table = _build(catalog, "keyvalue", appends=3)
    record = compact(table)
    assert record is not None
    orphan = Path(warehouse, "s", "snapshot", "00000", "compact-dead.arrow")
    orphan.write_bytes(b"half")
    for path in Path(warehouse, "s").rglob("*"):
        if path.is_file():
            os.utime(path, (path.stat().st_atime - 3600, path.stat().st_mtime - 3600))
    report = catalog.vacuum("s", older_than_ms=60_000)[0]
    assert report.deleted == ["snapshot/00000/compact-dead.arrow"]
    assert all(Path(warehouse, "s", f.path).exists() for f in record.files)


def test_the_command_line_compacts(catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    _build(catalog, "keyvalue", appends=3)
    assert cli(["--root", catalog.root, "--json", "compact", "s"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compacted"] and out["base"] == 4 and out["commit"] == 5
    assert cli(["--root", catalog.root, "--json", "compact", "s"]) == 0
    assert json.loads(capsys.readouterr().out)["compacted"] is False


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["keyvalue", "timestamped", "timestamped-headers"])
def test_a_latest_read_from_columns_equals_the_store_s_own(
    catalog: Catalog, tmp_path: Path, seed: int, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Key-value and timestamped full reads are computed with Arrow (no RocksDB), snapshots
    decoded from Kafka's value layouts; the store is the referee: appends, tombstones,
    overwrites, unknown timestamps and snapshots, in random order."""
    from catalog.kinds import Scan

    _kafka_apply_only(monkeypatch)  # caches and snapshots as Kafka's stores write them
    rng = random.Random(seed)
    table = _random_store(catalog, kind)
    for step in range(10):
        _random_commit(table, kind, rng, max_headers=3, overwrites=0.1)
        if rng.random() < 0.3:
            compact(table)
        fresh = _fresh(catalog, tmp_path, f"c{step}").load("s")
        from_columns = _sorted(fresh.to_arrow())
        target = fresh.log.latest_id()
        from_store = []
        for partition in range(2):
            cache = PartitionCache(catalog.storage, fresh.spec, "s", partition, str(tmp_path / f"r{step}"))
            run = scans.store_scan(fresh.spec, fresh.kind, Scan(), fresh.arrow_schema())
            batches = cache.read(target, run, fresh.arrow_schema())
            from_store += [b for b in batches]
        assert from_columns == _sorted(pa.Table.from_batches(from_store, schema=fresh.arrow_schema()))


def _random_store(catalog: Catalog, kind: str) -> StoreTable:
    """A store of ``kind``: keyvalue, timestamped, timestamped-headers, window (timestamped,
    with headers; retaining duplicates: ``window-dups``), session-headers or versioned (only
    puts: ``versioned-puts``)."""
    params: dict[str, object] = {"headers": True} if kind.endswith("-headers") else {}
    if kind.startswith("window"):
        params = {"retention_ms": 3000, "window_size_ms": 100, "segment_interval_ms": 1000,
                  "timestamped": True, "headers": True, "retain_duplicates": kind == "window-dups"}  # fmt: skip
    if kind.startswith("session"):
        params.update(retention_ms=3000, segment_interval_ms=1000)
    if kind.startswith("versioned"):
        params = {"history_retention_ms": 300_000, "segment_interval_ms": 100_000}
    return catalog.create_store(
        "s", kind.split("-")[0], "string", "long", num_partitions=2, **params
    )


def _random_commit(
    table: StoreTable, kind: str, rng: random.Random, max_headers: int, overwrites: float
) -> None:
    """One commit of a few updates and tombstones of 12 keys, some timestamps unknown and,
    for header-aware stores, up to ``max_headers - 1`` headers a row; an overwrite with
    probability ``overwrites``."""
    keys = [f"k{rng.randrange(12)}" for _ in range(rng.randrange(1, 8))]
    deletes = 0.0 if kind == "versioned-puts" else 0.25
    values = [None if rng.random() < deletes else rng.randrange(100) for _ in keys]
    columns: dict[str, pa.Array] = {}
    if kind.startswith(("window", "session")):
        # Times that expire segments as stream time moves (retention 3 s, segments of 1 s).
        starts = [rng.randrange(10_000) for _ in keys]
        if kind.startswith("session"):
            columns["session_start"] = pa.array(starts, pa.int64())
            columns["session_end"] = pa.array([t + rng.randrange(50) for t in starts], pa.int64())
        else:
            columns["window_start"] = pa.array([t - t % 100 for t in starts], pa.int64())
            columns["timestamp"] = pa.array(starts, pa.int64())
    elif kind.startswith("versioned"):  # late records, some past the grace period
        columns["timestamp"] = pa.array([rng.randrange(10**6) for _ in keys], pa.int64())
    elif kind != "keyvalue":
        stamps = [None if rng.random() < 0.1 else rng.randrange(10**6) for _ in keys]
        columns["timestamp"] = pa.array(stamps, pa.int64())
    if kind.endswith("-headers") or kind.startswith("window"):
        columns["headers"] = pa.array(
            [encode_headers([("h", bytes([rng.randrange(256)]))] * rng.randrange(max_headers))
             for _ in keys], pa.binary(),
        )  # fmt: skip
    files = table.stage(pa.array(keys), pa.array(values, pa.int64()), columns)
    table.commit(files, overwrite=rng.random() < overwrites)


def _kafka_apply_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Partition caches apply every commit through Kafka's stores, never ``store_rows`` or
    ``overlay_rows``."""
    from catalog.kinds import KINDS as REGISTERED
    from catalog.kinds import StoreEngine

    for kind in REGISTERED.values():
        monkeypatch.setattr(type(kind.engine), "store_rows", StoreEngine.store_rows)
        monkeypatch.setattr(type(kind.engine), "overlay_rows", StoreEngine.overlay_rows)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "kind",
    [
        "keyvalue", "timestamped", "timestamped-headers", "window", "window-dups",
        "session-headers", "versioned", "versioned-puts",
    ],
)  # fmt: skip
@pytest.mark.parametrize("snapshot", [False, True], ids=["log", "snapshot+tail"])
def test_rows_computed_from_columns_are_the_rows_kafka_s_stores_write(
    catalog: Catalog, tmp_path: Path, seed: int, kind: str, snapshot: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """``store_rows`` of a key-value, timestamped, window, session or versioned store gives,
    per column family and byte for byte, what applying each commit to Kafka's store leaves
    (tombstones, overwrites of the store, unknown timestamps, headers, expired segments,
    duplicates' sequence numbers, late versions); so it does over a snapshot of Kafka's rows
    and the commits after it (``snapshot+tail``: what compaction writes). A versioned store
    may leave tombstones to the store: those of a key whose records came out of time order,
    and any over a snapshot. A fresh cache, ingested from them (or from the snapshot and
    ``overlay_rows`` of the tail), holds the same."""
    rng = random.Random(seed)
    table = _random_store(catalog, kind)
    for step in range(8):
        if snapshot and step == 4:
            with monkeypatch.context() as patched:
                _kafka_apply_only(patched)
                assert compact(table) is not None  # Kafka's own rows, dumped from its store
        _random_commit(table, kind, rng, max_headers=70, overwrites=0.0 if snapshot else 0.15)
    target = table.log.latest_id()
    families = table.kind.column_families(table.spec.params)

    def rows(cache_dir: Path, partition: int) -> dict[str, list[tuple[bytes, bytes]]]:
        cache = PartitionCache(catalog.storage, table.spec, "s", partition, str(cache_dir))
        assert cache.catch_up(target) == target
        db = RocksDBBytesStore(cache.path, families, read_only=True)
        try:
            return {f: list(db.items(f)) for f in families if any(True for _ in db.items(f))}
        finally:
            db.close()

    for partition in range(2):
        with monkeypatch.context() as patched:
            _kafka_apply_only(patched)
            kafka = rows(tmp_path / "kafka", partition)
        assert rows(tmp_path / "columns", partition) == kafka
        cache = PartitionCache(catalog.storage, table.spec, "s", partition, str(tmp_path))
        assert (table.log.restore_plan(0, target, partition).snapshot is not None) == snapshot
        columns = cache.columns_at(target)
        if snapshot and kind.startswith(("keyvalue", "timestamped")):  # their tails overlay
            assert table.kind.overlay_rows(columns[1], table.spec.params) is not STORE_MUST_ANSWER
        computed = table.kind.store_rows(*columns, table.spec.params)
        if computed is STORE_MUST_ANSWER:  # only a versioned store's tombstones may be left to the store
            assert kind == "versioned"
            continue
        pairs = {
            family: list(zip(keys.to_pylist(), values.to_pylist(), strict=True))
            for family, (keys, values) in computed.items()
        }
        assert {f: p for f, p in pairs.items() if p} == kafka


@pytest.mark.parametrize("kind", list(KINDS))
def test_compaction_computes_snapshots_from_columns_where_the_kind_can(
    catalog: Catalog, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction builds no RocksDB for a kind whose rows ``store_rows`` computes: the
    snapshot is written from the previous one and the commits after it. A versioned store with
    deletes (whose tail after a snapshot is left to its store) is dumped from its cache."""
    table = _build(catalog, kind, appends=6)
    assert compact(table) is not None
    table = _build_more(catalog, kind)
    expected = _sorted(_at(table, table.log.latest_id()))
    opened: list[int] = []
    real = PartitionCache.open_at

    def counting(self: PartitionCache, target: int) -> Any:
        opened.append(self.partition)
        return real(self, target)

    monkeypatch.setattr(PartitionCache, "open_at", counting)
    record = compact(table)
    assert record is not None
    assert opened == ([0, 1] if kind == "versioned" else [])
    monkeypatch.undo()
    fresh = _fresh(catalog, tmp_path, "after").load("s")
    assert fresh.log.restore_plan(0, record.id, 0).snapshot == record
    assert _sorted(_at(fresh, record.id)) == expected


def test_a_versioned_store_of_puts_is_compacted_from_columns_after_a_snapshot(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Puts only (late ones too): the second compaction computes its snapshot from the first
    one and the commits after it, with no cache built, and reads the same."""
    table = catalog.create_store("s", "versioned", "string", "long", num_partitions=2,
                                 **KINDS["versioned"])  # fmt: skip
    rng = random.Random(5)
    for step in range(8):
        if step == 4:
            assert compact(table) is not None
        keys = [f"k{rng.randrange(20)}" for _ in range(15)]
        stamps = [HOUR * step + rng.randrange(-HOUR, HOUR) for _ in keys]  # late ones too
        table.commit(table.stage(pa.array(keys), pa.array(range(15), pa.int64()),
                                 {"timestamp": pa.array([max(t, 0) for t in stamps])}))  # fmt: skip
    expected = _sorted(_at(table, table.log.latest_id()))
    monkeypatch.setattr(PartitionCache, "open_at", None)  # any cache built would fail
    record = compact(table)
    assert record is not None
    monkeypatch.undo()
    fresh = _fresh(catalog, tmp_path, "after").load("s")
    assert fresh.log.restore_plan(0, record.id, 0).snapshot == record
    assert _sorted(_at(fresh, record.id)) == expected


@pytest.mark.parametrize("tail", [1, 40], ids=["short tail: applied", "long tail: computed"])
def test_a_window_cache_after_a_snapshot_computes_a_long_tail_and_applies_a_short_one(
    catalog: Catalog, tmp_path: Path, tail: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from catalog.kinds import Scan
    from catalog.kinds.window import WindowKind

    table = catalog.create_store("s", "window", "string", "long", num_partitions=1, **KINDS["window"])
    keys = [f"k{i}" for i in range(40)]
    times = pa.array([HOUR * 10 + i for i in range(40)], pa.int64())
    table.commit(table.stage(pa.array(keys), pa.array(range(40), pa.int64()), {"window_start": times}))
    assert compact(table) is not None
    table.commit(table.stage(pa.array(keys[:tail]), pa.array(range(tail), pa.int64()),
                             {"window_start": times.slice(0, tail)}))  # fmt: skip
    expected = _sorted(_at(table, table.log.latest_id()))
    applied: list[int] = []
    real = WindowKind.apply
    monkeypatch.setattr(WindowKind, "apply", lambda self, *a: applied.append(1) or real(self, *a))
    cache = PartitionCache(catalog.storage, table.spec, "s", 0, str(tmp_path / "c"))
    target = table.log.latest_id()
    assert cache.catch_up(target) == target
    assert applied == ([1] if tail == 1 else [])
    run = scans.store_scan(table.spec, table.kind, Scan(), table.arrow_schema())
    batches = list(cache.read(target, run, table.arrow_schema()))  # RocksDB
    assert _sorted(pa.Table.from_batches(batches, schema=table.arrow_schema())) == expected


def test_a_fresh_cache_loads_the_snapshot_and_reads_only_the_tail(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from catalog.caches import partitions as local_cache

    table = _build(catalog, "versioned", appends=8)
    record = compact(table)
    assert record is not None
    _build_more(catalog, "versioned")  # one commit after the snapshot
    before = _sorted(_at(table, table.log.latest_id()))  # the writer's cache, from the log
    read: list[str] = []
    real = local_cache.read_changelog

    def counting(storage: Any, store_dir: str, ref: Any) -> Any:
        read.append(ref.path)
        return real(storage, store_dir, ref)

    monkeypatch.setattr(local_cache, "read_changelog", counting)
    fresh = _fresh(catalog, tmp_path, "tail-only").load("s")
    assert _sorted(_at(fresh, fresh.log.latest_id())) == before
    tail = {f.path for f in fresh.log.read(fresh.log.latest_id()).files}
    assert set(read) == tail  # nothing before the snapshot's base was replayed


def test_history_older_than_its_retention_expires_after_a_snapshot(
    catalog: Catalog, tmp_path: Path, warehouse: str
) -> None:
    table = _build(catalog, "versioned", appends=6)  # commits 1..7
    reads = {c: _sorted(_at(table, c)) for c in range(2, 8)}
    record = compact(table)  # 8: base 7
    assert record is not None and record.base == 7
    _build_more(catalog, "versioned")  # 9
    reads[9] = _sorted(_at(table, 9))
    dry = catalog.vacuum("s", older_than_ms=0, dry_run=True, retain_history_ms=0)[0]
    assert dry.history_start == 7 and dry.deleted
    assert all(Path(warehouse, "s", p).exists() for p in dry.deleted)  # a dry run deletes nothing
    report = catalog.vacuum("s", older_than_ms=0, retain_history_ms=0)[0]
    assert report.history_start == 7
    assert set(report.deleted) == set(dry.deleted)
    # Every writer's file up to commit 7, no snapshot and nothing after the boundary.
    assert all(p.startswith("changelog/tasks/") for p in report.deleted)
    assert len(report.deleted) == sum(
        len({f.path for f in table.log.read(c).files}) for c in range(1, 8)
    )
    fresh = _fresh(catalog, tmp_path, "after").load("s")
    assert fresh.log.history_start() == 7
    assert [fresh.log.read(i).operation for i in fresh.log.ids()][-1] == "expire"
    for commit_id in (7, 9):  # still readable, from the snapshot and the files after it
        assert _sorted(_at(fresh, commit_id)) == reads[commit_id]
    assert _sorted(fresh.to_arrow()) == reads[9]
    with pytest.raises(InvalidOptionError, match=r"\[HISTORY_EXPIRED\].*commit 6 .*commits 7 to 10"):
        fresh.log.version_at(6)
    with pytest.raises(InvalidOptionError, match="HISTORY_EXPIRED"):
        catalog.changes("s", 3)
    assert len(catalog.changes("s", 8)) > 0
    # The writer's old cache (at commit 9) goes on; one behind the boundary starts over.
    assert _sorted(table.to_arrow()) == reads[9]
    _build_more(catalog, "versioned")  # later records carry the boundary forward
    assert _fresh(catalog, tmp_path, "later").load("s").log.history_start() == 7


def test_a_writer_s_file_expires_only_when_every_partition_in_it_has_a_snapshot(
    catalog: Catalog, tmp_path: Path
) -> None:
    """A writer task's file holds pieces of several partitions: a snapshot of one of them
    leaves the file, which the others still read from."""
    table = _build(catalog, "keyvalue", appends=4)  # commits 1..5
    assert compact(table, partitions=[0]) is not None  # 6: partition 0 only, base 5
    report = catalog.vacuum("s", older_than_ms=0, retain_history_ms=0)[0]
    assert report.history_start == 5 and not report.deleted
    expected = _sorted(_at(table, 6))
    assert _sorted(_at(_fresh(catalog, tmp_path, "p1").load("s"), 6)) == expected
    assert compact(table, partitions=[1]) is not None  # 7: partition 1, base 6
    report = catalog.vacuum("s", older_than_ms=0, retain_history_ms=0)[0]
    assert report.deleted and all(p.startswith("changelog/tasks/") for p in report.deleted)
    assert _sorted(_fresh(catalog, tmp_path, "both").load("s").to_arrow()) == expected


def test_history_expiry_keeps_the_first_write_s_file_for_partitions_without_a_snapshot(
    catalog: Catalog, tmp_path: Path
) -> None:
    """A store created by its first write lists that write's file in record 1: expiring
    history after a snapshot of one partition must keep it for the others."""
    spec = catalog.new_spec("s", "keyvalue", "string", "long", 2)
    table = StoreTable(catalog, spec)
    keys = pa.array([f"k{i}" for i in range(20)])
    table.commit(table.stage(keys, pa.array(range(20)), None), creates=True)
    assert table.log.read(1).files  # the first write's file, in record 1
    table.commit(table.stage(keys.slice(0, 5), pa.array(range(100, 105)), None))
    expected = _sorted(table.to_arrow())
    assert compact(table, partitions=[1]) is not None
    catalog.vacuum("s", older_than_ms=0, retain_history_ms=0)
    assert _sorted(_fresh(catalog, tmp_path, "after").load("s").to_arrow()) == expected


def test_snapshot_batches_of_a_partition_past_2_gib_stay_within_32_bit_offsets() -> None:
    """Rows computed for a snapshot come as large binary; a piece that starts past 2 GiB in
    them is written as binary over the same bytes (the buffer here is allocated, not
    touched: only its last bytes are)."""
    from catalog.log.snapshots import _pieces, _snapshot_batch

    sizes = [1 << 30, (1 << 30) + 100, 200]
    buffer = pa.allocate_buffer(sum(sizes))
    tail = np.frombuffer(buffer, np.uint8)[-200:]
    tail[:] = np.frombuffer(bytes(range(200)), np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = pa.Array.from_buffers(pa.large_binary(), 3, [None, pa.py_buffer(offsets), buffer])
    keys = pa.array([b"a", b"b", b"c"], pa.large_binary())
    batches = [_snapshot_batch("default", k, v) for k, v in _pieces(keys, values)]
    assert [b.num_rows for b in batches] == [1, 1, 1]
    assert [b.column("value").type for b in batches] == [pa.binary()] * 3
    assert [pc.binary_length(b.column("value"))[0].as_py() for b in batches[:2]] == sizes[:2]
    assert batches[2].column("value")[0].as_py() == bytes(range(200))
    assert batches[2].column("key").to_pylist() == [b"c"]


def test_history_is_kept_while_no_snapshot_is_old_enough(catalog: Catalog) -> None:
    table = _build(catalog, "keyvalue", appends=3)
    compact(table)
    report = catalog.vacuum("s", older_than_ms=0, retain_history_ms=3_600_000)[0]
    assert report.deleted == [] and report.history_start == 1


def test_the_tail_after_a_commit_is_counted_without_reading_the_whole_log(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _build(catalog, "keyvalue", appends=20)  # commits 1..21
    record = compact(table)  # 22, base 21
    assert record is not None
    for n in range(3):  # 23..25
        table.commit(table.stage(pa.array([f"t{n}"]), pa.array([n]), None))
    log = _fresh(catalog, Path(catalog.cache_dir or "."), "unused").load("s").log
    read: list[int] = []
    real = log.read
    monkeypatch.setattr(log, "read", lambda i: (read.append(i), real(i))[1])
    assert tail_files(log, 0, 25) == sum(len(log.read(i).files_for(0)) for i in (23, 24, 25))
    assert min(read) == 22  # the snapshot's record; nothing below its base


def test_a_fresh_reader_of_a_compacted_store_reads_the_tail_of_the_log_not_all_of_it(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_store("long", "keyvalue", "string", "long", 2)
    for n in range(30):
        table.commit(table.stage(pa.array([f"k{n}"]), pa.array([n], pa.int64())))
    snapshot = compact(table)  # commit 32, of commit 31 (record 1 created the store)
    assert snapshot is not None and snapshot.base == 31
    for n in range(30, 32):
        table.commit(table.stage(pa.array([f"k{n}"]), pa.array([n], pa.int64())))
    commit_log._RECORDS.clear()  # as a new process
    fresh = Catalog(catalog.root, cache_dir=catalog.cache_dir).load("long")
    read: list[int] = []
    original = commit_log.CommitLog.read
    monkeypatch.setattr(
        commit_log.CommitLog, "read", lambda log, i: (read.append(i), original(log, i))[1]
    )
    plan = fresh.log.restore_plan(0, 34, 0)
    assert plan.snapshot is not None and plan.snapshot.id == snapshot.id
    assert [r.id for r in plan.records] == [33, 34]
    assert set(read) <= {31, 32, 33, 34}  # the snapshot's base, the records after it
    assert sorted(r["key"] for r in fresh.to_arrow().to_pylist()) == sorted(
        f"k{n}" for n in range(32)
    )
