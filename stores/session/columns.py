"""A session store's reads and RocksDB rows computed from its changelog with Arrow, no RocksDB
built (``session_read``, ``session_rows``, ``session_base``). The rules, shared with the window
store, are in :mod:`stores.segments.columns`; a session's store key is its key, then its end
and start, filed in the segment of its end.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import ByteColumn, value_columns
from stores.columns.encode import in_order, taken, whole
from stores.columns.key_sort import distinct, key_runs, run_lasts
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


def _session_state(
    commits: list[pa.Table],
    params: dict[str, Any],
    base: SegmentedBase | None,
    key_order: bool = True,
) -> SegmentedState:
    extra = ["headers"] if params.get("headers") else []
    names = ["key", "value", "session_start", "session_end", *extra]
    base = base or SegmentedBase.empty(names)
    rows, sizes = concat(base, commits, names)
    ends = rows.column("session_end").to_numpy()
    starts = rows.column("session_start").to_numpy()
    reached = stream_time(
        ends, np.ones(len(ends), dtype=bool), sizes, params["retention_ms"],
        params["segment_interval_ms"], "session", base.stream_time,
    )  # fmt: skip
    # One sort: store key bytes (Kafka's order across segments). It is stable and a store
    # key's writes share a session end, so they stay in apply order: the last one wins.
    suffix = [(ends, 8), (starts, 8)]
    keys = whole(rows.column("key"))  # joined once, for distinct and the sort alike
    if not key_order and distinct(keys, suffix):
        # Each store key written once, and no order asked for (a table read): every row is
        # its key's last write.
        winners = np.arange(rows.num_rows)
    else:
        order, first = key_runs(keys, suffix=suffix)
        winners = order[run_lasts(first)]
    written = pc.is_valid(rows.column("value")).to_numpy(zero_copy_only=False)
    return SegmentedState(rows, winners, written, ends, suffix, reached, 0)


def session_read(
    commits: list[pa.Table],
    params: dict[str, Any],
    time_from: int | None,
    time_to: int | None,
    base: SegmentedBase | None = None,
    key_order: bool = True,
) -> pa.Table | None:
    """What a session store built from ``commits`` (after ``base``) scans for sessions
    starting in ``[time_from, time_to]`` (None: open): key, value, session_start, session_end
    [, headers] in Kafka's order (in write order without ``key_order``)."""
    state = _session_state(commits, params, base, key_order)
    winners, ends, starts = state.winners, state.times, state.suffix[1][0]
    keep = state.written[winners] & (
        ends[winners] >= max(0, state.stream_time - params["retention_ms"] + 1)
    )
    if time_from is not None:
        keep &= starts[winners] >= time_from
    if time_to is not None:
        keep &= starts[winners] <= time_to
    names = ["key", "value", "session_start", "session_end"]
    return taken(state.rows, in_order(winners[keep], key_order)).select(
        names + (["headers"] if params.get("headers") else [])
    )


def session_rows(
    commits: list[pa.Table], params: dict[str, Any], base: SegmentedBase | None,
    families: tuple[str, ...],
) -> FamilyRows | None:  # fmt: skip
    """The RocksDB rows of a session store built from ``commits`` (after ``base``), as
    ``stores.window.columns.window_rows`` gives a window store's."""
    state = _session_state(commits, params, base)
    return store_rows(state, params, families, timestamped=False, meta=[])


def session_base(runs: FamilyRows, params: dict[str, Any],
                 families: tuple[str, ...]) -> SegmentedBase | None:  # fmt: skip
    """A session store's snapshot rows as a ``SegmentedBase`` (``stores.session.format``'s
    layouts); None if a legacy column family holds rows (RocksDB converts them)."""
    meta = snapshot_metadata(runs, families)
    if meta is None:
        return None
    headers = bool(params.get("headers"))
    names = ["key", "value", "session_start", "session_end"] + (["headers"] if headers else [])
    if families[0] not in runs:
        return replace(SegmentedBase.empty(names), stream_time=meta[0])
    physical, raws = (ByteColumn(a) for a in runs[families[0]])
    ends = physical.starts + physical.lengths
    columns: dict[str, pa.Array] = {
        "key": physical.slices(physical.starts + PREFIX_SIZE, physical.lengths - PREFIX_SIZE - 16),
        "session_end": pa.array(physical.longs_at(ends - 16), TIME),
        "session_start": pa.array(physical.longs_at(ends - 8), TIME),
    }
    columns.update(value_columns(raws, False, headers))
    rows = pa.table({n: columns[n] for n in names})
    return SegmentedBase(rows, np.zeros(rows.num_rows, dtype=np.int64), meta[0])


__all__ = ["session_base", "session_read", "session_rows"]
