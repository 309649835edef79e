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
``db.maybe_commit()``. The public API is listed in :mod:`stores.segments`.

Bulk paths (the catalog's materialization and full scans): ``put_many`` has exactly the
effect of ``put`` called row by row in order (stream time advancing record by record, rows of
segments expired when they arrive dropped, rows expired by a later row of the same call gone),
staged as a few list writes instead of one Python call per row; ``scan_columns`` yields the
rows of ``range(None, None, time_from, time_to)`` (or, with ``key_order``, those rows merged
into raw-key order across segments) as ``(keys, values)`` lists from a bare RocksDB iterator.
"""

from __future__ import annotations

import heapq
import operator
import struct
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, islice

from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.columns.arguments import chunked, merge_columns
from stores.errors import CorruptDataError, InvalidOptionError

#: Column family of the observed stream time (shared by window and session stores).
SEGMENTS_META_CF = "segmentsMetadata"
STREAM_TIME_KEY = b"observedStreamTime"
#: Kafka's ``ConsumerRecord.NO_TIMESTAMP``: the stream time of a store that saw no write.
NO_TIMESTAMP = -1
MAX_TIMESTAMP = 2**63 - 1
PREFIX_SIZE = 8
#: Kafka's warning when a put lands in an expired segment (the record is dropped).
EXPIRED_SEGMENT_WARNING = "Skipping record for expired segment."
#: Kafka's warning for a key range whose lower bound sorts after its upper one (nothing found).
INVALID_KEY_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. This may be due to "
    "range arguments set in the wrong order, or serdes that don't preserve ordering when "
    "lexicographically comparing the serialized bytes. Note that the built-in numerical serdes "
    "do not follow this for negative numbers"
)

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


def column_families(data_cf: str, legacy_cfs: Sequence[tuple[str, Converter]]) -> tuple[str, ...]:
    """Every column family a segmented store over ``data_cf`` needs: its own, the legacy ones
    it reads lazily, and the metadata family (a store passes them when opening its database)."""
    return tuple(dict.fromkeys([data_cf, *(cf for cf, _ in legacy_cfs), SEGMENTS_META_CF]))


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
        expire_on_every_put: drop expired segments on a put dropped as expired too.

    Raises:
        InvalidOptionError: a negative retention or a segment interval below 1.
    """

    def __init__(
        self,
        db: BytesStore,
        *,
        retention_ms: int,
        segment_interval_ms: int,
        data_cf: str = DEFAULT_CF,
        meta_cf: str = SEGMENTS_META_CF,
        legacy_cfs: Sequence[tuple[str, Converter]] = (),
        expire_on_every_put: bool = False,
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
        #: Expire on every put, a dropped one too (Kafka 4.3.1's SessionSegmentsWithHeaders),
        #: not only on a put written (``AbstractSegments.getOrCreateSegmentIfLive``).
        self.expire_on_every_put = expire_on_every_put
        #: The first live segment at the last expiry by this instance (None: not yet).
        self._expired_below: int | None = None
        # Only families holding data at open are consulted (as Kafka decides, at open).
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
        # Kafka cleans up on every put it writes (``AbstractSegments.getOrCreateSegmentIfLive``:
        # a dropped put cleans nothing); a range tombstone per put would slow reads, so we drop
        # segments only when the first live one moves, counting from this layer's creation
        # (a store reopened with a shorter retention expires on its first put, as Kafka's).
        if (written or self.expire_on_every_put) and (
            self._expired_below is None or min_live > self._expired_below
        ):
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

    def put_many(
        self,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        timestamps: Sequence[int],
        *,
        key_suffixes: Sequence[bytes] | None = None,
    ) -> int:
        """Exactly ``put(keys[i], values[i], timestamps[i])`` for each ``i`` in order, staged
        in bulk.

        Stream time advances row by row, so a row is dropped if its segment is expired when it
        arrives; a row written but expired by a later row of the same call is gone too, and
        the last write of a key wins. Nothing is staged unless every timestamp is valid.

        Keys are raw (without the segment prefix) and values bytes or None (a delete): the
        caller has checked their types. With ``key_suffixes`` the raw key is ``keys[i] +
        key_suffixes[i]`` (one concatenation per row fewer for callers that append one).

        Returns:
            How many rows were dropped as expired on arrival (``put`` returning False).

        Raises:
            InvalidOptionError: a timestamp is negative or not an integer, or the sequences
                differ in length.
        """
        if not len(keys) == len(values) == len(timestamps) or (
            key_suffixes is not None and len(key_suffixes) != len(keys)
        ):
            raise InvalidOptionError(
                "keys, values, timestamps (and key suffixes) must have the same length"
            )
        if not keys:
            return 0
        types = set(map(type, timestamps))
        if types != {int}:  # bools and floats are refused, as by put's callers
            wrong = next(t for t in types if t is not int)
            raise InvalidOptionError(
                f"a segment timestamp must be an integer, got {wrong.__name__}"
            )
        earliest, latest = min(timestamps), max(timestamps)
        _check_timestamp(earliest)
        if latest > MAX_TIMESTAMP:
            raise InvalidOptionError(f"a segment timestamp must be at most 2**63-1, got {latest}")
        interval = self.segment_interval_ms
        previous = self.observed_stream_time
        current = max(previous, latest)
        final_live = self.min_live_segment_id(current)
        # put expires on its first call, then whenever the first live segment moves; the last
        # expiry of this call (if any) is at the final first live segment, and it removes every
        # earlier write below it.
        expires = self._expired_below is None or final_live > self._expired_below
        sids = [t // interval for t in timestamps]
        dropped = 0
        if earliest // interval < final_live:
            # Some rows are dropped, or expired by a later row: follow stream time row by row.
            retention = self.retention_ms
            stream = islice(accumulate(timestamps, max, initial=previous), 1, None)
            live = [segment_id(time - retention, interval) for time in stream]
            dropped = sum(1 for sid, low in zip(sids, live) if sid < low)
            # Only a written row cleans up (see put); the last one cleans at the final time.
            expires = expires and (dropped < len(sids) or self.expire_on_every_put)
            if expires:
                keep = [i for i, sid in enumerate(sids) if sid >= final_live]
            else:
                keep = [i for i, (sid, low) in enumerate(zip(sids, live)) if sid >= low]
            keys = [keys[i] for i in keep]
            values = [values[i] for i in keep]
            sids = [sids[i] for i in keep]
            if key_suffixes is not None:
                key_suffixes = [key_suffixes[i] for i in keep]
        pack = _LONG.pack
        # Rows fall in few segments: one prefix each, looked up rather than packed per row.
        prefixes = {sid: pack(sid) for sid in set(sids)}
        if key_suffixes is None:
            physical = [prefixes[sid] + key for sid, key in zip(sids, keys)]
        else:
            physical = [
                prefixes[sid] + key + suffix for sid, key, suffix in zip(sids, keys, key_suffixes)
            ]
        # RocksDB applies a batch of ascending keys several times faster. A stable sort keeps
        # the writes of one key in call order (the last still wins); writes of different keys
        # commute.
        order = sorted(range(len(physical)), key=physical.__getitem__)
        physical = [physical[i] for i in order]
        values = [values[i] for i in order]
        if current != previous:
            self.db.put(STREAM_TIME_KEY, pack(current), self.meta_cf)
        if expires:
            # Before the writes: the range tombstone then has fewer staged writes to mask, and
            # every row kept lies at or above it.
            self._expire_below(final_live)
            self._expired_below = final_live
        self.db.put_many(physical, values, self.data_cf)
        if self._active_legacy:
            gone = [None] * len(physical)
            for cf, _ in self._active_legacy:
                self.db.put_many(physical, gone, cf)
        return dropped

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

    def scan_columns(
        self,
        time_from: int = 0,
        time_to: int = MAX_TIMESTAMP,
        *,
        batch_rows: int = 1 << 16,
        key_order: bool = False,
        prefixed: bool = False,
    ) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """The rows of ``range(None, None, time_from, time_to)`` as ``(keys, values)`` lists of
        up to ``batch_rows`` (keys without the segment prefix, or with it if ``prefixed``: a
        caller that slices keys anyway saves a pass): the bulk scan.

        Forward order: segments oldest first, keys ascending in each; with ``key_order``, the
        rows of all those segments merged into raw-key order instead (stable: on equal keys
        the older segment first), as a session store's ``all`` returns them.

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer, or both ``prefixed``
                and ``key_order`` are asked for.
        """
        if type(batch_rows) is not int or batch_rows < 1:
            raise InvalidOptionError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        if prefixed and key_order:
            raise InvalidOptionError("scan_columns: key_order merges unprefixed keys only")
        low_sid = max(self.segment_id(max(time_from, 0)), self.min_live_segment_id(), 0)
        high_sid = self.segment_id(time_to)
        if time_to < 0 or high_sid < low_sid:
            return iter(())
        if self._active_legacy:
            # Rare (a store mid-migration): the merging iterators, chunked.
            rows: Iterator[tuple[bytes, bytes]]
            if key_order:
                streams = [
                    self._span(segment_prefix(sid), _after(sid), False)
                    for sid in self._live_ids(low_sid, high_sid)
                ]
                rows = heapq.merge(*streams, key=operator.itemgetter(0))
            else:
                rows = self._physical_span(segment_prefix(low_sid), _after(high_sid), False)
                if not prefixed:
                    rows = ((key[PREFIX_SIZE:], value) for key, value in rows)
            return chunked(rows, batch_rows)
        if not key_order:
            batches = self.db.scan_columns(
                segment_prefix(low_sid), _after(high_sid), self.data_cf, batch_rows=batch_rows
            )
            return batches if prefixed else _unprefixed(batches)
        cursors = [
            _unprefixed(
                self.db.scan_columns(
                    segment_prefix(sid), _after(sid), self.data_cf, batch_rows=batch_rows
                )
            )
            for sid in self._live_ids(low_sid, high_sid)
        ]
        return merge_columns(cursors, batch_rows)

    def _live_ids(self, low_sid: int, high_sid: int) -> list[int]:
        return [sid for sid in self.segment_ids() if low_sid <= sid <= high_sid]

    # -- iteration helpers --------------------------------------------------------------------

    def _families(self) -> list[tuple[str, Converter | None]]:
        return [(self.data_cf, None), *self._active_legacy]

    def _span(
        self, start: bytes, end: bytes | None, reverse: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        for physical, value in self._physical_span(start, end, reverse):
            yield physical[PREFIX_SIZE:], value

    def _physical_span(
        self, start: bytes, end: bytes | None, reverse: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        streams = [
            _converted(self.db.range(start, end, cf, reverse=reverse), convert)
            for cf, convert in self._families()
        ]
        return _merge(streams, reverse)

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


def _unprefixed(
    batches: Iterator[tuple[list[bytes], list[bytes]]],
) -> Iterator[tuple[list[bytes], list[bytes]]]:
    for keys, values in batches:
        yield [key[PREFIX_SIZE:] for key in keys], values


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
    "EXPIRED_SEGMENT_WARNING",
    "INVALID_KEY_RANGE_WARNING",
    "MAX_TIMESTAMP",
    "NO_TIMESTAMP",
    "PREFIX_SIZE",
    "SEGMENTS_META_CF",
    "STREAM_TIME_KEY",
    "Converter",
    "SegmentedBytesStore",
    "column_families",
    "segment_id",
    "segment_prefix",
]
