"""The catalog: stores under one warehouse root, and the read and write paths of each.

Layout under the root (an fsspec URL)::

    <root>/<store>/spec.json                      the store's spec (created once)
    <root>/<store>/commits/<id:020d>.json         commit records (see catalog.commit_log)
    <root>/<store>/changelog/<partition>/<uuid>.arrow   changelog files (catalog.changelog)
"""

from __future__ import annotations

import difflib
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.changelog import CHANGELOG_DIR, write_changelog
from catalog.commit_log import ChangelogFile, CommitLog, CommitRecord
from catalog.kinds import HEADERS, Layout, Scan, kind_of
from catalog.local_cache import PartitionCache, default_cache_root
from catalog.partitioner import partitions_of
from catalog.spec import StoreSpec, check_store_name
from catalog.storage import Storage
from stores.errors import (
    CommitConflictError,
    InvalidOptionError,
    StoreAlreadyExistsError,
    StoreNotFoundError,
)
from stores.headers_format import decode_headers, encode_varint
from stores.records import UNKNOWN_TIMESTAMP
from stores.serdes import serde_for
from stores.types import TypeJson, to_arrow

if TYPE_CHECKING:
    from catalog.interactive import StateQueryRequest, StateQueryResult

SPEC_FILE = "spec.json"
ABORTED_DIR = "aborted"
DEFAULT_ROOT = "./state-warehouse"
TIMESTAMP = pa.timestamp("us", tz="UTC")
#: The largest epoch-ms time a Spark TIMESTAMP (microseconds in a long) can show.
MAX_TIMESTAMP_MS = (2**63 - 1) // 1000
_NULL_SIZE = encode_varint(-1)  # a header's null value
#: The typed ``headers`` column: Kafka's headers, in order, duplicates and null values kept.
HEADERS_TYPE = pa.list_(
    pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
)


def resolve_root(root: str | None) -> str:
    """The warehouse root: ``root``, else ``$STATE_STORE_ROOT``, else ``./state-warehouse``."""
    return root or os.environ.get("STATE_STORE_ROOT") or DEFAULT_ROOT


class Catalog:
    """Stores under one warehouse root.

    Args:
        root: fsspec URL or local path; defaults as ``resolve_root``.
        cache_dir: where partition caches live; defaults as ``default_cache_root``.
    """

    def __init__(self, root: str | None = None, cache_dir: str | None = None) -> None:
        self.storage = Storage(resolve_root(root))
        self.cache_dir = cache_dir

    @property
    def root(self) -> str:
        return self.storage.root

    def list(self) -> list[str]:
        """Names of every store, sorted."""
        return [n for n in self.storage.list() if self.storage.exists(n, SPEC_FILE)]

    def exists(self, name: str) -> bool:
        return self.storage.exists(check_store_name(name), SPEC_FILE)

    def load(self, name: str) -> StoreTable:
        """Open a store by name.

        Raises:
            StoreNotFoundError: no such store (names the root, the existing stores and the
                closest match).
        """
        check_store_name(name)
        try:
            data = self.storage.read_bytes(name, SPEC_FILE)
        except FileNotFoundError:
            existing = self.list()
            close = difflib.get_close_matches(name, existing, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise StoreNotFoundError(
                f"store {name!r} does not exist under {self.root}; existing: "
                f"{', '.join(existing) or 'none'}{hint}"
            ) from None
        return StoreTable(self, StoreSpec.from_json(data, self.storage.url(name, SPEC_FILE)))

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
        """Create a store from a spec made by ``new_spec``.

        Raises:
            StoreAlreadyExistsError: a store of that name exists.
        """
        if not self.storage.write_if_absent(spec.to_json(), spec.name, SPEC_FILE):
            raise StoreAlreadyExistsError(
                f"store {spec.name!r} already exists under {self.root}"
            )
        return StoreTable(self, spec)

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

    def ensure(self, spec: StoreSpec) -> StoreTable:
        """Create the store of ``spec`` unless it exists; return the store as it is.

        Raises:
            CommitConflictError: a store of that name was created meanwhile with another spec.
        """
        try:
            return self.create(spec)
        except StoreAlreadyExistsError:
            table = self.load(spec.name)
            if table.spec.store_id != spec.store_id and not table.compatible_with(spec):
                raise CommitConflictError(
                    f"store {spec.name!r} was created by another writer with a different "
                    f"spec ({table.spec.describe()}); nothing was written"
                ) from None
            return table

    def query(self, request: StateQueryRequest) -> StateQueryResult:
        """Run an Interactive Queries v2 request over a store (see ``catalog.interactive``).

        Raises:
            StoreNotFoundError: the store does not exist (Kafka's UnknownStateStoreException).
        """
        from catalog.interactive import query

        return query(self, request)

    def describe(self, name: str) -> dict[str, Any]:
        """The spec of a store plus its latest commit id."""
        table = self.load(name)
        return {**table.spec.describe(), "latest_commit": table.log.latest_id()}

    def drop(self, name: str) -> None:
        """Delete a store and all its files, or what a failed first write left of one (abort
        markers and empty changelog folders, with no spec: ``list`` does not show it).

        Raises:
            StoreNotFoundError: no such store and no such leftovers.
        """
        if not self.exists(name) and self.storage.list(name):
            staged = list(changelog_files(self.storage, name))
            if staged:
                raise CommitConflictError(
                    f"store {name!r} has no spec but holds {len(staged)} staged changelog "
                    "file(s): a first write to it may be running; drop it after that write ends"
                )
            self.storage.delete(name, recursive=True)
            return
        self.load(name)
        # The spec goes first, so a half-finished drop leaves no store that looks whole.
        self.storage.delete(name, SPEC_FILE)
        self.storage.delete(name, recursive=True)


class StoreTable:
    """One store: its spec, commit log, writers and readers."""

    def __init__(self, catalog: Catalog, spec: StoreSpec) -> None:
        self.catalog = catalog
        self.spec = spec
        self.kind = kind_of(spec.kind)
        self.log = CommitLog(catalog.storage, spec.name, spec.store_id)

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
        """Serialize rows, split them by partition and stage one changelog file per partition.

        ``keys``/``values`` are typed Arrow arrays of the spec's types (a null value is a
        tombstone); ``columns`` holds the layout's other changelog columns: time columns as
        int64 epoch ms and, for header-aware stores, ``headers`` as KIP-1271 headersBytes.
        Files are named ``<write_id>-<sequence>``: a write's files share the prefix (see
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
                session ending before its start (INVALID_SESSION).
        """
        name = f"{write_id or uuid.uuid4().hex}-{sequence:09d}"
        spec = self.spec
        schema = self.layout.changelog_schema()
        if keys.null_count:
            raise InvalidOptionError(
                f"column 'key' is null in {keys.null_count} row(s); every row needs a key "
                "(a null value, not a null key, deletes)",
                code="NULL_KEY",
            )
        key_bytes = serde_for(spec.key_type, column="key").encode(keys)
        value_bytes = serde_for(spec.value_type, column="value").encode(values)
        given = dict(columns or {})
        data: dict[str, pa.Array] = {"key": key_bytes, "value": value_bytes}
        for f in schema:
            if f.name in data:
                continue
            if f.name not in given:
                raise InvalidOptionError(
                    f"a write to {spec.kind} store {spec.name!r} needs column {f.name!r}",
                    code="MISSING_COLUMN",
                )
            data[f.name] = given[f.name].cast(f.type)
        self._check_times(data)
        table = pa.Table.from_pydict(data, schema=schema)
        files = []
        if spec.num_partitions == 1:
            if table.num_rows:
                files.append(write_changelog(self.catalog.storage, spec.name, 0, table, name))
            return files
        parts = partitions_of(key_bytes.to_pylist(), spec.num_partitions)
        # A stable sort keeps each partition's rows in their input order.
        table = table.take(pa.array(np.argsort(parts, kind="stable")))
        counts = np.bincount(parts, minlength=spec.num_partitions)
        start = 0
        for partition, count in enumerate(counts.tolist()):
            if count:
                rows = table.slice(start, count)
                files.append(write_changelog(self.catalog.storage, spec.name, partition, rows, name))
            start += count
        return files

    def _check_times(self, data: dict[str, pa.Array]) -> None:
        """Check (and complete) a stage's time columns in place; see ``stage``."""
        spec = self.spec
        for time in self.layout.write_times:
            millis = data[time.name]
            if time.unknown_if_null:
                millis = data[time.name] = millis.fill_null(UNKNOWN_TIMESTAMP)
            elif millis.null_count:
                raise InvalidOptionError(
                    f"column {time.name!r} is null in {millis.null_count} row(s); every row of "
                    f"a write to {spec.kind} store {spec.name!r} needs one",
                    code="NULL_TIMESTAMP",
                )
            lowest = UNKNOWN_TIMESTAMP if time.unknown_if_null else 0
            # A window's end (start + size) must fit too: reads show it as a TIMESTAMP.
            highest = MAX_TIMESTAMP_MS - (
                spec.params.get("window_size_ms", 0) if time.name == "window_start" else 0
            )
            if len(millis) and (
                pc.min(millis).as_py() < lowest or pc.max(millis).as_py() > highest
            ):
                raise InvalidOptionError(
                    f"column {time.name!r} has values outside {lowest} to {highest} ms; "
                    "timestamps must be >= 0 ms (1970-01-01), as in Kafka, and fit a Spark "
                    "TIMESTAMP (a window's end too)",
                    code="INVALID_TIMESTAMP",
                )
        if "session_start" in data and pc.any(
            pc.less(data["session_end"], data["session_start"])
        ).as_py():
            raise InvalidOptionError(
                "column 'session_end' is before 'session_start' in some rows; a session "
                "ends at or after its start",
                code="INVALID_SESSION",
            )

    def commit(self, files: list[ChangelogFile], *, overwrite: bool = False) -> CommitRecord:
        """Publish staged files as the next commit (see ``catalog.commit_log``)."""
        return self.log.publish(
            "overwrite" if overwrite else "append",
            sorted(files, key=lambda f: (f.partition, f.path)),
            {"rows": sum(f.rows for f in files), "files": len(files)},
        )

    def abort(self, files: list[ChangelogFile]) -> None:
        """Delete staged files that will never be committed."""
        for ref in files:
            self.catalog.storage.delete(self.spec.name, ref.path)

    def abort_write(self, write_id: str, files: list[ChangelogFile]) -> None:
        """Abort a whole write: its reported files and any other file it staged.

        Spark aborts a job while some of its tasks may still run, and a task's result can be
        lost. The abort marker is written first; a task checks it after staging its files
        (``was_aborted``) and deletes its own files if it is there. Either the listing below
        sees a task's file, or the task sees the marker.
        """
        storage = self.catalog.storage
        storage.write_bytes(b"", self.spec.name, ABORTED_DIR, write_id)
        self.abort(files)
        for partition_dir, name in changelog_files(storage, self.spec.name):
            if name.startswith(write_id):
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
        if (scan.time_from is not None or scan.time_to is not None) and not (
            self.kind.supports_time_range
        ):
            raise InvalidOptionError(
                "options 'windowStartFrom' / 'windowStartTo' apply to window and session stores "
                f"only; store {self.spec.name!r} is a {self.spec.kind} store"
            )

    def read_partition(
        self, partition: int, snapshot: int, scan: Scan | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Typed record batches of one partition at commit ``snapshot``."""
        if snapshot == 0:
            return
        scan = scan or Scan()
        cache = PartitionCache(
            self.catalog.storage,
            self.spec,
            self.spec.name,
            partition,
            self.catalog.cache_dir or default_cache_root(),
        )
        if scan.is_full:
            yield from cache.read_latest(snapshot, self._typed_scan(scan), self.arrow_schema())
        else:
            with cache.open_at(snapshot) as (store, _):
                yield from self._typed_scan(scan)(store)

    def _typed_scan(self, scan: Scan) -> Callable[[Any], Iterator[pa.RecordBatch]]:
        """A function scanning an open store into typed batches of ``arrow_schema()``."""
        key_serde = serde_for(self.spec.key_type, column="key")
        value_serde = serde_for(self.spec.value_type, column="value")
        schema = self.arrow_schema()
        params = self.spec.params

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

        def run(store: Any) -> Iterator[pa.RecordBatch]:
            for raw in self.kind.scan(store, scan, params):
                yield typed(raw)

        return run

    def to_arrow(self, as_of: int | None = None, scan: Scan | None = None) -> pa.Table:
        """The whole store at its latest commit (``as_of`` an instant, for versioned stores;
        ``scan`` for a window start range), read in this process."""
        scan = scan or Scan(as_of=as_of)
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


def headers_to_arrow(raw: pa.Array) -> pa.Array:
    """KIP-1271 headersBytes per row to ``list<struct<key: string, value: binary>>``.

    Built from flat key and value columns plus list offsets: rows without headers (the common
    case) cost one offset each.
    """
    offsets = [0]
    keys: list[str] = []
    values: list[bytes | None] = []
    nulls = []
    for data in raw.to_pylist():
        if data is None:
            nulls.append(len(offsets) - 1)
        elif data:
            for key, value in decode_headers(data):
                keys.append(key)
                values.append(value)
        offsets.append(len(keys))
    entries = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())],
        fields=list(HEADERS_TYPE.value_type),
    )
    mask = None
    if nulls:
        flags = [False] * (len(offsets) - 1)
        for row in nulls:
            flags[row] = True
        mask = pa.array(flags)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), entries, HEADERS_TYPE, mask=mask)


def headers_from_arrow(column: pa.Array) -> pa.Array:
    """``list<struct<key, value>>`` per row (null: no headers) to KIP-1271 headersBytes.

    Works on the flattened key and value columns, so no Python dict is made per header.

    Raises:
        InvalidOptionError: a header (or its key) is null.
    """
    flat = column.flatten()
    key_column = flat.field("key")
    if flat.null_count or key_column.null_count:
        raise InvalidOptionError(
            "column 'headers' has a null header or a header with a null key; a header needs a "
            "string key (its value may be null)",
            code="NULL_HEADER_KEY",
        )
    keys = key_column.to_pylist()
    values = flat.field("value").to_pylist()
    lengths = pc.list_value_length(column).fill_null(0).to_pylist()
    out: list[bytes] = []
    start = 0
    for count in lengths:
        if not count:
            out.append(b"")
            continue
        parts = [encode_varint(count)]
        for key, value in zip(keys[start : start + count], values[start : start + count]):
            raw_key = key.encode("utf-8")
            parts.append(encode_varint(len(raw_key)))
            parts.append(raw_key)
            if value is None:
                parts.append(_NULL_SIZE)
            else:
                parts.append(encode_varint(len(value)))
                parts.append(value)
        out.append(b"".join(parts))
        start += count
    return pa.array(out, pa.binary())
