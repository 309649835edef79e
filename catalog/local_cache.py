"""Local materialization: each store partition as a RocksDB that caches the committed changelog.

The durable files are the truth; a partition's RocksDB is a cache of them. It keeps, in its
``state_store_meta`` column family and in the same atomic batch as the data, the id of the last
commit it applied (Kafka's checkpointed changelog offset), and catches up by replaying the
partition's files of newer commits, one commit per batch. A lost directory is rebuilt.

Several tasks and processes read the same partition at once: reading takes a shared ``flock`` on
a lock file beside the database and opens it read-only, which RocksDB allows alongside other
read-only handles; catching up takes the lock exclusively, without waiting, and opens it
read-write. A reader pinned to an older commit than the cache has reached (a write committed
while its query ran), or one that finds the cache behind while others read it, reads from a
private, temporary materialization instead: every query sees one snapshot, and no reader waits
for another.

Where: ``$STATE_STORE_CACHE_DIR``, else the first of ``$SPARK_LOCAL_DIRS`` (set by Spark for
Python workers: executor-local), else the system temporary directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from catalog.changelog import read_changelog
from catalog.commit_log import CommitLog
from catalog.kinds import kind_of
from catalog.spec import StoreSpec
from catalog.storage import Storage
from stores.errors import StoreNotFoundError
from stores.rocksdb_bytes import RocksDBBytesStore

META_CF = "state_store_meta"
_APPLIED = b"appliedCommit"


def default_cache_root() -> str:
    """Where partition caches live on this machine (see module doc)."""
    explicit = os.environ.get("STATE_STORE_CACHE_DIR")
    if explicit:
        return explicit
    spark_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    base = spark_dirs.split(",")[0] if spark_dirs else tempfile.gettempdir()
    return os.path.join(base, "state_store_cache")


def _applied(db: RocksDBBytesStore) -> int:
    raw = db.get(_APPLIED, META_CF)
    return int.from_bytes(raw, "big") if raw else 0


class PartitionCache:
    """The local RocksDB of one store partition."""

    def __init__(
        self, storage: Storage, spec: StoreSpec, store_dir: str, partition: int, cache_root: str
    ) -> None:
        self.storage = storage
        self.spec = spec
        self.store_dir = store_dir
        self.partition = partition
        self.kind = kind_of(spec.kind)
        warehouse = hashlib.sha1(storage.root.encode()).hexdigest()[:12]
        self.path = os.path.join(
            cache_root, warehouse, f"{spec.name}-{spec.store_id}", f"p{partition:05d}"
        )
        self.log = CommitLog(storage, store_dir, spec.store_id)
        self._families = (*self.kind.column_families(spec.params), META_CF)

    @contextlib.contextmanager
    def _lock(self, exclusive: bool, *, wait: bool = True) -> Iterator[None]:
        """Hold the partition's ``flock``; raises BlockingIOError if busy and not ``wait``."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path + ".lock", "a+b") as handle:
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            fcntl.flock(handle, mode if wait else mode | fcntl.LOCK_NB)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def catch_up(self, target: int) -> int:
        """Bring the cache to commit ``target`` (never backwards); return the id it is at."""
        with self._lock(exclusive=True):
            return self._catch_up(self.path, target)

    def _catch_up(self, path: str, target: int) -> int:
        db = RocksDBBytesStore(path, self._families, autocommit=False)
        try:
            applied = _applied(db)
            if applied >= target:
                return applied
            reset, records = self.log.replay_plan(applied, target)
            if reset:  # staged in the batch of the first record's data: atomic with it
                for family in self._families:
                    db.clear(family)
            store = self.kind.open(db, self.spec.params)
            if path == self.path:
                shutil.rmtree(self.path + ".scans", ignore_errors=True)
            for record in records:
                # One commit's files are applied as one table: a kind may order its rows (the
                # versioned kind sorts by timestamp), and how Spark split them into tasks and
                # files must not matter.
                tables = [
                    read_changelog(self.storage, self.store_dir, ref)
                    for ref in record.files_for(self.partition)
                ]
                if tables:
                    self.kind.apply(store, pa.concat_tables(tables), self.spec.params)
                db.put(_APPLIED, record.id.to_bytes(8, "big"), META_CF)
                db.commit()
            return target
        finally:
            db.close()

    @contextlib.contextmanager
    def _open_shared(self, target: int) -> Iterator[Any]:
        """Yield the cache's store under a shared lock if it is at ``target``, else None."""
        with self._lock(exclusive=False):
            try:
                db = RocksDBBytesStore(self.path, self._families, read_only=True)
            except StoreNotFoundError:
                yield None
                return
            try:
                yield self.kind.open(db, self.spec.params) if _applied(db) == target else None
            finally:
                db.close()

    @contextlib.contextmanager
    def open_at(self, target: int) -> Iterator[tuple[Any, bool]]:
        """Yield ``(store, shared)``: the partition's store as of commit ``target``, read-only.

        ``shared`` is True when it is this machine's cache, read under a shared lock that other
        readers share; False for a private materialization, made when the cache cannot be at
        ``target``: it has moved past it, or it is behind and busy with readers (waiting for
        them could wait on a half-consumed scan of this very process).
        """
        with self._open_shared(target) as store:
            if store is not None:
                yield store, True
                return
        try:
            with self._lock(exclusive=True, wait=False):
                self._catch_up(self.path, target)
        except BlockingIOError:
            pass
        with self._open_shared(target) as store:
            if store is not None:
                yield store, True
                return
        private = tempfile.mkdtemp(prefix="snapshot-", dir=os.path.dirname(self.path))
        try:
            self._catch_up(private, target)
            db = RocksDBBytesStore(private, self._families, read_only=True)
            try:
                yield self.kind.open(db, self.spec.params), False
            finally:
                db.close()
        finally:
            shutil.rmtree(private, ignore_errors=True)

    def _scan_file(self, target: int) -> str:
        return os.path.join(self.path + ".scans", f"{target:020d}.arrow")

    def read_latest(
        self, target: int, scan: Callable[[Any], Iterator[pa.RecordBatch]], schema: pa.Schema
    ) -> Iterator[pa.RecordBatch]:
        """The batches ``scan(store)`` yields at commit ``target``, kept as a columnar file.

        A full scan of the latest state is what Spark reads most; RocksDB iterates it far
        slower than Arrow reads a memory-mapped IPC file. The first scan at a commit tees its
        batches into ``<cache>.scans/<commit>.arrow``; later ones read that file. Catching up
        to a newer commit deletes the files of older ones (under the exclusive lock, so no
        reader has them open in a way that matters: a mapped file outlives its unlink).
        """
        path = self._scan_file(target)
        with self.open_at(target) as (store, shared):
            if shared and os.path.exists(path):
                with pa.memory_map(path) as source:
                    reader = pa.ipc.open_file(source)
                    for i in range(reader.num_record_batches):
                        yield reader.get_batch(i)
                return
            if not shared:
                yield from scan(store)
                return
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            try:
                with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
                    for batch in scan(store):
                        writer.write_batch(batch)
                        yield batch
                os.replace(tmp, path)  # concurrent first readers write the same bytes
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
