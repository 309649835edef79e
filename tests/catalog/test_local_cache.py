"""Partition caches: transactional catch-up, and damaged local files rebuilt, never served."""

from __future__ import annotations

import os
import shutil
import threading
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog, StoreTable, faults, scans
from catalog.caches.partitions import PartitionCache
from catalog.kinds import Scan
from stores import KeyQuery
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.transactional import OFFSETS_CF, committed_offset_of

ROWS = 3000


@pytest.fixture
def table(catalog: Catalog) -> StoreTable:
    table = catalog.create_store("kv", "keyvalue", "string", "string")
    for part in range(3):
        keys = [f"key-{i:05d}" for i in range(part * ROWS // 3, (part + 1) * ROWS // 3)]
        table.commit(table.stage(pa.array(keys), pa.array([k * 8 for k in keys]), None))
    return table


def _cache(catalog: Catalog, table: StoreTable) -> PartitionCache:
    assert catalog.cache_dir is not None
    return PartitionCache(catalog.storage, table.spec, "kv", 0, catalog.cache_dir)


def _expected() -> list[tuple[str, str]]:
    return [(f"key-{i:05d}", f"key-{i:05d}" * 8) for i in range(ROWS)]


def _rows(table: StoreTable) -> list[tuple[str, str]]:
    """A full read, as Spark's (for a key-value store: from columns, without RocksDB)."""
    return sorted((r["key"], r["value"]) for r in table.to_arrow().to_pylist())


def _cache_rows(catalog: Catalog, table: StoreTable) -> list[tuple[str, str]]:
    """A read through the partition's RocksDB cache."""
    cache = _cache(catalog, table)
    run = scans.store_scan(table.spec, table.kind, Scan(), table.arrow_schema())
    batches = cache.read(table.log.latest_id(), run, table.arrow_schema())
    return sorted((r["key"], r["value"]) for b in batches for r in b.to_pylist())


def _built(catalog: Catalog, table: StoreTable) -> PartitionCache:
    """A cache at the latest commit with its data in SST files, and no scan file."""
    assert _cache_rows(catalog, table) == _expected()
    cache = _cache(catalog, table)
    db = RocksDBBytesStore(cache.path, ("default", OFFSETS_CF), sealed=True)  # sealed again
    db.flush()
    db.close()
    for name in os.listdir(cache.path + ".scans") if os.path.isdir(cache.path + ".scans") else []:
        os.unlink(os.path.join(cache.path + ".scans", name))
    (Path(cache.path) / "sentinel").touch()  # gone once the cache is discarded and rebuilt
    return cache


def _assert_healthy(cache: PartitionCache) -> None:
    assert not (Path(cache.path) / "sentinel").exists()  # discarded and rebuilt
    db = RocksDBBytesStore(cache.path, ("default", OFFSETS_CF), read_only=True, sealed=True)
    try:
        assert sum(1 for _ in db.items()) == ROWS  # raises on a damaged block
    finally:
        db.close()


def _size(path: Path) -> int:
    return path.stat().st_size


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_the_applied_commit_is_the_cache_s_committed_offset(catalog: Catalog, table: StoreTable) -> None:
    cache = _cache(catalog, table)
    assert cache.catch_up(3) == 3
    db = RocksDBBytesStore(cache.path, ("default", OFFSETS_CF), read_only=True)
    try:
        assert committed_offset_of(db) == 3
        assert sum(1 for _ in db.items()) == 2 * ROWS // 3
    finally:
        db.close()


def test_a_crash_after_a_commit_is_applied_keeps_that_commit(
    catalog: Catalog, table: StoreTable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = tmp_path / "faults"
    rules.write_text("cache.applied error\n")
    cache = _cache(catalog, table)
    assert cache.catch_up(2) == 2  # fresh: the state at 2 computed from columns, ingested
    monkeypatch.setenv(faults.ENV, str(rules))
    with pytest.raises(OSError, match="fault injected at cache.applied"):
        cache.catch_up(4)  # from 2: commits applied one at a time
    db = RocksDBBytesStore(cache.path, ("default", OFFSETS_CF), read_only=True)
    try:
        assert committed_offset_of(db) == 3
        assert sum(1 for _ in db.items()) == 2 * ROWS // 3
    finally:
        db.close()
    assert _rows(table) == _expected()
    shutil.rmtree(cache.path)  # a fresh cache is built in one step, up to the target
    rules.write_text("cache.applied error\n")  # the first fault was claimed
    with pytest.raises(OSError, match="fault injected at cache.applied"):
        cache.catch_up(4)
    db = RocksDBBytesStore(cache.path, ("default", OFFSETS_CF), read_only=True)
    try:
        assert committed_offset_of(db) == 4 and sum(1 for _ in db.items()) == ROWS
    finally:
        db.close()


def test_a_flipped_byte_in_an_sst_file_is_rebuilt(catalog: Catalog, table: StoreTable) -> None:
    cache = _built(catalog, table)
    sst = max((p for p in Path(cache.path).iterdir() if p.suffix == ".sst"), key=_size)
    _flip(sst)
    assert _cache_rows(catalog, table) == _expected()
    _assert_healthy(cache)  # the damaged cache was discarded and rebuilt


@pytest.mark.parametrize("kept", [0.5, 0.9, 0.97])
def test_a_truncated_manifest_is_rebuilt(catalog: Catalog, table: StoreTable, kept: float) -> None:
    # RocksDB opens a truncated MANIFEST as an older state, without an error: at 0.9 of this
    # one, the committed offset outlives the data (a read of 0 rows), unless the seal says so.
    cache = _built(catalog, table)
    (manifest,) = [p for p in Path(cache.path).iterdir() if p.name.startswith("MANIFEST-")]
    manifest.write_bytes(manifest.read_bytes()[: int(manifest.stat().st_size * kept)])
    assert _cache_rows(catalog, table) == _expected()
    _assert_healthy(cache)


def test_a_lost_current_file_is_rebuilt(catalog: Catalog, table: StoreTable) -> None:
    cache = _built(catalog, table)
    (Path(cache.path) / "CURRENT").unlink()
    assert _cache_rows(catalog, table) == _expected()
    _assert_healthy(cache)


def test_a_point_query_on_a_damaged_cache_is_answered_from_a_rebuild(
    catalog: Catalog, table: StoreTable
) -> None:
    from catalog import StateQueryRequest

    cache = _built(catalog, table)
    sst = max((p for p in Path(cache.path).iterdir() if p.suffix == ".sst"), key=_size)
    _flip(sst)
    result = catalog.query(StateQueryRequest.in_store("kv").with_query(KeyQuery.with_key("key-00042")))
    assert result.get_only_partition_result().get_result() == "key-00042" * 8


@pytest.mark.parametrize("damage", ["flipped", "truncated", "no checksum", "bad checksum"])
def test_a_damaged_scan_file_is_rebuilt_not_served(
    catalog: Catalog, table: StoreTable, damage: str
) -> None:
    assert _rows(table) == _expected()
    cache = _cache(catalog, table)
    scan = Path(cache.path + ".scans") / f"{table.log.latest_id():020d}.arrow"
    crc = Path(str(scan) + ".xxh3")
    assert scan.exists() and crc.exists()
    good = scan.read_bytes()
    if damage == "flipped":
        _flip(scan)
    elif damage == "truncated":
        scan.write_bytes(good[: len(good) // 2])
    elif damage == "no checksum":
        crc.unlink()
    else:
        crc.write_text("zz")
    assert _rows(table) == _expected()
    assert scan.read_bytes() == good and crc.exists()  # rebuilt, checksummed again


def test_a_scan_file_kept_with_an_older_checksum_is_rebuilt(
    catalog: Catalog, table: StoreTable
) -> None:
    assert _rows(table) == _expected()
    scan = Path(_cache(catalog, table).path + ".scans") / f"{table.log.latest_id():020d}.arrow"
    checksum = Path(str(scan) + ".xxh3")
    good = scan.read_bytes()
    legacy = Path(str(scan) + ".crc32")  # what versions before XXH3 kept beside it
    legacy.write_text(f"{zlib.crc32(good):08x}")
    checksum.unlink()
    assert _rows(table) == _expected()
    assert scan.read_bytes() == good and checksum.exists() and not legacy.exists()


def test_a_catch_up_that_rocksdb_reports_damaged_is_rebuilt_not_deadlocked(
    catalog: Catalog, table: StoreTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = _cache(catalog, table)
    assert cache.catch_up(2) == 2
    original = PartitionCache._catch_up
    failures = iter([Exception("Corruption: block checksum mismatch")])

    def damaged_once(self: PartitionCache, path: str, target: int) -> int:
        failure = next(failures, None)
        if failure is not None:
            raise failure  # what rocksdict raises for a damaged file
        return original(self, path, target)

    monkeypatch.setattr(PartitionCache, "_catch_up", damaged_once)
    # The repair discards the cache (taking its lock) and builds it again from the log. It
    # used to wait for the lock its own caller held: a thread bounds the wait, the test fails.
    done: list[int] = []
    worker = threading.Thread(target=lambda: done.append(cache.catch_up(4)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "catch_up deadlocked on its own lock"
    assert done == [4]
    db = RocksDBBytesStore(cache.path, ("default", OFFSETS_CF), read_only=True)
    try:
        assert sum(1 for _ in db.items()) == ROWS
    finally:
        db.close()


def test_a_first_read_stopped_early_keeps_no_scan_file(catalog: Catalog, table: StoreTable) -> None:
    target = table.log.latest_id()
    cache = _cache(catalog, table)
    scan = Path(cache.path + ".scans") / f"{target:020d}.arrow"
    schema = table.arrow_schema()
    columnar = scans.columnar(table.spec, table.kind, Scan(), schema)
    run = scans.store_scan(table.spec, table.kind, Scan(), schema)
    batches = cache.read_latest(target, run, schema, columnar)
    first = next(batches)  # served before the rest is computed into the file
    assert first.num_rows and not scan.exists()
    batches.close()  # a LIMIT: the reader stops
    assert not scan.exists()
    assert not [n for n in os.listdir(os.path.dirname(cache.path)) if n.startswith("scan-")]
    assert _rows(table) == _expected()  # a whole read keeps it
    assert scan.exists() and Path(str(scan) + ".xxh3").exists()


def test_records_dropped_as_expired_are_one_info_line_per_catch_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 39: Kafka warns once per record put into an expired segment; a cache catching up
    over many commits of late records printed a line for each. They are counted: one INFO
    line for the catch-up, with the count, and nothing at WARNING."""
    import logging

    catalog = Catalog(str(tmp_path / "wh"), cache_dir=str(tmp_path / "cache"),
                      compact_after_files=0)  # fmt: skip
    table = catalog.create_store("w", "window", "string", "long", window_size_ms=10,
                                 retention_ms=100, segment_interval_ms=50)  # fmt: skip
    # Each commit: a record at n s and 3 at 0-20 ms: late from the second commit on (a
    # commit's rows are applied in time order, so the first one's are not).
    for n in range(1, 6):
        starts = [n * 1000, 0, 10, 20]
        table.commit(table.stage(pa.array(["a", "b", "c", "d"]), pa.array([1] * 4, pa.int64()),
                                 {"window_start": pa.array(starts, pa.int64())}))  # fmt: skip
    with caplog.at_level(logging.INFO):
        table.partition_cache(0).catch_up(table.log.latest_id())
    lines = [r for r in caplog.records if "expired segment" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO
    assert "(12 records, store 'w' partition 0" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
