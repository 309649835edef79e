"""One store as its files say: spec, commit log and storage; its writes and its reads.

``Table`` is what the operations (``catalog.operations``) take: it stages and publishes writes
(``catalog.staging``, ``catalog.commit``) and reads partitions through their local caches
(``catalog.caches``, decoded by ``catalog.scans``). It runs no operation itself: the facade
users call, ``catalog.catalog.StoreTable``, adds what runs one (the compaction after a commit).

Layout under the warehouse root (an fsspec URL)::

    <root>/<store>/commits/<id:020d>.json         commit records; record 1 holds the spec
                                                  (see catalog.log.commits)
    <root>/<store>/changelog/<partition>/<write id>-<task>-<seq>.arrow   changelog files
    <root>/<store>/aborted/<write id>             abort markers (see catalog.commit)
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from catalog import commit as commits
from catalog import scans
from catalog.caches.partitions import PartitionCache, default_cache_root
from catalog.kinds import Layout, Scan, kind_of
from catalog.log.commits import CommitLog
from catalog.log.paths import COMMITS_DIR, record_name
from catalog.log.records import ChangelogFile, CommitRecord, OffsetsUpdate, Txn
from catalog.log.spec import StoreSpec
from catalog.log.storage import Storage
from catalog.staging import Stager
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    StoreAlreadyExistsError,
)
from stores.time import instant_ms

if TYPE_CHECKING:
    from typing_extensions import Self  # typing's own from Python 3.11


class Warehouse(Protocol):
    """What a table needs of the catalog that holds it (``catalog.catalog.Catalog``)."""

    @property
    def storage(self) -> Storage:
        """The warehouse root's storage."""

    @property
    def root(self) -> str:
        """The warehouse root's URL."""

    @property
    def cache_dir(self) -> str | None:
        """Where partition caches live (None: ``default_cache_root``)."""

    def load(self, name: str) -> Table:
        """Open a store by name.

        Raises:
            StoreNotFoundError: no such store.
            CorruptDataError: the store's records fail their checks.
        """


class Table:
    """One store: its spec, commit log, writes and reads (see the module doc)."""

    def __init__(
        self,
        catalog: Warehouse,
        spec: StoreSpec,
        log: CommitLog | None = None,
        *,
        spec_commit: int = 1,
    ) -> None:
        self.catalog = catalog
        self.spec = spec
        self.kind = kind_of(spec.kind)
        self.log = log or CommitLog(catalog.storage, spec.name, spec.store_id)
        #: The commit record that holds ``spec`` (1, or a schema overwrite's).
        self.spec_commit = spec_commit

    @classmethod
    def at(cls, catalog: Warehouse, log: CommitLog, commit_id: int) -> Self:
        """The store with the spec in force at ``commit_id`` (record 1's, or the newest schema
        overwrite's at or before it; see ``catalog.log.commits``).

        Raises:
            CorruptDataError: the records fail their checks.
        """
        holder = log.spec_record(commit_id) if commit_id else log.first()
        where = catalog.storage.url(log.store_dir, COMMITS_DIR, record_name(holder.id))
        spec = StoreSpec.from_dict(holder.spec, where, log.store_dir)
        if spec.store_id != holder.store_id:
            raise CorruptDataError(f"store spec at {where} names another store id")
        return cls(catalog, spec, log, spec_commit=holder.id)

    def at_commit(self, commit_id: int) -> Self:
        """This store as read at ``commit_id``: itself, or with the spec in force then."""
        if not commit_id or self.log.read(commit_id).spec_commit == self.spec_commit:
            return self
        return self.at(self.catalog, self.log, commit_id)

    def compatible_with(self, other: StoreSpec) -> bool:
        """Whether data written for ``other`` can go into this store unchanged."""
        mine = replace(self.spec, store_id="", created_ms=0)
        return mine == replace(other, store_id="", created_ms=0)

    @property
    def layout(self) -> Layout:
        """The columns of this store's writes, changelog files and reads."""
        return self.kind.layout(self.spec.params)

    def arrow_schema(self) -> pa.Schema:
        """The typed schema of what a read returns."""
        return scans.arrow_schema(self.spec, self.layout)

    # -- writing -------------------------------------------------------------------------------

    def stage(
        self,
        keys: pa.Array,
        values: pa.Array,
        columns: Mapping[str, pa.Array] | None = None,
        write_id: str | None = None,
        sequence: int = 0,
    ) -> list[ChangelogFile]:
        """Serialize rows, split them by partition and stage them as one changelog file (a piece
        per partition: ``catalog.log.changelog``).

        ``keys``/``values`` are typed Arrow arrays of the spec's types (a null value is a
        tombstone); ``columns`` holds the layout's other changelog columns: time columns as
        int64 epoch ms and, for header-aware stores, ``headers`` as KIP-1271 headersBytes.
        The file is named ``<write_id>-<sequence>``: a write's files share the prefix (see
        ``abort_write``), and one writer's successive stages (``sequence`` 0, 1, ...) sort,
        and so are applied, in order. ``write_id`` must be unique per writer (task).

        Every row is checked before anything is written, so that no commit can hold a row that
        the store cannot apply or read back: keys are not null, time columns are not null (a
        null becomes -1 where the layout allows an unknown timestamp) and lie in
        ``[0, MAX_TIMESTAMP_MS]`` (a window's end included), and a session does not end before
        it starts.

        Raises:
            InvalidOptionError: a missing changelog column (MISSING_COLUMN), a null key
                (NULL_KEY), a null or out-of-range time (NULL_TIMESTAMP, INVALID_TIMESTAMP), a
                session ending before its start (INVALID_SESSION); a backend where commits
                are not atomic and no single-writer promise (NO_ATOMIC_COMMIT).
        """
        stager = self.stager(write_id or uuid.uuid4().hex, sequence)
        stager.add(keys, values, columns)
        return stager.flush()

    def stager(self, write_id: str, sequence: int = 0) -> Stager:
        """A writer's staging of rows batch by batch (``catalog.staging``): ``add`` checks,
        serializes and cuts each batch by partition as it comes, ``flush`` writes what was
        added as one changelog file (``<write_id>-<sequence>``, counting up). ``stage`` is
        one ``add`` and one ``flush``.

        Raises:
            InvalidOptionError: a backend where commits are not atomic and no single-writer
                promise (NO_ATOMIC_COMMIT); an unsafe ``write_id``.
        """
        return Stager(self.catalog.storage, self.spec, write_id, sequence)

    def commit(
        self,
        files: list[ChangelogFile],
        *,
        overwrite: bool = False,
        write_id: str | None = None,
        txn: Txn | None = None,
        creates: bool = False,
        new_spec: StoreSpec | None = None,
        spec_commit: int | None = None,
        kafka_offsets: OffsetsUpdate | None = None,
        read_version: int | None = None,
        planned_at: int | None = None,
    ) -> CommitRecord | None:
        """Publish staged files as the next commit (see ``catalog.log.commits``). Nothing
        else: what follows a commit (an automatic compaction) is its caller's.

        Args:
            files: what the write's tasks staged.
            overwrite: replace the store's contents.
            write_id: the write's id (the prefix of its staged files); a fresh one if None.
            txn: the write's (app id, version); a write whose version is not newer than the
                store's last committed version for that app id is skipped.
            creates: the write creates the store (record 1 holds the spec and these files);
                if another writer created it meanwhile with the same spec, the write becomes
                an append (or overwrite) to it.
            new_spec: with ``overwrite``: the store's new spec (same name and store id), in
                force from this commit on (``overwriteSchema``); the files were staged with it.
            spec_commit: the record holding the spec the write was planned against (default:
                this table's); a write whose spec was replaced meanwhile is refused.
            kafka_offsets: a changelog import's Kafka offsets (``catalog.kafka.restore``),
                recorded with the commit.
            read_version: the commit whose state the write rewrites (a rescale): refused if
                a later commit changed the state.
            planned_at: the newest commit when the write began: refused if an erasure
                landed since (ERASED_MEANWHILE: its rows may hold erased keys).

        Returns:
            The commit record; None if ``txn`` was already committed: the staged files are
            deleted and nothing is written.

        Raises:
            CommitConflictError: the store was created meanwhile with another spec, its
                schema was replaced meanwhile (SCHEMA_CHANGED), another import moved the
                Kafka offsets of ``kafka_offsets`` (KAFKA_OFFSETS_MOVED), a commit changed
                the state after ``read_version`` (STORE_CHANGED), an erasure landed after
                ``planned_at`` (ERASED_MEANWHILE), or other writers won every attempt.
            StoreNotFoundError: the store was dropped.
        """
        write_id = write_id or uuid.uuid4().hex
        if spec_commit is None:
            spec_commit = self.spec_commit
        if not creates:
            record = commits.publish_files(
                self.log, files, write_id, overwrite=overwrite, txn=txn, new_spec=new_spec,
                spec_commit=spec_commit, kafka_offsets=kafka_offsets, read_version=read_version,
                planned_at=planned_at,
            )  # fmt: skip
            if record is not None and new_spec is not None:
                self.spec, self.kind, self.spec_commit = new_spec, kind_of(new_spec.kind), record.id
        else:
            try:
                record = commits.publish_files(
                    self.log, files, write_id, overwrite=overwrite, txn=txn, spec=self.spec,
                    kafka_offsets=kafka_offsets,
                )
            except StoreAlreadyExistsError:
                existing = self.catalog.load(self.spec.name)
                first = existing.log.first()
                if first.write_id == write_id:
                    return first  # this write created it; an earlier outcome was unknown
                if not existing.compatible_with(self.spec):
                    raise CommitConflictError(
                        f"store {self.spec.name!r} was created by another writer with a "
                        f"different spec ({existing.spec.describe()}); nothing was written"
                    ) from None
                self.spec, self.log = existing.spec, existing.log
                record = commits.publish_files(
                    self.log, files, write_id, overwrite=overwrite, txn=txn,
                    kafka_offsets=kafka_offsets,
                )
        if record is None:
            self.abort(files)  # skipped: nothing lists these files
        return record

    def abort(self, files: list[ChangelogFile]) -> None:
        """Delete staged files that no commit lists (a failed task's own files)."""
        commits.delete_staged(self.catalog.storage, self.spec.name, files)

    def abort_write(self, write_id: str, files: list[ChangelogFile], after: int = 0) -> None:
        """Abort a whole write: its reported files and any other file it staged, unless the log
        shows that it committed (see ``catalog.commit.abort_write``).

        Args:
            write_id: the write's id.
            files: the files its tasks reported.
            after: the newest commit id when the write was planned (its record, if any, is
                newer).
        """
        commits.abort_write(self.catalog.storage, self.spec.name, write_id, files, after)

    def was_aborted(self, write_id: str) -> bool:
        """Whether ``abort_write`` has begun for ``write_id``."""
        return commits.was_aborted(self.catalog.storage, self.spec.name, write_id)

    # -- reading -------------------------------------------------------------------------------

    def check_scan(self, scan: Scan) -> None:
        """Refuse read options the store's kind does not have (``catalog.scans.check_scan``).

        Raises:
            InvalidOptionError: ``asOfTimestamp`` on a store without history, or a window start
                range on a store without windows (names the option and the kinds that take it).
        """
        scans.check_scan(self.spec, self.kind, scan)

    def partition_cache(self, partition: int) -> PartitionCache:
        """This process's local cache of ``partition`` (built on first use, see
        ``catalog.caches.partitions``): lookups open it at a commit (``open_at``)."""
        return PartitionCache(
            self.catalog.storage,
            self.spec,
            self.spec.name,
            partition,
            self.catalog.cache_dir or default_cache_root(),
        )

    def read_partition(
        self, partition: int, snapshot: int, scan: Scan | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Typed record batches of one partition at commit ``snapshot``."""
        if snapshot == 0:
            return
        scan = scan or Scan()
        cache = self.partition_cache(partition)
        schema = self.arrow_schema()
        columnar = scans.columnar(self.spec, self.kind, scan, schema)
        run = scans.store_scan(self.spec, self.kind, scan, schema)
        if scan.is_full:
            yield from cache.read_latest(snapshot, run, schema, columnar)
        elif scan == Scan(all_versions=True):  # the whole history: kept like the latest state
            yield from cache.read_latest(snapshot, run, schema, columnar, variant=".all")
        else:
            yield from cache.read(snapshot, run, schema, columnar)

    def to_arrow(
        self,
        as_of: int | dt.datetime | str | None = None,
        scan: Scan | None = None,
        *,
        versions: str = "latest",
    ) -> pa.Table:
        """The whole store at its latest commit (``as_of`` an instant, for versioned stores:
        epoch ms, an aware datetime or an ISO-8601 string with a zone; ``scan`` for a window
        start range), read in this process.

        Raises:
            InvalidOptionError: ``versions`` not 'latest' or 'all', or read options the store's
                kind does not have.
        """
        return self.to_reader(as_of, scan, versions=versions).read_all()

    def to_reader(
        self,
        as_of: int | dt.datetime | str | None = None,
        scan: Scan | None = None,
        *,
        versions: str = "latest",
    ) -> pa.RecordBatchReader:
        """``to_arrow``'s rows as a stream of record batches, read a partition at a time as
        they are consumed (``pl.from_arrow``, DuckDB's ``FROM reader``, ``pa.dataset``): the
        store at the latest commit when this is called. Arguments and raises: ``to_arrow``'s.
        """
        if versions not in ("latest", "all"):
            raise InvalidOptionError(f"versions is {versions!r}; accepted: 'latest' or 'all'")
        scan = scan or Scan(
            as_of=None if as_of is None else instant_ms(as_of, "as_of"),
            all_versions=versions == "all",
        )
        self.check_scan(scan)
        snapshot = self.log.latest_id()
        batches = (
            batch
            for partition in range(self.spec.num_partitions)
            for batch in self.read_partition(partition, snapshot, scan)
        )
        return pa.RecordBatchReader.from_batches(self.arrow_schema(), batches)
