"""The change feed: what each commit changed, row by row, as Delta's change data feed reads.

For commits ``start..end`` (inclusive) of one partition, the feed holds the store's read columns
(the latest view: ``key, value, ...``) plus

| column              | meaning                                                                |
|---------------------|------------------------------------------------------------------------|
| ``_change_type``      | ``insert``, ``update_preimage``, ``update_postimage`` or ``delete``           |
| ``_commit_version``   | the commit id                                                          |
| ``_commit_timestamp`` | the commit's time                                                      |

A row is identified by its key, and by its window (``window_start``) or session
(``session_start, session_end``) in window and session stores; rows that a commit leaves equal
are not reported. An overwrite reads as deletes of everything that was there plus inserts of
everything it wrote. Windows and sessions that a commit expires (retention) are deletes of that
commit. Compactions change nothing and are not reported.

How: a private RocksDB of the partition is brought to ``start - 1`` and then advanced one commit
at a time (``PartitionCache``'s transactional catch-up); before and after each commit, the rows
of the keys it wrote are read and compared with Arrow (a hash join on the identity columns).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.caches.partitions import PartitionCache
from catalog.kinds import Scan
from catalog.log.changelog import read_changelog
from catalog.scans import decoder
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError
from stores.transactional import OFFSETS_CF

if TYPE_CHECKING:
    from catalog.table import Table

#: A table of any class (``check_one_schema`` returns one of the class it is given).
_Table = TypeVar("_Table", bound="Table")
CHANGE_COLUMNS = [
    pa.field("_change_type", pa.string()),
    pa.field("_commit_version", pa.int64()),
    pa.field("_commit_timestamp", pa.timestamp("us", tz="UTC")),
]
_IDENTITY_TIMES = ("window_start", "session_start", "session_end")


def change_schema(table: Table) -> pa.Schema:
    """The feed's schema: the store's read columns, then the change columns."""
    return pa.schema([*table.arrow_schema(), *CHANGE_COLUMNS])


def version_range(
    table: Table,
    starting_version: int | None,
    ending_version: int | None,
    starting_timestamp_ms: int | None,
    ending_timestamp_ms: int | None,
) -> tuple[int, int]:
    """The commits a change feed covers, from versions or commit times (Delta's options).

    Raises:
        InvalidOptionError: no start, both a version and a time for one end, or a range
            outside the commits that exist (naming them).
    """
    log = table.log
    latest = log.latest_id()
    for version_name, time_name, version, time in (
        ("startingVersion", "startingTimestamp", starting_version, starting_timestamp_ms),
        ("endingVersion", "endingTimestamp", ending_version, ending_timestamp_ms),
    ):
        if version is not None and time is not None:
            raise InvalidOptionError(f"options {version_name!r} and {time_name!r} both set one end "
                                     "of the change feed; give one")  # fmt: skip
    if starting_version is None and starting_timestamp_ms is None:
        raise InvalidOptionError(
            "option 'readChangeFeed' needs 'startingVersion' or 'startingTimestamp' (commits "
            f"1 to {latest} exist; 'state-store history' lists them)"
        )
    times = [log.read(i).timestamp_ms for i in range(1, latest + 1)]
    start = starting_version
    if start is None:
        start = next((i + 1 for i, t in enumerate(times) if t >= starting_timestamp_ms), latest + 1)  # type: ignore[operator]
    end = ending_version
    if end is None:
        end = latest
        if ending_timestamp_ms is not None:
            end = max((i + 1 for i, t in enumerate(times) if t <= ending_timestamp_ms), default=0)
    if start < log.history_start() <= latest and start >= 1:
        raise log.expired(start)
    if not 1 <= start <= latest or end > latest:
        raise InvalidOptionError(
            f"the change feed asks for commits {start} to {end} of store {table.spec.name!r}, "
            f"which has commits 1 to {latest}"
        )
    return start, end


def partition_changes(
    table: Table, partition: int, start: int, end: int, *, overwrite_as_diff: bool = False
) -> Iterator[pa.RecordBatch]:
    """The changes of commits ``start..end`` in one partition (see module doc).

    Args:
        overwrite_as_diff: an overwrite reads as what it changed (the rows it removed as
            deletes, the rows it changed or added, none it left equal), as an append does,
            instead of deletes of everything plus inserts (a plain stream's post-images).
    """
    if end < start:
        return
    cache = table.partition_cache(partition)
    typed = decoder(table.spec, table.arrow_schema())
    layout = table.layout
    identity = ["key", *(c for c in layout.read_times if c in _IDENTITY_TIMES)]
    schema = change_schema(table)
    private = tempfile.mkdtemp(prefix="changes-", dir=_parent(cache.path))
    try:
        cache.materialize(private, start - 1)
        for commit_id in range(start, end + 1):
            record = table.log.read(commit_id)
            files = record.files_for(partition)
            if record.changes_nothing or (not files and not record.overwrite):
                cache.materialize(private, commit_id)
                continue
            touched = None
            # A window or session store's commit can expire other keys' rows (retention): it
            # is compared whole. The others change only the keys they write.
            if not record.overwrite and not table.kind.supports_time_range:
                rows = pa.concat_tables(
                    read_changelog(table.catalog.storage, table.spec.name, ref) for ref in files
                )
                touched = pc.unique(rows.column("key").combine_chunks())
            before = _rows(cache, private, commit_id - 1, touched)
            cache.materialize(private, commit_id)
            after = _rows(cache, private, commit_id, touched)
            if record.overwrite and not overwrite_as_diff:
                changes = [(before, "delete"), (after, "insert")]
            else:
                changes = _diff(before, after, identity)
            for raw, change_type in changes:
                if raw.num_rows == 0:
                    continue
                for batch in raw.to_batches(max_chunksize=1 << 16):
                    base = typed(batch)
                    n = batch.num_rows
                    yield pa.RecordBatch.from_arrays(
                        [
                            *base.columns,
                            pa.array([change_type] * n, pa.string()),
                            pa.array(np.full(n, commit_id, dtype=np.int64)),
                            pa.array(np.full(n, record.timestamp_ms * 1000, dtype=np.int64)).cast(
                                pa.timestamp("us", tz="UTC")
                            ),
                        ],
                        schema=schema,
                    )
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _parent(path: str) -> str:
    import os

    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    return parent


def _rows(cache: PartitionCache, path: str, at: int, keys: pa.Array | None) -> pa.Table:
    """Raw rows of the private store at ``path`` (at commit ``at``), of ``keys`` only."""
    schema = cache.kind.layout(cache.spec.params).raw_schema()
    if at < 1:
        return schema.empty_table()
    db = RocksDBBytesStore(path, (*cache.families, OFFSETS_CF), read_only=True)
    try:
        store = cache.kind.open(db, cache.spec.params)
        batches = []
        for raw in cache.kind.scan(store, Scan(), cache.spec.params):
            if keys is not None:
                raw = raw.filter(pc.is_in(raw.column("key"), value_set=keys))
            if raw.num_rows:
                batches.append(raw)
        return pa.Table.from_batches(batches, schema=schema)
    finally:
        db.close()


def _numbered(rows: pa.Table, identity: list[str], name: str) -> pa.Table:
    """``rows``' identity columns, an occurrence number (equal identities, as a store that
    retains duplicates holds them, pair up in order) and the row index as ``name``."""
    n = rows.num_rows
    index = np.arange(n, dtype=np.int64)
    ids = rows.select(identity).append_column(name, pa.array(index))
    order = pc.sort_indices(
        ids, sort_keys=[(c, "ascending") for c in identity] + [(name, "ascending")]
    )
    ordered = ids.take(order)
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
        for column in identity:
            values = ordered.column(column).combine_chunks()
            if n > 1:
                differs = pc.not_equal(values.slice(1), values.slice(0, n - 1))
                starts[1:] |= differs.fill_null(True).to_numpy(zero_copy_only=False)
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    occurrence = np.empty(n, dtype=np.int64)
    occurrence[order.to_numpy()] = np.arange(n) - group_start
    return (
        rows.select(identity)
        .append_column("__occurrence", pa.array(occurrence))
        .append_column(name, pa.array(index))
    )


def _diff(before: pa.Table, after: pa.Table, identity: list[str]) -> list[tuple[pa.Table, str]]:
    """Pair rows by identity: new ones are inserts, gone ones deletes, changed ones updates."""
    keys = [*identity, "__occurrence"]
    joined = _numbered(before, identity, "__before").join(
        _numbered(after, identity, "__after"), keys=keys, join_type="full outer"
    )
    old = joined.column("__before").combine_chunks()
    new = joined.column("__after").combine_chunks()
    both = pc.and_(pc.is_valid(old), pc.is_valid(new))
    paired_old = before.take(pc.filter(old, both))
    paired_new = after.take(pc.filter(new, both))
    same = np.ones(paired_old.num_rows, dtype=bool)
    for column in before.column_names:
        equal = pc.equal(paired_old.column(column), paired_new.column(column))
        nulls = pc.and_(
            pc.is_null(paired_old.column(column)), pc.is_null(paired_new.column(column))
        )
        same &= pc.or_(equal.fill_null(False), nulls).to_numpy(zero_copy_only=False)
    changed = pa.array(~same)
    return [
        (before.take(pc.filter(old, pc.and_(pc.is_valid(old), pc.is_null(new)))), "delete"),
        (paired_old.filter(changed), "update_preimage"),
        (paired_new.filter(changed), "update_postimage"),
        (after.take(pc.filter(new, pc.and_(pc.is_null(old), pc.is_valid(new)))), "insert"),
    ]


def changes_as_table(table: Table, start: int, end: int) -> pa.Table:
    """Every partition's changes of commits ``start..end`` (``Catalog.changes``)."""
    batches: list[Any] = []
    for partition in range(table.spec.num_partitions):
        batches += partition_changes(table, partition, start, end)
    return pa.Table.from_batches(batches, schema=change_schema(table))


def check_one_schema(table: _Table, start: int, end: int) -> _Table:
    """``table`` with the spec of commits ``start..end`` (and of the state before them).

    Raises:
        InvalidOptionError: SCHEMA_CHANGED, when a schema overwrite lies in the range.
    """
    if end < start:
        return table.at_commit(max(end, 1))
    log = table.log
    spec_commit = log.read(end).spec_commit
    if spec_commit > 1 and spec_commit >= start:
        ranges = []
        if start < spec_commit:
            ranges.append(f"commits {start} to {spec_commit - 1}")
        ranges.append(f"from commit {spec_commit + 1} (startingVersion {spec_commit + 1})")
        raise InvalidOptionError(
            f"commit {spec_commit} of store {table.spec.name!r} replaced its schema "
            "(overwriteSchema), so a change feed cannot show it, or commits on both sides of "
            f"it, with one set of columns; read {', or '.join(ranges)}",
            code="SCHEMA_CHANGED",
        )
    return table.at_commit(end)
