"""Window and session stores' reads computed from their changelog with Arrow, no RocksDB built.

Both kinds sit on Kafka's segmented bytes store (``stores.segments``); what a scan of it sees
after the commits' puts is a function of the records alone:

| step | rule (Kafka's ``AbstractRocksDBSegmentedBytesStore``) | computed as |
|---|---|---|
| apply order | commits in order; a commit's rows by window start (windows) or session end (sessions) | not needed as such: a store key's writes share that time, so their row order is their apply order (a stable sort per commit only numbers duplicates) |
| stream time | the largest segment time put (window start, session end); a window store retaining duplicates skips deletes before they reach it | per commit, a maximum: a row meets the larger of its time and the stream time before its commit |
| state | per store key (key, window start and sequence number; key, session end and start) the last write, a null value deleting it; with duplicates every put its own sequence number | one stable sort by store key (``key_sort.key_runs``: key bytes, then the suffix as numbers), the last row of each run |
| expiry | a row whose segment is dead when it arrives is dropped, and dead segments are deleted; a scan starts at stream time minus retention plus 1 (Kafka's ``actualFrom``), which every dropped or deleted row lies below | a filter at the end |
| order | segment by segment, then by store key bytes (windows); by store key bytes (sessions) | the same sort, on store keys built in Arrow |

The same state gives a fresh partition cache its RocksDB rows (``window_rows``,
``session_rows``; ingested as SST files, not put row by row): each store key's last write in a
segment still live at the final stream time, under its segment prefix, plus the metadata
family's stream time and last sequence number, byte for byte what the store writes.

A snapshot (``catalog.operations.compaction``) holds the store's own rows: ``window_base`` and
``session_base`` decode them all at once (``stores.columns.decode``) into the state the tail
applies to, with the snapshot's stream time and last sequence number. A snapshot with rows in
a legacy column family (an older value layout that RocksDB converts as it reads), and a window
store whose sequence numbers would wrap, are declined (None): RocksDB serves them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import ByteColumn, segment_ids, stored_values, value_columns
from stores.columns.encode import big_endian_column, concat_rows
from stores.columns.key_sort import key_runs, run_lasts
from stores.records import UNKNOWN_TIMESTAMP
from stores.segments.store import (
    EXPIRED_SEGMENT_WARNING,
    SEGMENTS_META_CF,
    STREAM_TIME_KEY,
    segment_id,
)
from stores.segments.store import PREFIX_SIZE as _PREFIX
from stores.window.format import MAX_LONG, MAX_SEQNUM, SEQNUM_KEY, encode_seqnum

_TIME = pa.int64()
_BYTES = pa.large_binary()
_TIMES = ("window_start", "session_start", "session_end", "timestamp")
#: Kafka's ``ConsumerRecord.NO_TIMESTAMP``: the stream time of a store that saw no write.
_NO_TIMESTAMP = -1


@dataclass(frozen=True)
class _State:
    """A window or session store's state computed from columns: ``rows`` (the snapshot's and
    the commits' rows as given), the last write of each store key (``winners``, row indices in
    Kafka's scan order: segment, then store key bytes for windows; store key bytes for
    sessions), which rows hold a value, each row's segment time and store key suffix, the
    stream time and the last sequence number given out."""

    rows: pa.Table
    winners: np.ndarray[Any, Any]
    written: np.ndarray[Any, Any]
    times: np.ndarray[Any, Any]
    #: The store key's fields after the key: integers and their widths in bytes.
    suffix: list[tuple[np.ndarray[Any, Any], int]]
    stream_time: int
    last_seqnum: int


def _window_state(
    commits: list[pa.Table], params: dict[str, Any], base: SpanBase | None
) -> _State | None:
    timestamped, headers = bool(params.get("timestamped")), bool(params.get("headers"))
    extra = (["timestamp"] if timestamped else []) + (["headers"] if headers else [])
    names = ["key", "value", "window_start", *extra]
    base = base or SpanBase.empty(names)
    rows, sizes = _concat(base, commits, names)
    retention, interval = params["retention_ms"], params["segment_interval_ms"]
    written = pc.is_valid(rows.column("value")).to_numpy(zero_copy_only=False)
    starts = rows.column("window_start").to_numpy()
    n_base = base.rows.num_rows
    seen = np.ones(rows.num_rows, dtype=bool)  # the rows that reach the store
    present: np.ndarray[Any, Any] | None = None  # their indices, when not all of them
    seqnums = np.zeros(rows.num_rows, dtype=np.int64)
    last_seqnum = base.last_seqnum
    if params.get("retain_duplicates"):
        # Kafka: no deletes of duplicates (they never reach the store); each put its own
        # sequence number, in apply order.
        seen[n_base:] = written[n_base:]
        tail = _apply_order(starts, sizes)[n_base:]
        tail = tail[seen[tail]]
        if base.last_seqnum + len(tail) > MAX_SEQNUM:
            return None
        seqnums[:n_base] = base.seqnums
        seqnums[tail] = np.arange(1, len(tail) + 1, dtype=np.int64) + base.last_seqnum
        last_seqnum += len(tail)
        present = np.flatnonzero(seen)
    stream_time = _stream_time(starts, seen, sizes, retention, interval, "window", base.stream_time)
    # One sort: segment, then store key bytes (Kafka's scan order). It is stable and a store
    # key's writes share a window start, so they stay in apply order: the last one wins.
    suffix = [(starts, 8), (seqnums, 4)]
    at = slice(None) if present is None else present
    keys = rows.column("key") if present is None else rows.column("key").take(pa.array(present))
    order, first = key_runs(
        keys,
        before=[(segment_ids(starts[at], interval), False)],
        suffix=[(field[at], width) for field, width in suffix],
    )
    last = run_lasts(first)
    winners = order[last] if present is None else present[order[last]]
    return _State(rows, winners, written, starts, suffix, stream_time, last_seqnum)


def window_read(
    commits: list[pa.Table],
    params: dict[str, Any],
    time_from: int | None,
    time_to: int | None,
    base: SpanBase | None = None,
) -> pa.Table | None:
    """What a window store built from ``commits`` (after ``base``, a snapshot's state) scans
    for windows starting in ``[time_from, time_to]`` (None: open): the kind's raw columns (key,
    value, window_start, window_end[, timestamp][, headers]) in Kafka's order; None to decline
    (module doc)."""
    state = _window_state(commits, params, base)
    if state is None:
        return None
    rows, winners, starts = state.rows, state.winners, state.times
    low = max(0 if time_from is None else time_from, state.stream_time - params["retention_ms"] + 1)
    high = MAX_LONG if time_to is None else time_to
    final = winners[state.written[winners] & (starts[winners] >= low) & (starts[winners] <= high)]
    picked = rows.take(pa.array(final))
    window_starts = picked.column("window_start").combine_chunks()
    # As Kafka's window end, capped at Long.MAX_VALUE.
    ends = _capped_ends(window_starts, params["window_size_ms"])
    columns = [picked.column("key"), picked.column("value"), window_starts, ends]
    names = ["key", "value", "window_start", "window_end"]
    if params.get("timestamped"):
        columns.append(_known(picked.column("timestamp").combine_chunks()))
        names.append("timestamp")
    if params.get("headers"):
        columns.append(picked.column("headers"))
        names.append("headers")
    return pa.table(columns, names=names)


def window_rows(
    commits: list[pa.Table], params: dict[str, Any], base: SpanBase | None,
    families: tuple[str, ...],
) -> dict[str, tuple[pa.Array, pa.Array]] | None:  # fmt: skip
    """The RocksDB rows of a window store built from ``commits`` (after ``base``), per column
    family (``stores.segments``' layout; ``families[0]`` the data family): what a partition
    cache ingests; None to decline (module doc)."""
    state = _window_state(commits, params, base)
    if state is None:
        return None
    return _store_rows(
        state, params, families, timestamped=bool(params.get("timestamped")),
        seqnum=state.last_seqnum if params.get("retain_duplicates") else None,
    )  # fmt: skip


def _session_state(
    commits: list[pa.Table], params: dict[str, Any], base: SpanBase | None
) -> _State:
    extra = ["headers"] if params.get("headers") else []
    names = ["key", "value", "session_start", "session_end", *extra]
    base = base or SpanBase.empty(names)
    rows, sizes = _concat(base, commits, names)
    ends = rows.column("session_end").to_numpy()
    starts = rows.column("session_start").to_numpy()
    stream_time = _stream_time(
        ends, np.ones(len(ends), dtype=bool), sizes, params["retention_ms"],
        params["segment_interval_ms"], "session", base.stream_time,
    )  # fmt: skip
    # One sort: store key bytes (Kafka's order across segments). It is stable and a store
    # key's writes share a session end, so they stay in apply order: the last one wins.
    suffix = [(ends, 8), (starts, 8)]
    order, first = key_runs(rows.column("key"), suffix=suffix)
    written = pc.is_valid(rows.column("value")).to_numpy(zero_copy_only=False)
    return _State(rows, order[run_lasts(first)], written, ends, suffix, stream_time, 0)


def session_read(
    commits: list[pa.Table],
    params: dict[str, Any],
    time_from: int | None,
    time_to: int | None,
    base: SpanBase | None = None,
) -> pa.Table | None:
    """What a session store built from ``commits`` (after ``base``) scans for sessions
    starting in ``[time_from, time_to]`` (None: open): key, value, session_start, session_end
    [, headers] in Kafka's order."""
    state = _session_state(commits, params, base)
    winners, ends, starts = state.winners, state.times, state.suffix[1][0]
    keep = state.written[winners] & (
        ends[winners] >= max(0, state.stream_time - params["retention_ms"] + 1)
    )
    if time_from is not None:
        keep &= starts[winners] >= time_from
    if time_to is not None:
        keep &= starts[winners] <= time_to
    names = ["key", "value", "session_start", "session_end"]
    return state.rows.take(pa.array(winners[keep])).select(
        names + (["headers"] if params.get("headers") else [])
    )


def session_rows(
    commits: list[pa.Table], params: dict[str, Any], base: SpanBase | None,
    families: tuple[str, ...],
) -> dict[str, tuple[pa.Array, pa.Array]] | None:  # fmt: skip
    """The RocksDB rows of a session store built from ``commits`` (after ``base``), as
    ``window_rows`` gives a window store's."""
    state = _session_state(commits, params, base)
    return _store_rows(state, params, families, timestamped=False, seqnum=None)


def _store_rows(
    state: _State,
    params: dict[str, Any],
    families: tuple[str, ...],
    *,
    timestamped: bool,
    seqnum: int | None,
) -> dict[str, tuple[pa.Array, pa.Array]]:
    """``stores.segments``' rows of ``state``: each store key's last write, if a value, in a
    segment still live at the stream time (the store drops a segment whole once it is
    older), as ``[segment id (8)][key][suffix]`` -> the stored value (``stored_values``); and
    the metadata family's stream time and (``seqnum``) last sequence number, once any put
    reached the store. Keys come out ascending: segment, then store key bytes."""
    interval = params["segment_interval_ms"]
    winners = state.winners
    segments = segment_ids(state.times[winners], interval)
    live = state.written[winners] & (
        segments >= segment_id(state.stream_time - params["retention_ms"], interval)
    )
    kept, segments = winners[live], segments[live]
    # Segment first (sessions' winners are in store key order only); stable.
    by_segment = np.argsort(segments, kind="stable")
    kept, segments = kept[by_segment], segments[by_segment]
    rows = state.rows.take(pa.array(kept))
    fields = (big_endian_column(field[kept], width) for field, width in state.suffix)
    keys = concat_rows(big_endian_column(segments), rows.column("key"), *fields)
    values = stored_values(
        rows.column("value"),
        stamps=rows.column("timestamp") if timestamped else None,
        headers=rows.column("headers") if params.get("headers") else None,
    )
    meta: list[tuple[bytes, bytes]] = []
    if state.stream_time != _NO_TIMESTAMP:
        meta.append((STREAM_TIME_KEY, state.stream_time.to_bytes(8, "big", signed=True)))
    if seqnum:
        meta.append((SEQNUM_KEY, encode_seqnum(seqnum)))
    meta.sort()
    return {
        families[0]: (keys, values),
        SEGMENTS_META_CF: (
            pa.array([k for k, _ in meta], pa.binary()),
            pa.array([v for _, v in meta], pa.binary()),
        ),
    }


@dataclass(frozen=True)
class SpanBase:
    """A window or session store's state from a snapshot: its rows (the read's columns but
    ``window_end``), their sequence numbers (windows), stream time and last sequence number."""

    rows: pa.Table
    seqnums: np.ndarray[Any, Any]
    stream_time: int
    last_seqnum: int = 0

    @staticmethod
    def empty(names: list[str]) -> SpanBase:
        schema = pa.schema([pa.field(n, _TIME if n in _TIMES else _BYTES) for n in names])
        return SpanBase(schema.empty_table(), np.zeros(0, dtype=np.int64), _NO_TIMESTAMP)


def window_base(runs: dict[str, tuple[pa.Array, pa.Array]], params: dict[str, Any],
                families: tuple[str, ...]) -> SpanBase | None:  # fmt: skip
    """A window store's snapshot rows as ``SpanBase`` (``window_format``'s layouts); None if a
    legacy column family holds rows (RocksDB converts them)."""
    meta = _metadata(runs, families)
    if meta is None:
        return None
    stream_time, seqnum_raw = meta
    last_seqnum = 0 if seqnum_raw is None else int.from_bytes(seqnum_raw, "big", signed=True)
    timestamped, headers = bool(params.get("timestamped")), bool(params.get("headers"))
    names = ["key", "value", "window_start"] + (["timestamp"] if timestamped else [])
    names += ["headers"] if headers else []
    if families[0] not in runs:
        return replace(SpanBase.empty(names), stream_time=stream_time, last_seqnum=last_seqnum)
    physical, raws = (ByteColumn(a) for a in runs[families[0]])
    ends = physical.starts + physical.lengths
    columns: dict[str, pa.Array] = {
        "key": physical.slices(physical.starts + _PREFIX, physical.lengths - _PREFIX - 12),
        "window_start": pa.array(physical.longs_at(ends - 12), _TIME),
    }
    seqnums = physical.ints_at(ends - 4)
    columns.update(value_columns(raws, timestamped, headers))
    return SpanBase(pa.table({n: columns[n] for n in names}), seqnums, stream_time, last_seqnum)


def session_base(runs: dict[str, tuple[pa.Array, pa.Array]], params: dict[str, Any],
                 families: tuple[str, ...]) -> SpanBase | None:  # fmt: skip
    """A session store's snapshot rows as ``SpanBase`` (``session_format``'s layouts)."""
    meta = _metadata(runs, families)
    if meta is None:
        return None
    headers = bool(params.get("headers"))
    names = ["key", "value", "session_start", "session_end"] + (["headers"] if headers else [])
    if families[0] not in runs:
        return replace(SpanBase.empty(names), stream_time=meta[0])
    physical, raws = (ByteColumn(a) for a in runs[families[0]])
    ends = physical.starts + physical.lengths
    columns: dict[str, pa.Array] = {
        "key": physical.slices(physical.starts + _PREFIX, physical.lengths - _PREFIX - 16),
        "session_end": pa.array(physical.longs_at(ends - 16), _TIME),
        "session_start": pa.array(physical.longs_at(ends - 8), _TIME),
    }
    columns.update(value_columns(raws, False, headers))
    rows = pa.table({n: columns[n] for n in names})
    return SpanBase(rows, np.zeros(rows.num_rows, dtype=np.int64), meta[0])


def _metadata(
    runs: dict[str, tuple[pa.Array, pa.Array]], families: tuple[str, ...]
) -> tuple[int, bytes | None] | None:
    """(stream time, last sequence number bytes) of a snapshot whose rows are all in the data
    family (``families[0]``) or the metadata one; None otherwise."""
    if any(len(runs[f][0]) for f in runs if f not in (families[0], SEGMENTS_META_CF)):
        return None
    found = {}
    if SEGMENTS_META_CF in runs:
        keys, values = (a.to_pylist() for a in runs[SEGMENTS_META_CF])
        found = dict(zip(keys, values, strict=True))
    raw_time = found.get(STREAM_TIME_KEY)
    stream_time = (
        _NO_TIMESTAMP if raw_time is None else int.from_bytes(raw_time, "big", signed=True)
    )
    return stream_time, found.get(SEQNUM_KEY)


def _concat(
    base: SpanBase, commits: list[pa.Table], names: list[str]
) -> tuple[pa.Table, list[int]]:
    """The snapshot's rows and every commit's, as given (keys, values and headers as large
    binaries; one part alone is not copied), and the number of rows of each part."""
    schema = pa.schema([pa.field(n, _TIME if n in _TIMES else _BYTES) for n in names])
    parts = [base.rows.select(names).cast(schema), *(t.select(names).cast(schema) for t in commits)]
    rows = pa.concat_tables([p for p in parts if p.num_rows] or parts[:1]).combine_chunks()
    return rows, [p.num_rows for p in parts]


def _apply_order(times: np.ndarray[Any, Any], sizes: list[int]) -> np.ndarray[Any, Any]:
    """Row indices in the order the store applies them: the snapshot's (the first part) as
    they are, then each commit's by segment ``times``, stable (``kinds._base.time_order``)."""
    order, offset = [np.arange(sizes[0], dtype=np.int64)], sizes[0]
    for size in sizes[1:]:
        part = times[offset : offset + size]
        order.append(np.argsort(part, kind="stable").astype(np.int64) + offset)
        offset += size
    return np.concatenate(order)


def _stream_time(
    times: np.ndarray[Any, Any],
    seen: np.ndarray[Any, Any],
    sizes: list[int],
    retention: int,
    interval: int,
    kind: str,
    start: int,
) -> int:
    """The store's stream time after the commits (``sizes[1:]`` rows each after the snapshot's
    ``sizes[0]``) of segment ``times`` put (where ``seen``) from ``start``; logs Kafka's warning
    for the records dropped on arrival, as the store's bulk put does.

    A commit applies its rows in time order, so when a row arrives every row of its commit
    before it has a time no later than its own: the stream time it meets is the larger of its
    time and the stream time before the commit. No sort is needed."""
    reached, dropped, offset = start, 0, sizes[0]
    for size in sizes[1:]:
        part = times[offset : offset + size][seen[offset : offset + size]]
        offset += size
        if not len(part):
            continue
        met = np.maximum(part, reached)
        # Dropped: its segment is older than the oldest live one. Only a row older than the
        # retention can be (segments are monotonic in time), so only those are divided.
        old = part < met - retention
        if old.any():
            first_live = segment_ids(met[old] - retention, interval)
            dropped += int((segment_ids(part[old], interval) < first_live).sum())
        reached = int(met.max())
    if dropped:
        logging.getLogger(f"stores.{kind}").warning(
            "%s (%d records)", EXPIRED_SEGMENT_WARNING, dropped
        )
    return reached


def _capped_ends(starts: pa.Array, size: int) -> pa.Array:
    values = starts.to_numpy()
    return pa.array(np.where(values > MAX_LONG - size, MAX_LONG, values + size), _TIME)


def _known(stamps: pa.Array) -> pa.Array:
    """Timestamps with Kafka's unknown (-1) as null."""
    return pc.if_else(pc.equal(stamps, UNKNOWN_TIMESTAMP), pa.scalar(None, _TIME), stamps)


__all__ = ["SpanBase", "session_base", "session_read", "window_base", "window_read"]
