"""Window and session stores' reads computed from their changelog with Arrow, no RocksDB built:
what the two kinds share (:mod:`stores.window.columns` and :mod:`stores.session.columns` hold
each kind's own part).

Both kinds sit on Kafka's segmented bytes store (:mod:`stores.segments.store`); what a scan of
it sees after the commits' puts is a function of the records alone:

Each step, Kafka's rule (``AbstractRocksDBSegmentedBytesStore``), then how it is computed:

- *Apply order*: commits in order; a commit's rows by window start (windows) or session end
  (sessions). Not needed as such: a store key's writes share that time, so their row order is
  their apply order (a stable sort per commit only numbers duplicates).
- *Stream time*: the largest segment time put (window start, session end); a window store
  retaining duplicates skips deletes before they reach it. Per commit, a maximum: a row meets
  the larger of its time and the stream time before its commit.
- *State*: per store key (key, window start and sequence number; key, session end and start)
  the last write, a null value deleting it; with duplicates every put its own sequence number.
  One stable sort by store key (``key_sort.key_runs``: key bytes, then the suffix as numbers),
  the last row of each run.
- *Expiry*: a row whose segment is dead when it arrives is dropped, and dead segments are
  deleted; a scan starts at stream time minus retention plus 1 (Kafka's ``actualFrom``), which
  every dropped or deleted row lies below. A filter at the end.
- *Order*: segment by segment, then by store key bytes (windows); by store key bytes
  (sessions). The same sort, on store keys built in Arrow.

The same state gives a fresh partition cache its RocksDB rows (``window_rows``,
``session_rows``; ingested as SST files, not put row by row): each store key's last write in a
segment still live at the final stream time, under its segment prefix, plus the metadata
family's stream time and last sequence number, byte for byte what the store writes
(:func:`store_rows`).

A snapshot (``catalog.operations.compaction``) holds the store's own rows: ``window_base`` and
``session_base`` decode them all at once (``stores.columns.decode``) into a
:class:`SegmentedBase`, the state the tail applies to, with the snapshot's stream time and last
sequence number. A snapshot with rows in a legacy column family (an older value layout that
RocksDB converts as it reads), and a window store whose sequence numbers would wrap, are
declined (None): RocksDB serves them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from stores.columns.decode import segment_ids, stored_values
from stores.columns.encode import big_endian_column, concat_rows
from stores.segments.dropped import dropped as tell_dropped
from stores.segments.store import (
    NO_TIMESTAMP,
    SEGMENTS_META_CF,
    STREAM_TIME_KEY,
    segment_id,
)

#: Arrow types of the columns: times are int64, keys, values and headers large binaries.
TIME = pa.int64()
BYTES = pa.large_binary()
_TIMES = ("window_start", "session_start", "session_end", "timestamp")

#: RocksDB rows per column family: ``{family: (keys, values)}``.
FamilyRows = dict[str, tuple[pa.Array, pa.Array]]


def schema_of(names: list[str]) -> pa.Schema:
    """The schema of the rows of a state: times as int64, the rest as large binaries."""
    return pa.schema([pa.field(n, TIME if n in _TIMES else BYTES) for n in names])


@dataclass(frozen=True)
class SegmentedBase:
    """A window or session store's state from a snapshot: its rows (the read's columns but
    ``window_end``), their sequence numbers (windows; zeros for sessions), its stream time and
    its last sequence number."""

    rows: pa.Table
    seqnums: np.ndarray[Any, Any]
    stream_time: int
    last_seqnum: int = 0

    @staticmethod
    def empty(names: list[str]) -> SegmentedBase:
        """No rows (of columns ``names``), no stream time yet."""
        return SegmentedBase(
            schema_of(names).empty_table(), np.zeros(0, dtype=np.int64), NO_TIMESTAMP
        )


@dataclass(frozen=True)
class SegmentedState:
    """A window or session store's state computed from columns: ``rows`` (the snapshot's and
    the commits' rows as given), the last write of each store key (``winners``, row indices in
    Kafka's scan order: segment, then store key bytes for windows; store key bytes for
    sessions; ascending where a read asked for no key order), which rows hold a value, each
    row's segment time and store key suffix, the stream time and the last sequence number
    given out."""

    rows: pa.Table
    winners: np.ndarray[Any, Any]
    written: np.ndarray[Any, Any]
    times: np.ndarray[Any, Any]
    #: The store key's fields after the key: integers and their widths in bytes.
    suffix: list[tuple[np.ndarray[Any, Any], int]]
    stream_time: int
    last_seqnum: int


def concat(
    base: SegmentedBase, commits: list[pa.Table], names: list[str]
) -> tuple[pa.Table, list[int]]:
    """The snapshot's rows and every commit's, as given (keys, values and headers as large
    binaries; not copied: a table of the parts' record batches), and the number of rows of
    each part."""
    schema = schema_of(names)
    parts = [base.rows.select(names).cast(schema), *(t.select(names).cast(schema) for t in commits)]
    rows = pa.concat_tables([p for p in parts if p.num_rows] or parts[:1])
    return rows, [p.num_rows for p in parts]


def stream_time(
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
    for the records dropped on arrival, as the store's bulk put does (on ``stores.<kind>``).

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
    tell_dropped(logging.getLogger(f"stores.{kind}"), dropped)
    return reached


def store_rows(
    state: SegmentedState,
    params: dict[str, Any],
    families: tuple[str, ...],
    *,
    timestamped: bool,
    meta: list[tuple[bytes, bytes]],
) -> FamilyRows:
    """The segmented store's rows of ``state``: each store key's last write, if a value, in a
    segment still live at the stream time (the store drops a segment whole once it is older),
    as ``[segment id (8)][key][suffix]`` -> the stored value (``stored_values``); and the
    metadata family's stream time and the kind's ``meta`` rows, once any put reached the store.
    Keys come out ascending: segment, then store key bytes."""
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
    entries = list(meta)
    if state.stream_time != NO_TIMESTAMP:
        entries.append((STREAM_TIME_KEY, state.stream_time.to_bytes(8, "big", signed=True)))
    entries.sort()
    return {
        families[0]: (keys, values),
        SEGMENTS_META_CF: (
            pa.array([k for k, _ in entries], pa.binary()),
            pa.array([v for _, v in entries], pa.binary()),
        ),
    }


def snapshot_metadata(
    runs: FamilyRows, families: tuple[str, ...]
) -> tuple[int, dict[bytes, bytes]] | None:
    """(stream time, every metadata row) of a snapshot whose rows are all in the data family
    (``families[0]``) or the metadata one; None otherwise (rows in a legacy layout)."""
    if any(len(runs[f][0]) for f in runs if f not in (families[0], SEGMENTS_META_CF)):
        return None
    found: dict[bytes, bytes] = {}
    if SEGMENTS_META_CF in runs:
        keys, values = (a.to_pylist() for a in runs[SEGMENTS_META_CF])
        found = dict(zip(keys, values, strict=True))
    raw_time = found.get(STREAM_TIME_KEY)
    time = NO_TIMESTAMP if raw_time is None else int.from_bytes(raw_time, "big", signed=True)
    return time, found


__all__ = [
    "BYTES",
    "TIME",
    "FamilyRows",
    "SegmentedBase",
    "SegmentedState",
    "concat",
    "schema_of",
    "snapshot_metadata",
    "store_rows",
    "stream_time",
]
