"""A versioned store's reads computed from its changelog with Arrow alone, no RocksDB built.

Kafka's ``RocksDBVersionedStore`` (``stores.versioned.store``) applies records one at a time; what a
read sees of the result is the *ideal history* of each key, with Kafka's grace and expiry rules:

| step | rule (Kafka's) | computed as |
|---|---|---|
| apply order | commits in order; a commit's rows by timestamp, deletes before puts at one time (``kinds.versioned``) | a stable sort per commit, as an index |
| grace | a record older than stream time minus ``history_retention_ms`` is dropped; stream time is the largest timestamp applied before it | a running maximum |
| history | per key, the last record applied at each timestamp wins; a put is a version valid from its time to the next record's time of the key (a tombstone ends it and is no row) | one sort by (key, time, order) |
| latest | a key's newest record, if it is a put; it never expires | |
| expiry | an older version goes with its segment, the one of its ``valid_to`` (Java's truncating division), once that segment is below stream time minus the retention | |
| as of T | the latest if it starts at or before T; else nothing when T is older than stream time minus the retention; else the version valid at T | |
| versions in [from, to] | KIP-968: ``valid_from <= to`` and ``valid_to`` null or ``> from``; only the latest when ``to`` is older than stream time minus the retention | |

One departure of Kafka's from the ideal history is not computed here (see the model in
``tests/stores/test_versioned_model.py``): a tombstone at exactly the time of a key's latest
value only sometimes leaves a tombstone behind, which changes where a later, late record of the
key lands. A partition whose records put two records of one key at one time, one of them a
tombstone, is declined (None): the caller then builds RocksDB and asks the store.

``versioned_rows`` lays out the RocksDB rows a fresh partition cache ingests from the same
history, where they follow from it alone: puts however they came; with tombstones, where every
key's records were applied in time order (see its doc).

A snapshot (``catalog.operations.compaction``) holds Kafka's rows, not records. ``snapshot_records``
turns them back into the records whose ideal history they hold: each version a put at its
``valid_from``, each tombstone entry a tombstone, and a tombstone at an entry's ``valid_to``
where no record of the key starts (Kafka files a delete only as that end). They are applied
first, all accepted, and stream time continues from the snapshot's. Kafka's rows are decoded
for all rows at once with numpy (the layout is in ``stores.versioned.format``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import ByteColumn, segment_ids
from stores.columns.encode import (
    big_endian_column,
    binary_data,
    binary_from,
    binary_offsets,
    concat_rows,
    taken,
    whole,
)
from stores.columns.key_sort import distinct, key_runs, stable_order
from stores.errors import CorruptDataError
from stores.versioned.format import (
    LATEST_PREFIX,
    METADATA_CF,
    NO_TIMESTAMP,
    STREAM_TIME_KEY,
    TIMESTAMP_SIZE,
    segment_id,
)

_TIME = pa.int64()
_BYTES = pa.large_binary()
_Ints = np.ndarray[Any, Any]
_WIDE = pa.schema(
    [
        pa.field("key", pa.large_binary()),
        pa.field("value", pa.large_binary()),
        pa.field("timestamp", _TIME),
    ]
)
#: The raw read schema (``Layout.raw_schema`` of the versioned kind), with 64-bit offsets.
RAW = pa.schema(
    [
        pa.field("key", pa.large_binary()),
        pa.field("value", pa.large_binary()),
        pa.field("valid_from", _TIME),
        pa.field("valid_to", _TIME),
    ]
)


def versioned_read(
    commits: list[pa.Table],
    retention: int,
    interval: int,
    *,
    base: Base | None = None,
    as_of: int | None = None,
    all_versions: bool = False,
    time_from: int | None = None,
    time_to: int | None = None,
    key_order: bool = True,
) -> pa.Table | None:
    """What a versioned store built from ``commits`` (changelog tables, in commit order) reads.

    The latest version of every key, or every version (``all_versions``, optionally bounded by
    ``time_from``/``time_to``), or the versions valid at ``as_of``: raw rows (``RAW``) sorted
    by key bytes, then ``valid_from``, exactly as the store's scans give them (without
    ``key_order``, the same rows in the order their records were written); None when the
    records need the store itself (see the module doc). ``base``: a snapshot's records and
    stream time (``snapshot_records``), the state the commits apply to.
    """
    records = _records(commits, base)
    if not key_order and as_of is None and not all_versions:
        once = _latest_written_once(records, retention)
        if once is not None:
            return once
    ideal = _ideal(records, retention)
    if ideal is None:
        return None
    if ideal.rows.num_rows == 0:
        return RAW.empty_table()
    rows, stream_time = ideal.rows, ideal.stream_time
    rows_of, starts, ends, has_end = ideal.rows_of, ideal.starts, ideal.ends, ideal.has_end
    puts = ideal.puts
    is_put = puts[rows_of]
    latest = is_put & ~has_end
    horizon = stream_time - retention
    if as_of is not None:
        if as_of < horizon:  # past the retention only the latest answers
            keep = latest & (starts <= as_of)
        else:
            keep = is_put & (starts <= as_of) & (~has_end | (ends > as_of))
    elif all_versions:
        if time_to is not None and time_to < horizon:
            keep = latest & (starts <= time_to)
        else:
            live = segment_ids(ends, interval) >= segment_id(horizon, interval)
            keep = is_put & (~has_end | live)
            if time_to is not None:
                keep &= starts <= time_to
            if time_from is not None:
                keep &= ~has_end | (ends > time_from)
    else:
        keep = latest
    at = np.flatnonzero(keep)  # by (key, time)
    if not key_order:  # by row instead (each version's record): with no sort, rows are distinct
        by_row = np.full(rows.num_rows, -1, dtype=np.int64)
        by_row[rows_of[at]] = at
        ascending = by_row[by_row >= 0]
        at = ascending if len(ascending) == len(at) else at[np.argsort(rows_of[at], kind="stable")]
    chosen = taken(rows.select(["key", "value"]), rows_of[at])  # copied for these rows only
    return pa.table(
        [
            chosen.column("key"),
            chosen.column("value"),
            pa.array(starts[at], _TIME),
            pa.array(ends[at], _TIME, mask=~has_end[at]),
        ],
        schema=RAW,
    )


def _latest_written_once(records: _Records, retention: int) -> pa.Table | None:
    """``versioned_read``'s latest versions in write order where no key has two records (a
    store loaded in one go, or keys that are never updated); None otherwise.

    With one record a key there is no history: a key's latest is its record, if that is an
    accepted put. A commit's records are applied in time order, so each one's stream time
    before it is the larger of the earlier commits' and its own time or less: a record is
    accepted exactly when its time is at least the earlier commits' stream time minus the
    retention. No sort by key or time is needed (issue 27: at 2M rows a partition, those sorts
    were most of a first read and grew faster than the rows)."""
    rows, stamps = records.rows, records.stamps
    if records.implied or rows.num_rows < 2 or not distinct(rows.column("key")):
        return None
    keep = records.puts.copy()
    start = records.sizes[0]  # the snapshot's records: applied already, all accepted
    stream_time = (
        max(records.start_time, int(stamps[:start].max())) if start else records.start_time
    )
    for size in records.sizes[1:]:
        if size:
            part = stamps[start : start + size]
            if stream_time - retention > int(part.min()):
                keep[start : start + size] &= part >= stream_time - retention
            stream_time = max(stream_time, int(part.max()))
            start += size
    at = np.flatnonzero(keep)
    chosen = taken(rows.select(["key", "value"]), at)  # (no copy when every row is kept)
    return pa.table(
        [
            chosen.column("key"),
            chosen.column("value"),
            pa.array(stamps[at], _TIME),
            pa.nulls(len(at), _TIME),
        ],
        schema=RAW,
    )


class _Ideal(NamedTuple):
    """The ideal history of a versioned store's records (module doc): ``rows`` (the
    snapshot's records and the commits' rows, as given), whether each holds a value, the stream
    time after them, and per key the last record applied at each time, sorted by (key, time):
    its row, start, end (the key's next time) and whether it has one."""

    rows: pa.Table
    puts: _Ints
    stream_time: int
    rows_of: _Ints
    starts: _Ints
    ends: _Ints
    has_end: _Ints
    #: Whether every key's accepted records were applied in time order (ties included).
    in_order: bool


class _Records(NamedTuple):
    """A snapshot's records (``Base``) then the commits' rows, as given (``rows``, ``_WIDE``),
    with each part's row count (``sizes``: the snapshot's first), their times, whether each
    holds a value, the snapshot's stream time and its implied tombstones' count."""

    rows: pa.Table
    sizes: list[int]
    stamps: _Ints
    puts: _Ints
    start_time: int
    implied: int


def _records(commits: list[pa.Table], base: Base | None) -> _Records:
    """``_Records`` of ``commits`` after ``base``."""
    prior, start_time, implied = base or Base(_WIDE.empty_table(), NO_TIMESTAMP, 0)
    tables = [prior.cast(_WIDE), *(t.select(_WIDE.names).cast(_WIDE) for t in commits)]
    # As given (apply order is an index), a changelog file's batches as they are: the reads
    # take or filter their rows, copying only those (``taken``).
    rows = pa.concat_tables(tables)
    stamps = rows.column("timestamp").to_numpy()
    puts = pc.is_valid(rows.column("value")).to_numpy(zero_copy_only=False)
    return _Records(rows, [len(t) for t in tables], stamps, puts, start_time, implied)


def _ideal(records: _Records, retention: int) -> _Ideal | None:
    """``_Ideal`` of ``records``; None where Kafka departs from it."""
    rows, stamps, puts, start_time = records.rows, records.stamps, records.puts, records.start_time
    n = rows.num_rows
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Ideal(
            rows, empty.astype(bool), start_time, empty, empty, empty, empty.astype(bool), True
        )
    applied = _apply_order(stamps, puts, records.sizes)
    # Stream time before each record of the tail: the snapshot's, raised by each record.
    in_order = stamps[applied]
    reached = np.maximum.accumulate(np.maximum(in_order, start_time))
    before = np.empty(n, dtype=np.int64)
    before[0] = start_time
    before[1:] = reached[:-1]
    stream_time = int(reached[-1])
    accepted_in_order = in_order >= before - retention
    prior = records.sizes[0]
    accepted_in_order[:prior] = True  # the snapshot's state, applied already
    history = _history(
        rows.column("key"), stamps, puts, applied[accepted_in_order], records.implied, prior
    )
    if history is None:
        return None
    return _Ideal(rows, puts, stream_time, *history)


class Base(NamedTuple):
    """A snapshot's state as records (``snapshot_records``), for ``versioned_read``."""

    records: pa.Table  #: key, value, timestamp (``_WIDE``)
    stream_time: int
    #: The first ``implied`` records are tombstones at an end no record of the snapshot may
    #: start at (see the module doc); one that a record of the snapshot does start at is void.
    implied: int


def versioned_rows(
    commits: list[pa.Table], retention: int, interval: int, base: Base | None = None
) -> dict[str, tuple[pa.Array, pa.Array]] | None:
    """The RocksDB rows of a versioned store built from ``commits`` (from empty, or over a
    snapshot's ``base``), per column family, byte for byte what Kafka's put algorithm writes
    (``stores.versioned.store``), for a partition cache to ingest or compaction to write; None where
    that is not a function of the ideal history.

    A key's newest record, if a put, is in the latest-value store (``[timestamp][value]``
    under the latest prefix). Older records become segment rows, one per key and segment
    (``versioned_format.SegmentValue``: next and min timestamps, entries newest first, values
    oldest first), in the segment of the time each was written there, if that segment is
    still live (``_segment_rows``). With puts only, that is each version's end, however late
    records came (they split versions exactly so: ``_put_into_row``). Tombstones leave
    degenerate rows and gaps that depend on the order records came in: computed where every
    key's records came in time order (any one commit: the store applies a commit's rows by
    time), else left to the store. A snapshot's rows are Kafka's for the order its records
    came in, which its records do not tell; over one, rows are computed where the snapshot and
    its tail hold puts only (then order does not matter).
    """
    if any(len(t) and pc.min(t.column("timestamp")).as_py() < 0 for t in commits):
        return None
    ideal = _ideal(_records(commits, base), retention)
    if ideal is None:
        return None
    is_put = ideal.puts[ideal.rows_of]
    # Tombstones of the history (a snapshot's implied ones only where no version starts).
    if not is_put.all() and (base is not None or not ideal.in_order):
        return None
    values = whole(ideal.rows.column("value"))
    keys = whole(ideal.rows.column("key"))
    # Latest values: each key's last record (it has no end), if a put.
    newest = ~ideal.has_end & is_put
    latest_keys = concat_rows(LATEST_PREFIX, keys.take(pa.array(ideal.rows_of[newest])))
    latest_values = concat_rows(
        big_endian_column(ideal.starts[newest]), values.take(pa.array(ideal.rows_of[newest]))
    )
    metadata: tuple[list[bytes], list[bytes]] = ([], [])
    if ideal.stream_time != NO_TIMESTAMP:
        metadata = ([STREAM_TIME_KEY], [ideal.stream_time.to_bytes(8, "big", signed=True)])
    segment_keys, segment_values = _segment_rows(ideal, is_put, retention, interval, keys, values)
    return {
        # Segment ids are >= 0: their prefixes sort below the latest prefix (-1).
        "default": (
            pa.concat_arrays([segment_keys, latest_keys]),
            pa.concat_arrays([segment_values, latest_values]),
        ),
        METADATA_CF: (pa.array(metadata[0], pa.binary()), pa.array(metadata[1], pa.binary())),
    }


def _segment_rows(
    ideal: _Ideal,
    is_put: _Ints,
    retention: int,
    interval: int,
    keys: pa.Array,
    values: pa.Array,
) -> tuple[pa.Array, pa.Array]:
    """Kafka's segment rows of a history (sorted by key, then time; a key's records came in
    time order where it holds a tombstone): ``[segment][key]`` -> ``SegmentValue`` bytes,
    sorted by segment, then key bytes.

    Record ``k`` of a key, at time ``t``, writes to the segment of ``t``, if live: after a put,
    that put's version ``[t(k-1), t)``; else, if it is a tombstone, a mark at ``t`` (a
    degenerate row ``[t, t)`` if it is the row's first, else a tombstone entry from the row's
    end to ``t``). A version starting after its row's end is preceded by a tombstone entry
    over the gap (a degenerate row's entry becomes that entry). A put after a tombstone, or
    first, writes nothing there.
    """
    n = len(ideal.rows_of)
    first_of_key = np.ones(n, dtype=bool)
    first_of_key[1:] = ~ideal.has_end[:-1]
    after_put = np.zeros(n, dtype=bool)
    after_put[1:] = is_put[:-1]
    after_put &= ~first_of_key
    events = np.flatnonzero(after_put | ~is_put)
    segments = segment_ids(ideal.starts[events], interval)
    live = segments >= segment_id(ideal.stream_time - retention, interval)
    events, segments = events[live], segments[live]
    m = len(events)
    if m == 0:
        return pa.array([], _BYTES), pa.array([], _BYTES)
    key_ids = np.cumsum(first_of_key)[events]
    is_version = after_put[events]  # else a tombstone mark
    ends = ideal.starts[events]
    froms = np.where(is_version, ideal.starts[events - 1], ends)
    value_rows = np.where(is_version, ideal.rows_of[events - 1], -1)
    # Rows: runs of equal (key, segment) among the events (key order, then time).
    new_row = np.ones(m, dtype=bool)
    new_row[1:] = (key_ids[1:] != key_ids[:-1]) | (segments[1:] != segments[:-1])
    prev_end = np.zeros(m, dtype=np.int64)
    prev_end[1:] = ends[:-1]
    # A row whose only event so far is a mark is degenerate: a later event extends its entry.
    degenerate = np.zeros(m, dtype=bool)
    degenerate[1:] = new_row[:-1] & ~is_version[:-1] & ~new_row[1:]
    # Each event's entries, oldest first: a tombstone entry from the row's end, then its own.
    gap = ~new_row & ~degenerate & (~is_version | (prev_end < froms))
    own = new_row | is_version
    row_ids = np.cumsum(new_row) - 1
    if gap.any():
        taken = np.column_stack([gap, own]).ravel()
        entry_ts = np.column_stack([prev_end, froms]).ravel()[taken]
        entry_values = np.column_stack([np.full(m, -1), value_rows]).ravel()[taken]
        entry_row = np.repeat(row_ids, 2)[taken]
    else:  # (puts only, say) an entry per event at most
        entry_ts, entry_values, entry_row = froms[own], value_rows[own], row_ids[own]
    row_starts = np.flatnonzero(new_row)
    row_ends = np.append(row_starts[1:], m) - 1
    row_keys = concat_rows(
        big_endian_column(segments[row_starts]),
        keys.take(pa.array(ideal.rows_of[events[row_starts]])),
    )
    row_bytes = _row_bytes(entry_row, entry_ts, entry_values, ends[row_ends], values)
    by_segment = pa.array(np.argsort(segments[row_starts], kind="stable"))  # rows: key order
    return row_keys.take(by_segment), row_bytes.take(by_segment)


def _row_bytes(
    entry_row: _Ints, entry_ts: _Ints, entry_values: _Ints, next_ts: _Ints, values: pa.Array
) -> pa.Array:
    """``SegmentValue`` bytes of rows given their entries oldest first (``entry_row``, rising;
    ``entry_values``: a row of ``values``, or -1 for a tombstone) and each row's next
    timestamp: a 16-byte header (next timestamp, min timestamp: its oldest entry's), a 12-byte
    entry per version newest first (start, value size or -1), values oldest first. The bytes
    are one take of those pieces in row order, cut at the rows' sizes."""
    n = len(entry_row)
    firsts = np.flatnonzero(np.diff(entry_row, prepend=-1))
    g = len(firsts)
    counts = np.diff(np.append(firsts, n))
    tombstone = entry_values < 0
    if tombstone.any():
        taken = values.take(pa.array(entry_values, mask=tombstone)).cast(_BYTES).fill_null(b"")
    else:
        taken = values.take(pa.array(entry_values)).cast(_BYTES)
    sizes = np.diff(binary_offsets(taken))
    header = np.empty((g, 2), dtype=">i8")
    header[:, 0], header[:, 1] = next_ts, entry_ts[firsts]
    entry = np.zeros(n, dtype=[("ts", ">i8"), ("size", ">i4")])
    entry["ts"], entry["size"] = entry_ts, np.where(tombstone, -1, sizes)
    headers = binary_from(header.view(np.uint8).ravel(), np.arange(g + 1, dtype=np.int64) * 16)
    entries = binary_from(entry.view(np.uint8).ravel(), np.arange(n + 1, dtype=np.int64) * 12)
    pieces = pa.concat_arrays([headers.cast(_BYTES), entries.cast(_BYTES), taken])
    # Row r: its header, its entries newest first, its values oldest first.
    base = np.cumsum(np.concatenate([[0], 1 + 2 * counts[:-1]]))
    order = np.empty(g + 2 * n, dtype=np.int64)
    order[base] = np.arange(g)
    rank = np.arange(n) - firsts[entry_row]  # 0 for a row's oldest entry
    order[base[entry_row] + 1 + (counts[entry_row] - 1 - rank)] = g + np.arange(n)
    order[base[entry_row] + 1 + counts[entry_row] + rank] = g + n + np.arange(n)
    joined = pieces.take(pa.array(order))  # a new array: the pieces back to back, in order
    row_sizes = 16 + 12 * counts + np.add.reduceat(sizes, firsts)
    offsets = np.zeros(g + 1, dtype=np.int64)
    np.cumsum(row_sizes, out=offsets[1:])
    data = binary_data(joined)[int(binary_offsets(joined)[0]) :][: int(offsets[-1])]
    return binary_from(data, offsets).cast(_BYTES)


def snapshot_records(runs: dict[str, tuple[pa.Array, pa.Array]]) -> Base | None:
    """A versioned snapshot's rows as records (in no particular order: no two share a key and
    time, but for the ``implied`` tombstones first) and its stream time (see the module doc);
    None if it holds column families the versioned store does not have. Keys and values are
    cut out of the rows with one take each (``ByteColumn.slices``)."""
    if set(runs) - {"default", METADATA_CF}:
        return None
    stream_time = NO_TIMESTAMP
    if METADATA_CF in runs:
        for key, value in zip(*(a.to_pylist() for a in runs[METADATA_CF]), strict=True):
            if key == STREAM_TIME_KEY:
                stream_time = int.from_bytes(value, "big", signed=True)
    if "default" not in runs or len(runs["default"][0]) == 0:
        return Base(_WIDE.empty_table(), stream_time, 0)
    physical, raws = (ByteColumn(a) for a in runs["default"])
    prefixes = physical.longs_at(physical.starts)
    latest = prefixes == int.from_bytes(LATEST_PREFIX, "big", signed=True)
    # Latest rows hold a value (timestamp, then value); segment rows hold entries. Every row's
    # key follows the 8-byte prefix of its physical key.
    rows_l, rows_s = np.flatnonzero(latest), np.flatnonzero(~latest)
    row_of, valid_from, valid_to, value_at, size = _segment_entries(raws, rows_s)
    # Records: an implied tombstone at the end of each segment row's newest entry (the first
    # ``len(rows_s)`` entries, see ``_segment_entries``), the latest values, every entry.
    # Within a row each entry ends where the next one starts, so only a row's newest entry can
    # end at a delete (Kafka files a delete only as the end of the version before it, or as a
    # tombstone entry ending at the next).
    implied = len(rows_s)
    record_rows = np.concatenate([rows_s, rows_l, rows_s[row_of]])
    keys = physical.slices(
        physical.starts + TIMESTAMP_SIZE, physical.lengths - TIMESTAMP_SIZE, picks=record_rows
    )
    value_starts = np.concatenate([raws.starts[rows_l] + TIMESTAMP_SIZE, value_at])
    value_sizes = np.concatenate([raws.lengths[rows_l] - TIMESTAMP_SIZE, np.maximum(size, 0)])
    value_picks = np.concatenate([np.zeros(implied, np.int64), np.arange(len(value_sizes))])
    no_value = np.concatenate([np.ones(implied, bool), np.zeros(len(rows_l), bool), size < 0])
    values = raws.slices(value_starts, value_sizes, nulls=no_value, picks=value_picks)
    stamps = np.concatenate([valid_to[:implied], raws.longs_at(raws.starts[rows_l]), valid_from])
    records = pa.table([keys, values, pa.array(stamps, _TIME)], schema=_WIDE)
    return Base(records, stream_time, implied)


def _segment_entries(
    raws: ByteColumn, rows: np.ndarray[Any, Any]
) -> tuple[_Ints, _Ints, _Ints, _Ints, _Ints]:
    """Every entry of the segment rows ``rows``: (row, valid_from, valid_to, where its value
    starts, its size (-1: a tombstone)); each row's newest entry first, in row order, then
    the next entries. A row is ``next_ts, min_ts``, then entries ``(ts,
    size)`` newest first down to the one at ``min_ts``, then the values oldest first."""
    starts, ends = raws.starts[rows], raws.starts[rows] + raws.lengths[rows]
    next_ts = raws.longs_at(starts)
    min_ts = raws.longs_at(starts + TIMESTAMP_SIZE)
    found: list[tuple[_Ints, ...]] = []
    active = np.arange(len(rows))
    value_end = ends.copy()  # values are read from the row's end backwards
    valid_to = next_ts.copy()
    entry = 0
    while len(active):
        at = starts[active] + 2 * TIMESTAMP_SIZE + entry * 12
        if (at + 12 > ends[active]).any():
            raise CorruptDataError("segment row ends before its min_timestamp entry")
        stamps, sizes = raws.longs_at(at), raws.ints_at(at + TIMESTAMP_SIZE)
        value_from = value_end[active] - np.maximum(sizes, 0)
        found.append((active, stamps, valid_to[active], value_from, sizes))
        value_end[active] = value_from
        valid_to[active] = stamps
        active = active[stamps != min_ts[active]]
        entry += 1
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty, empty
    row_of, valid_from, valid_tos, value_at, size = (np.concatenate(c) for c in zip(*found))
    return row_of, valid_from, valid_tos, value_at, size


def _apply_order(stamps: _Ints, puts: _Ints, sizes: list[int]) -> _Ints:
    """Row indices in the order the store applies them: the first part (a snapshot's records)
    as it is, then each commit's rows by timestamp, deletes before puts at one time, stable
    (see ``kinds.versioned.VersionedKind.apply``)."""
    parts, offset = [np.arange(sizes[0], dtype=np.int64)], sizes[0]
    for size in sizes[1:]:
        part = slice(offset, offset + size)
        parts.append(stable_order([stamps[part], puts[part].astype(np.int8)], size) + offset)
        offset += size
    return np.concatenate(parts)


def _history(
    keys: pa.ChunkedArray | pa.Array,
    stamps: _Ints,
    puts: _Ints,
    rows: _Ints,
    implied: int = 0,
    prior: int = 0,
) -> tuple[_Ints, _Ints, _Ints, _Ints, bool] | None:
    """Per key, the last record applied at each time, among ``rows`` (row indices in the
    order they are applied), sorted by (key, time): their row indices, starts, each one's end
    (the key's next time) and whether it has one, and whether every key's records were applied
    in time order; None if a time of a key holds a tombstone and another record (Kafka's
    departure, see the module doc). Only keys are copied (to compare neighbours), not values. The sort is stable: within a key and time, records stay
    in the order they are applied, with no column to say so.

    Rows below ``implied`` are a snapshot's implied tombstones, applied first: one is void
    where another of the snapshot's ``prior`` rows has its key and time (``Base``)."""
    given = len(rows) == len(stamps) and bool((rows[1:] > rows[:-1]).all())
    order, first = key_runs(
        keys if given else keys.take(pa.array(rows)), after=[(stamps[rows], False)]
    )
    rows = rows[order]
    n = len(rows)
    starts = stamps[rows]
    # next_same[i]: row i + 1 is of the same key (the last row has no next).
    next_same = np.zeros(n, dtype=bool)
    next_same[:-1] = ~first[1:]
    # ``order`` holds each row's place in apply order: a key was applied in time order when
    # its places rise along its (time-sorted, stable) rows.
    in_order = not bool((next_same[:-1] & (order[1:] < order[:-1])).any())
    tie = next_same.copy()
    tie[:-1] &= starts[:-1] == starts[1:]
    if implied and tie.any():
        # In apply order within a time, an implied tombstone comes before the records there.
        void = tie & (rows < implied)
        void[:-1] &= rows[1:] < prior
        if void.any():
            rows, starts, next_same, tie = (a[~void] for a in (rows, starts, next_same, tie))
    if tie.any():
        # A group of records of one key and time: it must hold no tombstone.
        in_group = tie.copy()
        in_group[1:] |= tie[:-1]
        if (~puts[rows] & in_group).any():
            return None
        last = ~tie  # the last record applied at a time wins
        rows, starts, next_same = rows[last], starts[last], next_same[last]
    ends = np.zeros(len(starts), dtype=np.int64)
    ends[:-1] = starts[1:]
    return rows, starts, np.where(next_same, ends, 0), next_same, in_order


__all__ = ["RAW", "Base", "snapshot_records", "versioned_read", "versioned_rows"]
