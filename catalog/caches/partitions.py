"""Local materialization: each store partition as a RocksDB that caches the committed changelog.

The durable files are the truth; a partition's RocksDB is a cache of them, kept as a
transactional store (``stores.transactional``, the mechanism of the standalone stores): the
commit log's commit id is its changelog offset. Catching up applies each newer commit's files as
one transaction and commits it together with the commit's id, in the store's ``offsets`` column
family; a crash at any point leaves the cache at the last commit it applied. A fresh cache
starts from the newest usable snapshot (``catalog.log.snapshots``, written by compaction) and
replays the commits after it (``CommitLog.restore_plan``).

Several tasks and processes read the same partition at once: reading takes a shared ``flock`` on
a lock file beside the database and opens it read-only, which RocksDB allows alongside other
read-only handles; catching up takes the lock exclusively, without waiting, and opens it
read-write. A reader pinned to an older commit than the cache has reached (a write committed
while its query ran), or one that finds the cache behind while others read it, reads from a
private, temporary materialization instead: every query sees one snapshot, and no reader waits
for another.

Nothing local is trusted blindly. RocksDB checks its blocks and table files, and the cache is
sealed (``stores.bytes.rocksdb``: the MANIFEST of its last clean close, which RocksDB itself
would read, truncated, as an older state); when damage shows (a flipped byte in an SST file, a
truncated MANIFEST, a lost CURRENT), the cache is discarded and rebuilt from the log, once,
before anything is served (``PartitionCache.repairing``, which the lookups of the operations
and of the as-of join use too). Scans are written whole to an Arrow file before their first
batch is served, so a corruption found mid-scan is rebuilt too. The latest full scan of a
commit is kept as a scan file (``catalog.caches.scan_files``), checked before it is served.

Where: ``$STATE_STORE_CACHE_DIR``, else the first of ``$SPARK_LOCAL_DIRS`` (set by Spark for
Python workers: executor-local), else the system temporary directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import pyarrow as pa

from catalog import faults
from catalog.caches import scan_files
from catalog.caches.names import cache_name, generation_of, partition_of
from catalog.kinds import STORE_MUST_ANSWER, kind_of
from catalog.log import durable
from catalog.log.changelog import read_changelog
from catalog.log.commits import CommitLog, RestorePlan
from catalog.log.records import CommitRecord
from catalog.log.snapshots import load_snapshot, snapshot_runs
from catalog.log.spec import StoreSpec
from catalog.log.storage import Storage
from stores.bytes.rocksdb import RocksDBBytesStore, is_rocksdb_failure
from stores.errors import CorruptDataError, StoreNotFoundError
from stores.segments.dropped import counted
from stores.transactional import OFFSETS_CF, TransactionalStore, committed_offset_of

#: Computes a partition's scan from columns: (snapshot runs by column family, the changelog
#: rows of each commit after it) to typed batches, or None to decline.
Columnar = Callable[
    [dict[str, tuple[pa.Array, pa.Array]], list[pa.Table]], "Iterator[pa.RecordBatch] | None"
]
#: A cache applies one commit per transaction, however large: the unit of the log.
_UNBOUNDED = sys.maxsize
#: After a snapshot, a tail the store would apply row by row (window, session and versioned
#: stores) with at least 1/``_RECOMPUTE_SHARE`` as many rows as the snapshot is not applied:
#: the whole state is computed from columns (``StoreKind.store_rows``) and ingested. Measured
#: for window stores: about 3 us a row applied, 0.8 us a row computed and ingested, 0.3 us a
#: row for a snapshot ingested as it is.
_RECOMPUTE_SHARE = 4

_T = TypeVar("_T")
_log = logging.getLogger(__name__)


def default_cache_root() -> str:
    """Where partition caches live on this machine (see module doc)."""
    explicit = os.environ.get("STATE_STORE_CACHE_DIR")
    if explicit:
        return explicit
    spark_dirs = os.environ.get("SPARK_LOCAL_DIRS")
    base = spark_dirs.split(",")[0] if spark_dirs else tempfile.gettempdir()
    return os.path.join(base, "state_store_cache")


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
        self._folder = os.path.join(cache_root, warehouse, f"{spec.name}-{spec.store_id}")
        self._path: str | None = None
        self._generation = 0
        self.log = CommitLog(storage, store_dir, spec.store_id)
        self._families = tuple(self.kind.column_families(spec.params))

    @property
    def path(self) -> str:
        """The cache's RocksDB directory (see ``located``)."""
        return self._path if self._path is not None else self.located(0)

    def located(self, target: int) -> str:
        """The cache's directory, named after the newest erasure that rewrote a piece of the
        partition (``catalog.log.erasures``) as the newest record says (read at each call:
        the log's newest at ``target`` or after; 0: the latest commit). A cache built before
        an erasure may hold its keys: it is never read again, and deleted here
        (``purge_stale``)."""
        self.log.latest_id(target)  # reads the newest record: the erasures it carries
        generation = self.log.erased.generation(self.partition)
        if self._path is None or generation != self._generation:
            self._path = os.path.join(self._folder, cache_name(self.partition, generation))
            self._generation = generation
            if generation:
                self.purge_stale()
        return self._path

    def _outdated(self, path: str) -> bool:
        """Whether the shared cache at ``path`` was named before an erasure that the log has
        shown since (one landing while this process reads): what it applied may hold the
        erased keys."""
        return path == self._path and self.log.erased.generation(self.partition) != self._generation

    def purge_stale(self) -> list[str]:
        """Delete this partition's caches built before the erasure its name says (and those of
        an older format), with their scan files and locks, each unless a reader holds it (a
        later call deletes it). Returns the directories deleted."""
        current = generation_of(os.path.basename(self.path))
        try:
            names = os.listdir(self._folder)
        except FileNotFoundError:
            return []
        deleted = []
        for name in names:
            if partition_of(name) != self.partition or name.endswith((".lock", ".scans")):
                continue
            generation = generation_of(name)
            if generation is not None and current is not None and generation >= current:
                continue
            stale = os.path.join(self._folder, name)
            try:
                with open(stale + ".lock", "a+b") as handle:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    shutil.rmtree(stale, ignore_errors=True)
                    shutil.rmtree(scan_files.scans_folder(stale), ignore_errors=True)
                    os.unlink(stale + ".lock")
            except BlockingIOError:
                continue  # a reader has it open: the next cache of this partition deletes it
            deleted.append(stale)
        return deleted

    # -- locking and repair --------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self, exclusive: bool, *, wait: bool = True) -> Iterator[None]:
        """Hold the partition's ``flock``; raises BlockingIOError if busy and not ``wait``."""
        durable.makedirs(os.path.dirname(self.path))
        with open(self.path + ".lock", "a+b") as handle:
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            fcntl.flock(handle, mode if wait else mode | fcntl.LOCK_NB)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def discard(self) -> None:
        """Delete the cache and its scan files (under the exclusive lock): rebuilt on next use."""
        with self._lock(exclusive=True):
            shutil.rmtree(self.path, ignore_errors=True)
            shutil.rmtree(scan_files.scans_folder(self.path), ignore_errors=True)

    def repairing(
        self, action: Callable[[], _T], *, release: Callable[[], None] | None = None
    ) -> _T:
        """Run ``action`` over this cache; if RocksDB reports damage, discard the cache (it is
        rebuilt from the log on next use) and run ``action`` once more.

        Args:
            action: what reads the cache (opening it, a scan, lookups).
            release: closes what the caller holds open of the cache, before it is discarded
                (the discard takes the lock exclusively, which a held shared lock would block).

        Raises:
            CorruptDataError: the damage persists after a rebuild.
        """
        try:
            return action()
        except Exception as exc:
            if not is_rocksdb_failure(exc):
                raise
            if release is not None:
                release()
            self.discard()
        try:
            return action()
        except Exception as exc:
            if not is_rocksdb_failure(exc):
                raise
            raise CorruptDataError(
                f"the local cache {self.path} of store {self.spec.name!r} partition "
                f"{self.partition} fails even after a rebuild from the log: {exc}"
            ) from exc

    # -- catching up ---------------------------------------------------------------------------

    def catch_up(self, target: int) -> int:
        """Bring the cache to commit ``target`` (never backwards); return the id it is at."""

        self.located(target)

        def locked() -> int:
            with self._lock(exclusive=True):
                return self._catch_up(self.path, target)

        # The repair discards the cache under the lock itself: the lock is released first (a
        # second flock of this process on another handle would wait for this one forever).
        return self.repairing(locked)

    @property
    def families(self) -> tuple[str, ...]:
        """The column families of this partition's store."""
        return self._families

    def materialize(self, path: str, target: int) -> int:
        """Bring a private database at ``path`` (new or made here before) to commit ``target``,
        as ``catch_up`` does the shared one; return the commit it is at."""
        return self._catch_up(path, target)

    def _open_transactional(self, path: str) -> TransactionalStore[Any]:
        return TransactionalStore(
            path,
            self._families,
            lambda db: self.kind.open(db, self.spec.params),
            max_uncommitted_bytes=_UNBOUNDED,
            sealed=True,
        )

    def _catch_up(self, path: str, target: int) -> int:
        what = f"store {self.spec.name!r} partition {self.partition} to commit {target}"
        with counted(_log, what):  # one line for the commits applied, not one a commit
            return self._catch_up_counted(path, target)

    def _catch_up_counted(self, path: str, target: int) -> int:
        if target < 1:
            return 0
        fresh = not os.path.isdir(path)  # made here: empty, no earlier build's leftovers
        if fresh:
            durable.makedirs(path)
        tx = self._open_transactional(path)
        try:
            applied = tx.committed_offset() or 0
            if applied >= target:
                return applied
            plan = self.log.restore_plan(applied, target, self.partition)
            if applied and self._outdated(path):
                # An erasure landed since this cache was named: start over (from the
                # replaced files), here, under the lock held; the name stays outdated (the
                # next ``located`` moves on), the contents do not.
                tx, applied, fresh = self._emptied(tx, path), 0, True
                self._generation = self.log.erased.generation(self.partition)
                plan = self.log.restore_plan(0, target, self.partition)
            if path == self.path:
                shutil.rmtree(scan_files.scans_folder(self.path), ignore_errors=True)
            snapshot = plan.snapshot if plan.snapshot and plan.snapshot.base is not None else None
            commits: Iterable[tuple[int, pa.Table]] = self._commit_tables(plan)
            # A database that starts over from the log alone gets its state from columns where
            # the kind computes it; a snapshot is ingested as it is (its runs are the rows),
            # and the short tail after it applied.
            if (applied == 0 or plan.reset) and snapshot is None:
                commits = list(commits)  # read once: for the columns, or for the store after
                rows = self.kind.store_rows({}, [t for _, t in commits], self.spec.params)
                if rows is not STORE_MUST_ANSWER:
                    # The state computed from columns, ingested as SST files into an empty
                    # database, as a snapshot is (a crash before the offset is committed leaves
                    # a database that committed nothing, which starts over the same way).
                    tx = tx if fresh else self._emptied(tx, path)
                    self._ingested(tx, rows, target)
                    return target
            if snapshot is not None:
                # The snapshot is ingested as SST files into an empty database (ingest bypasses
                # the batch; a crash before the offset is committed leaves a database that
                # committed nothing, which starts over the same way). Its tail: where the kind
                # computes what the tail leaves over any state, one more SST file over it;
                # where a long tail would be applied row by row, the whole state computed from
                # columns instead (``_RECOMPUTE_SHARE``); else applied by the store.
                commits = list(commits)  # read once: for the columns, or for the store after
                tables = [t for _, t in commits]
                overlay = (
                    self.kind.overlay_rows(tables, self.spec.params) if tables else STORE_MUST_ANSWER
                )
                tail_rows = sum(t.num_rows for t in tables)
                snapshot_rows = sum(f.rows for f in snapshot.files_for(self.partition))
                runs = None
                recompute = tail_rows and tail_rows * _RECOMPUTE_SHARE >= snapshot_rows
                if overlay is STORE_MUST_ANSWER and recompute:
                    runs = self._snapshot_runs(snapshot)
                    rows = self.kind.store_rows(runs, tables, self.spec.params)
                    if rows is not STORE_MUST_ANSWER:
                        tx = tx if fresh else self._emptied(tx, path)
                        self._ingested(tx, rows, target)
                        return target
                tx = tx if fresh else self._emptied(tx, path)
                loaded: set[str] = set()
                if runs is not None:  # read already: ingested from memory
                    loaded = {family for family, (keys, _) in runs.items() if len(keys)}
                    for family in loaded:
                        tx.db.ingest_sorted(family, _slices(*runs[family]))
                else:
                    for ref in snapshot.files_for(self.partition):
                        loaded |= load_snapshot(tx.db, self.storage, self.store_dir, ref)
                if overlay is not STORE_MUST_ANSWER and loaded <= overlay.keys():
                    self._ingested(tx, overlay, target, deletions=True)
                    return target
                faults.point("cache.ingested")
                tx.commit(snapshot.base)
                tx.reopen()
                faults.point("cache.applied")
            elif plan.reset:  # staged in the first transaction below: atomic with its data
                for family in self._families:
                    tx.db.clear(family)
                tx.reopen()
            for commit_id, table in commits:
                self.kind.apply(tx.store, table, self.spec.params)
                tx.commit(commit_id)
                faults.point("cache.applied")
            if tx.committed_offset() != target:
                tx.commit(target)  # commits after the last one with files for this partition
            return target
        finally:
            tx.close()

    def _ingested(
        self,
        tx: TransactionalStore,
        rows: dict[str, tuple[pa.Array, pa.Array]],
        target: int,
        deletions: bool = False,
    ) -> None:
        """Ingest ``rows`` (per column family, sorted) as SST files, then commit ``target``."""
        for family, (keys, values) in rows.items():
            tx.db.ingest_sorted(family, _slices(keys, values), deletions=deletions)
        faults.point("cache.ingested")  # durable, not yet committed
        tx.commit(target)
        faults.point("cache.applied")

    def _emptied(self, tx: TransactionalStore, path: str) -> TransactionalStore:
        """Close ``tx`` and open an empty database in its place (for SST ingest)."""
        tx.close()
        shutil.rmtree(path, ignore_errors=True)
        durable.makedirs(path)
        return self._open_transactional(path)

    # -- reading -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _open_shared(self, target: int) -> Iterator[Any]:
        """Yield the cache's store under a shared lock if it is at ``target``, else None."""
        with self._lock(exclusive=False):
            try:
                db = RocksDBBytesStore(
                    self.path, (*self._families, OFFSETS_CF), read_only=True, sealed=True
                )
            except StoreNotFoundError:
                yield None
                return
            try:
                at = committed_offset_of(db)
                yield self.kind.open(db, self.spec.params) if at == target else None
            finally:
                db.close()

    @contextlib.contextmanager
    def open_at(self, target: int) -> Iterator[tuple[Any, bool]]:
        """Yield ``(store, shared)``: the partition's store as of commit ``target``, read-only.

        ``shared`` is True when it is this machine's cache, read under a shared lock that other
        readers share; False for a private materialization, made when the cache cannot be at
        ``target``: it has moved past it, or it is behind and busy with readers (waiting for
        them could wait on a half-consumed scan of this very process). A cache that RocksDB
        reports damaged while opening is rebuilt (see ``read``).
        """
        self.located(target)
        with contextlib.ExitStack() as stack:
            opened = self.repairing(lambda: self._enter_at(stack, target))
            yield opened

    def _enter_at(self, stack: contextlib.ExitStack, target: int) -> tuple[Any, bool]:
        inner = contextlib.ExitStack()
        try:
            store = inner.enter_context(self._open_shared(target))
            if store is None:
                inner.close()
                try:
                    with self._lock(exclusive=True, wait=False):
                        self._catch_up(self.path, target)
                except BlockingIOError:
                    pass
                store = inner.enter_context(self._open_shared(target))
            if store is not None:
                stack.enter_context(inner.pop_all())
                return store, True
            inner.close()
            private = tempfile.mkdtemp(prefix="snapshot-", dir=os.path.dirname(self.path))
            stack.callback(shutil.rmtree, private, True)
            self._catch_up(private, target)
            db = RocksDBBytesStore(private, (*self._families, OFFSETS_CF), read_only=True)
            stack.callback(db.close)
            return self.kind.open(db, self.spec.params), False
        except BaseException:
            inner.close()
            raise

    def read(
        self,
        target: int,
        scan: Callable[[Any], Iterator[pa.RecordBatch]],
        schema: pa.Schema,
        columnar: Columnar | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows ``scan(store)`` yields at commit ``target`` (in the order ``columnar``
        gives them where it answers: ``catalog.scans.columnar``'s is the order written).

        With ``columnar``, they are first computed from the changelog with Arrow alone (see
        ``read_latest``), and RocksDB is built only if it declines. Else the scan is written
        whole to a temporary Arrow file before its first batch is served: if RocksDB reports
        damage midway, the cache is rebuilt and the scan run again, and no caller ever saw a
        batch of the damaged one.
        """
        self.located(target)
        computed = None if columnar is None else self._columnar_batches(target, columnar)
        if computed is not None:
            yield from computed
            return
        durable.makedirs(os.path.dirname(self.path))
        tmp = os.path.join(os.path.dirname(self.path), f"scan-{uuid.uuid4().hex}.arrow")
        try:
            self.repairing(lambda: self._scan_to(tmp, target, scan, schema))
            yield from scan_files.file_batches(tmp)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _scan_to(
        self,
        path: str,
        target: int,
        scan: Callable[[Any], Iterator[pa.RecordBatch]],
        schema: pa.Schema,
    ) -> None:
        with self.open_at(target) as (store, _), scan_files.scan_writer(path, schema) as writer:
            for batch in scan(store):
                writer.write_batch(batch)

    def read_latest(
        self,
        target: int,
        scan: Callable[[Any], Iterator[pa.RecordBatch]],
        schema: pa.Schema,
        columnar: Columnar | None = None,
        variant: str = "",
    ) -> Iterator[pa.RecordBatch]:
        """The rows ``scan(store)`` yields at commit ``target`` (in ``columnar``'s order where
        it answers, as ``read``), kept as a scan file.

        The first scan at a commit writes its scan file (``catalog.caches.scan_files``); later
        ones check and read that file (a crash can leave it torn, never trusted). Catching up
        to a newer commit deletes the files of older ones (under the exclusive lock, so no
        reader has them open in a way that matters: a mapped file outlives its unlink).

        ``variant`` names another whole-store scan kept the same way (a versioned store's
        history: ``".all"``). With ``columnar``, the state is first computed from the newest
        snapshot and the changelog files after it, with Arrow alone (``columnar(runs, commits)``;
        see ``StoreKind.scan_columns``): no RocksDB is built for a scan. RocksDB is built only
        when ``columnar`` declines, or for lookups (``open_at``).
        """
        path = scan_files.scan_file(self.located(target), target, variant)
        kept = scan_files.open_verified(path)
        if kept is not None:
            with kept:
                yield from scan_files.read_batches(kept)
            return
        # Written beside the cache, not in ``.scans``, which a catch-up may clear meanwhile.
        durable.makedirs(os.path.dirname(self.path))
        tmp = os.path.join(os.path.dirname(self.path), f"scan-{uuid.uuid4().hex}.tmp")
        try:
            batches = None if columnar is None else self._columnar_batches(target, columnar)
            if batches is not None:
                # Served as computed while it is written (Spark takes each batch at once), and
                # kept only once every batch is in the file: a reader that stops early (a
                # LIMIT) leaves nothing behind.
                with scan_files.scan_writer(tmp, schema) as writer:
                    for i, batch in enumerate(batches):
                        writer.write_batch(batch)
                        if i == 0:
                            faults.point("scan.writing")
                        yield batch
                scan_files.keep(tmp, path)
                return
            shared = self.repairing(lambda: self._scan_latest_to(tmp, target, scan, schema))
            with pa.memory_map(tmp) as source:  # served from this mapping, renamed or not
                if shared:  # else the cache moved on: this scan is private, not kept
                    scan_files.keep(tmp, path)
                yield from scan_files.read_batches(source)
        finally:
            scan_files.remove_temporary(tmp)

    def _columnar_batches(
        self, target: int, columnar: Columnar
    ) -> Iterator[pa.RecordBatch] | None:
        """``columnar`` over the state at ``target`` (``columns_at``); None if it declines."""
        return columnar(*self.columns_at(target))

    def columns_at(
        self, target: int
    ) -> tuple[dict[str, tuple[pa.Array, pa.Array]], list[pa.Table]]:
        """The state at commit ``target`` as columns: the newest snapshot's sorted runs per
        column family, and the changelog table of each commit after it (what
        ``StoreKind.scan_columns`` and ``store_rows`` take; every file checked against its size
        and CRC-32)."""
        plan = self.log.restore_plan(0, target, self.partition)
        runs = self._snapshot_runs(plan.snapshot) if plan.snapshot is not None else {}
        return runs, [table for _, table in self._commit_tables(plan)]

    def _snapshot_runs(self, snapshot: CommitRecord) -> dict[str, tuple[pa.Array, pa.Array]]:
        """A snapshot's sorted ``(keys, values)`` per column family, for this partition (its
        files checked against their size and CRC-32)."""
        runs: dict[str, tuple[pa.Array, pa.Array]] = {}
        for ref in snapshot.files_for(self.partition):
            for family, keys, values in snapshot_runs(self.storage, self.store_dir, ref):
                runs[family] = (keys, values)
        return runs

    def _commit_tables(self, plan: RestorePlan) -> Iterator[tuple[int, pa.Table]]:
        """``(commit id, changelog table)`` of each commit of the plan with files for this
        partition, read as they are asked for (every file checked against its size and
        CRC-32). A commit's files are one table: a kind may order its rows (the versioned kind
        sorts by timestamp), and how Spark split them into tasks and files must not matter."""
        for record in plan.records:
            files = record.files_for(self.partition)
            if files:  # (a commit with none for this partition is committed with a later one)
                tables = (read_changelog(self.storage, self.store_dir, ref) for ref in files)
                yield record.id, pa.concat_tables(tables)

    def _scan_latest_to(
        self,
        tmp: str,
        target: int,
        scan: Callable[[Any], Iterator[pa.RecordBatch]],
        schema: pa.Schema,
    ) -> bool:
        with self.open_at(target) as (store, shared), scan_files.scan_writer(tmp, schema) as writer:
            for i, batch in enumerate(scan(store)):
                writer.write_batch(batch)
                if i == 0:
                    faults.point("scan.writing")
        return bool(shared)


def purge_erased(storage: Storage, spec: StoreSpec, store_dir: str, cache_root: str) -> list[str]:
    """Delete every local cache of the store under ``cache_root`` built before an erasure of
    its partition (``PartitionCache.purge_stale``), for every partition it has a cache of
    (one of an earlier partition count too). Returns the directories deleted."""
    probe = PartitionCache(storage, spec, store_dir, 0, cache_root)
    try:
        names = os.listdir(probe._folder)
    except FileNotFoundError:
        return []
    partitions = sorted({p for n in names if (p := partition_of(n)) is not None})
    deleted: list[str] = []
    for partition in partitions:
        cache = PartitionCache(storage, spec, store_dir, partition, cache_root)
        cache.located(0)
        deleted += cache.purge_stale()
    return deleted


def _slices(keys: pa.Array, values: pa.Array, rows: int = 1 << 16) -> Iterator[tuple[pa.Array, pa.Array]]:
    """``(keys, values)`` in slices of ``rows``: an SST is encoded a slice at a time."""
    for start in range(0, len(keys), rows):
        yield keys.slice(start, rows), values.slice(start, rows)
