"""The catalog: stores under one warehouse root, and the read and write paths of each.

Layout under the root (an fsspec URL)::

    <root>/<store>/commits/<id:020d>.json         commit records; record 1 holds the spec
                                                  (see catalog.log.commits)
    <root>/<store>/changelog/<partition>/<write id>-<task>-<seq>.arrow   changelog files
    <root>/<store>/aborted/<write id>             abort markers (see StoreTable.abort_write)
"""

from __future__ import annotations

import builtins
import datetime as dt
import difflib
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from catalog import faults
from catalog.caches.partitions import Columnar, PartitionCache, default_cache_root
from catalog.kinds import HEADERS, Layout, Scan, kind_of
from catalog.log.backends import storage_for
from catalog.log.commits import CommitLog
from catalog.log.paths import (
    ABORTED_DIR,
    CHANGELOG_DIR,
    COMMITS_DIR,
    check_store_name,
    check_write_id,
    record_name,
)
from catalog.log.records import ChangelogFile, CommitRecord, Txn
from catalog.log.spec import StoreSpec
from catalog.log.storage import Storage
from catalog.operations.compaction import COMPACT_AFTER_FILES
from catalog.staging import Stager
from stores.columns.headers import HEADERS_TYPE, headers_to_arrow
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    StoreAlreadyExistsError,
    StoreNotFoundError,
)
from stores.serdes import serde_for
from stores.types import TypeJson, to_arrow

if TYPE_CHECKING:
    from catalog.operations.maintenance import VacuumReport
    from catalog.operations.query import StateQueryRequest, StateQueryResult

DEFAULT_ROOT = "./state-warehouse"
TIMESTAMP = pa.timestamp("us", tz="UTC")
#: ``Catalog.stores_table``'s columns.
STORES_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("kind", pa.string()),
        ("key_type", pa.string()),
        ("value_type", pa.string()),
        ("partitions", pa.int64()),
        ("parameters", pa.string()),
        ("created", TIMESTAMP),
        ("commits", pa.int64()),
        ("last_commit", TIMESTAMP),
        ("rows_written", pa.int64()),
        ("bytes_written", pa.int64()),
        ("history_start", pa.int64()),
    ]
)


def _is_store_name(name: str) -> bool:
    try:
        check_store_name(name)
    except InvalidOptionError:
        return False
    return True


def resolve_root(root: str | None) -> str:
    """The warehouse root: ``root``, else ``$STATE_STORE_ROOT``, else ``./state-warehouse``."""
    return root or os.environ.get("STATE_STORE_ROOT") or DEFAULT_ROOT


class Catalog:
    """Stores under one warehouse root.

    Args:
        root: fsspec URL or local path; defaults as ``resolve_root``.
        cache_dir: where partition caches live; defaults as ``default_cache_root``.
        single_writer: on a backend without an atomic create-if-absent, promise that one writer
            at a time commits to each store (see ``catalog.log.storage``); refused otherwise.
        compact_after_files: after a commit, compact the partitions that a fresh cache would
            have to replay more changelog files than this for (0: never automatically; see
            ``catalog.operations.compaction``).
    """

    def __init__(
        self,
        root: str | None = None,
        cache_dir: str | None = None,
        *,
        single_writer: bool = False,
        compact_after_files: int = COMPACT_AFTER_FILES,
    ) -> None:
        self.storage = storage_for(resolve_root(root), single_writer=single_writer)
        self.cache_dir = cache_dir
        self.compact_after_files = compact_after_files

    @property
    def root(self) -> str:
        return self.storage.root

    def list(self) -> list[str]:
        """Names of every store, sorted (not those being dropped)."""
        return [n for n in self.storage.list() if _is_store_name(n) and self._live(n)]

    def _live(self, name: str) -> bool:
        if not self.storage.exists(name, COMMITS_DIR, record_name(1)):
            return False
        try:
            CommitLog(self.storage, name).latest_id()
        except StoreNotFoundError:
            return False  # its newest record drops it
        except CorruptDataError:
            pass  # a damaged store is still a store: load() says what is wrong
        return True

    def exists(self, name: str) -> bool:
        return self.storage.exists(check_store_name(name), COMMITS_DIR, record_name(1))

    def load(self, name: str) -> StoreTable:
        """Open a store by name, verifying its first commit record (which holds its spec).

        Raises:
            StoreNotFoundError: no such store (names the root, the existing stores and the
                closest match).
            CorruptDataError: the store's records fail their checks.
        """
        table = self.find(name)
        if table is None:
            existing = self.list()
            close = difflib.get_close_matches(name, existing, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise StoreNotFoundError(
                f"store {name!r} does not exist under {self.root}; existing: "
                f"{', '.join(existing) or 'none'}{hint}"
            ) from None
        return table

    def find(self, name: str) -> StoreTable | None:
        """Open a store by name as ``load`` does; None if there is none (or it was dropped),
        without listing the other stores for an error message (a write that creates one).

        Raises:
            CorruptDataError: the store's records fail their checks.
        """
        check_store_name(name)
        log = CommitLog(self.storage, name)
        try:
            log.first()
            latest = log.latest_id()  # a dropped store is not found
        except StoreNotFoundError:
            return None
        return StoreTable.at(self, log, latest)

    def new_spec(
        self,
        name: str,
        kind: str,
        key_type: TypeJson,
        value_type: TypeJson,
        num_partitions: int = 1,
        **params: Any,
    ) -> StoreSpec:
        """Validate and build a spec without creating anything.

        Raises:
            InvalidOptionError: a bad name, kind, type, partition count or parameter.
        """
        check_store_name(name)
        store_kind = kind_of(kind)
        serde_for(key_type, column="key")
        serde_for(value_type, column="value")
        spec = StoreSpec(
            name=name,
            kind=kind,
            key_type=key_type,
            value_type=value_type,
            num_partitions=num_partitions,
            params=store_kind.make_params(params),
        )
        spec.check_partitions()
        return spec

    def create(self, spec: StoreSpec) -> StoreTable:
        """Create an empty store from a spec made by ``new_spec``: its commit record 1.

        Raises:
            StoreAlreadyExistsError: a store of that name exists.
        """
        self.storage.require_atomic_commit()
        table = StoreTable(self, spec)
        table.log.publish("create", [], uuid.uuid4().hex, spec=spec.to_dict())
        return table

    def create_store(
        self,
        name: str,
        kind: str,
        key_type: TypeJson,
        value_type: TypeJson,
        num_partitions: int = 1,
        **params: Any,
    ) -> StoreTable:
        """Create a store (see ``new_spec`` for the arguments)."""
        return self.create(self.new_spec(name, kind, key_type, value_type, num_partitions, **params))

    def query(self, request: StateQueryRequest) -> StateQueryResult:
        """Run an Interactive Queries v2 request over a store (see ``catalog.operations.query``).

        Raises:
            StoreNotFoundError: the store does not exist (Kafka's UnknownStateStoreException).
        """
        from catalog.operations.query import query

        return query(self, request)

    def describe(self, name: str) -> dict[str, Any]:
        """A store's spec in readable units (parameters under their option names, durations
        as ``'1h 30min'``, times in ISO-8601) plus its latest and oldest readable commits."""
        from catalog.kinds import OPTION_NAMES
        from stores.time import format_duration_ms

        table = self.load(name)
        raw = table.spec.describe()
        shown: dict[str, Any] = {}
        for field, value in raw.items():
            if field == "created_ms":
                shown["created"] = dt.datetime.fromtimestamp(value / 1000, dt.timezone.utc).isoformat()
            elif field in table.spec.params and field.endswith("_ms") and value is not None:
                shown[OPTION_NAMES.get(field, field)] = format_duration_ms(int(value))
            elif field in table.spec.params:
                shown[OPTION_NAMES.get(field, field)] = value
            else:
                shown[field] = value
        return {
            **shown,
            "latest_commit": table.log.latest_id(),
            "history_start": table.log.history_start(),
        }

    def stores_table(self) -> pa.Table:
        """Every store as a row: ``name, kind, key_type, value_type, partitions, parameters``
        (as options, in readable units), ``created``, ``commits``, ``last_commit``,
        ``rows_written``, ``bytes_written`` and ``history_start`` (the oldest readable commit).
        """
        from catalog.kinds import OPTION_NAMES
        from stores.time import format_duration_ms

        rows: builtins.list[dict[str, Any]] = []
        for name in self.list():
            try:
                table = self.load(name)
            except StoreNotFoundError:
                continue  # dropped meanwhile
            log = table.log
            records = [log.read(i) for i in log.ids()]
            spec = table.spec
            shown = []
            for param, value in spec.params.items():
                if value is None:
                    continue
                if isinstance(value, bool):
                    text = "true" if value else "false"
                elif param.endswith("_ms"):
                    text = format_duration_ms(int(value))
                else:
                    text = str(value)
                shown.append(f"{OPTION_NAMES.get(param, param)}={text}")
            rows.append(
                {
                    "name": name,
                    "kind": spec.kind,
                    "key_type": spec.describe()["key_type"],
                    "value_type": spec.describe()["value_type"],
                    "partitions": spec.num_partitions,
                    "parameters": ", ".join(shown),
                    "created": records[0].timestamp_ms * 1000,
                    "commits": records[-1].id,
                    "last_commit": records[-1].timestamp_ms * 1000,
                    "rows_written": sum(
                        int(r.summary.get("rows", 0)) for r in records if not r.changes_nothing
                    ),
                    "bytes_written": sum(int(r.summary.get("bytes", 0)) for r in records),
                    "history_start": log.history_start(),
                }
            )
        return pa.Table.from_pylist(rows, schema=STORES_SCHEMA)

    def history(self, name: str) -> pa.Table:
        """A store's commits, newest first, like Delta's ``DESCRIBE HISTORY``: ``version``,
        ``timestamp``, ``operation``, ``rows``, ``files``, ``bytes``, ``write_id``, the
        idempotent writer's ``txn_app_id`` and ``txn_version`` (a stream's are
        ``stream-<query id>`` and its batch id), and a compaction's ``base`` commit.

        Raises:
            StoreNotFoundError: the store does not exist.
        """
        log = self.load(name).log
        records = [log.read(i) for i in reversed(log.ids())]
        return pa.table(
            {
                "version": pa.array([r.id for r in records], pa.int64()),
                "timestamp": pa.array([r.timestamp_ms * 1000 for r in records], TIMESTAMP),
                "operation": pa.array([r.operation for r in records], pa.string()),
                "rows": pa.array([r.summary.get("rows", 0) for r in records], pa.int64()),
                "files": pa.array([len(r.files) for r in records], pa.int64()),
                "bytes": pa.array([r.summary.get("bytes", 0) for r in records], pa.int64()),
                "write_id": pa.array([r.write_id for r in records], pa.string()),
                "txn_app_id": pa.array([r.txn.app_id if r.txn else None for r in records],
                                       pa.string()),
                "txn_version": pa.array([r.txn.version if r.txn else None for r in records],
                                        pa.int64()),
                "base": pa.array([r.base for r in records], pa.int64()),
            }
        )  # fmt: skip

    def changes(self, name: str, start: int, end: int | None = None) -> pa.Table:
        """What commits ``start..end`` (default: to the latest) changed, row by row, as
        Delta's change data feed (see ``catalog.operations.change_feed``).

        Raises:
            StoreNotFoundError: the store does not exist.
            InvalidOptionError: the range is outside the commits that exist, or spans a schema
                overwrite (SCHEMA_CHANGED).
        """
        from catalog.operations.change_feed import changes_as_table, check_one_schema, version_range

        table = self.load(name)
        first, last = version_range(table, start, end, None, None)
        return changes_as_table(check_one_schema(table, first, last), first, last)

    def compact(
        self,
        name: str,
        *,
        partitions: builtins.list[int] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> CommitRecord | None:
        """Snapshot a store's partitions at its latest commit (see ``catalog.operations.compaction``), so
        that a fresh reader replays only what was committed after it.

        Returns:
            The ``compact`` commit record; None if every partition was compact already.

        Raises:
            StoreNotFoundError: the store does not exist.
        """
        from catalog.operations.compaction import compact

        return compact(self.load(name), partitions=partitions, progress=progress)

    def vacuum(
        self,
        name: str | None = None,
        *,
        older_than_ms: int | None = None,
        dry_run: bool = False,
        retain_history_ms: int | None = None,
    ) -> builtins.list[VacuumReport]:
        """Delete what failed writes left (staged files no commit lists, temporary files, abort
        markers) once older than ``older_than_ms`` (default 7 days); see ``catalog.operations.maintenance``.

        Args:
            name: one store (or what a failed first write left under that name); None for
                every store of the warehouse.
            older_than_ms: the safety window: longer than your longest write.
            dry_run: only report what would be deleted.
            retain_history_ms: also drop the files that only commits older than this need,
                where a snapshot makes them unnecessary (``catalog.operations.maintenance``): older
                commits can no longer be read.

        Raises:
            StoreNotFoundError: nothing of that name exists.
        """
        from catalog.operations.maintenance import DEFAULT_OLDER_THAN_MS, vacuum, vacuum_all

        window = DEFAULT_OLDER_THAN_MS if older_than_ms is None else older_than_ms
        if name is None:
            return vacuum_all(
                self.storage, older_than_ms=window, dry_run=dry_run,
                retain_history_ms=retain_history_ms,
            )  # fmt: skip
        report = vacuum(
            self.storage, name, older_than_ms=window, dry_run=dry_run,
            retain_history_ms=retain_history_ms,
        )  # fmt: skip
        return [report]

    def drop(self, name: str) -> None:
        """Delete a store and all its files, or what a failed first write or an unfinished drop
        left of one (``list`` shows neither).

        A ``drop`` record is published first: from then on readers find no store and a writer
        racing the drop fails instead of being acknowledged. Then the files go, the records
        last, so a drop that dies half-way is finished by the next ``drop``.

        Raises:
            StoreNotFoundError: no such store and no such leftovers.
            CommitConflictError: no store, but staged files show a first write may be running.
        """
        check_store_name(name)
        storage = self.storage
        if not self.exists(name):
            if not storage.list(name):
                self.load(name)  # raises StoreNotFoundError naming the existing stores
            staged = list(changelog_files(storage, name))
            if staged and not CommitLog(storage, name).listed_ids():
                raise CommitConflictError(
                    f"store {name!r} has no commit but holds {len(staged)} staged changelog "
                    "file(s): a first write to it may be running; drop it after that write ends"
                )
        else:
            try:
                table = self.load(name)
            except (CorruptDataError, StoreNotFoundError):
                # A damaged store can still be dropped (its writers fail anyway); a drop that
                # died after its record is finished.
                table = None
            if table is not None:
                table.log.publish("drop", [], f"drop-{uuid.uuid4().hex}")
                faults.point("drop.after_record")
        for entry in storage.list(name):
            if entry != COMMITS_DIR:
                storage.delete(name, entry, recursive=True)
        for commit_id in CommitLog(storage, name).listed_ids():  # ascending: the drop stays last
            storage.delete(name, COMMITS_DIR, record_name(commit_id))
        storage.delete(name, recursive=True)


class StoreTable:
    """One store: its spec, commit log, writers and readers."""

    def __init__(
        self,
        catalog: Catalog,
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
    def at(cls, catalog: Catalog, log: CommitLog, commit_id: int) -> StoreTable:
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

    def at_commit(self, commit_id: int) -> StoreTable:
        """This store as read at ``commit_id``: itself, or with the spec in force then."""
        if not commit_id or self.log.read(commit_id).spec_commit == self.spec_commit:
            return self
        return StoreTable.at(self.catalog, self.log, commit_id)

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
        types = {
            "key": to_arrow(self.spec.key_type),
            "value": to_arrow(self.spec.value_type),
            HEADERS: HEADERS_TYPE,
        }
        return pa.schema([pa.field(c, types.get(c, TIMESTAMP)) for c in self.layout.read_order()])

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
        return Stager(self, write_id, sequence)

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
    ) -> CommitRecord | None:
        """Publish staged files as the next commit (see ``catalog.log.commits``).

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

        Returns:
            The commit record; None if ``txn`` was already committed: the staged files are
            deleted and nothing is written.

        Raises:
            CommitConflictError: the store was created meanwhile with another spec, its
                schema was replaced meanwhile (SCHEMA_CHANGED), or other writers won every
                attempt.
            StoreNotFoundError: the store was dropped.
        """
        write_id = write_id or uuid.uuid4().hex
        if spec_commit is None:
            spec_commit = self.spec_commit
        ordered = sorted(files, key=lambda f: (f.partition, f.path))
        summary = {"rows": sum(f.rows for f in files), "files": len({f.path for f in files}),
                   "bytes": sum(f.size for f in files)}  # fmt: skip
        operation = "overwrite" if overwrite else "append"
        if not creates:
            record = self.log.publish(
                operation, ordered, write_id, summary=summary, txn=txn,
                new_spec=None if new_spec is None else new_spec.to_dict(),
                spec_commit=spec_commit,
            )  # fmt: skip
            if record is not None and new_spec is not None:
                self.spec, self.kind, self.spec_commit = new_spec, kind_of(new_spec.kind), record.id
        else:
            try:
                record = self.log.publish(
                    operation, ordered, write_id, summary=summary, spec=self.spec.to_dict(), txn=txn
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
                record = self.log.publish(operation, ordered, write_id, summary=summary, txn=txn)
        if record is None:
            self.abort(files)  # skipped: nothing lists these files
        elif self.catalog.compact_after_files:
            from catalog.operations.compaction import maybe_compact

            maybe_compact(self, self.catalog.compact_after_files)
        return record

    def abort(self, files: list[ChangelogFile]) -> None:
        """Delete staged files that no commit lists (a failed task's own files)."""
        for path in {ref.path for ref in files}:
            self.catalog.storage.delete(self.spec.name, path)

    def abort_write(self, write_id: str, files: list[ChangelogFile], after: int = 0) -> None:
        """Abort a whole write: its reported files and any other file it staged, unless the log
        shows that it committed.

        Spark calls abort when ``commit`` failed, and the commit may have published its record
        before failing (a process killed after the record, an interrupt): the log is read, and
        a committed write keeps every file its record lists. Spark also aborts a job while some
        of its tasks may still run, and a task's result can be lost: the abort marker is written
        first; a task checks it after staging its files (``was_aborted``) and deletes its own
        files if it is there. Either the listing below sees a task's file, or the task sees the
        marker.

        Args:
            write_id: the write's id.
            files: the files its tasks reported.
            after: the newest commit id when the write was planned (its record, if any, is
                newer).
        """
        storage = self.catalog.storage
        storage.write_bytes(b"", self.spec.name, ABORTED_DIR, check_write_id(write_id))
        try:
            committed = CommitLog(storage, self.spec.name).find_write(write_id, after)
        except StoreNotFoundError:
            committed = None  # a first write that never created its store
        listed = {f.path for f in committed.files} if committed else set()
        faults.point("abort.before_delete")
        for path in {ref.path for ref in files} - listed:  # (a task file holds several)
            storage.delete(self.spec.name, path)
        for partition_dir, name in changelog_files(storage, self.spec.name):
            path = f"{CHANGELOG_DIR}/{partition_dir}/{name}"
            if name.startswith(write_id) and path not in listed:
                storage.delete(self.spec.name, CHANGELOG_DIR, partition_dir, name)

    def was_aborted(self, write_id: str) -> bool:
        """Whether ``abort_write`` has begun for ``write_id``."""
        return self.catalog.storage.exists(self.spec.name, ABORTED_DIR, write_id)

    # -- reading -------------------------------------------------------------------------------

    def check_scan(self, scan: Scan) -> None:
        """Refuse read options the store's kind does not have.

        Raises:
            InvalidOptionError: ``asOfTimestamp`` on a store without history, or a window start
                range on a store without windows (names the option and the kinds that take it).
        """
        if scan.as_of is not None and not self.kind.supports_as_of:
            raise InvalidOptionError(
                f"option 'asOfTimestamp' applies to versioned stores only; store "
                f"{self.spec.name!r} is a {self.spec.kind} store"
            )
        if scan.all_versions:
            if not self.kind.supports_as_of:
                raise InvalidOptionError(
                    f"option 'versions' = 'all' applies to versioned stores only; store "
                    f"{self.spec.name!r} is a {self.spec.kind} store"
                )
            if scan.as_of is not None:
                raise InvalidOptionError(
                    "options 'versions' = 'all' and 'asOfTimestamp' do not combine: the "
                    "history filtered to one instant is the as-of read; bound the history with "
                    "'fromTimestamp' / 'toTimestamp'"
                )
            if (
                scan.time_from is not None
                and scan.time_to is not None
                and scan.time_from > scan.time_to
            ):
                raise InvalidOptionError(
                    f"option 'fromTimestamp' ({scan.time_from} ms) is after option "
                    f"'toTimestamp' ({scan.time_to} ms)"
                )
            return
        if (scan.time_from is not None or scan.time_to is not None) and not (
            self.kind.supports_time_range
        ):
            raise InvalidOptionError(
                "options 'windowStartFrom' / 'windowStartTo' apply to window and session stores "
                f"only; store {self.spec.name!r} is a {self.spec.kind} store"
            )

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
        columnar = self._columnar(scan)
        if scan.is_full:
            yield from cache.read_latest(
                snapshot, self._typed_scan(scan), self.arrow_schema(), columnar
            )
        elif scan == Scan(all_versions=True):  # the whole history: kept like the latest state
            yield from cache.read_latest(
                snapshot, self._typed_scan(scan), self.arrow_schema(), columnar, variant=".all"
            )
        else:
            yield from cache.read(snapshot, self._typed_scan(scan), self.arrow_schema(), columnar)

    def _columnar(self, scan: Scan) -> Columnar | None:
        """The kind's column-only ``scan``, as typed batches (see ``PartitionCache.read``)."""
        scan_columns = self.kind.scan_columns  # None from it: the store answers
        typed = self._typed()
        raw_schema = self.layout.raw_schema()
        params = self.spec.params

        def compute(
            runs: dict[str, tuple[pa.Array, pa.Array]], commits: list[pa.Table]
        ) -> Iterator[pa.RecordBatch] | None:
            result = scan_columns(runs, commits, params, scan)
            if result is None:
                return None
            return (
                typed(batch.cast(raw_schema))
                for batch in result.select(raw_schema.names).to_batches(max_chunksize=1 << 16)
            )

        return compute

    def _typed_scan(self, scan: Scan) -> Callable[[Any], Iterator[pa.RecordBatch]]:
        """A function scanning an open store into typed batches of ``arrow_schema()``."""
        typed = self._typed()
        params = self.spec.params

        def run(store: Any) -> Iterator[pa.RecordBatch]:
            for raw in self.kind.scan(store, scan, params):
                yield typed(raw)

        return run

    def _typed(self) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
        """Raw batches (``Layout.raw_schema``) to typed ones of ``arrow_schema()``."""
        key_serde = serde_for(self.spec.key_type, column="key")
        value_serde = serde_for(self.spec.value_type, column="value")
        schema = self.arrow_schema()

        def typed(raw: pa.RecordBatch) -> pa.RecordBatch:
            columns = []
            for f in schema:
                column = raw.column(f.name)
                if f.name == "key":
                    columns.append(key_serde.decode(column))
                elif f.name == "value":
                    columns.append(value_serde.decode(column))
                elif f.name == HEADERS:
                    columns.append(headers_to_arrow(column))
                else:
                    columns.append(pc.multiply_checked(column, 1000).cast(TIMESTAMP))
            return pa.RecordBatch.from_arrays(columns, schema=schema)

        return typed

    def to_arrow(
        self,
        as_of: int | dt.datetime | str | None = None,
        scan: Scan | None = None,
        *,
        versions: str = "latest",
    ) -> pa.Table:
        """The whole store at its latest commit (``as_of`` an instant, for versioned stores:
        epoch ms, an aware datetime or an ISO-8601 string with a zone; ``scan`` for a window
        start range), read in this process."""
        from stores.query._checks import millis

        if versions not in ("latest", "all"):
            raise InvalidOptionError(f"versions is {versions!r}; accepted: 'latest' or 'all'")
        scan = scan or Scan(
            as_of=None if as_of is None else millis(as_of, "as_of"),
            all_versions=versions == "all",
        )
        self.check_scan(scan)
        snapshot = self.log.latest_id()
        batches = [
            batch
            for partition in range(self.spec.num_partitions)
            for batch in self.read_partition(partition, snapshot, scan)
        ]
        return pa.Table.from_batches(batches, schema=self.arrow_schema())


def changelog_files(storage: Storage, store_dir: str) -> Iterator[tuple[str, str]]:
    """``(partition folder, file name)`` of every changelog file under a store, staged or
    committed."""
    for partition_dir in storage.list(store_dir, CHANGELOG_DIR):
        for name in storage.list(store_dir, CHANGELOG_DIR, partition_dir):
            yield partition_dir, name
