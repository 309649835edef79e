"""A versioned store's changelog (Kafka's ``ChangeLoggingVersionedKeyValueBytesStore``).

| operation           | changelog record (key, value, timestamp, headers)                     |
|---------------------|-----------------------------------------------------------------------|
| ``put(k, v, ts)``   | ``k, v, ts, ()``: every put, even one the store refuses (``NOT_PUT``) |
| ``delete(k, ts)``   | ``k, None, ts, ()``: every delete, even one older than the grace      |

The record time is the version's, never the context's.

Restore (``RocksDBVersionedStore.restoreBatch``, converter ``identity``): records in order; a
record older than the observed stream time minus the history retention (the grace period) is
skipped, the stream time advancing record by record; the rest are ``put(key, value,
record time)`` (None: a tombstone).

By column (a whole partition's records at once, for ``catalog.kafka.changelog``):

- ``changelog_columns``: every version the store holds (a raw scan of all versions) as a put
  at its ``valid_from``, and a tombstone at its ``valid_to`` where the key's next version
  does not start there (a delete ended it), all in ascending time: a restore reading them
  in that order never finds one older than its stream time minus the history retention,
  so it drops none.
- ``store_columns``: records in offset order to one write's rows. A write applies its rows
  in time order (``VersionedEngine.apply``), which loses two things offset order tells,
  both settled here first: the grace rule (a record older than its partition's stream
  time so far minus the history retention is dropped: the live store refused it too, and
  restore skips it) and, of records of one key at one time, the last offset wins (a put
  at an existing version's time replaces it, a tombstone there too). The write applies a
  time's tombstones before its puts, each in offset order, so only puts followed by a
  tombstone of the same key and time are left out for that. What remains commutes:
  versions are placed by their times, whatever the order of the puts. A record older than
  the stream time of the store's earlier commits is dropped by the store's own put.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.changelog import no_headers, stream_times
from stores.columns.encode import big_endian_column, concat_rows, whole
from stores.columns.key_sort import key_runs, run_lasts
from stores.errors import CorruptDataError
from stores.protocols import VersionedRecord
from stores.records import ChangeLogContext, ChangelogRecord
from stores.versioned.columns import snapshot_records
from stores.versioned.put import NOT_PUT
from stores.versioned.store import VersionedKeyValueStore


class VersionedChangeLogging:
    """The logged writes of a :class:`VersionedKeyValueStore`: each writes, then logs."""

    WRITES: ClassVar[tuple[str, ...]] = ("put", "delete")

    def __init__(self, store: VersionedKeyValueStore, context: ChangeLogContext) -> None:
        self.store = store
        self.context = context

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        valid_to = self.store.put(key, value, timestamp)
        # Logged even when NOT_PUT (ChangeLoggingVersionedKeyValueBytesStore.put): restore
        # drops it again by the same grace rule.
        self.context.log(bytes(key), None if value is None else bytes(value), timestamp, ())
        return valid_to

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        old = self.store.delete(key, timestamp)
        self.context.log(bytes(key), None, timestamp, ())
        return old


def restore_batch(store: VersionedKeyValueStore, records: Sequence[ChangelogRecord]) -> int:
    """Apply one restore batch (keys not None); returns the number skipped as too old.

    Kafka writes a batch's rows as of the stream time at the batch's end (rows that would
    expire within the batch are never written); here each record is a ``put``, which gives the
    same versions for every read.
    """
    dropped = 0
    for r in records:
        if r.key is None:
            continue
        if store.put(r.key, r.value, r.timestamp) == NOT_PUT:
            dropped += 1
    return dropped


def changelog_columns(
    raw: pa.Table, params: dict[str, Any], timestamp_ms: int, *, in_time: bool = True
) -> pa.Table:
    """A raw scan of all versions (``key``, ``value``, ``valid_from``, ``valid_to``, null
    for a key's open version) as changelog columns (``stores.columns.changelog``): puts at
    ``valid_from`` and tombstones where a version ends without a successor, ascending in
    time (``timestamp_ms`` is unused). Without ``in_time``, puts in the raw scan's order, then
    tombstones (the caller orders them: a rescale)."""
    n = raw.num_rows
    keys = whole(raw.column("key")) if n else pa.array([], pa.binary())
    starts = raw.column("valid_from").to_numpy(zero_copy_only=False).astype(np.int64)
    ends_column = raw.column("valid_to")
    open_ended = ends_column.is_null().to_numpy(zero_copy_only=False)
    ends = ends_column.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    order, first = _by_key_and_start(keys, starts)
    same_key_next = np.zeros(n, dtype=bool)
    same_key_next[:-1] = ~first[1:]
    next_start = np.empty(n, dtype=np.int64)
    next_start[:-1] = starts[order][1:] if order is not None else starts[1:]
    ordered_ends = ends if order is None else ends[order]
    ordered_open = open_ended if order is None else open_ended[order]
    succeeded = same_key_next & (next_start == ordered_ends)
    ended = ~ordered_open & ~succeeded
    ended = np.flatnonzero(ended) if order is None else order[ended]
    # Record j: the put of raw row rows[j], or (past n) the tombstone ending raw row rows[j].
    rows = np.concatenate([np.arange(n), ended])
    times = np.concatenate([starts, ends[ended]])
    in_time_order = (
        np.argsort(times, kind="stable") if in_time else np.arange(len(times), dtype=np.int64)
    )
    picked = rows[in_time_order]
    values = whole(raw.column("value")) if n else pa.array([], pa.binary())
    return pa.table(
        {
            "key": keys.take(pa.array(picked)),
            "value": values.take(pa.array(picked, mask=in_time_order >= n)),
            "timestamp": pa.array(times[in_time_order]),
            "headers": no_headers(len(times)),
        }
    )


def changelog_rows(rows: dict[str, tuple[pa.Array, pa.Array]], params: dict[str, Any]) -> pa.Table:
    """A versioned store's RocksDB rows (ours, or a Kafka state directory's store) as
    changelog columns: every record of the ideal history they hold
    (``stores.versioned.columns.snapshot_records``: each version a put at its ``valid_from``,
    each tombstone entry a tombstone, a tombstone where an entry ends and no record of the
    key starts), ascending in time, a key's tombstone before its put at one time.

    A raw scan (``changelog_columns``) has no tombstone entry that ends no version: a delete
    of a key none of whose versions is left (never written, or expired). The store keeps it,
    and it bounds where a later late put of the key ends; Kafka's restore of these records,
    taken in time order, rebuilds it (``RocksDBVersionedStore.restoreBatch``). ``params`` is
    unused (the rows carry their times).

    Raises:
        CorruptDataError: a column family a versioned store does not have.
    """
    base = snapshot_records(rows)
    if base is None:
        raise CorruptDataError(
            f"a versioned store's rows hold column families {sorted(rows)}, not only its own"
        )
    records, implied = base.records, base.implied
    empty = pa.array([], pa.large_binary())
    keys = records.column("key").combine_chunks() if records.num_rows else empty
    stamps = records.column("timestamp").to_numpy().astype(np.int64)
    keep = np.ones(records.num_rows, dtype=bool)
    if implied:
        # An implied tombstone (an entry's end) where a record of the key starts is void.
        starts = concat_rows(keys.slice(implied), big_endian_column(stamps[implied:]))
        ends = concat_rows(keys.slice(0, implied), big_endian_column(stamps[:implied]))
        keep[:implied] = ~pc.is_in(ends, value_set=starts).to_numpy(zero_copy_only=False)
    values = records.column("value").combine_chunks() if records.num_rows else empty
    # In time order; at one time a key's tombstone entry before its put: rows holding both
    # (a degenerate entry) came from a delete, then a put (a put, then a delete, leaves no
    # version at that time).
    at = np.flatnonzero(keep)
    puts = values.is_valid().to_numpy(zero_copy_only=False)[at]
    picked = pa.array(at[np.lexsort((puts, stamps[at]))])
    return pa.table(
        {
            "key": keys.take(picked).cast(pa.binary()),
            "value": values.take(picked).cast(pa.binary()),
            "timestamp": pa.array(stamps[picked.to_numpy()]),
            "headers": no_headers(len(picked)),
        }
    )


def has_tombstone_entries(
    runs: dict[str, tuple[pa.Array, pa.Array]], commits: Sequence[pa.Table]
) -> bool:
    """Whether a partition's state (a snapshot's rows, the changelog tables of the commits
    after it) may hold a tombstone entry, which only ``changelog_rows`` exports: a tombstone
    among the commits' rows or the snapshot's entries. Without one, a raw scan of every
    version tells the whole history (``changelog_columns``)."""
    if any(t.num_rows and t.column("value").null_count for t in commits):
        return True
    if not runs or not any(len(keys) for keys, _ in runs.values()):
        return False
    base = snapshot_records(runs)
    return base is None or bool(base.records.column("value").slice(base.implied).null_count)


def _by_key_and_start(keys: pa.Array, starts: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The order of rows by (key bytes, start) (None: they are in it, as a scan gives them)
    and, in that order, where each key's rows begin."""
    n = len(keys)
    if n > 1:
        later, earlier = keys.slice(1), keys.slice(0, n - 1)
        same = pc.equal(later, earlier).to_numpy(zero_copy_only=False)
        if (
            not pc.any(pc.less(later, earlier)).as_py()
            and not (same & (starts[1:] < starts[:-1])).any()
        ):
            first = np.ones(n, dtype=bool)
            first[1:] = ~same
            return None, first
    order, first = key_runs(keys, after=[(starts, False)])
    return order, first


def store_columns(
    records: pa.Table, groups: np.ndarray, params: dict[str, Any]
) -> tuple[pa.Table, np.ndarray, int]:
    """Changelog records (``stores.columns.changelog``; keys not None) in restore order, of
    the Kafka partitions ``groups`` says, to the rows of one write (``key``, ``value``, None
    a tombstone, ``timestamp``): records the grace rule drops are left out, and of one key's
    records at one time the last (see the module doc).

    Returns:
        The rows, the record each row comes from, and how many records were dropped by the
        grace rule.
    """
    times = records.column("timestamp").to_numpy(zero_copy_only=False).astype(np.int64)
    grace = params["history_retention_ms"]
    in_grace = times >= stream_times(times, groups) - grace
    if in_grace.all():  # (times that never fall back by more than the grace: no copy)
        kept, within = np.arange(len(times)), records
    else:
        kept = np.flatnonzero(in_grace)
        within = records.take(pa.array(kept))
    gone = _overwritten_by_tombstones(within, times[kept])
    if gone.any():
        source, rows = kept[~gone], records.take(pa.array(kept[~gone]))
    else:
        source, rows = kept, within
    return rows.select(["key", "value", "timestamp"]), source, len(times) - len(kept)


def _overwritten_by_tombstones(records: pa.Table, times: np.ndarray) -> np.ndarray:
    """Which ``records`` (in offset order) are puts that a later tombstone of the same key
    and time replaces: only the rows at a tombstone's time are grouped."""
    tombstones = records.column("value").is_null().to_numpy(zero_copy_only=False)
    gone = np.zeros(len(times), dtype=bool)
    if not tombstones.any():
        return gone
    at = np.flatnonzero(np.isin(times, times[tombstones]))
    order, first = key_runs(records.column("key").take(pa.array(at)), suffix=[(times[at], 8)])
    run = np.cumsum(first) - 1
    ends_in_tombstone = tombstones[at[order[run_lasts(first)]]]
    gone[at[order]] = ends_in_tombstone[run] & ~tombstones[at[order]]
    return gone


__all__ = [
    "VersionedChangeLogging",
    "changelog_columns",
    "changelog_rows",
    "has_tombstone_entries",
    "restore_batch",
    "store_columns",
]
