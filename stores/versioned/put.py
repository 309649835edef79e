"""Kafka's put, step for step (``RocksDBVersionedStore.doPut`` and its helpers), so that return
values and stored bytes match Kafka's in every edge case.

The algorithm runs over a :class:`stores.versioned.client.VersionedStoreClient` (the segments and
their liveness) and a :class:`Rows` (the rows one operation reads and writes); the store decides
the stream time, the grace period and the batch around it. Byte layouts:
:mod:`stores.versioned.format`.
"""

from __future__ import annotations

from stores.bytes.protocol import BytesStore
from stores.versioned.client import VersionedStoreClient
from stores.versioned.format import (
    LATEST_PREFIX,
    LATEST_SEGMENT_ID,
    TIMESTAMP_SIZE,
    SegmentValue,
    encode_latest,
    latest_timestamp,
    min_timestamp,
    next_timestamp,
    segment_id,
    segment_prefix,
)

#: Kafka's ``PUT_RETURN_CODE_NOT_PUT``: the put was older than the grace period.
NOT_PUT = -(2**63)
#: Kafka's ``PUT_RETURN_CODE_VALID_TO_UNDEFINED``: no newer version of the key exists.
VALID_TO_UNDEFINED = -1
# Kafka marks "no newer version found yet" with Long.MIN_VALUE, the same long as NOT_PUT, and
# turns it into -1 on return; so do we, including where Kafka's restore-only NOT_PUT paths
# come out as -1.
_SENTINEL = NOT_PUT


class Rows:
    """The rows one operation reads and writes, cached per segment.

    The bytes layer already sees its own uncommitted writes; the cache spares repeated lookups
    (and lets ``put_many`` fetch every latest value in one call). Each segment has its own dict
    so that expiring a segment forgets its rows at once.
    """

    __slots__ = ("cache", "db")

    def __init__(self, db: BytesStore) -> None:
        self.db = db
        self.cache: dict[int, dict[bytes, bytes | None]] = {}

    def get(self, sid: int, key: bytes) -> bytes | None:
        """The row of ``key`` in segment ``sid`` (the latest value for ``LATEST_SEGMENT_ID``)."""
        rows = self.cache.get(sid)
        if rows is None:
            rows = self.cache[sid] = {}
        elif key in rows:
            return rows[key]
        raw = rows[key] = self.db.get(segment_prefix(sid) + key)
        return raw

    def prefetch(self, sid: int, keys: list[bytes]) -> None:
        """Read the rows of ``keys`` in segment ``sid`` in one call."""
        prefix = segment_prefix(sid)
        values = self.db.multi_get([prefix + k for k in keys])
        self.cache.setdefault(sid, {}).update(zip(keys, values, strict=True))

    def put(self, sid: int, key: bytes, raw: bytes) -> None:
        """Stage ``raw`` as the row of ``key`` in segment ``sid``."""
        self.db.put(segment_prefix(sid) + key, raw)
        self.cache.setdefault(sid, {})[key] = raw

    def delete(self, sid: int, key: bytes) -> None:
        """Stage the deletion of the row of ``key`` in segment ``sid``."""
        self.db.delete(segment_prefix(sid) + key)
        self.cache.setdefault(sid, {})[key] = None

    def forget_below(self, sid: int) -> None:
        """Forget the cached rows of the segments below ``sid`` (they expired)."""
        for expired in [s for s in self.cache if 0 <= s < sid]:
            del self.cache[expired]


def do_put(
    client: VersionedStoreClient,
    rows: Rows,
    previous_time: int,
    stream_time: int,
    key: bytes,
    value: bytes | None,
    timestamp: int,
) -> int:
    """Put one version of ``key`` as Kafka's ``doPut`` does, the stream time moving from
    ``previous_time`` to ``stream_time`` (segments that expire on the way are dropped first).

    Returns:
        The timestamp of the next newer version of ``key``, or ``VALID_TO_UNDEFINED``.
    """
    _expire(client, rows, previous_time, stream_time)
    found = _SENTINEL
    latest = rows.get(LATEST_SEGMENT_ID, key)
    if latest is not None:
        latest_ts = latest_timestamp(latest)
        if timestamp >= latest_ts:
            if timestamp > latest_ts:
                # The latest version now ends at timestamp: file it in that segment.
                sid = client.segment_id(timestamp)
                if client.is_live(sid, stream_time):
                    _append_to_row(
                        client, rows, sid, key, latest[TIMESTAMP_SIZE:], latest_ts, timestamp
                    )
            if value is not None:
                rows.put(LATEST_SEGMENT_ID, key, encode_latest(value, timestamp))
            else:
                rows.delete(LATEST_SEGMENT_ID, key)
            return VALID_TO_UNDEFINED
        found = latest_ts

    for sid in client.live_segments(client.segment_id(timestamp), stream_time):
        raw = rows.get(sid, key)
        if raw is None:
            continue
        if next_timestamp(raw) <= timestamp:
            break  # no older row can be affected; finish with what was found
        row_min = min_timestamp(raw)
        if row_min <= timestamp:
            return _put_into_row(client, rows, stream_time, sid, raw, key, value, timestamp)
        if row_min < stream_time - client.retention:
            return VALID_TO_UNDEFINED  # Kafka's NOT_PUT, reported as -1 (see _SENTINEL)
        found = row_min

    found = _finish_put(client, rows, stream_time, key, value, timestamp, found)
    return VALID_TO_UNDEFINED if found == _SENTINEL else found


def _put_into_row(
    client: VersionedStoreClient,
    rows: Rows,
    stream_time: int,
    sid: int,
    raw: bytes,
    key: bytes,
    value: bytes | None,
    timestamp: int,
) -> int:
    """Put into the row whose span holds ``timestamp``; return the new version's validTo."""
    row = SegmentValue.decode(raw)
    found = row.find(timestamp)
    own_sid = client.segment_id(timestamp)
    if found.valid_from == timestamp:
        row.update_record(timestamp, value, found.index)
    elif own_sid != sid:
        # The found version now ends at timestamp, which files it in an older segment.
        if client.is_live(own_sid, stream_time):
            _append_to_row(client, rows, own_sid, key, found.value, found.valid_from, timestamp)
        row.update_record(timestamp, value, found.index)
    else:
        row.insert(timestamp, value, found.index)
    _write_row(client, rows, sid, key, row)
    return found.valid_to


def _finish_put(
    client: VersionedStoreClient,
    rows: Rows,
    stream_time: int,
    key: bytes,
    value: bytes | None,
    timestamp: int,
    found: int,
) -> int:
    """Put a version no row spans: as latest, or next to the version found at ``found``."""
    if found == _SENTINEL:
        if value is not None:
            rows.put(LATEST_SEGMENT_ID, key, encode_latest(value, timestamp))
            return found
        # A tombstone never goes to the latest-value store (it would never expire).
        sid = client.segment_id(timestamp)
        if not client.is_live(sid, stream_time):
            return _SENTINEL
        raw = rows.get(sid, key)
        if raw is None:
            row = SegmentValue.with_record(None, timestamp, timestamp)  # degenerate
        else:
            row_next = next_timestamp(raw)
            if row_next == timestamp:
                return found  # the row's end already marks this tombstone
            row = SegmentValue.decode(raw)
            row.insert_as_latest(row_next, timestamp, None)
        _write_row(client, rows, sid, key, row)
        return found

    sid = client.segment_id(found)
    if not client.is_live(sid, stream_time):
        return _SENTINEL
    raw = rows.get(sid, key)
    if raw is None:
        row = SegmentValue.with_record(value, timestamp, found)
    else:
        row = SegmentValue.decode(raw)
        if row.next_ts <= timestamp:
            # Possible after a degenerate row left a gap before the next version.
            row.insert_as_latest(timestamp, found, value)
        else:
            row.insert_as_earliest(timestamp, value)
    _write_row(client, rows, sid, key, row)
    return found


def _append_to_row(
    client: VersionedStoreClient,
    rows: Rows,
    sid: int,
    key: bytes,
    value: bytes | None,
    valid_from: int,
    valid_to: int,
) -> None:
    raw = rows.get(sid, key)
    if raw is None:
        row = SegmentValue.with_record(value, valid_from, valid_to)
    else:
        row = SegmentValue.decode(raw)
        row.insert_as_latest(valid_from, valid_to, value)
    _write_row(client, rows, sid, key, row)


def _write_row(
    client: VersionedStoreClient, rows: Rows, sid: int, key: bytes, row: SegmentValue
) -> None:
    rows.put(sid, key, row.encode())
    client.add_segment(sid)


def _expire(
    client: VersionedStoreClient, rows: Rows, previous_time: int, stream_time: int
) -> None:
    """Drop the segments that expire as stream time moves from previous to current.

    Segments below the previous stream time's limit were dropped in the batch that
    recorded that time, so this depends only on stored state (and survives a rollback).
    """
    if previous_time == stream_time:
        return
    previous_limit = segment_id(previous_time - client.retention, client.interval)
    limit = client.min_live(stream_time)
    if limit > max(previous_limit, 0):
        client.db.delete_range(segment_prefix(0), segment_prefix(limit))
        rows.forget_below(limit)


def prefetch_latest(
    client: VersionedStoreClient, rows: Rows, batch: list[tuple[bytes, bytes | None, int]]
) -> None:
    """Read every latest value of the batch in one call (most puts need nothing else)."""
    keys = list(dict.fromkeys(k for k, _, _ in batch))
    if not client.segments and next(iter(client.db.range(LATEST_PREFIX, None)), None) is None:
        # An empty store (the first load): no key has an entry, nothing to read.
        rows.cache[LATEST_SEGMENT_ID] = dict.fromkeys(keys)
    else:
        rows.prefetch(LATEST_SEGMENT_ID, keys)


__all__ = ["NOT_PUT", "VALID_TO_UNDEFINED", "Rows", "do_put", "prefetch_latest"]
