"""Logical segments: the time-partitioned bytes layer under window and session stores.

Kafka's segmented stores (``AbstractRocksDBSegmentedBytesStore`` over ``KeyValueSegments``)
keep one RocksDB per time segment so that expiring old data drops a whole segment at once. We
keep Kafka's *logical* segments instead (``LogicalKeyValueSegments``, as the versioned store
does): every row of a segment carries the segment id as an 8-byte big-endian prefix, all
segments share one column family, and a segment is dropped with one ``delete_range``.

=====================  =====================================  ==================================
column family          RocksDB key                            RocksDB value
=====================  =====================================  ==================================
``data_cf``            ``segment id (8, BE)`` + raw key       the caller's value bytes
each legacy CF         ``segment id (8, BE)`` + raw key       an older value layout (converted)
``segmentsMetadata``   ``b"observedStreamTime"``              observed stream time (8, BE)
=====================  =====================================  ==================================

``segment id = timestamp // segment_interval_ms``; the timestamp is the caller's *segment
timestamp* (the window start for window stores, the session end for session stores).
Timestamps are >= 0, so ids are too and the prefixes sort in time order.

Semantics (Kafka's ``AbstractRocksDBSegmentedBytesStore`` and ``AbstractSegments``):

- ``put`` first advances the observed stream time to ``max(stream time, timestamp)``. The
  segment of ``timestamp`` is *live* if its id >= ``segment_id(stream time - retention)``;
  a put into a dead segment is dropped (returns False). Then every segment below the first
  live one is deleted, whole: on the first put of this layer, then whenever the first live
  segment moves (Kafka cleans up on every put; the result is the same, without a range
  tombstone per put). A None value deletes the row (in every column family).
- ``get`` returns None for a timestamp < ``stream time - retention + 1`` (Kafka's check).
- ``range``/``all`` return raw rows; filtering on exact key and time bounds is the caller's
  (Kafka's ``HasNextCondition``). :meth:`SegmentedBytesStore.actual_from` gives Kafka's
  ``actualFrom``, the earliest timestamp reads may return.
- Observed stream time is persisted in ``meta_cf`` in the same write batch as the data, so it
  survives reopening (Kafka rebuilds it by replaying its changelog).

Lazy format migration (Kafka's ``DualColumnFamilyAccessor``): a store may name *legacy* column
families, each with a converter to the current value layout. Reads look in ``data_cf`` first,
then in each legacy family, converting what they find; iteration merges all families by key
(``data_cf`` wins on equal keys). Writes go to ``data_cf`` and delete the key from every legacy
family that held data when the store was opened. Reads never write (a reader may be read-only).

Nothing here commits: callers stage writes and end each public operation in
``db.maybe_commit()``.

Public API (stable; :mod:`stores.session` builds on it)::

    SEGMENTS_META_CF, STREAM_TIME_KEY, NO_TIMESTAMP, MAX_TIMESTAMP
    segment_id(timestamp, segment_interval_ms) -> int
    segment_prefix(segment_id) -> bytes
    SegmentedBytesStore(db, *, retention_ms, segment_interval_ms, data_cf="default",
                        meta_cf=SEGMENTS_META_CF, legacy_cfs=())
        .db / .retention_ms / .segment_interval_ms / .data_cf / .meta_cf / .legacy_cfs
        .column_families -> tuple[str, ...]
        .observed_stream_time -> int                      # -1 before the first put
        .segment_id(timestamp) -> int
        .min_live_segment_id() -> int
        .actual_from(time_from) -> int                    # max(time_from, stream - retention + 1)
        .put(key, value | None, timestamp) -> bool
        .remove(key, timestamp) -> None
        .get(key, timestamp) -> bytes | None
        .range(lower, upper, time_from, time_to, *, reverse=False) -> Iterator[(key, value)]
        .all(*, reverse=False) -> Iterator[(key, value)]
        .segment_ids() -> list[int]                       # ids holding rows, ascending
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterator, Sequence

from stores.errors import CorruptDataError, InvalidOptionError
from stores.rocksdb_bytes import DEFAULT_CF, RocksDBBytesStore

#: Column family of the observed stream time (shared by window and session stores).
SEGMENTS_META_CF = "segmentsMetadata"
STREAM_TIME_KEY = b"observedStreamTime"
#: Kafka's ``ConsumerRecord.NO_TIMESTAMP``: the stream time of a store that saw no write.
NO_TIMESTAMP = -1
MAX_TIMESTAMP = 2**63 - 1
PREFIX_SIZE = 8

_LONG = struct.Struct(">q")

#: A converter from a legacy value layout to the current one.
Converter = Callable[[bytes], bytes]


def segment_id(timestamp: int, segment_interval_ms: int) -> int:
    """The id of the segment holding ``timestamp`` (Java's truncating division)."""
    quotient = abs(timestamp) // segment_interval_ms
    return quotient if timestamp >= 0 else -quotient


def segment_prefix(seg_id: int) -> bytes:
    """The 8-byte big-endian key prefix of a segment."""
    return _LONG.pack(seg_id)


def _prefix_id(physical: bytes) -> int:
    if len(physical) < PREFIX_SIZE:
        raise CorruptDataError(f"segmented key {physical!r:.60} has no segment prefix")
    return int(_LONG.unpack_from(physical)[0])


class SegmentedBytesStore:
    """Raw rows filed in time segments, with Kafka's retention and expiry rules.

    Args:
        db: the bytes store, opened with :attr:`column_families`.
        retention_ms: how long rows stay readable, relative to the observed stream time.
        segment_interval_ms: width of a segment (>= 1).
        data_cf: column family of the current value layout.
        meta_cf: column family of the observed stream time.
        legacy_cfs: ``(column family, converter)`` pairs of older layouts, read lazily.

    Raises:
        InvalidOptionError: a negative retention or a segment interval below 1.
    """

    def __init__(
        self,
        db: RocksDBBytesStore,
        *,
        retention_ms: int,
        segment_interval_ms: int,
        data_cf: str = DEFAULT_CF,
        meta_cf: str = SEGMENTS_META_CF,
        legacy_cfs: Sequence[tuple[str, Converter]] = (),
    ) -> None:
        if retention_ms < 0:
            raise InvalidOptionError(f"retention_ms cannot be negative, got {retention_ms}")
        if segment_interval_ms < 1:
            raise InvalidOptionError(
                f"segment_interval_ms must be at least 1, got {segment_interval_ms}"
            )
        self.db = db
        self.retention_ms = retention_ms
        self.segment_interval_ms = segment_interval_ms
        self.data_cf = data_cf
        self.meta_cf = meta_cf
        self.legacy_cfs = tuple(legacy_cfs)
        # Only families holding data at open time are consulted: the common case (no legacy
        # data) then costs nothing. Kafka decides between single- and dual-family access the
        # same way, when the store is opened.
        #: The first live segment at the last expiry by this instance (None: not yet).
        self._expired_below: int | None = None
        self._active_legacy = tuple(
            (cf, convert)
            for cf, convert in self.legacy_cfs
            if next(iter(db.range(cf=cf)), None) is not None
        )

    @property
    def column_families(self) -> tuple[str, ...]:
        """Every column family this layer reads or writes."""
        names = [self.data_cf, *(cf for cf, _ in self.legacy_cfs), self.meta_cf]
        return tuple(dict.fromkeys(names))

    @property
    def has_legacy_data(self) -> bool:
        """Whether a legacy column family held rows when this layer was created."""
        return bool(self._active_legacy)

    # -- time ---------------------------------------------------------------------------------

    @property
    def observed_stream_time(self) -> int:
        """The largest segment timestamp ever put or removed (-1 before any)."""
        raw = self.db.get(STREAM_TIME_KEY, self.meta_cf)
        return NO_TIMESTAMP if raw is None else int(_LONG.unpack(raw)[0])

    def _advance(self, timestamp: int) -> tuple[int, int]:
        previous = self.observed_stream_time
        current = max(previous, timestamp)
        if current != previous:
            self.db.put(STREAM_TIME_KEY, _LONG.pack(current), self.meta_cf)
        return previous, current

    def segment_id(self, timestamp: int) -> int:
        """The id of the segment holding ``timestamp``."""
        return segment_id(timestamp, self.segment_interval_ms)

    def min_live_segment_id(self, stream_time: int | None = None) -> int:
        """The id of the oldest live segment at ``stream_time`` (default: the observed one)."""
        if stream_time is None:
            stream_time = self.observed_stream_time
        return self.segment_id(stream_time - self.retention_ms)

    def actual_from(self, time_from: int) -> int:
        """Kafka's ``actualFrom``: ``max(time_from, stream time - retention + 1)``."""
        return max(time_from, self.observed_stream_time - self.retention_ms + 1)

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> bool:
        """Advance stream time, then write ``key`` in the segment of ``timestamp``.

        A None value deletes. Segments that fall out of retention are dropped afterwards.

        Returns:
            False if the segment of ``timestamp`` is expired and the write was dropped.

        Raises:
            InvalidOptionError: ``timestamp`` is negative.
        """
        _check_timestamp(timestamp)
        _, current = self._advance(timestamp)
        min_live = self.min_live_segment_id(current)
        sid = self.segment_id(timestamp)
        written = sid >= min_live
        if written:
            physical = segment_prefix(sid) + key
            if value is None:
                self.db.delete(physical, self.data_cf)
            else:
                self.db.put(physical, value, self.data_cf)
            for cf, _ in self._active_legacy:
                self.db.delete(physical, cf)
        # Kafka cleans up on every put; a range tombstone per put would slow reads, so we drop
        # segments only when the first live one moves, counting from this layer's creation
        # (a store reopened with a shorter retention expires on its first put, as Kafka's).
        if self._expired_below is None or min_live > self._expired_below:
            self._expire_below(min_live)
            self._expired_below = min_live
        return written

    def remove(self, key: bytes, timestamp: int) -> None:
        """Kafka's ``remove``: advance stream time and delete ``key`` (no segment expiry).

        Raises:
            InvalidOptionError: ``timestamp`` is negative.
        """
        _check_timestamp(timestamp)
        self._advance(timestamp)
        physical = segment_prefix(self.segment_id(timestamp)) + key
        self.db.delete(physical, self.data_cf)
        for cf, _ in self._active_legacy:
            self.db.delete(physical, cf)

    def _expire_below(self, min_live: int) -> None:
        if min_live <= 0:
            return
        # One range tombstone per family drops every expired segment at once; rows below the
        # first live segment can only be older (stream time never goes back).
        end = segment_prefix(min_live)
        self.db.delete_range(b"", end, self.data_cf)
        for cf, _ in self._active_legacy:
            self.db.delete_range(b"", end, cf)

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: bytes, timestamp: int) -> bytes | None:
        """The value of ``key`` in the segment of ``timestamp``, or None (also if expired)."""
        stream_time = self.observed_stream_time
        if timestamp < stream_time - self.retention_ms + 1 or timestamp < 0:
            return None
        physical = segment_prefix(self.segment_id(timestamp)) + key
        raw = self.db.get(physical, self.data_cf)
        if raw is not None:
            return raw
        for cf, convert in self._active_legacy:
            raw = self.db.get(physical, cf)
            if raw is not None:
                return convert(raw)
        return None

    def range(
        self,
        lower: bytes | None,
        upper: bytes | None,
        time_from: int,
        time_to: int,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Raw rows with ``lower <= key <= upper`` (None: open) in the live segments whose
        ids lie in ``[segment_id(time_from), segment_id(time_to)]``.

        Forward: segments oldest first, keys ascending within each; ``reverse``: newest
        segment first, keys descending. Keys come back without the segment prefix.
        """
        low_sid = max(self.segment_id(max(time_from, 0)), self.min_live_segment_id(), 0)
        high_sid = self.segment_id(time_to)
        if time_to < 0 or high_sid < low_sid:
            return iter(())
        if lower is None and upper is None:
            # One pass over the whole span: prefix order is segment order.
            return self._span(segment_prefix(low_sid), _after(high_sid), reverse)
        return self._by_segment(lower, upper, low_sid, high_sid, reverse)

    def all(self, *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Every row of every live segment, in segment then key order (or reversed)."""
        low_sid = max(self.min_live_segment_id(), 0)
        return self._span(segment_prefix(low_sid), None, reverse)

    def segment_ids(self) -> list[int]:
        """Ids of the segments that hold rows (in any family), ascending."""
        ids: list[int] = []
        sid = self._next_segment(0, None, forward=True)
        while sid is not None:
            ids.append(sid)
            if sid == MAX_TIMESTAMP:
                break
            sid = self._next_segment(sid + 1, None, forward=True)
        return ids

    # -- iteration helpers --------------------------------------------------------------------

    def _families(self) -> list[tuple[str, Converter | None]]:
        return [(self.data_cf, None), *self._active_legacy]

    def _span(
        self, start: bytes, end: bytes | None, reverse: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        streams = [
            _converted(self.db.range(start, end, cf, reverse=reverse), convert)
            for cf, convert in self._families()
        ]
        for physical, value in _merge(streams, reverse):
            yield physical[PREFIX_SIZE:], value

    def _by_segment(
        self,
        lower: bytes | None,
        upper: bytes | None,
        low_sid: int,
        high_sid: int,
        reverse: bool,
    ) -> Iterator[tuple[bytes, bytes]]:
        upper_end = None if upper is None else upper + b"\x00"
        if reverse:
            sid = self._next_segment(high_sid, low_sid, forward=False)
        else:
            sid = self._next_segment(low_sid, high_sid, forward=True)
        while sid is not None:
            prefix = segment_prefix(sid)
            start = prefix if lower is None else prefix + lower
            end = _after(sid) if upper_end is None else prefix + upper_end
            yield from self._span(start, end, reverse)
            if reverse:
                done = sid <= low_sid
                sid = None if done else self._next_segment(sid - 1, low_sid, forward=False)
            else:
                done = sid >= high_sid
                sid = None if done else self._next_segment(sid + 1, high_sid, forward=True)

    def _next_segment(self, sid: int, bound: int | None, *, forward: bool) -> int | None:
        """The nearest segment id holding rows from ``sid`` on (or back), within ``bound``."""
        found: list[int] = []
        for cf, _ in self._families():
            if forward:
                end = None if bound is None else _after(bound)
                first = next(iter(self.db.range(segment_prefix(sid), end, cf)), None)
            else:
                start = None if bound is None else segment_prefix(bound)
                first = next(iter(self.db.range(start, _after(sid), cf, reverse=True)), None)
            if first is not None:
                found.append(_prefix_id(first[0]))
        if not found:
            return None
        return min(found) if forward else max(found)


def _check_timestamp(timestamp: int) -> None:
    if timestamp < 0:
        raise InvalidOptionError(f"a segment timestamp cannot be negative, got {timestamp}")


def _after(seg_id: int) -> bytes | None:
    """The exclusive end of segment ``seg_id``'s keys (None past the last possible id)."""
    return None if seg_id >= MAX_TIMESTAMP else segment_prefix(seg_id + 1)


def _converted(
    rows: Iterator[tuple[bytes, bytes]], convert: Converter | None
) -> Iterator[tuple[bytes, bytes]]:
    if convert is None:
        return rows
    return ((key, convert(value)) for key, value in rows)


def _merge(
    streams: list[Iterator[tuple[bytes, bytes]]], reverse: bool
) -> Iterator[tuple[bytes, bytes]]:
    """Merge sorted streams given in priority order; on equal keys the first stream wins."""
    if len(streams) == 1:
        yield from streams[0]
        return
    sign = -1 if reverse else 1
    tagged = [
        ((key, sign * rank, value) for key, value in stream)
        for rank, stream in enumerate(streams)
    ]
    last: bytes | None = None
    for key, _, value in heapq.merge(*tagged, reverse=reverse):
        if key == last:
            continue
        last = key
        yield key, value


__all__ = [
    "MAX_TIMESTAMP",
    "NO_TIMESTAMP",
    "PREFIX_SIZE",
    "SEGMENTS_META_CF",
    "STREAM_TIME_KEY",
    "Converter",
    "SegmentedBytesStore",
    "segment_id",
    "segment_prefix",
]
