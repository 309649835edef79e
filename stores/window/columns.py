"""A window store's reads and RocksDB rows computed from its changelog with Arrow, no RocksDB
built (``window_read``, ``window_rows``, ``window_base``). The rules, shared with the session
store, are in :mod:`stores.segments.columns`; here is what only windows have: window ends,
record timestamps, and the sequence numbers of a store retaining duplicates.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import ByteColumn, segment_ids, value_columns
from stores.columns.encode import in_order, taken, whole
from stores.columns.key_sort import distinct, key_runs, run_lasts
from stores.records import UNKNOWN_TIMESTAMP
from stores.segments.columns import (
    TIME,
    FamilyRows,
    SegmentedBase,
    SegmentedState,
    concat,
    snapshot_metadata,
    store_rows,
    stream_time,
)
from stores.segments.store import PREFIX_SIZE
from stores.window.format import MAX_LONG, MAX_SEQNUM, SEQNUM_KEY, encode_seqnum


def _window_state(
    commits: list[pa.Table],
    params: dict[str, Any],
    base: SegmentedBase | None,
    key_order: bool = True,
) -> SegmentedState | None:
    timestamped, headers = bool(params.get("timestamped")), bool(params.get("headers"))
    extra = (["timestamp"] if timestamped else []) + (["headers"] if headers else [])
    names = ["key", "value", "window_start", *extra]
    base = base or SegmentedBase.empty(names)
    rows, sizes = concat(base, commits, names)
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
    reached = stream_time(starts, seen, sizes, retention, interval, "window", base.stream_time)
    # One sort: segment, then store key bytes (Kafka's scan order). It is stable and a store
    # key's writes share a window start, so they stay in apply order: the last one wins.
    suffix = [(starts, 8), (seqnums, 4)]
    at = slice(None) if present is None else present
    keys = rows.column("key") if present is None else rows.column("key").take(pa.array(present))
    keys = whole(keys)  # joined once, for distinct and the sort alike
    store_suffix = [(field[at], width) for field, width in suffix]
    if not key_order and distinct(keys, store_suffix):
        # Each store key written once, and no order asked for (a table read): every row that
        # reaches the store is its key's last write.
        winners = np.arange(rows.num_rows) if present is None else present
    else:
        order, first = key_runs(
            keys, before=[(segment_ids(starts[at], interval), False)], suffix=store_suffix
        )
        last = run_lasts(first)
        winners = order[last] if present is None else present[order[last]]
    return SegmentedState(rows, winners, written, starts, suffix, reached, last_seqnum)


def window_read(
    commits: list[pa.Table],
    params: dict[str, Any],
    time_from: int | None,
    time_to: int | None,
    base: SegmentedBase | None = None,
    key_order: bool = True,
) -> pa.Table | None:
    """What a window store built from ``commits`` (after ``base``, a snapshot's state) scans
    for windows starting in ``[time_from, time_to]`` (None: open): the kind's raw columns (key,
    value, window_start, window_end[, timestamp][, headers]) in Kafka's order (in write order
    without ``key_order``); None to decline (:mod:`stores.segments.columns`)."""
    state = _window_state(commits, params, base, key_order)
    if state is None:
        return None
    rows, winners, starts = state.rows, state.winners, state.times
    low = max(0 if time_from is None else time_from, state.stream_time - params["retention_ms"] + 1)
    high = MAX_LONG if time_to is None else time_to
    final = winners[state.written[winners] & (starts[winners] >= low) & (starts[winners] <= high)]
    picked = taken(rows, in_order(final, key_order))
    window_starts = whole(picked.column("window_start"))
    # As Kafka's window end, capped at Long.MAX_VALUE.
    ends = _capped_ends(window_starts, params["window_size_ms"])
    columns = [picked.column("key"), picked.column("value"), window_starts, ends]
    names = ["key", "value", "window_start", "window_end"]
    if params.get("timestamped"):
        columns.append(_known(whole(picked.column("timestamp"))))
        names.append("timestamp")
    if params.get("headers"):
        columns.append(picked.column("headers"))
        names.append("headers")
    return pa.table(columns, names=names)


def window_rows(
    commits: list[pa.Table], params: dict[str, Any], base: SegmentedBase | None,
    families: tuple[str, ...],
) -> FamilyRows | None:  # fmt: skip
    """The RocksDB rows of a window store built from ``commits`` (after ``base``), per column
    family (``stores.segments.store``'s layout; ``families[0]`` the data family): what a
    partition cache ingests; None to decline (:mod:`stores.segments.columns`)."""
    state = _window_state(commits, params, base)
    if state is None:
        return None
    seqnum = state.last_seqnum if params.get("retain_duplicates") else None
    return store_rows(
        state, params, families, timestamped=bool(params.get("timestamped")),
        meta=[(SEQNUM_KEY, encode_seqnum(seqnum))] if seqnum else [],
    )  # fmt: skip


def window_base(runs: FamilyRows, params: dict[str, Any],
                families: tuple[str, ...]) -> SegmentedBase | None:  # fmt: skip
    """A window store's snapshot rows as a ``SegmentedBase`` (``stores.window.format``'s
    layouts); None if a legacy column family holds rows (RocksDB converts them)."""
    meta = snapshot_metadata(runs, families)
    if meta is None:
        return None
    stream, found = meta
    seqnum_raw = found.get(SEQNUM_KEY)
    last_seqnum = 0 if seqnum_raw is None else int.from_bytes(seqnum_raw, "big", signed=True)
    timestamped, headers = bool(params.get("timestamped")), bool(params.get("headers"))
    names = ["key", "value", "window_start"] + (["timestamp"] if timestamped else [])
    names += ["headers"] if headers else []
    if families[0] not in runs:
        return replace(SegmentedBase.empty(names), stream_time=stream, last_seqnum=last_seqnum)
    physical, raws = (ByteColumn(a) for a in runs[families[0]])
    ends = physical.starts + physical.lengths
    columns: dict[str, pa.Array] = {
        "key": physical.slices(physical.starts + PREFIX_SIZE, physical.lengths - PREFIX_SIZE - 12),
        "window_start": pa.array(physical.longs_at(ends - 12), TIME),
    }
    seqnums = physical.ints_at(ends - 4)
    columns.update(value_columns(raws, timestamped, headers))
    rows = pa.table({n: columns[n] for n in names})
    return SegmentedBase(rows, seqnums, stream, last_seqnum)


def _apply_order(times: np.ndarray[Any, Any], sizes: list[int]) -> np.ndarray[Any, Any]:
    """Row indices in the order the store applies them: the snapshot's (the first part) as
    they are, then each commit's by segment ``times``, stable (``stores.engine.time_order``)."""
    order, offset = [np.arange(sizes[0], dtype=np.int64)], sizes[0]
    for size in sizes[1:]:
        part = times[offset : offset + size]
        order.append(np.argsort(part, kind="stable").astype(np.int64) + offset)
        offset += size
    return np.concatenate(order)


def _capped_ends(starts: pa.Array, size: int) -> pa.Array:
    values = starts.to_numpy()
    return pa.array(np.where(values > MAX_LONG - size, MAX_LONG, values + size), TIME)


def _known(stamps: pa.Array) -> pa.Array:
    """Timestamps with Kafka's unknown (-1) as null."""
    return pc.if_else(pc.equal(stamps, UNKNOWN_TIMESTAMP), pa.scalar(None, TIME), stamps)


__all__ = ["window_base", "window_read", "window_rows"]
