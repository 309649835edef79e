"""Byte layouts of the versioned store, identical to Kafka's ``RocksDBVersionedStore``.

Everything lives in one RocksDB. Kafka keeps the latest-value store and every segment as
*logical* segments of one physical store: each RocksDB key is the segment id (8-byte big-endian
two's-complement long) followed by the serialized record key. The latest-value store is Kafka's
reserved segment ``-1``, so its keys sort after every regular segment's. All longs and ints are
big-endian and signed, as Java's ``ByteBuffer`` writes them.

========================  ======================  ==============================================
column family / entry     RocksDB key             RocksDB value
========================  ======================  ==============================================
``default``: latest       ``ff*8 + key``          ``timestamp (8) + value``; never a tombstone
``default``: segment s    ``s (8) + key``         segment row, see below
``versionedStoreMetadata``  ``b"observedStreamTime"``  observed stream time (8)
========================  ======================  ==============================================

A segment row holds every version of one key whose ``validTo`` falls in the segment
(``segment id = validTo / segmentInterval``, Java division)::

    next_timestamp (8)            validTo of the newest version in the row
    min_timestamp (8)             validFrom of the oldest version in the row
    n x [timestamp (8), size (4)] newest first; size -1 marks a tombstone (no value bytes)
    values                        oldest first, so the newest value ends the row

The header list has no length: it ends at the first entry whose timestamp equals
``min_timestamp``. A *degenerate* row (``next_timestamp == min_timestamp``) holds one tombstone
that was the latest version when written and has no known ``validTo``.

:class:`SegmentValue` decodes a row whole and re-encodes it; Kafka edits the bytes in place, but
since the layout above is canonical the bytes come out the same. Reads need not decode:
:func:`find_in_row` answers a lookup from the bytes in place (the headers up to the version
found, and that version's value slice). Its operations are Kafka's,
including the truncation with which ``insert_as_latest`` repairs rows left overlapping by an
interrupted write.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from stores.errors import CorruptDataError, InvalidOptionError
from stores.protocols import VersionedRecord

TIMESTAMP_SIZE = 8
VALUE_SIZE = 4
#: Kafka's ``ConsumerRecord.NO_TIMESTAMP``: the stream time of a store that saw no write.
NO_TIMESTAMP = -1
#: The reserved segment id of the latest-value store.
LATEST_SEGMENT_ID = -1
METADATA_CF = "versionedStoreMetadata"
STREAM_TIME_KEY = b"observedStreamTime"

_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")
_ENTRY = struct.Struct(">qi")
_HEADER_AND_ENTRY = struct.Struct(">qqqi")
_unpack_first = _HEADER_AND_ENTRY.unpack_from
_unpack_entry = _ENTRY.unpack_from
_HEADER = 2 * TIMESTAMP_SIZE
_ENTRY_SIZE = TIMESTAMP_SIZE + VALUE_SIZE
_FIRST_SIZE = _HEADER + _ENTRY_SIZE


# -- keys and small values --------------------------------------------------------------------


def segment_id(timestamp: int, segment_interval: int) -> int:
    """Return the id of the segment holding ``timestamp`` (Java's truncating division)."""
    quotient = abs(timestamp) // segment_interval
    return quotient if timestamp >= 0 else -quotient


def segment_prefix(seg_id: int) -> bytes:
    """Return the key prefix of a logical segment."""
    return _LONG.pack(seg_id)


LATEST_PREFIX = segment_prefix(LATEST_SEGMENT_ID)


def encode_long(value: int) -> bytes:
    """Encode a Java long (the stream-time metadata value)."""
    return _LONG.pack(value)


def decode_long(raw: bytes) -> int:
    """Decode a Java long.

    Raises:
        CorruptDataError: ``raw`` is not 8 bytes.
    """
    if len(raw) != TIMESTAMP_SIZE:
        raise CorruptDataError(f"expected an 8-byte long, got {len(raw)} bytes")
    value: int = _LONG.unpack(raw)[0]
    return value


def encode_latest(value: bytes, timestamp: int) -> bytes:
    """Encode a latest-value entry: ``timestamp (8) + value``."""
    return _LONG.pack(timestamp) + value


def latest_timestamp(raw: bytes) -> int:
    """Return the timestamp of a latest-value entry.

    Raises:
        CorruptDataError: ``raw`` is shorter than a timestamp.
    """
    if len(raw) < TIMESTAMP_SIZE:
        raise CorruptDataError(f"latest-value entry of {len(raw)} bytes has no timestamp")
    ts: int = _LONG.unpack_from(raw)[0]
    return ts


def decode_latest(raw: bytes) -> tuple[bytes, int]:
    """Return ``(value, timestamp)`` of a latest-value entry.

    Raises:
        CorruptDataError: ``raw`` is shorter than a timestamp.
    """
    return raw[TIMESTAMP_SIZE:], latest_timestamp(raw)


_new_record = object.__new__


def versioned_record(value: bytes, timestamp: int, valid_to: int | None) -> VersionedRecord:
    """``VersionedRecord(value, timestamp, valid_to)`` built at half the cost: a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``; this fills the
    instance dict directly (equal, hashable and immutable the same way)."""
    record = _new_record(VersionedRecord)
    fields = record.__dict__
    fields["value"] = value
    fields["timestamp"] = timestamp
    fields["valid_to"] = valid_to
    return record


def latest_record(raw: bytes) -> VersionedRecord:
    """Decode a latest-value entry as the record of a latest version (``valid_to`` None).

    Raises:
        CorruptDataError: ``raw`` is shorter than a timestamp.
    """
    return versioned_record(raw[TIMESTAMP_SIZE:], latest_timestamp(raw), None)


def next_timestamp(raw: bytes) -> int:
    """Return a segment row's ``next_timestamp`` without decoding the row.

    Raises:
        CorruptDataError: ``raw`` is shorter than the row header.
    """
    return _row_header(raw)[0]


def min_timestamp(raw: bytes) -> int:
    """Return a segment row's ``min_timestamp`` without decoding the row.

    Raises:
        CorruptDataError: ``raw`` is shorter than the row header.
    """
    return _row_header(raw)[1]


def _row_header(raw: bytes) -> tuple[int, int]:
    if len(raw) < _HEADER:
        raise CorruptDataError(f"segment row of {len(raw)} bytes has no header")
    header: tuple[int, int] = _TWO_LONGS.unpack_from(raw)
    return header


#: :func:`find_in_row`: the row ends at or before the timestamp (so does every older row).
ROW_ENDS_BEFORE = 0
#: :func:`find_in_row`: the row starts after the timestamp (an older row may hold it).
ROW_STARTS_AFTER = 1


def find_in_row(raw: bytes, timestamp: int) -> tuple[int, int, bytes | None] | int:
    """Kafka's ``SegmentValue.find(timestamp)`` read in place, with the row-level checks of
    ``RocksDBVersionedStore.get`` before it.

    Returns:
        ``ROW_ENDS_BEFORE`` if ``next_timestamp <= timestamp``, ``ROW_STARTS_AFTER`` if
        ``min_timestamp > timestamp``, else ``(valid_from, valid_to, value)`` of the newest
        version with ``validFrom <= timestamp`` (``value`` None for a tombstone). Only the
        headers up to that version are read, and its value is sliced out of the row: values run
        oldest first, so a version's value ends where the values of the newer versions before
        it in the header list begin.

    Raises:
        CorruptDataError: the header is short, the headers run out, or a value would overlap
            them.
    """
    # The header and the newest version's entry in one unpack: many lookups stop there.
    try:
        valid_to, min_ts, ts, size = _unpack_first(raw)
    except struct.error:
        raise CorruptDataError(
            f"segment row of {len(raw)} bytes has no header and first version"
        ) from None
    if valid_to <= timestamp:
        return ROW_ENDS_BEFORE
    if min_ts > timestamp:
        return ROW_STARTS_AFTER
    end = len(raw)
    offset = _FIRST_SIZE
    while True:
        if ts <= timestamp:
            if size < 0:
                return ts, valid_to, None
            if end - size < offset:
                break
            return ts, valid_to, raw[end - size : end]
        if ts == min_ts or offset + _ENTRY_SIZE > end:
            break  # the list ended with no version at or before min_timestamp
        if size > 0:
            end -= size
        valid_to = ts
        ts, size = _unpack_entry(raw, offset)
        offset += _ENTRY_SIZE
    raise CorruptDataError(f"segment row has no version at or before {timestamp} in its headers")


def row_versions(raw: bytes) -> tuple[list[int], list[int], list[bytes | None]]:
    """A segment row's versions, oldest first, as three lists: ``valid_from``, ``valid_to``
    and the value (None for a tombstone); what ``SegmentValue.decode`` holds, in time order.

    Raises:
        CorruptDataError: the bytes do not follow the row layout.
    """
    next_ts, min_ts = _row_header(raw)
    end = len(raw)
    # Every entry the row could hold, unpacked at once (past the real ones: value bytes).
    room = (end - _HEADER) // _ENTRY_SIZE
    stamps: list[int] = []
    sizes: list[int] = []
    for ts, size in _ENTRY.iter_unpack(raw[_HEADER : _HEADER + room * _ENTRY_SIZE]):
        stamps.append(ts)
        sizes.append(size)
        if ts == min_ts:
            break
    else:
        raise CorruptDataError("segment row ends before its min_timestamp entry")
    offset = _HEADER + len(stamps) * _ENTRY_SIZE
    values: list[bytes | None] = []
    for size in sizes:  # newest first: the newest value ends the row
        if size < 0:
            values.append(None)
        else:
            values.append(raw[end - size : end])
            end -= size
    if end != offset:
        raise CorruptDataError(
            f"segment row has {end - offset} bytes between its headers and its values"
        )
    ends = [next_ts, *stamps[:-1]]
    stamps.reverse()
    ends.reverse()
    values.reverse()
    return stamps, ends, values


# -- segment rows ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentSearchResult:
    """One version found in a segment row: its index (0 = newest) and validity interval."""

    index: int
    valid_from: int
    valid_to: int
    value: bytes | None


class SegmentValue:
    """A decoded segment row with Kafka's ``SegmentValue`` operations.

    ``is_degenerate`` tells whether the row is a lone tombstone with no known ``validTo``.

    Args:
        next_ts: ``validTo`` of the newest version.
        min_ts: ``validFrom`` of the oldest version.
        records: ``(timestamp, value or None)`` pairs, newest first.
    """

    __slots__ = ("is_degenerate", "min_ts", "next_ts", "records")

    def __init__(self, next_ts: int, min_ts: int, records: list[tuple[int, bytes | None]]) -> None:
        self.next_ts = next_ts
        self.min_ts = min_ts
        self.records = records
        # Kafka decides degeneracy when a row is built or reset, not after every edit; a
        # stored flag keeps that exact behaviour.
        self.is_degenerate = next_ts == min_ts

    @classmethod
    def with_record(cls, value: bytes | None, valid_from: int, valid_to: int) -> SegmentValue:
        """A row of one version; ``valid_from == valid_to`` with a None value is degenerate."""
        return cls(valid_to, valid_from, [(valid_from, value)])

    @classmethod
    def decode(cls, raw: bytes) -> SegmentValue:
        """Decode a row.

        Raises:
            CorruptDataError: the bytes do not follow the row layout.
        """
        next_ts, min_ts = _row_header(raw)
        entries: list[tuple[int, int]] = []
        offset = _HEADER
        while True:
            if offset + _ENTRY_SIZE > len(raw):
                raise CorruptDataError("segment row ends before its min_timestamp entry")
            ts, size = _ENTRY.unpack_from(raw, offset)
            offset += _ENTRY_SIZE
            entries.append((ts, size))
            if ts == min_ts:
                break
        # Values run oldest first, so the newest value is the row's last bytes.
        end = len(raw)
        records: list[tuple[int, bytes | None]] = []
        for ts, size in entries:
            if size < 0:
                records.append((ts, None))
            else:
                records.append((ts, raw[end - size : end]))
                end -= size
        if end != offset:
            raise CorruptDataError(
                f"segment row has {end - offset} bytes between its headers and its values"
            )
        return cls(next_ts, min_ts, records)

    def encode(self) -> bytes:
        """Encode the row in Kafka's layout."""
        parts = [_TWO_LONGS.pack(self.next_ts, self.min_ts)]
        parts += [_ENTRY.pack(ts, -1 if v is None else len(v)) for ts, v in self.records]
        parts += [v for _, v in reversed(self.records) if v is not None]
        return b"".join(parts)

    def find(self, timestamp: int) -> SegmentSearchResult:
        """Return the newest version with ``validFrom <= timestamp``.

        Raises:
            InvalidOptionError: ``timestamp`` is outside ``[min_ts, next_ts)`` (always so for a
                degenerate row).
        """
        if timestamp < self.min_ts:
            raise InvalidOptionError(f"timestamp {timestamp} is before this segment row")
        if timestamp >= self.next_ts:
            raise InvalidOptionError(f"timestamp {timestamp} is after this segment row")
        valid_to = self.next_ts
        for index, (ts, value) in enumerate(self.records):
            if ts <= timestamp:
                return SegmentSearchResult(index, ts, valid_to, value)
            valid_to = ts
        raise CorruptDataError("segment row has no version at or before its min_timestamp")

    def find_all(self, from_ts: int | None, to_ts: int | None) -> list[SegmentSearchResult]:
        """Return the values (not tombstones) valid at some time in ``[from_ts, to_ts]``.

        A None bound is open. Results are newest first.
        """
        out = []
        valid_to = self.next_ts
        for index, (ts, value) in enumerate(self.records):
            if (
                value is not None
                and (to_ts is None or ts <= to_ts)
                and (from_ts is None or valid_to > from_ts)
            ):
                out.append(SegmentSearchResult(index, ts, valid_to, value))
            valid_to = ts
        return out

    def insert_as_latest(self, valid_from: int, valid_to: int, value: bytes | None) -> None:
        """Add a version newer than every version in the row.

        If ``valid_from`` is before ``next_ts`` the row overlaps a newer one (an earlier write
        was interrupted between two segments); as in Kafka, the row is first truncated to
        ``valid_from``. A gap between ``next_ts`` and ``valid_from`` is kept as a tombstone.
        """
        if valid_from < self.next_ts:
            self._truncate_to(valid_from)
        if self.next_ts == valid_from:
            if self.is_degenerate:
                self._reset(value, valid_from, valid_to)
            else:
                self._insert(valid_from, value, 0)
        else:
            if self.is_degenerate:
                self._reset(None, self.next_ts, valid_from)
            else:
                self._insert(self.next_ts, None, 0)
            self._insert(valid_from, value, 0)
        self.next_ts = valid_to

    def insert_as_earliest(self, timestamp: int, value: bytes | None) -> None:
        """Add a version older than every version in the row (the caller checks that it is)."""
        if self.is_degenerate:
            self._reset(value, timestamp, self.next_ts)
        else:
            self._insert(timestamp, value, len(self.records))

    def insert(self, timestamp: int, value: bytes | None, index: int) -> None:
        """Insert a version at ``index`` (as found by :meth:`find`).

        Raises:
            CorruptDataError: the row is degenerate or ``index`` is out of range.
        """
        self._insert(timestamp, value, index)

    def update_record(self, timestamp: int, value: bytes | None, index: int) -> None:
        """Replace the version at ``index`` (as found by :meth:`find`).

        Raises:
            CorruptDataError: ``index`` is out of range.
        """
        if not 0 <= index < len(self.records):
            raise CorruptDataError(f"no version at index {index} of a segment row")
        self.records[index] = (timestamp, value)
        if index == len(self.records) - 1:
            self.min_ts = timestamp

    def _insert(self, timestamp: int, value: bytes | None, index: int) -> None:
        if self.is_degenerate or not 0 <= index <= len(self.records):
            raise CorruptDataError(f"cannot insert at index {index} of this segment row")
        self.records.insert(index, (timestamp, value))
        if index == len(self.records) - 1:
            self.min_ts = timestamp

    def _reset(self, value: bytes | None, valid_from: int, valid_to: int) -> None:
        self.next_ts = valid_to
        self.min_ts = valid_from
        self.records = [(valid_from, value)]
        self.is_degenerate = valid_from == valid_to

    def _truncate_to(self, timestamp: int) -> None:
        """Drop every version from ``timestamp`` on, leaving ``next_ts == timestamp``."""
        if timestamp <= self.min_ts:
            self._reset(None, timestamp, timestamp)
            return
        found = self.find(timestamp)
        drop = found.index + (1 if found.valid_from == timestamp else 0)
        del self.records[:drop]
        self.next_ts = timestamp

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SegmentValue):
            return NotImplemented
        return (self.next_ts, self.min_ts, self.records) == (
            other.next_ts,
            other.min_ts,
            other.records,
        )

    def __repr__(self) -> str:
        return f"SegmentValue(next_ts={self.next_ts}, min_ts={self.min_ts}, {self.records})"


def decode_latest_columns(
    physical_keys: list[bytes], raw_values: list[bytes]
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Decode many latest-value entries at once: (keys, values, timestamps) as Arrow arrays.

    The bulk twin of stripping the segment prefix and splitting ``timestamp + value``.
    (pyarrow's ``binary_slice`` is not used: in pyarrow 26 it fails on some arrays.)
    """
    keys = pa.array([k[TIMESTAMP_SIZE:] for k in physical_keys], pa.binary())
    values = pa.array([r[TIMESTAMP_SIZE:] for r in raw_values], pa.binary())
    heads = b"".join([r[:TIMESTAMP_SIZE] for r in raw_values])
    stamps = np.frombuffer(heads, dtype=">i8").astype(np.int64)
    return keys, values, pa.array(stamps, pa.int64())


__all__ = [
    "LATEST_PREFIX",
    "LATEST_SEGMENT_ID",
    "METADATA_CF",
    "NO_TIMESTAMP",
    "ROW_ENDS_BEFORE",
    "ROW_STARTS_AFTER",
    "STREAM_TIME_KEY",
    "SegmentSearchResult",
    "SegmentValue",
    "decode_latest",
    "decode_latest_columns",
    "decode_long",
    "encode_latest",
    "encode_long",
    "find_in_row",
    "latest_record",
    "latest_timestamp",
    "min_timestamp",
    "next_timestamp",
    "row_versions",
    "segment_id",
    "segment_prefix",
    "versioned_record",
]
