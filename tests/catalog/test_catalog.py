"""The catalog and its commit protocol, without Spark."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.caches.partitions import PartitionCache
from catalog.log import changelog
from catalog.log.backends import storage_for
from catalog.log.commits import CommitLog
from catalog.log.paths import record_name
from catalog.log.storage import Storage
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    SerdeError,
    StoreAlreadyExistsError,
    StoreNotFoundError,
)


def rows(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda r: repr(r["key"]))


def test_create_list_describe_drop(catalog: Catalog) -> None:
    catalog.create_store("orders", "keyvalue", "string", "long", num_partitions=3)
    catalog.create_store("fx", "versioned", "string", "double", history_retention_ms=60_000)
    assert catalog.list() == ["fx", "orders"]
    described = catalog.describe("fx")
    assert described["kind"] == "versioned" and described["value_type"] == "double"
    assert described["historyRetention"] == "1min" and described["latest_commit"] == 1  # commit 1 creates it
    assert described["segmentInterval"] == "20s" and described["created"].endswith("+00:00")
    with pytest.raises(StoreAlreadyExistsError):
        catalog.create_store("fx", "keyvalue", "string", "long")
    catalog.drop("orders")
    assert catalog.list() == ["fx"]
    with pytest.raises(StoreNotFoundError, match=r"\[STORE_NOT_FOUND\] store 'orders'.*existing: fx"):
        catalog.load("orders")
    # find: the same store as load, or None for a dropped or missing one (no error to build).
    found = catalog.find("fx")
    assert found is not None and found.spec == catalog.load("fx").spec
    assert catalog.find("orders") is None and catalog.find("nothing") is None


def test_unknown_store_names_root_existing_stores_and_closest(catalog: Catalog) -> None:
    catalog.create_store("rates", "keyvalue", "string", "long")
    with pytest.raises(StoreNotFoundError) as info:
        catalog.load("rate")
    message = str(info.value)
    assert catalog.root in message and "existing: rates" in message and "'rates'?" in message


@pytest.mark.parametrize(
    ("args", "params", "pattern"),
    [
        (("bad/name", "keyvalue", "string", "long"), {}, "store name"),
        (
            ("s", "windowed", "string", "long"),
            {},
            r"UNKNOWN_KIND\] option 'kind' is 'windowed'; did you mean 'window'\? Accepted: keyvalue",
        ),
        (("s", "window", "string", "long"), {"retention_ms": 10}, r"MISSING_OPTION\].*'windowSize'"),
        (("s", "window", "string", "long"), {"window_size_ms": 5}, "needs option 'retention'"),
        (
            ("s", "window", "string", "long"),
            {"window_size_ms": 50, "retention_ms": 10},
            "'retention' \\(10 ms\\) must be at least option 'windowSize'",
        ),
        (("s", "session", "string", "long"), {}, "needs option 'retention'"),
        (("s", "keyvalue", "string", "long"), {"headers": True}, "no header-aware plain"),
        (("s", "session", "string", "long"), {"retention_ms": 5, "window_size_ms": 1}, "'windowSize'"),
        (("s", "keyvalue", "date", "long"), {}, "column 'key' has type date"),
        (("s", "keyvalue", "string", "long", 0), {}, "numPartitions"),
        (("s", "versioned", "string", "long"), {}, "historyRetention"),
        (("s", "keyvalue", "string", "long"), {"history_retention_ms": 5}, "'historyRetention'"),
    ],
)
def test_bad_specs_are_refused_before_anything_is_written(
    catalog: Catalog, args: tuple, params: dict, pattern: str  # type: ignore[type-arg]
) -> None:
    with pytest.raises(InvalidOptionError, match=pattern):
        catalog.create_store(*args, **params)
    assert catalog.list() == []


def test_nothing_is_visible_before_the_commit_record(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    files = table.stage(pa.array(["a", "b", "c"]), pa.array([1, 2, 3]), None)
    assert {f.partition for f in files} <= {0, 1} and sum(f.rows for f in files) == 3
    assert table.to_arrow().num_rows == 0
    table.commit(files)
    assert rows(table.to_arrow()) == [
        {"key": "a", "value": 1},
        {"key": "b", "value": 2},
        {"key": "c", "value": 3},
    ]


def test_abort_deletes_staged_files(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    files = table.stage(pa.array(["a"]), pa.array([1]), None)
    path = Path(warehouse, "kv", files[0].path)
    assert path.exists()
    table.abort(files)
    assert not path.exists() and table.log.latest_id() == 1  # only the creation


def test_appends_tombstones_and_overwrite(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=4)
    table.commit(table.stage(pa.array(["a", "b", "c"]), pa.array([1, 2, 3]), None))
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([10, None], pa.int64()), None))
    assert rows(table.to_arrow()) == [{"key": "a", "value": 10}, {"key": "c", "value": 3}]
    record = table.commit(table.stage(pa.array(["z"]), pa.array([26]), None), overwrite=True)
    assert record.overwrite and record.id == 4  # 1 created the store
    assert rows(table.to_arrow()) == [{"key": "z", "value": 26}]
    table.commit(table.stage(pa.array(["y"]), pa.array([25]), None))
    assert rows(table.to_arrow()) == [{"key": "y", "value": 25}, {"key": "z", "value": 26}]


def test_a_cache_catches_up_incrementally_and_a_lost_cache_is_rebuilt(
    catalog: Catalog, tmp_path: Path
) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    assert rows(table.to_arrow()) == [{"key": "a", "value": 1}]
    table.commit(table.stage(pa.array(["b"]), pa.array([2]), None))
    cache = PartitionCache(catalog.storage, table.spec, "kv", 0, str(tmp_path / "cache"))
    assert cache.catch_up(2) == 2  # a fresh cache applies commits 1 (create) and 2 only
    assert cache.catch_up(3) == 3
    assert cache.catch_up(2) == 3  # never backwards
    import shutil

    shutil.rmtree(tmp_path / "cache")
    assert rows(table.to_arrow()) == [{"key": "a", "value": 1}, {"key": "b", "value": 2}]


def test_a_reader_pinned_to_an_older_commit_sees_its_snapshot(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    table.commit(table.stage(pa.array(["a"]), pa.array([2]), None))
    assert rows(table.to_arrow()) == [{"key": "a", "value": 2}]  # cache now at commit 3
    old = pa.Table.from_batches(list(table.read_partition(0, snapshot=2)))
    assert old.to_pylist() == [{"key": "a", "value": 1}]


def test_changelog_files_are_compressed_and_uncompressed_ones_still_read(
    catalog: Catalog, warehouse: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "string")
    values = pa.array(["v" * 100] * 1000)
    keys = pa.array([f"{i:08d}" for i in range(1000)])
    compressed = table.stage(keys, values, None)
    # Files of earlier releases are uncompressed: a store that has both reads alike.
    monkeypatch.setattr(changelog, "IPC_OPTIONS", pa.ipc.IpcWriteOptions())
    plain = table.stage(keys, values, None)
    assert compressed[0].size * 5 < plain[0].size
    newer = table.stage(keys.slice(0, 10), pa.array(["new"] * 10), None)
    table.commit(compressed)
    table.commit(newer)
    table.abort(plain)
    got = {r["key"]: r["value"] for r in table.to_arrow().to_pylist()}
    assert len(got) == 1000 and got["00000009"] == "new" and got["00000010"] == "v" * 100


def test_strings_that_are_not_utf8_are_refused_when_staged(catalog: Catalog, warehouse: str) -> None:
    """Spark's strings may hold any bytes (CAST(binary AS STRING) keeps them), and a read trusts
    the UTF-8 it finds: a write refuses them, naming the column, and stages nothing."""
    table = catalog.create_store("kv", "keyvalue", "string", "string")
    bad = pa.Array.from_buffers(
        pa.string(), 2, [None, pa.py_buffer(b"\0\0\0\0\1\0\0\0\3\0\0\0"), pa.py_buffer(b"a\xff\xfe")]
    )
    with pytest.raises(SerdeError, match=r"UNDECODABLE_VALUE.*value of row 1.*string.*binary"):
        table.stage(pa.array(["k1", "k2"]), bad, None)
    with pytest.raises(SerdeError, match=r"UNDECODABLE_KEY.*key of row 1"):
        table.stage(bad, pa.array(["v1", "v2"]), None)
    assert not list(Path(warehouse).rglob("*.arrow"))
    table.commit(table.stage(pa.array(["k"]), pa.array(["é"]), None))
    assert table.to_arrow().to_pylist() == [{"key": "k", "value": "é"}]


def test_a_task_stages_one_file_and_a_partition_reads_only_its_piece(
    catalog: Catalog, warehouse: str, tmp_path: Path
) -> None:
    """A stage writes one file whose pieces (a partition each) lie back to back; a reader
    of a partition reads and checks its piece alone, so damage in another partition's piece
    is found only by that partition's readers."""
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=4)
    keys = pa.array([f"key-{i}" for i in range(400)])
    files = table.stage(keys, pa.array(range(400)), None)
    assert len({f.path for f in files}) == 1 and files[0].path.startswith("changelog/tasks/")
    assert sorted(f.partition for f in files) == [0, 1, 2, 3]
    pieces = sorted(files, key=lambda f: f.offset)
    assert [f.offset for f in pieces] == [0, *(f.offset + f.size for f in pieces[:-1])]
    path = Path(warehouse, "kv", files[0].path)
    assert path.stat().st_size == sum(f.size for f in files)
    assert os.listdir(Path(warehouse, "kv", "changelog")) == ["tasks"]
    record = table.commit(files)
    assert record is not None
    expected = {p: rows(pa.Table.from_batches(list(table.read_partition(p, record.id))))
                for p in range(4)}  # fmt: skip
    damaged = pieces[1]
    data = bytearray(path.read_bytes())
    data[damaged.offset + damaged.size // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    fresh = Catalog(warehouse, cache_dir=str(tmp_path / "fresh")).load("kv")
    for partition in range(4):
        if partition == damaged.partition:
            with pytest.raises(CorruptDataError, match=rf"partition {partition}: .* at {damaged.offset}"):
                list(fresh.read_partition(partition, record.id))
        else:
            got = rows(pa.Table.from_batches(list(fresh.read_partition(partition, record.id))))
            assert got == expected[partition]


def test_a_store_written_by_the_previous_release_reads_and_takes_appends(
    catalog: Catalog, warehouse: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records of format 2 list whole files, one per partition and task (the previous
    release's layout): a store holding them reads, takes new writes, compacts and vacuums."""
    import zlib

    from catalog.log import records
    from catalog.log.records import ChangelogFile

    def legacy(storage: Storage, store_dir: str, pieces: list, name: str) -> list:  # type: ignore[type-arg]
        refs = []
        for partition, table in pieces:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_file(sink, table.schema, options=changelog.IPC_OPTIONS) as writer:
                writer.write_table(table)
            data = sink.getvalue().to_pybytes()
            rel = f"changelog/{partition:05d}/{name}.arrow"
            storage.write_bytes(data, store_dir, rel)
            refs.append(ChangelogFile(partition, rel, table.num_rows, len(data), zlib.crc32(data)))
        return refs

    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=3)
    with monkeypatch.context() as old:
        old.setattr(changelog, "write_changelog", legacy)
        old.setattr("catalog.staging.write_changelog", legacy)
        old.setattr(records, "FORMAT", 2)
        table.commit(table.stage(pa.array(["a", "b", "c", "d"]), pa.array([1, 2, 3, 4]), None))
        table.commit(table.stage(pa.array(["b", "e"]), pa.array([20, 5]), None))
    record = json.loads(Path(warehouse, "kv", "commits", record_name(3)).read_text())
    assert record["format"] == 2 and all("offset" not in f for f in record["files"])
    assert all(f["path"].startswith("changelog/000") for f in record["files"])
    table.commit(table.stage(pa.array(["a", "f"]), pa.array([10, 6]), None))
    expected = {"a": 10, "b": 20, "c": 3, "d": 4, "e": 5, "f": 6}
    fresh = Catalog(warehouse, cache_dir=str(tmp_path / "fresh"), compact_after_files=0)
    assert {r["key"]: r["value"] for r in rows(fresh.load("kv").to_arrow())} == expected
    assert fresh.compact("kv") is not None
    fresh.vacuum("kv", older_than_ms=0, retain_history_ms=0)
    again = Catalog(warehouse, cache_dir=str(tmp_path / "again")).load("kv")
    assert {r["key"]: r["value"] for r in rows(again.to_arrow())} == expected


def test_corrupt_changelog_file_is_detected(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    files = table.stage(pa.array(["a"]), pa.array([1]), None)
    table.commit(files)
    path = Path(warehouse, "kv", files[0].path)
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match="does not match its commit record"):
        table.to_arrow()


def test_concurrent_committers_each_get_their_own_commit(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long")
    staged = [table.stage(pa.array([i]), pa.array([i]), None) for i in range(8)]
    barrier = threading.Barrier(len(staged))

    def commit(files):  # type: ignore[no-untyped-def]
        barrier.wait()
        table.commit(files)

    threads = [threading.Thread(target=commit, args=(f,)) for f in staged]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert table.log.ids() == list(range(1, 10))  # 1 created it
    assert sorted(r["key"] for r in table.to_arrow().to_pylist()) == list(range(8))


def test_write_if_absent_is_atomic_on_local_files(tmp_path: Path) -> None:
    storage = storage_for(str(tmp_path))
    assert storage.atomic_put_if_absent
    assert storage.write_if_absent(b"first", "x", "f.json")
    assert not storage.write_if_absent(b"second", "x", "f.json")
    assert storage.read_bytes("x", "f.json") == b"first"
    assert os.listdir(tmp_path / "x") == ["f.json"]  # no temporary file left behind


def test_commit_gives_up_after_losing_every_race(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long")
    monkeypatch.setattr(Storage, "write_if_absent", lambda self, data, *parts: False)
    with pytest.raises(CommitConflictError, match="COMMIT_CONFLICT"):
        table.commit([])


def test_a_first_write_racing_another_creation(catalog: Catalog) -> None:
    from catalog import StoreTable

    mine = StoreTable(catalog, catalog.new_spec("kv", "keyvalue", "string", "long"))
    files = mine.stage(pa.array(["a"]), pa.array([1]), None)
    catalog.create_store("kv", "keyvalue", "string", "double")
    with pytest.raises(CommitConflictError, match="different spec"):
        mine.commit(files, creates=True)
    # The same spec created meanwhile: the first write becomes an append to it.
    same = StoreTable(catalog, catalog.new_spec("kv", "keyvalue", "string", "double"))
    record = same.commit(same.stage(pa.array(["a"]), pa.array([1.5]), None), creates=True)
    assert record is not None and record.id == 2 and record.operation == "append"
    assert catalog.load("kv").to_arrow().to_pylist() == [{"key": "a", "value": 1.5}]


def test_commit_log_replay_plan_starts_at_the_newest_overwrite(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long")
    for overwrite in (False, True, False, True, False):
        table.commit([], overwrite=overwrite)
    log = CommitLog(catalog.storage, "kv", table.spec.store_id)
    reset, records = log.replay_plan(0, 6)  # commit 1 created the store
    assert reset and [r.id for r in records] == [5, 6]
    reset, records = log.replay_plan(5, 6)
    assert not reset and [r.id for r in records] == [6]


def test_abort_write_finds_files_whose_results_were_lost(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    reported = table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None, "w1")
    lost = table.stage(pa.array(["c", "d"]), pa.array([3, 4]), None, "w1", sequence=1)
    other = table.stage(pa.array(["e"]), pa.array([5]), None, "w2")
    assert not table.was_aborted("w1")
    table.abort_write("w1", reported)
    assert table.was_aborted("w1") and not table.was_aborted("w2")
    remaining = sorted(str(p.relative_to(Path(warehouse, "kv"))) for p in Path(warehouse, "kv").rglob("*.arrow"))
    assert remaining == [other[0].path] and lost


def test_latest_scans_are_kept_as_columnar_files_per_commit(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None))
    first = table.to_arrow()
    scans = list((tmp_path / "cache").rglob("*.scans/*.arrow"))
    assert [p.name for p in scans] == [f"{2:020d}.arrow"]
    assert table.to_arrow().equals(first)  # the second read comes from the file
    table.commit(table.stage(pa.array(["a"]), pa.array([None], pa.int64()), None))
    assert rows(table.to_arrow()) == [{"key": "b", "value": 2}]
    assert [p.name for p in (tmp_path / "cache").rglob("*.scans/*.arrow")] == [f"{3:020d}.arrow"]
    # A scan file answers for its own commit only: a reader pinned to commit 2 sees commit 2.
    old = pa.Table.from_batches(list(table.read_partition(0, snapshot=2)))
    assert rows(old) == [{"key": "a", "value": 1}, {"key": "b", "value": 2}]


def test_a_versioned_commit_applies_in_timestamp_order_across_its_files(catalog: Catalog) -> None:
    table = catalog.create_store("v", "versioned", "string", "long", history_retention_ms=10)
    # Two tasks' files in one commit: applied file by file, "late"@5 would fall behind the
    # grace period set by "early"@1000 and be dropped; in timestamp order both are kept.
    # (Write ids "a" < "b" put the "early" file first in the commit record.)
    first = table.stage(pa.array(["early"]), pa.array([1]), {"timestamp": pa.array([1000], pa.int64())}, "a")
    second = table.stage(pa.array(["late"]), pa.array([2]), {"timestamp": pa.array([5], pa.int64())}, "b")
    assert [f.path for f in table.commit(second + first).files] == [first[0].path, second[0].path]
    assert [r["key"] for r in rows(table.to_arrow())] == ["early", "late"]


def test_one_writer_s_files_apply_in_the_order_it_staged_them(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long")
    files = []
    for sequence in range(12):  # the last of twelve stages must win, whatever the names
        files += table.stage(pa.array([1]), pa.array([sequence]), None, "w", sequence)
    table.commit(list(reversed(files)))
    assert table.to_arrow().to_pylist() == [{"key": 1, "value": 11}]


def test_a_half_read_partition_blocks_no_other_reader(catalog: Catalog) -> None:
    table = catalog.create_store("kv", "keyvalue", "long", "long")
    table.commit(table.stage(pa.array([1]), pa.array([1]), None))
    open_scan = table.read_partition(0, snapshot=2)
    assert next(open_scan).to_pylist() == [{"key": 1, "value": 1}]  # holds its shared lock
    assert table.to_arrow().to_pylist() == [{"key": 1, "value": 1}]  # same commit: shared
    table.commit(table.stage(pa.array([1]), pa.array([2]), None))
    # The cache is behind and busy: this read must neither wait nor see a partial state.
    assert table.to_arrow().to_pylist() == [{"key": 1, "value": 2}]
    open_scan.close()
    assert table.to_arrow().to_pylist() == [{"key": 1, "value": 2}]


def test_a_commit_whose_record_landed_before_an_error_is_kept(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from catalog.log import durable

    table = catalog.create_store("kv", "keyvalue", "long", "long")
    files = table.stage(pa.array([1]), pa.array([1]), None)

    def failing_fsync(path: str) -> None:
        raise OSError("disk went away after the link")

    monkeypatch.setattr(durable, "fsync_dir", failing_fsync)
    record = table.commit(files)
    monkeypatch.undo()
    assert record is not None and record.id == 2 and table.to_arrow().to_pylist() == [{"key": 1, "value": 1}]


MAX_MS = (2**63 - 1) // 1000


@pytest.mark.parametrize(
    ("kind", "params", "columns", "code"),
    [
        ("session", {"retention_ms": 10}, {"session_start": [10], "session_end": [5]}, "INVALID_SESSION"),
        ("window", {"retention_ms": 10, "window_size_ms": 5}, {"window_start": [None]}, "NULL_TIMESTAMP"),
        ("window", {"retention_ms": 10, "window_size_ms": 5}, {"window_start": [-5]}, "INVALID_TIMESTAMP"),
        ("window", {"retention_ms": 10, "window_size_ms": 5}, {"window_start": [MAX_MS - 4]}, "INVALID_TIMESTAMP"),
        ("timestamped", {}, {"timestamp": [MAX_MS + 1]}, "INVALID_TIMESTAMP"),
        ("timestamped", {}, {"timestamp": [-2]}, "INVALID_TIMESTAMP"),
        ("versioned", {"history_retention_ms": 10}, {"timestamp": [None]}, "NULL_TIMESTAMP"),
    ],
)
def test_stage_refuses_rows_the_store_could_not_apply(
    catalog: Catalog, kind: str, params: dict[str, int], columns: dict[str, list[int | None]], code: str
) -> None:
    table = catalog.create_store("s", kind, "string", "long", 2, **params)
    arrays = {name: pa.array(values, pa.int64()) for name, values in columns.items()}
    with pytest.raises(InvalidOptionError, match=rf"\[{code}\]"):
        table.stage(pa.array(["a"]), pa.array([1]), arrays)
    with pytest.raises(InvalidOptionError, match=r"\[NULL_KEY\]"):
        table.stage(pa.array([None], pa.string()), pa.array([1]), arrays)
    assert not list(Path(catalog.root).rglob("*.arrow"))


def test_stage_reads_a_null_timestamp_of_a_timestamped_store_as_unknown(catalog: Catalog) -> None:
    table = catalog.create_store("s", "timestamped", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), {"timestamp": pa.array([None], pa.int64())}))
    assert table.to_arrow().to_pylist() == [{"key": "a", "value": 1, "timestamp": None}]


def test_drop_clears_what_a_failed_first_write_left_but_not_a_running_one(
    catalog: Catalog, warehouse: str
) -> None:
    from catalog import StoreTable
    from stores.errors import CommitConflictError, StoreNotFoundError

    table = StoreTable(catalog, catalog.new_spec("s", "keyvalue", "string", "long"))
    files = table.stage(pa.array(["a"]), pa.array([1]), None, "w1")
    with pytest.raises(CommitConflictError, match="a first write to it may be running"):
        catalog.drop("s")
    table.abort_write("w1", files)  # leaves its abort marker, and no spec
    assert catalog.list() == [] and Path(warehouse, "s").exists()
    catalog.drop("s")
    assert not Path(warehouse, "s").exists()
    with pytest.raises(StoreNotFoundError):
        catalog.drop("s")


def test_the_stores_of_a_warehouse_read_as_a_table(catalog: Catalog) -> None:
    rates = catalog.create_store("rates", "versioned", "string", "double", 2,
                                 history_retention_ms=86_400_000)  # fmt: skip
    rates.commit(rates.stage(pa.array(["EUR"]), pa.array([1.1]),
                             {"timestamp": pa.array([5], pa.int64())}))  # fmt: skip
    catalog.create_store("clicks", "window", "string", "long", window_size_ms=300_000,
                         retention_ms=5_400_000)  # fmt: skip
    table = catalog.stores_table().to_pylist()
    assert [r["name"] for r in table] == ["clicks", "rates"]
    clicks, rates_row = table
    assert clicks["parameters"] == (  # as options, readable, segmentInterval defaulted
        "headers=false, retainDuplicates=false, retention=1h 30min, segmentInterval=45min, "
        "timestamped=false, windowSize=5min"
    )
    assert rates_row["kind"] == "versioned" and rates_row["value_type"] == "double"
    assert rates_row["partitions"] == 2 and rates_row["commits"] == 2
    assert rates_row["rows_written"] == 1 and rates_row["history_start"] == 1
    assert rates_row["parameters"].startswith("historyRetention=1 day")


def test_times_in_the_python_api_take_datetimes_and_iso_strings(catalog: Catalog) -> None:
    import datetime as dt

    from stores import VersionedKeyQuery

    table = catalog.create_store("fx", "versioned", "string", "double", history_retention_ms=86_400_000)
    table.commit(table.stage(pa.array(["EUR", "EUR"]), pa.array([1.1, 1.2]),
                             {"timestamp": pa.array([1_000, 2_000], pa.int64())}))  # fmt: skip
    at = dt.datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=dt.timezone.utc)
    for as_of in (1_500, at, "1970-01-01T00:00:01.5Z"):
        assert rows(table.to_arrow(as_of=as_of))[0]["value"] == 1.1
    assert VersionedKeyQuery.with_key("EUR").as_of("1970-01-01T00:00:01.5+00:00").as_of_timestamp() == 1_500
    with pytest.raises(InvalidOptionError, match="naive datetime"):
        table.to_arrow(as_of="1970-01-01T00:00:01")


def test_every_type_name_the_messages_list_is_accepted_ddl_and_json_alike(
    tmp_path: Path,
) -> None:
    """Issue 39: ``bigint`` was listed as accepted and refused (the Python API wanted
    Spark's JSON name ``long``). Every name the refusal lists, and its JSON name, in any case,
    makes a store of the same type."""
    from stores.serdes import SUPPORTED_TYPES
    from stores.types import DDL_NAMES

    catalog = Catalog(str(tmp_path / "wh"))
    listed = [n.strip() for n in SUPPORTED_TYPES.split(",") if "<" not in n]
    assert "bigint" in listed and "int" in listed
    for n, name in enumerate(listed):
        json_name = DDL_NAMES.get(name, name)
        for i, given in enumerate((name, json_name, name.upper())):
            table = catalog.create_store(f"s{n}-{i}", "keyvalue", given, "string")
            assert table.spec.key_type == json_name
    with pytest.raises(InvalidOptionError, match="decimal, which a store cannot hold"):
        catalog.create_store("bad", "keyvalue", "string", "decimal")
