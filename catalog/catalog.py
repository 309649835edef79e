"""The catalog, the facade users call: stores under one warehouse root (``Catalog``) and each
store (``StoreTable``, in ``catalog.store_table``).

Both run the operations (``catalog.operations``: queries, change feed, compaction,
maintenance) over the store's ``catalog.table.Table``, which none of them imports back: the
store's layout under the root is described in ``catalog.table``.
"""

from __future__ import annotations

import builtins
import datetime as dt
import difflib
import json
import os
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from catalog import faults
from catalog.applications import KafkaApplications
from catalog.caches.partitions import default_cache_root, purge_erased
from catalog.commit import changelog_files
from catalog.kinds import OPTION_NAMES, kind_of
from catalog.log.backends import storage_for
from catalog.log.commits import CommitLog
from catalog.log.paths import COMMITS_DIR, check_store_name, record_name
from catalog.log.records import CommitRecord
from catalog.log.spec import StoreSpec
from catalog.operations import change_feed, compaction, maintenance
from catalog.operations.maintenance import VacuumReport
from catalog.operations.query import StateQueryRequest, StateQueryResult, query
from catalog.partitioner import DEFAULT_PARTITIONER, check_partitioner
from catalog.scans import TIMESTAMP
from catalog.store_table import StoreTable
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    StoreNotFoundError,
)
from stores.serdes import serde_for
from stores.time import format_duration_ms
from stores.types import TypeJson, type_json_of

DEFAULT_ROOT = "./state-warehouse"
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


def _parameters(record: CommitRecord) -> list[tuple[str, str]] | None:
    """An erasure's audit record as strings (lists as JSON); None for other commits."""
    if record.operation != "erase":
        return None
    return [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in sorted(record.summary.items())]


def _is_store_name(name: str) -> bool:
    try:
        check_store_name(name)
    except InvalidOptionError:
        return False
    return True


def resolve_root(root: str | None) -> str:
    """The warehouse root: ``root``, else ``$STATE_STORE_ROOT``, else ``./state-warehouse``."""
    return root or os.environ.get("STATE_STORE_ROOT") or DEFAULT_ROOT


class Catalog(KafkaApplications):
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
        compact_after_files: int = compaction.COMPACT_AFTER_FILES,
    ) -> None:
        self.storage = storage_for(resolve_root(root), single_writer=single_writer)
        self.cache_dir = cache_dir
        self.compact_after_files = compact_after_files

    @property
    def root(self) -> str:
        return self.storage.root

    def list(self) -> list[str]:
        """Names of every store, sorted (not those being dropped).

        Raises:
            InvalidOptionError: the root's bucket does not exist (BUCKET_NOT_FOUND).
        """
        names = self.storage.list()
        if not names:
            self.storage.check_root()  # an empty listing of a missing bucket: say so
        return [n for n in names if _is_store_name(n) and self._live(n)]

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
        *,
        partitioner: str = DEFAULT_PARTITIONER,
        **params: Any,
    ) -> StoreSpec:
        """Validate and build a spec without creating anything. Types are Spark's, by their
        DDL names (``bigint``, ``int``, ...) or their JSON names (``long``, ``integer``, ...),
        or a struct's JSON type document.

        Args:
            partitioner: how a key's partition is computed (``catalog.partitioner``):
                ``crc32`` (the default) or ``kafka`` (Kafka's default partitioner: partition
                ``p`` holds the keys of Kafka Streams task ``x_p``); a store keeps it.

        Raises:
            InvalidOptionError: a bad name, kind, type, partition count, partitioner or
                parameter.
        """
        check_store_name(name)
        store_kind = kind_of(kind)
        key_type, value_type = type_json_of(key_type), type_json_of(value_type)
        serde_for(key_type, column="key")
        serde_for(value_type, column="value")
        spec = StoreSpec(
            name=name,
            kind=kind,
            key_type=key_type,
            value_type=value_type,
            num_partitions=num_partitions,
            params=store_kind.make_params(params),
            partitioner=check_partitioner(partitioner),
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
        *,
        partitioner: str = DEFAULT_PARTITIONER,
        **params: Any,
    ) -> StoreTable:
        """Create a store (see ``new_spec`` for the arguments)."""
        spec = self.new_spec(
            name, kind, key_type, value_type, num_partitions, partitioner=partitioner, **params
        )
        return self.create(spec)

    def query(self, request: StateQueryRequest) -> StateQueryResult:
        """Run an Interactive Queries v2 request over a store (see ``catalog.operations.query``).

        Raises:
            StoreNotFoundError: the store does not exist (Kafka's UnknownStateStoreException).
        """
        return query(self, request)

    def describe(self, name: str) -> dict[str, Any]:
        """A store's spec in readable units (parameters under their option names, durations
        as ``'1h 30min'``, times in ISO-8601) plus its latest and oldest readable commits."""
        table = self.load(name)
        raw = table.spec.describe()
        shown: dict[str, Any] = {}
        for field, value in raw.items():
            if field == "created_ms":
                created = dt.datetime.fromtimestamp(value / 1000, dt.timezone.utc)
                shown["created"] = created.isoformat()
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
            if spec.partitioner != DEFAULT_PARTITIONER:
                shown.append(f"partitioner={spec.partitioner}")
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
                        int(r.summary.get("rows", 0)) for r in records
                        if not r.changes_nothing and r.operation != "erase"
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
        ``stream-<query id>`` and its batch id), a compaction's ``base`` commit, and an
        erasure's audit record as ``operation_parameters`` (Delta's name): its ``reason``,
        ``keys``, ``key_hashes``, ``files_rewritten`` and ``commits_changed`` (JSON lists),
        ``rows`` removed.

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
                "operation_parameters": pa.array(
                    [_parameters(r) for r in records], pa.map_(pa.string(), pa.string())
                ),
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
        table = self.load(name)
        first, last = change_feed.version_range(table, start, end, None, None)
        return change_feed.changes_as_table(
            change_feed.check_one_schema(table, first, last), first, last
        )

    def compact(
        self,
        name: str,
        *,
        partitions: builtins.list[int] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> CommitRecord | None:
        """Snapshot a store's partitions at its latest commit (see
        ``catalog.operations.compaction``), so that a fresh reader replays only what was
        committed after it.

        Returns:
            The ``compact`` commit record; None if every partition was compact already.

        Raises:
            StoreNotFoundError: the store does not exist.
        """
        return compaction.compact(self.load(name), partitions=partitions, progress=progress)

    def vacuum(
        self,
        name: str | None = None,
        *,
        older_than_ms: int | None = None,
        dry_run: bool = False,
        retain_history_ms: int | None = None,
    ) -> builtins.list[VacuumReport]:
        """Delete what failed writes left (staged files no commit lists, temporary files, abort
        markers) once older than ``older_than_ms`` (default 7 days); see
        ``catalog.operations.maintenance``.

        Args:
            name: one store (or what a failed first write left under that name); None for
                every store of the warehouse.
            older_than_ms: the safety window: longer than your longest write.
            dry_run: only report what would be deleted.
            retain_history_ms: also drop the files that only commits older than this need,
                where a snapshot makes them unnecessary (``catalog.operations.maintenance``): older
                commits can no longer be read.

        A vacuum also deletes this machine's caches of the store built before one of its
        erasures (``catalog.operations.erase``): the other machines' go on their next use.

        Raises:
            StoreNotFoundError: nothing of that name exists.
        """
        window = maintenance.DEFAULT_OLDER_THAN_MS if older_than_ms is None else older_than_ms
        if name is None:
            reports = maintenance.vacuum_all(
                self.storage, older_than_ms=window, dry_run=dry_run,
                retain_history_ms=retain_history_ms,
            )  # fmt: skip
            for each in [] if dry_run else reports:
                self._purge_erased(each.store)
            return reports
        report = maintenance.vacuum(
            self.storage, name, older_than_ms=window, dry_run=dry_run,
            retain_history_ms=retain_history_ms,
        )  # fmt: skip
        if not dry_run:
            self._purge_erased(name)
        return [report]

    def _purge_erased(self, name: str) -> None:
        """Delete this machine's caches of store ``name`` built before one of its erasures
        (``catalog.caches.partitions.purge_erased``); nothing if there is no such store."""
        table = self.find(name)
        if table is not None:
            purge_erased(self.storage, table.spec, table.log.store_dir,
                         self.cache_dir or default_cache_root())  # fmt: skip

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
