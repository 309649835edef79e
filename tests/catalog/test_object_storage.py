"""Commits on object storage (S3, GCS and Azure emulators on 127.0.0.1, see
tests/emulators/servers.py): atomic with concurrent writers, refused where the backend cannot make
them atomic, and the same store semantics as on a local disk."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from catalog import Catalog
from catalog.log import commits as commit_log
from catalog.log.backends import storage_for
from catalog.log.paths import COMMITS_DIR, record_name
from catalog.log.storage import Storage
from stores.errors import InvalidOptionError
from tests.emulators.servers import Cloud

REPO = Path(__file__).resolve().parents[2]


def _fresh(root: str, cache: Path, **kwargs: Any) -> Catalog:
    """Another process's view of the warehouse: no records cached in memory."""
    commit_log._RECORDS.clear()
    return Catalog(root, cache_dir=str(cache), **kwargs)


def _rows(catalog: Catalog, name: str) -> dict[str, int]:
    return {r["key"]: r["value"] for r in catalog.load(name).to_arrow().to_pylist()}


def _check_log(catalog: Catalog, name: str, acknowledged: list[str]) -> None:
    """Ids run 1..N, every acknowledged write is published exactly once, nothing else is."""
    log = catalog.load(name).log
    ids = log.ids()
    assert ids == list(range(1, len(ids) + 1))
    write_ids = [log.read(i).write_id for i in ids[1:]]  # record 1 is the create
    assert sorted(write_ids) == sorted(acknowledged)


def test_a_store_on_object_storage_behaves_as_on_a_local_disk(cloud: Cloud, tmp_path: Path) -> None:
    s3_warehouse = cloud.root
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None))
    table.commit(table.stage(pa.array(["a"]), pa.array([10]), None))
    fresh = _fresh(s3_warehouse, tmp_path / "other-cache")
    assert fresh.list() == ["kv"]
    assert _rows(fresh, "kv") == {"a": 10, "b": 2}
    assert fresh.load("kv").log.ids() == [1, 2, 3]
    fresh.drop("kv")
    assert _fresh(s3_warehouse, tmp_path / "third-cache").list() == []


def test_a_conditional_create_has_exactly_one_winner(cloud: Cloud) -> None:
    storage = storage_for(cloud.root)
    storage.require_atomic_commit()
    results: dict[int, bool] = {}
    barrier = threading.Barrier(4)

    def create(i: int) -> None:
        barrier.wait()
        results[i] = storage.write_if_absent(f"writer {i}".encode(), "race", "key")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results.values()) == [False, False, False, True]
    winner = next(i for i, created in results.items() if created)
    assert storage.read_bytes("race", "key") == f"writer {winner}".encode()


def test_concurrent_writers_in_threads_lose_nothing(cloud: Cloud, tmp_path: Path) -> None:
    s3_warehouse = cloud.root
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    acknowledged: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def writer(w: int) -> None:
        table = Catalog(s3_warehouse, cache_dir=str(tmp_path / f"c{w}")).load("kv")
        barrier.wait()
        try:
            for n in range(4):
                write_id = f"t{w}n{n}"
                files = table.stage(pa.array([f"{w}-{n}"]), pa.array([w * 100 + n]), None,
                                    write_id=write_id)  # fmt: skip
                table.commit(files, write_id=write_id)
                acknowledged.append(write_id)
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    fresh = _fresh(s3_warehouse, tmp_path / "reader")
    _check_log(fresh, "kv", acknowledged)
    assert _rows(fresh, "kv") == {f"{w}-{n}": w * 100 + n for w in range(4) for n in range(4)}


_PROCESS_WRITER = """
import json, sys
import pyarrow as pa
from catalog import Catalog
root, cache, w = sys.argv[1], sys.argv[2], int(sys.argv[3])
table = Catalog(root, cache_dir=cache).load("kv")
for n in range(3):
    write_id = f"p{w}n{n}"
    files = table.stage(pa.array([f"{w}-{n}"]), pa.array([w * 100 + n]), None, write_id=write_id)
    table.commit(files, write_id=write_id)
    print(json.dumps(write_id), flush=True)
"""


def test_concurrent_writer_processes_lose_nothing(cloud: Cloud, tmp_path: Path) -> None:
    s3_warehouse, s3_env = cloud.root, cloud.env
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    env = {**s3_env, "PATH": "", "PYTHONPATH": str(REPO)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _PROCESS_WRITER, s3_warehouse, str(tmp_path / f"c{w}"), str(w)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(3)
    ]
    acknowledged = []
    for proc in writers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        acknowledged += [json.loads(line) for line in out.splitlines()]
    assert len(acknowledged) == 9
    fresh = _fresh(s3_warehouse, tmp_path / "reader")
    _check_log(fresh, "kv", acknowledged)
    assert _rows(fresh, "kv") == {f"{w}-{n}": w * 100 + n for w in range(3) for n in range(3)}


def test_a_409_conflict_is_retried(
    s3_warehouse: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    fs = catalog.storage.fs
    real = fs.pipe_file
    conflicts = []

    def pipe_file(path: str, data: bytes, **kwargs: Any) -> Any:
        if kwargs.get("mode") == "create" and not conflicts:
            conflicts.append(path)
            raise OSError("An error occurred (ConditionalRequestConflict) when calling PutObject")
        return real(path, data, **kwargs)

    monkeypatch.setattr(fs, "pipe_file", pipe_file)
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    assert conflicts and conflicts[0].endswith(record_name(2))
    assert _rows(_fresh(s3_warehouse, tmp_path / "reader"), "kv") == {"a": 1}


def test_an_endpoint_that_ignores_the_precondition_is_refused(
    cloud: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway in front of the emulator strips the precondition (If-None-Match: *, or
    ifGenerationMatch=0): every create succeeds, which the probe sees."""
    monkeypatch.setattr(cloud.server, "strip_preconditions", True)
    s3_warehouse = cloud.root
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    with pytest.raises(InvalidOptionError, match=rf"\[NO_ATOMIC_COMMIT\].*{re.escape(cloud.server.endpoint)}.*ignores the conditional create.*'singleWriter'"):
        catalog.create_store("kv", "keyvalue", "string", "long")
    assert catalog.list() == []
    single = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"), single_writer=True)
    table = single.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    assert _rows(single, "kv") == {"a": 1}


class _NonAtomicFileSystem(MemoryFileSystem):
    """A backend without a create-if-absent (as GCS or Azure are to state_store today)."""

    protocol = "nonatomic"
    store: ClassVar[dict[str, Any]] = {}  # its own files, apart from memory://
    pseudo_dirs: ClassVar[list[str]] = [""]


def test_a_backend_without_atomic_create_needs_single_writer(tmp_path: Path) -> None:
    fsspec.register_implementation("nonatomic", _NonAtomicFileSystem, clobber=True)
    catalog = Catalog("nonatomic://warehouse", cache_dir=str(tmp_path / "cache"))
    with pytest.raises(InvalidOptionError, match=r"\[NO_ATOMIC_COMMIT\].*'singleWriter'"):
        catalog.create_store("kv", "keyvalue", "string", "long")
    assert not catalog.storage.exists("kv")
    single = Catalog("nonatomic://warehouse", cache_dir=str(tmp_path / "cache"), single_writer=True)
    table = single.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    with pytest.raises(InvalidOptionError, match="NO_ATOMIC_COMMIT"):
        catalog.load("kv").stage(pa.array(["b"]), pa.array([2]), None)
    assert _rows(catalog, "kv") == {"a": 1}  # reading needs no promise


def test_vacuum_on_object_storage_removes_unlisted_leftovers(cloud: Cloud, tmp_path: Path) -> None:
    s3_warehouse = cloud.root
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    dead = table.stage(pa.array(["d"]), pa.array([4]), None, write_id="dead")
    report = catalog.vacuum("kv", older_than_ms=0)[0]
    assert report.deleted == [dead[0].path]
    assert not catalog.storage.exists("kv", dead[0].path)
    assert catalog.storage.exists("kv", COMMITS_DIR, record_name(2))
    assert _rows(_fresh(s3_warehouse, tmp_path / "reader"), "kv") == {"a": 1}


# -- the backend of a root ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("root", "backend", "cls", "atomic"),
    [
        ("warehouse", "local", "LocalStorage", True),
        ("file:///tmp/warehouse", "local", "LocalStorage", True),
        ("s3://bucket/warehouse", "s3", "ObjectStoreStorage", True),
        ("s3a://bucket/warehouse", "s3", "ObjectStoreStorage", True),
        ("gs://bucket/warehouse", "gcs", "ObjectStoreStorage", True),
        ("gcs://bucket/warehouse", "gcs", "ObjectStoreStorage", True),
        ("az://container/warehouse", "azure", "ObjectStoreStorage", True),
        ("abfs://container/warehouse", "azure", "ObjectStoreStorage", True),
        ("abfss://container@account.dfs.core.windows.net/warehouse", "azure", "ObjectStoreStorage",
         True),
        ("memory://warehouse", "memory", "MemoryStorage", True),
        ("nonatomic://warehouse", "nonatomic", "SingleWriterStorage", False),
    ],
)
def test_the_scheme_of_a_root_picks_its_backend(
    root: str, backend: str, cls: str, atomic: bool
) -> None:
    fsspec.register_implementation("nonatomic", _NonAtomicFileSystem, clobber=True)
    storage = storage_for(root)
    assert isinstance(storage, Storage)
    assert type(storage).__name__ == cls
    assert storage.backend == backend
    assert storage.atomic_put_if_absent is atomic


def test_a_storage_pickles_to_its_backend_and_root_only(tmp_path: Path) -> None:
    """Spark sends the storage to its executors: each opens its own filesystem."""
    storage = storage_for(str(tmp_path), single_writer=True)
    storage.write_bytes(b"x", "f")  # opens the filesystem
    copy = pickle.loads(pickle.dumps(storage))
    assert type(copy) is type(storage)
    assert (copy.root, copy.single_writer) == (storage.root, True)
    assert copy._fs is None
    assert copy.read_bytes("f") == b"x"


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="protocol 'nosuchfs'"):
        storage_for("nosuchfs://warehouse")
