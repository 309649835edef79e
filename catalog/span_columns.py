"""Window and session stores' reads computed from their changelog with Arrow, no RocksDB built.

Both kinds sit on Kafka's segmented bytes store (``stores.segments``); what a scan of it sees
after the commits' puts is a function of the records alone:

| step | rule (Kafka's ``AbstractRocksDBSegmentedBytesStore``) | computed as |
|---|---|---|
| apply order | commits in order; a commit's rows by window start (windows) or session end (sessions) | a stable sort per commit |
| stream time | the largest segment time put (window start, session end); a window store retaining duplicates skips deletes before they reach it | a maximum |
| state | per store key (key, window start and sequence number; key, session end and start) the last write, a null value deleting it; with duplicates every put its own sequence number | one sort |
| expiry | a row whose segment is dead when it arrives is dropped, and dead segments are deleted; a scan starts at stream time minus retention plus 1 (Kafka's ``actualFrom``), which every dropped or deleted row lies below | a filter at the end |
| order | segment by segment, then by store key bytes (windows); by store key bytes (sessions) | a sort on the store keys, built in Arrow |

A partition that starts from a snapshot (Kafka's rows, maybe in a legacy value layout) is
declined (None), and so is a window store whose sequence numbers would wrap: RocksDB serves
them.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores._window_bulk import EXPIRED_SEGMENT_WARNING
from stores.records import UNKNOWN_TIMESTAMP
from stores.window_format import MAX_LONG, MAX_SEQNUM

_TIME = pa.int64()
_BYTES = pa.large_binary()
_TIMES = ("window_start", "session_start", "session_end", "timestamp")
#: Kafka's ``ConsumerRecord.NO_TIMESTAMP``: the stream time of a store that saw no write.
_NO_TIMESTAMP = -1


def window_read(
    commits: list[pa.Table], params: dict[str, Any], time_from: int | None, time_to: int | None
) -> pa.Table | None:
    """What a window store built from ``commits`` scans for windows starting in
    ``[time_from, time_to]`` (None: open): the kind's raw columns (key, value, window_start,
    window_end[, timestamp][, headers]) in Kafka's order; None to decline (module doc)."""
    timestamped, headers = bool(params.get("timestamped")), bool(params.get("headers"))
    extra = (["timestamp"] if timestamped else []) + (["headers"] if headers else [])
    rows = _in_apply_order(commits, ["key", "value", "window_start", *extra], "window_start")
    retention, size = params["retention_ms"], params["window_size_ms"]
    if params.get("retain_duplicates"):
        rows = rows.filter(pc.is_valid(rows.column("value")))  # Kafka: no deletes of duplicates
        if rows.num_rows > MAX_SEQNUM:
            return None
        seqnums = np.arange(1, rows.num_rows + 1, dtype=np.int64)
    else:
        seqnums = np.zeros(rows.num_rows, dtype=np.int64)
    starts = rows.column("window_start").to_numpy()
    stream_time = _stream_time(starts, retention, params["segment_interval_ms"], "window")
    store_keys = _store_keys(rows.column("key"), [(starts, 8), (seqnums, 4)])
    rows, store_keys = _last_writes(rows, store_keys)
    starts = rows.column("window_start").to_numpy()
    low = max(0 if time_from is None else time_from, stream_time - retention + 1)
    high = MAX_LONG if time_to is None else time_to
    keep = (starts >= low) & (starts <= high)
    segments = _segment_ids(starts, params["segment_interval_ms"])
    # Segment by segment, then store key bytes (the segment prefix sorts by id).
    order = pc.sort_indices(
        pa.table({"segment": segments, "store_key": store_keys}).filter(pa.array(keep)),
        sort_keys=[("segment", "ascending"), ("store_key", "ascending")],
    )
    rows = rows.filter(pa.array(keep)).take(order)
    starts = rows.column("window_start")
    ends = _capped_ends(starts, size)  # as Kafka's window end, capped at Long.MAX_VALUE
    columns = [rows.column("key"), rows.column("value"), starts, ends]
    names = ["key", "value", "window_start", "window_end"]
    if timestamped:
        columns.append(_known(rows.column("timestamp")))
        names.append("timestamp")
    if headers:
        columns.append(rows.column("headers"))
        names.append("headers")
    return pa.table(columns, names=names)


def session_read(
    commits: list[pa.Table], params: dict[str, Any], time_from: int | None, time_to: int | None
) -> pa.Table | None:
    """What a session store built from ``commits`` scans for sessions starting in
    ``[time_from, time_to]`` (None: open): key, value, session_start, session_end[, headers]
    in Kafka's order."""
    extra = ["headers"] if params.get("headers") else []
    names = ["key", "value", "session_start", "session_end", *extra]
    rows = _in_apply_order(commits, names, "session_end")
    ends = rows.column("session_end").to_numpy()
    stream_time = _stream_time(
        ends, params["retention_ms"], params["segment_interval_ms"], "session"
    )
    starts = rows.column("session_start").to_numpy()
    store_keys = _store_keys(rows.column("key"), [(ends, 8), (starts, 8)])
    rows, store_keys = _last_writes(rows, store_keys)
    starts = rows.column("session_start").to_numpy()
    ends = rows.column("session_end").to_numpy()
    keep = ends >= max(0, stream_time - params["retention_ms"] + 1)
    if time_from is not None:
        keep &= starts >= time_from
    if time_to is not None:
        keep &= starts <= time_to
    mask = pa.array(keep)
    rows, store_keys = rows.filter(mask), store_keys.filter(mask)
    return rows.take(pc.sort_indices(store_keys)).select(names)


def _in_apply_order(commits: list[pa.Table], names: list[str], time: str) -> pa.Table:
    """The rows of every commit in the order the store applies them (``kinds._time_order``),
    keys, values and headers as large binaries."""
    schema = pa.schema([pa.field(n, _TIME if n in _TIMES else _BYTES) for n in names])
    parts = [t.select(names).cast(schema) for t in commits]
    parts = [t.take(pc.sort_indices(t.column(time))) for t in parts]  # stable
    return pa.concat_tables(parts).combine_chunks() if parts else schema.empty_table()


def _stream_time(times: np.ndarray[Any, Any], retention: int, interval: int, kind: str) -> int:
    """The store's stream time after ``times`` (segment times in apply order); logs Kafka's
    warning for the records dropped on arrival, as the store's bulk put does."""
    if not len(times):
        return _NO_TIMESTAMP
    reached = np.maximum.accumulate(np.maximum(times, _NO_TIMESTAMP))
    dropped = int((_java_div(times, interval) < _java_div(reached - retention, interval)).sum())
    if dropped:
        logging.getLogger(f"stores.{kind}").warning(
            "%s (%d records)", EXPIRED_SEGMENT_WARNING, dropped
        )
    return int(reached[-1])


def _java_div(values: np.ndarray[Any, Any], interval: int) -> np.ndarray[Any, Any]:
    """``stores.segments.segment_id`` over an array (Java's truncating division)."""
    quotient = np.abs(values) // interval
    return np.where(values >= 0, quotient, -quotient)


def _store_keys(keys: pa.Array, suffixes: list[tuple[np.ndarray[Any, Any], int]]) -> pa.Array:
    """``key + suffix`` per row, each suffix a big-endian integer of the given width: the
    store's binary keys (``window_format``, ``session_format``), for ordering and identity."""
    parts = [keys.cast(_BYTES)]
    for values, width in suffixes:
        raw = values.astype(f">i{width}").tobytes()
        fixed = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(width), len(values), [None, pa.py_buffer(raw)]
        )
        parts.append(fixed.cast(_BYTES))
    return pc.binary_join_element_wise(*parts, pa.scalar(b"", _BYTES))


def _last_writes(rows: pa.Table, store_keys: pa.Array) -> tuple[pa.Table, pa.Array]:
    """The last write of each store key (rows in apply order), deletes dropped."""
    n = rows.num_rows
    if n == 0:
        return rows, store_keys
    seq = pa.array(np.arange(n, dtype=np.int64))
    order = pc.sort_indices(
        pa.table({"k": store_keys, "seq": seq}),
        sort_keys=[("k", "ascending"), ("seq", "descending")],
    )
    sorted_keys = pc.take(store_keys, order)
    first = np.ones(n, dtype=bool)
    if n > 1:
        first[1:] = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
    latest = pc.filter(order, pa.array(first))
    rows, store_keys = rows.take(latest), pc.take(store_keys, latest)
    written = pc.is_valid(rows.column("value"))
    return rows.filter(written), store_keys.filter(written)


def _segment_ids(stamps: np.ndarray[Any, Any], interval: int) -> pa.Array:
    # Segment times here are >= 0: floor and Java's truncating division agree.
    return pa.array(stamps // interval)


def _capped_ends(starts: pa.Array, size: int) -> pa.Array:
    values = starts.to_numpy()
    return pa.array(np.where(values > MAX_LONG - size, MAX_LONG, values + size), _TIME)


def _known(stamps: pa.Array) -> pa.Array:
    """Timestamps with Kafka's unknown (-1) as null."""
    return pc.if_else(pc.equal(stamps, UNKNOWN_TIMESTAMP), pa.scalar(None, _TIME), stamps)


__all__ = ["session_read", "window_read"]
