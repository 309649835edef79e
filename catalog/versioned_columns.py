"""A versioned store's reads computed from its changelog with Arrow alone, no RocksDB built.

Kafka's ``RocksDBVersionedStore`` (``stores.versioned``) applies records one at a time; what a
read sees of the result is the *ideal history* of each key, with Kafka's grace and expiry rules:

| step | rule (Kafka's) | computed as |
|---|---|---|
| apply order | commits in order; a commit's rows by timestamp, deletes before puts at one time (``kinds._versioned_apply``) | a stable sort per commit |
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
tombstone, is declined (None), and so is one that starts from a snapshot (the snapshot's rows
are Kafka's segments, not records): the caller then builds RocksDB and asks the store.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.versioned_format import NO_TIMESTAMP

_TIME = pa.int64()
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
    as_of: int | None = None,
    all_versions: bool = False,
    time_from: int | None = None,
    time_to: int | None = None,
) -> pa.Table | None:
    """What a versioned store built from ``commits`` (changelog tables, in commit order) reads.

    The latest version of every key, or every version (``all_versions``, optionally bounded by
    ``time_from``/``time_to``), or the versions valid at ``as_of``: raw rows (``RAW``) sorted
    by key bytes, then ``valid_from``, exactly as the store's scans give them; None when the
    records need the store itself (see the module doc).
    """
    rows = _in_apply_order(commits)
    n = rows.num_rows
    if n == 0:
        return RAW.empty_table()
    stamps = rows.column("timestamp").to_numpy()
    reached = np.maximum.accumulate(stamps)
    before = np.empty(n, dtype=np.int64)
    before[0] = NO_TIMESTAMP
    np.maximum(reached[:-1], NO_TIMESTAMP, out=before[1:])
    stream_time = int(max(reached[-1], NO_TIMESTAMP))
    accepted = stamps >= before - retention
    if not accepted.all():
        rows = rows.filter(pa.array(accepted))
    history = _history(rows)
    if history is None:
        return None
    keys, values, starts, ends, has_end = history
    is_put = pc.is_valid(values).to_numpy(zero_copy_only=False)
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
            live = _segment_ids(ends, interval) >= _segment_ids(np.array([horizon]), interval)[0]
            keep = is_put & (~has_end | live)
            if time_to is not None:
                keep &= starts <= time_to
            if time_from is not None:
                keep &= ~has_end | (ends > time_from)
    else:
        keep = latest
    mask = pa.array(keep)
    valid_to = pa.array(ends, _TIME, mask=~has_end)
    return pa.table(
        [
            keys.filter(mask),
            values.filter(mask),
            pa.array(starts, _TIME).filter(mask),
            valid_to.filter(mask),
        ],
        schema=RAW,
    )


def _in_apply_order(commits: list[pa.Table]) -> pa.Table:
    """All records in the order the store applies them (see ``kinds._versioned_apply``)."""
    ordered = []
    for table in commits:
        table = table.select(_WIDE.names).cast(_WIDE)
        puts = pc.is_valid(table.column("value"))
        order = pc.sort_indices(  # stable: rows at one time and of one kind keep their order
            table.append_column("__put", puts),
            sort_keys=[("timestamp", "ascending"), ("__put", "ascending")],
        )
        ordered.append(table.take(order))
    return pa.concat_tables(ordered).combine_chunks() if ordered else _WIDE.empty_table()


_Ints = np.ndarray[Any, Any]


def _history(rows: pa.Table) -> tuple[pa.Array, pa.Array, _Ints, _Ints, _Ints] | None:
    """Per key, the last record applied at each time, sorted by (key, time): keys, values,
    starts, each one's end (the key's next time) and whether it has one; None if a time of a
    key holds a tombstone and another record (Kafka's departure, see the module doc)."""
    n = rows.num_rows
    numbered = rows.append_column("__seq", pa.array(np.arange(n, dtype=np.int64)))
    order = pc.sort_indices(
        numbered,
        sort_keys=[("key", "ascending"), ("timestamp", "ascending"), ("__seq", "ascending")],
    )
    keys = pc.take(rows.column("key"), order).combine_chunks()
    stamps = pc.take(rows.column("timestamp"), order).to_numpy()
    # next_same[i]: row i + 1 is of the same key (the last row has no next).
    next_same = np.zeros(n, dtype=bool)
    if n > 1:
        next_same[:-1] = pc.equal(keys.slice(0, n - 1), keys.slice(1)).to_numpy(
            zero_copy_only=False
        )
    tie = next_same.copy()
    tie[:-1] &= stamps[:-1] == stamps[1:]
    values = pc.take(rows.column("value"), order).combine_chunks()
    if tie.any():
        # A group of records of one key and time: it must hold no tombstone.
        tombstone = pc.is_null(values).to_numpy(zero_copy_only=False)
        in_group = tie.copy()
        in_group[1:] |= tie[:-1]
        if (tombstone & in_group).any():
            return None
        last = ~tie  # the last record applied at a time wins
        keep = pa.array(last)
        keys, values = keys.filter(keep), values.filter(keep)
        stamps, next_same = stamps[last], next_same[last]
    ends = np.zeros(len(stamps), dtype=np.int64)
    ends[:-1] = stamps[1:]
    return keys, values, stamps, np.where(next_same, ends, 0), next_same


def _segment_ids(stamps: _Ints, interval: int) -> _Ints:
    """``versioned_format.segment_id`` over an array (Java's truncating division)."""
    quotient = np.abs(stamps) // interval
    return np.where(stamps >= 0, quotient, -quotient)


__all__ = ["RAW", "versioned_read"]
