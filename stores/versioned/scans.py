"""Scans over every key of a versioned store: all versions in a time range
(``scan_versions``) and every key as of an instant (``scan_as_of``), each merging the
latest-value store with the live segments by key. The store checks its arguments and that it is
open; each answer per key is the one ``versions`` or ``get`` gives.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Iterable, Iterator

from stores.protocols import VersionedRecord
from stores.versioned.client import VersionedStoreClient
from stores.versioned.format import (
    LATEST_PREFIX,
    ROW_ENDS_BEFORE,
    TIMESTAMP_SIZE,
    SegmentValue,
    find_in_row,
    latest_record,
    latest_timestamp,
    segment_prefix,
    versioned_record,
)


def scan_versions(
    client: VersionedStoreClient, from_ts: int | None, to_ts: int | None, stream_time: int
) -> Iterator[tuple[bytes, bytes, int, int | None]]:
    """Yield ``(key, value, valid_from, valid_to)`` of every version valid at some time in
    ``[from_ts, to_ts]`` (None: open) at ``stream_time``: keys in byte order, each key's
    versions oldest first (``VersionedKeyValueStore.scan_versions``)."""
    sources = [_tagged(client.db.range(LATEST_PREFIX, None), 0)]
    if to_ts is None or to_ts >= stream_time - client.retention:
        lowest = -(2**63) if from_ts is None else client.segment_id(from_ts)
        sids = client.live_segments(lowest, stream_time)
        sources += [
            _tagged(client.db.range(segment_prefix(s), segment_prefix(s + 1)), rank + 1)
            for rank, s in enumerate(sids)
        ]
    merged = heapq.merge(*sources, key=operator.itemgetter(0))
    for key, group in itertools.groupby(merged, key=operator.itemgetter(0)):
        found: list[tuple[bytes, bytes, int, int | None]] = []
        for _, rank, raw in group:
            if rank == 0:
                if to_ts is None or latest_timestamp(raw) <= to_ts:
                    found.append((key, raw[TIMESTAMP_SIZE:], latest_timestamp(raw), None))
                continue
            for version in SegmentValue.decode(raw).find_all(from_ts, to_ts):
                if version.value is not None:
                    found.append((key, version.value, version.valid_from, version.valid_to))
        found.sort(key=operator.itemgetter(2))
        yield from found


def scan_as_of(
    client: VersionedStoreClient, as_of: int, stream_time: int
) -> Iterator[tuple[bytes, bytes, int, int | None]]:
    """Yield ``(key, value, valid_from, valid_to)`` of every key with a value at ``as_of``, an
    instant within the retention at ``stream_time``, keys in byte order
    (``VersionedKeyValueStore.scan_as_of``)."""
    sids = client.live_segments(client.segment_id(as_of), stream_time)
    # Merge the latest-value store with every segment that can answer, by key; within a
    # key, sources arrive latest first, then segments newest first (as listed).
    sources = [_tagged(client.db.range(LATEST_PREFIX, None), 0)]
    sources += [
        _tagged(client.db.range(segment_prefix(s), segment_prefix(s + 1)), rank + 1)
        for rank, s in enumerate(sids)
    ]
    merged = heapq.merge(*sources, key=operator.itemgetter(0))
    for key, group in itertools.groupby(merged, key=operator.itemgetter(0)):
        latest: bytes | None = None
        rows: list[bytes] = []
        for _, rank, raw in group:
            if rank == 0:
                latest = raw
            else:
                rows.append(raw)
        record = _resolve_as_of(client, latest, rows, as_of, stream_time)
        if record is not None:
            yield key, record.value, record.timestamp, record.valid_to


def _resolve_as_of(
    client: VersionedStoreClient,
    latest: bytes | None,
    rows: Iterable[bytes | None],
    as_of: int,
    stream_time: int,
) -> VersionedRecord | None:
    """Kafka's ``get(key, asOf)`` given the latest value and the rows, newest first."""
    if latest is not None and latest_timestamp(latest) <= as_of:
        return latest_record(latest)
    if as_of < stream_time - client.retention:
        # Past the retention only the latest version answers, for predictability.
        return None
    for raw in rows:
        if raw is None:
            continue
        found = find_in_row(raw, as_of)
        if type(found) is tuple:
            valid_from, valid_to, value = found
            return None if value is None else versioned_record(value, valid_from, valid_to)
        if found == ROW_ENDS_BEFORE:
            return None  # this row ends before as_of, so every older row does too
    return None


def _tagged(
    entries: Iterable[tuple[bytes, bytes]], rank: int
) -> Iterator[tuple[bytes, int, bytes]]:
    for physical, raw in entries:
        yield physical[TIMESTAMP_SIZE:], rank, raw


__all__ = ["scan_as_of", "scan_versions"]
