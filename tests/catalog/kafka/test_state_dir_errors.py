"""What reading and writing a Kafka Streams state directory refuses (``catalog.kafka.state_dir``),
and the older layouts Kafka still opens: a directory locked by a running instance
(``StateDirectory.lockStateDirectory``: ``FileChannel.tryLock``, a POSIX lock), column families
no Kafka store of the declared kind opens (``RocksDBStore.openRocksDB``), segments of another
interval (``AbstractSegments.segmentIdFromSegmentName``), and a store in the older formats
(``RocksDBTimestampedStore``'s upgrade mode, KIP-258)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.kafka.export_dir import write_state_dir
from catalog.kafka.state_dir import read_state_dir
from catalog.kafka.task_dirs import read_checkpoint, write_checkpoint
from catalog.log.spec import StoreSpec
from catalog.partitioner import partition_of
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CorruptDataError, InvalidOptionError
from tests.catalog.kafka.test_state_dir import APP, build, canonical, files_of, own_reads, typed


@pytest.fixture
def app_dir(tmp_path: Path) -> str:
    return str(tmp_path / "state" / APP)


def export(catalog: Catalog, app_dir: str, variant: str, version: str = "3.9.1") -> StoreSpec:
    table = build(catalog, variant)
    write_state_dir(table, app_dir, store_name="s", kafka_version=version, subtopology=0,
                    offsets={0: 7, 1: 8})  # fmt: skip
    return table.spec


def respec(spec: StoreSpec, kind: str, **params: object) -> StoreSpec:
    return StoreSpec("s", kind, spec.key_type, spec.value_type, 2, params, partitioner="kafka")


@pytest.fixture
def locked(app_dir: str) -> Iterator[None]:
    """The app dir's ``.lock`` held by another process (``holding_the_lock``)."""
    with holding_the_lock(app_dir):
        yield


@contextlib.contextmanager
def holding_the_lock(app_dir: str) -> Iterator[None]:
    """The app dir's ``.lock`` held by another process, as a running Kafka Streams instance
    holds it (a POSIX record lock: per process, so not takeable from this one's other fds)."""
    os.makedirs(app_dir, exist_ok=True)
    holder = textwrap.dedent(
        f"""
        import fcntl, os, sys
        fd = os.open({os.path.join(app_dir, ".lock")!r}, os.O_RDWR | os.O_CREAT)
        fcntl.lockf(fd, fcntl.LOCK_EX)
        print("locked", flush=True)
        sys.stdin.read()
        """
    )
    with subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as child:  # fmt: skip
        assert child.stdout is not None and child.stdout.readline() == "locked\n"
        yield
        # Popen's exit closes stdin (the holder reads its end and exits) and waits.


def test_a_locked_state_dir_is_refused_both_ways(catalog: Catalog, app_dir: str, locked: None) -> None:
    table = build(catalog, "keyvalue")
    before = files_of(os.path.dirname(app_dir))
    with pytest.raises(InvalidOptionError, match=rf"\[STATE_DIR_LOCKED\].*{APP}.*running instance"):
        write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.0", subtopology=0,
                        offsets={})  # fmt: skip
    with pytest.raises(InvalidOptionError, match=r"\[STATE_DIR_LOCKED\]"):
        read_state_dir(app_dir, "s", table.spec)
    assert files_of(os.path.dirname(app_dir)) == before


def test_the_lock_is_free_again_once_the_instance_stops(catalog: Catalog, app_dir: str) -> None:
    spec = export(catalog, app_dir, "keyvalue")
    with open(os.path.join(app_dir, ".lock"), "w"):
        pass  # left behind by a stopped instance: no lock held
    assert len(read_state_dir(app_dir, "s", spec)) == 2


def test_an_unknown_column_family_is_refused(catalog: Catalog, app_dir: str) -> None:
    spec = export(catalog, app_dir, "timestamped")
    db = os.path.join(app_dir, "0_1", "rocksdb", "s")
    RocksDBBytesStore(db, ("default", "keyValueWithTimestamp", "state_store_meta")).close()
    with pytest.raises(InvalidOptionError, match=r"\[UNKNOWN_COLUMN_FAMILY\].*0_1/rocksdb/s.*"
                                                 r"'state_store_meta'"):  # fmt: skip
        read_state_dir(app_dir, "s", spec)


def test_our_segment_metadata_family_is_unknown_to_kafka(catalog: Catalog, app_dir: str) -> None:
    spec = export(catalog, app_dir, "window")
    segment = min(os.listdir(os.path.join(app_dir, "0_0", "s")))
    RocksDBBytesStore(os.path.join(app_dir, "0_0", "s", segment),
                      ("default", "segmentsMetadata")).close()  # fmt: skip
    with pytest.raises(InvalidOptionError, match=r"\[UNKNOWN_COLUMN_FAMILY\].*'segmentsMetadata'"):
        read_state_dir(app_dir, "s", spec)


@pytest.mark.parametrize(
    ("variant", "declared", "params", "found"),
    [
        ("timestamped", "keyvalue", {}, "'keyValueWithTimestamp' belongs to timestamped"),
        ("timestamped-headers", "timestamped", {}, "'keyValueWithTimestampAndHeaders'"),
        ("window", "keyvalue", {}, "holds segment databases"),
        ("keyvalue", "window", {"window_size_ms": 100, "retention_ms": 10**9,
                                "segment_interval_ms": 1000}, "is one database"),
        ("window-timestamped", "window", {"window_size_ms": 100, "retention_ms": 10**9,
                                          "segment_interval_ms": 1000}, "keyValueWithTimestamp"),
        ("session-headers", "session", {"retention_ms": 10**9, "segment_interval_ms": 1000},
         "'sessionKeyValueWithHeaders' belongs to session stores with headers"),
    ],
)  # fmt: skip
def test_a_store_of_another_kind_is_refused(
    catalog: Catalog, app_dir: str, variant: str, declared: str, params: dict[str, object],
    found: str,
) -> None:  # fmt: skip
    spec = export(catalog, app_dir, variant, "4.3.0")
    with pytest.raises(InvalidOptionError, match=rf"\[WRONG_STORE_KIND\].*{found}"):
        read_state_dir(app_dir, "s", respec(spec, declared, **params))


@pytest.mark.parametrize("interval", [3000, 500])
def test_segments_of_another_interval_are_refused(
    catalog: Catalog, app_dir: str, interval: int
) -> None:
    """3000: a directory name (``s.1000``) not a multiple of it; 500: names that are, but a
    segment ``s.1000`` (1000..1999 at 1 s) holding records of segment 3 at 500 ms."""
    spec = export(catalog, app_dir, "window-timestamped")
    params = {**spec.params, "segment_interval_ms": interval}
    with pytest.raises(InvalidOptionError, match=r"\[SEGMENT_INTERVAL_MISMATCH\].*segment"):
        read_state_dir(app_dir, "s", respec(spec, "window", **params))


def test_kafkas_older_segment_names_are_read(catalog: Catalog, app_dir: str) -> None:
    """``name:<start>`` and ``name-yyyyMMddHHmm`` (UTC), which Kafka renames on open."""
    table = build(catalog, "session")
    write_state_dir(table, app_dir, store_name="s", kafka_version="3.9.1", subtopology=0,
                    offsets={})  # fmt: skip
    store = os.path.join(app_dir, "0_0", "s")
    names = sorted(os.listdir(store), key=lambda n: int(n[2:]))
    os.rename(os.path.join(store, names[0]), os.path.join(store, names[0].replace(".", ":")))
    # 1970-01-01 00:00 UTC: the segment starting at 0 (minute-granular names).
    assert names[0] == "s.0"
    os.rename(os.path.join(store, "s:0"), os.path.join(store, "s-197001010000"))
    states = read_state_dir(app_dir, "s", table.spec)
    assert canonical(typed(table, states[0])) == own_reads(table, 0)
    os.mkdir(os.path.join(store, "s.x"))
    with pytest.raises(CorruptDataError, match=r"\[BAD_SEGMENT_NAME\].*s\.x"):
        read_state_dir(app_dir, "s", table.spec)


def test_a_timestamped_store_in_upgrade_mode_reads_as_kafka_serves_it(
    catalog: Catalog, app_dir: str
) -> None:
    """Plain values left in ``default`` beside ``keyValueWithTimestamp`` (KIP-258's upgrade
    mode): read with timestamp unknown (-1, null), the timestamped family winning a key."""
    spec = respec(StoreSpec("s", "timestamped", "string", "long", 2), "timestamped")

    def long(value: int) -> bytes:
        return value.to_bytes(8, "big")

    db = os.path.join(app_dir, "0_0", "rocksdb", "s")
    with RocksDBBytesStore(db, ("default", "keyValueWithTimestamp")) as store:
        store.put(b"a", long(1))
        store.put(b"b", long(2))
        store.put(b"b", long(50) + long(20), "keyValueWithTimestamp")
        store.put(b"c", long(60) + long(30), "keyValueWithTimestamp")
    (state,) = read_state_dir(app_dir, "s", spec)
    assert state.raw.to_pylist() == [
        {"key": b"a", "value": long(1), "timestamp": None},
        {"key": b"b", "value": long(20), "timestamp": 50},
        {"key": b"c", "value": long(30), "timestamp": 60},
    ]
    assert state.offsets == {}


def test_offsets_come_from_the_checkpoint_entry_of_the_stores_changelog(
    catalog: Catalog, app_dir: str
) -> None:
    spec = export(catalog, app_dir, "keyvalue")
    checkpoint = os.path.join(app_dir, "0_0", ".checkpoint")
    write_checkpoint(checkpoint, {(f"{APP}-s-changelog", 0): 99, (f"{APP}-other-changelog", 0): 5,
                                  (f"{APP}-s-changelog", 3): -4})  # fmt: skip
    states = read_state_dir(app_dir, "s", spec)
    assert states[0].offsets == {(f"{APP}-s-changelog", 0): 99}
    with open(checkpoint, "w") as f:
        f.write("0\n3\nx 0 1\n")
    with pytest.raises(CorruptDataError, match=r"\[BAD_CHECKPOINT\].*expected 3 entries"):
        read_state_dir(app_dir, "s", spec)


def test_a_store_not_partitioned_by_kafka_is_refused(catalog: Catalog, app_dir: str) -> None:
    table = catalog.create_store("c", "keyvalue", "string", "long", num_partitions=2)
    table.commit(table.stage(pa.array(["a"]), pa.array([1], pa.int64())))
    with pytest.raises(InvalidOptionError, match=r"\[PARTITIONER_MISMATCH\].*'crc32'"):
        write_state_dir(table, app_dir, store_name="c", kafka_version="4.3.0", subtopology=0,
                        offsets={})  # fmt: skip
    assert not os.path.exists(app_dir)


def test_headers_need_kafka_4_3(catalog: Catalog, app_dir: str) -> None:
    table = build(catalog, "session-headers")
    with pytest.raises(InvalidOptionError, match=r"\[UNSUPPORTED_KAFKA_VERSION\].*4\.3"):
        write_state_dir(table, app_dir, store_name="s", kafka_version="4.2.1", subtopology=0,
                        offsets={})  # fmt: skip
    with pytest.raises(InvalidOptionError, match=r"\[UNSUPPORTED_KAFKA_VERSION\].*'2\.8\.0'"):
        write_state_dir(table, app_dir, store_name="s", kafka_version="2.8.0", subtopology=0,
                        offsets={})  # fmt: skip
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_OFFSET\]"):
        write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.0", subtopology=0,
                        offsets={2: 1})  # fmt: skip
    assert not os.path.exists(app_dir)


def test_an_existing_store_dir_is_refused_and_another_stores_task_dir_kept(
    catalog: Catalog, app_dir: str
) -> None:
    spec = export(catalog, app_dir, "keyvalue")
    before = files_of(app_dir)
    table = catalog.load("s")
    with pytest.raises(InvalidOptionError, match=r"\[STORE_DIR_EXISTS\].*0_0/rocksdb/s"):
        write_state_dir(table, app_dir, store_name="s", kafka_version="3.9.1", subtopology=0,
                        offsets={})  # fmt: skip
    assert files_of(app_dir) == before
    # The same task dirs take a second store: its own directory, its checkpoint entry added.
    write_state_dir(table, app_dir, store_name="t", kafka_version="3.9.1", subtopology=0,
                    offsets={0: 70})  # fmt: skip
    assert read_checkpoint(os.path.join(app_dir, "0_0", ".checkpoint")) == {
        (f"{APP}-s-changelog", 0): 7, (f"{APP}-t-changelog", 0): 70,
    }  # fmt: skip
    assert sorted(os.listdir(os.path.join(app_dir, "0_0", "rocksdb"))) == ["s", "t"]
    assert [e for e in os.listdir(app_dir) if e.startswith(".statestore")] == []
    for name in ("s", "t"):
        states = read_state_dir(app_dir, name, spec)
        own = [own_reads(table, 0), own_reads(table, 1)]
        assert [canonical(typed(table, s)) for s in states] == own


def test_two_task_dirs_of_one_partition_are_ambiguous(catalog: Catalog, app_dir: str) -> None:
    spec = export(catalog, app_dir, "keyvalue")
    shutil.copytree(os.path.join(app_dir, "0_1"), os.path.join(app_dir, "3_1"))
    with pytest.raises(CorruptDataError, match=r"\[AMBIGUOUS_TASKS\].*0_1.*3_1"):
        read_state_dir(app_dir, "s", spec)


def test_a_crash_while_writing_leaves_no_half_task_dir(
    catalog: Catalog, app_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from catalog.kafka import export_dir

    table = build(catalog, "window")
    real, calls = export_dir._write_database, []

    def failing(*args: object, **kwargs: object) -> None:
        calls.append(args)
        if len(calls) == 3:
            raise OSError("disk full")
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(export_dir, "_write_database", failing)
    with pytest.raises(OSError, match="disk full"):
        write_state_dir(table, app_dir, store_name="s", kafka_version="4.3.0", subtopology=0,
                        offsets={0: 1, 1: 2})  # fmt: skip
    assert os.listdir(app_dir) == []  # neither 0_0 nor a temporary directory


def test_partitions_without_rows_get_their_offsets_only(catalog: Catalog, app_dir: str) -> None:
    """Partition 1 holds nothing: with an offset, a task dir holding it (4.3: in the store's
    ``offsets`` family; a segmented store without segments: a ``.checkpoint``, which 4.3
    migrates); without one, no task dir."""
    key = next(k for k in map(str, range(100)) if partition_of(k.encode(), 3, "kafka") == 0)
    for name, kind, params in (("kv", "keyvalue", {}),
                               ("w", "window", {"window_size_ms": 10, "retention_ms": 10**9})):  # fmt: skip
        table = catalog.create_store(name, kind, "string", "long", num_partitions=3,
                                     partitioner="kafka", **params)  # fmt: skip
        columns = {"window_start": pa.array([0], pa.int64())} if kind == "window" else None
        table.commit(table.stage(pa.array([key]), pa.array([1], pa.int64()), columns))
        write_state_dir(table, app_dir, store_name=name, kafka_version="4.3.0", subtopology=0,
                        offsets={0: 3, 1: 4})  # fmt: skip
    assert sorted(os.listdir(app_dir)) == ["0_0", "0_1"]
    assert read_checkpoint(os.path.join(app_dir, "0_1", ".checkpoint")) == {
        (f"{APP}-w-changelog", 1): 4
    }
    assert os.listdir(os.path.join(app_dir, "0_1", "w")) == []
    for name in ("kv", "w"):
        states = read_state_dir(app_dir, name, catalog.load(name).spec)
        assert [(s.partition, s.raw.num_rows, s.offsets) for s in states] == [
            (0, 1, {(f"{APP}-{name}-changelog", 0): 3}),
            (1, 0, {(f"{APP}-{name}-changelog", 1): 4}),
        ]


def test_named_topology_dirs_are_not_read(catalog: Catalog, app_dir: str) -> None:
    spec = export(catalog, app_dir, "keyvalue")
    shutil.copytree(os.path.join(app_dir, "0_1"), os.path.join(app_dir, "__other__", "0_1"))
    assert [s.partition for s in read_state_dir(app_dir, "s", spec)] == [0, 1]
