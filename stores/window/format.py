"""Byte layouts of the window stores, identical to Kafka's ``WindowKeySchema`` and value formats.

Store key (Kafka's ``WindowKeySchema.toStoreKeyBinary``), behind the 8-byte segment prefix of
:mod:`stores.segments` (``segment id = window start // segment interval``)::

    [serialized key][window start: 8-byte BE long][sequence number: 4-byte BE int]

The sequence number is 0 unless the store retains duplicates, in which case every put takes the
next number (Kafka: ``seqnum = (seqnum + 1) & 0x7FFFFFFF``, so the first put gets 1).

Value layouts and column families (one RocksDB; the families are Kafka's, per store class):

=================================  ===========================  ==================================
store                              value layout                 column family
=================================  ===========================  ==================================
WindowStore                        [value]                      ``default``
TimestampedWindowStore             [ts 8][value]                ``keyValueWithTimestamp``
WindowStoreWithHeaders             [hsize][headers][value]      ``windowKeyValueWithHeaders``
TimestampedWindowStoreWithHeaders  [hsize][headers][ts 8][v]    ``keyValueWithTimestampAndHeaders``
(every window store)               stream time, last seqnum     ``segmentsMetadata``
=================================  ===========================  ==================================

``hsize`` is a varint (Kafka's ``ByteUtils.writeVarint``), ``ts`` an 8-byte BE long.

Each format also encodes and decodes whole columns (the stores' ``put_columns`` /
``scan_columns``): values as bytes, timestamps as ints, headers as KIP-1271 ``headersBytes``
(stored as given; an empty or None item is no headers), with the same bytes as the per-value
encoders produce.

Older layouts are read lazily from the families of the stores they came from (Kafka's
``DualColumnFamilyAccessor``), converted as Kafka converts them:

- ``TimestampedWindowStore`` reads ``default`` (plain values) with timestamp -1
  (``RocksDBTimestampedSegmentedBytesStore`` / ``TimestampedSegment`` over
  ``RocksDBTimestampedStore``);
- ``WindowStoreWithHeaders`` reads ``default`` with empty headers
  (``RocksDBMigratingWindowStoreWithHeaders``: ``convertToHeaderFormat``);
- ``TimestampedWindowStoreWithHeaders`` reads ``keyValueWithTimestamp`` with empty headers and
  ``default`` with empty headers and timestamp -1 (``RocksDBTimestampedStoreWithHeaders``:
  ``convertToHeaderFormat`` / ``convertFromPlainToHeaderFormat``).

Headers bytes are Kafka's ``HeadersSerializer`` layout, see :mod:`stores.formats.headers`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stores.bytes.protocol import DEFAULT_CF
from stores.errors import CorruptDataError, InvalidOptionError
from stores.formats.headers import (
    convert_from_plain_to_header_format,
    convert_to_header_format,
    decode_with_headers,
    encode_with_headers,
    headed_column,
    split_headers_column,
)
from stores.formats.timestamped import (
    TIMESTAMPED_CF,
    convert_to_timestamped,
    decode_timestamped,
    encode_timestamped,
)
from stores.records import (
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
)
from stores.segments import ordered
from stores.segments.store import Converter

TIMESTAMP_SIZE = 8
SEQNUM_SIZE = 4
SUFFIX_SIZE = TIMESTAMP_SIZE + SEQNUM_SIZE
MAX_SEQNUM = 0x7FFFFFFF
MAX_LONG = 2**63 - 1
#: Column family of ``WindowStoreWithHeaders`` (Kafka's ``RocksDBMigratingWindowStoreWithHeaders``).
WINDOW_HEADERS_CF = "windowKeyValueWithHeaders"
#: Column family of ``TimestampedWindowStoreWithHeaders`` (Kafka's
#: ``RocksDBTimestampedStoreWithHeaders``).
TIMESTAMPED_HEADERS_CF = "keyValueWithTimestampAndHeaders"
#: Metadata key of the last sequence number given to a duplicate (our addition; Kafka keeps it
#: in memory and restarts from 0).
SEQNUM_KEY = b"windowSequenceNumber"

_SUFFIX = struct.Struct(">qi")
_MIN_SUFFIX = bytes(SUFFIX_SIZE)
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")

#: Columns of raw values: ``(values, timestamps or None, headersBytes or None) -> raws``.
ColumnEncoder = Callable[
    [list[bytes | None], list[int] | None, list[bytes | None] | None], list[bytes | None]
]
#: Raw values to the value columns: ``(values,)``, ``(values, timestamps)``,
#: ``(values, headersBytes)`` or ``(values, timestamps, headersBytes)``.
ColumnDecoder = Callable[[list[bytes]], tuple[list[Any], ...]]


# -- keys -------------------------------------------------------------------------------------


def encode_window_key(key: bytes, window_start: int, seqnum: int = 0) -> bytes:
    """``[key][window start (8)][seqnum (4)]``."""
    return key + _SUFFIX.pack(window_start, seqnum)


def decode_window_key(raw: bytes) -> tuple[bytes, int, int]:
    """Split a store key into ``(key, window start, seqnum)``.

    Raises:
        CorruptDataError: fewer than 12 bytes.
    """
    if len(raw) < SUFFIX_SIZE:
        raise CorruptDataError(f"a window store key needs at least {SUFFIX_SIZE} bytes")
    start, seqnum = _SUFFIX.unpack_from(raw, len(raw) - SUFFIX_SIZE)
    return raw[:-SUFFIX_SIZE], start, seqnum


def window_key_suffixes(
    window_starts: list[int], seqnums: list[int] | None = None
) -> list[bytes]:
    """The ``[window start][seqnum]`` suffixes of store keys (:func:`encode_window_key` is
    ``key + suffix``; sequence number 0 without ``seqnums``).

    Raises:
        struct.error: a start or sequence number is out of range.
    """
    pack = _SUFFIX.pack
    if seqnums is None:
        return [pack(start, 0) for start in window_starts]
    return [pack(start, seq) for start, seq in zip(window_starts, seqnums)]


def decode_window_key_column(
    raws: list[bytes], skip: int = 0
) -> tuple[list[bytes], list[int]]:
    """``(keys, window starts)`` of store keys (:func:`decode_window_key` per row), each after
    its first ``skip`` bytes (a segment prefix).

    Raises:
        CorruptDataError: a store key has fewer than ``skip`` + 12 bytes.
    """
    sizes = set(map(len, raws))
    if sizes and min(sizes) < skip + SUFFIX_SIZE:
        raise CorruptDataError(f"a window store key needs at least {SUFFIX_SIZE} bytes")
    if len(sizes) == 1:
        # Keys of one size (the usual case): one C-level unpack splits them all.
        (size,) = sizes
        layout = struct.Struct(f">{skip}x{size - skip - SUFFIX_SIZE}sq{SEQNUM_SIZE}x")
        split = list(layout.iter_unpack(b"".join(raws)))
        return [key for key, _ in split], [start for _, start in split]
    unpack = _LONG.unpack_from
    starts = [unpack(raw, len(raw) - SUFFIX_SIZE)[0] for raw in raws]
    return [raw[skip:-SUFFIX_SIZE] for raw in raws], starts


def lower_range_fixed_size(key: bytes, time_from: int) -> bytes:
    """Kafka's ``lowerRangeFixedSize``: the first possible store key of ``key`` at ``time_from``."""
    return encode_window_key(key, max(0, time_from), 0)


def upper_range_fixed_size(key: bytes, time_to: int) -> bytes:
    """Kafka's ``upperRangeFixedSize``: the last possible store key of ``key`` at ``time_to``."""
    return encode_window_key(key, time_to, MAX_SEQNUM)


def lower_range(key_from: bytes) -> bytes:
    """Kafka's ``WindowKeySchema.lowerRange``: ``key_from`` + 12 zero bytes
    (``OrderedBytes.lowerRange``), below every store key of a key >= ``key_from``."""
    return ordered.lower_range(key_from, _MIN_SUFFIX)


def upper_range(key_to: bytes, time_to: int) -> bytes:
    """Kafka's ``WindowKeySchema.upperRange``: ``OrderedBytes.upperRange(key_to, [time_to
    (8)][MAX_INT (4)])``, byte for byte.

    It is not a bound of every store key of a key <= ``key_to``: with a first time byte of 0
    (any ``time_to`` below 2**56) it is ``key_to + suffix``, below the rows of a shorter key
    that ``key_to`` extends with a 0 byte (``b""`` at time 1 sorts after ``00 + [1][MAX]``).
    Kafka never reads those rows in a key-range fetch; we scan the same bounds so that we
    answer as Kafka does (:mod:`stores.segments.ordered`).
    """
    return ordered.upper_range(key_to, _SUFFIX.pack(time_to, MAX_SEQNUM))


def time_window_for_size(start: int, window_size_ms: int) -> Window:
    """Kafka's ``timeWindowForSize``: ``[start, start + size]``, the end capped at 2**63-1."""
    return Window(start, min(start + window_size_ms, MAX_LONG))


# -- values -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowValueFormat:
    """How one store class turns its values into bytes, and where it keeps them."""

    name: str
    value_type: type | None  # None: plain bytes
    data_cf: str
    legacy_cfs: tuple[tuple[str, Converter], ...]
    encode: Callable[[Any], bytes | None]
    decode: Callable[[bytes], Any]
    timestamped: bool
    headers: bool
    encode_columns: ColumnEncoder
    decode_columns: ColumnDecoder

    def check(self, value: Any) -> Any:
        """Return ``value`` if it is of this format's value type (or None).

        Raises:
            InvalidOptionError: it is not.
        """
        if value is None:
            return None
        if self.value_type is None:
            if isinstance(value, (bytearray, memoryview)):
                return bytes(value)
            if not isinstance(value, bytes):
                raise InvalidOptionError(
                    f"value must be bytes or None for a {self.name}, got {type(value).__name__}"
                )
            return value
        if not isinstance(value, self.value_type):
            raise InvalidOptionError(
                f"value must be {self.value_type.__name__} or None for a {self.name}, "
                f"got {type(value).__name__}"
            )
        inner = getattr(value, "value", None)
        if inner is not None and not isinstance(inner, bytes):
            raise InvalidOptionError(f"the inner value must be bytes, got {type(inner).__name__}")
        return value


def _inner_bytes(value: Any) -> bytes | None:
    # Kafka's ValueAndTimestampSerializer (and the headers serializers) turn a wrapper around a
    # null value into null bytes: a delete.
    inner = value.value
    return None if inner is None else bytes(inner)


def _encode_plain(value: bytes) -> bytes:
    return value


def _decode_plain(raw: bytes) -> bytes:
    return raw


def _encode_timestamped(value: ValueAndTimestamp[bytes]) -> bytes | None:
    inner = _inner_bytes(value)
    return None if inner is None else encode_timestamped(inner, value.timestamp)


def _encode_headers(value: ValueAndHeaders[bytes]) -> bytes | None:
    inner = _inner_bytes(value)
    return None if inner is None else encode_with_headers(value.headers, inner)


def _decode_headers(raw: bytes) -> ValueAndHeaders[bytes]:
    headers, payload = decode_with_headers(raw)
    return ValueAndHeaders(payload, headers)


def _encode_timestamped_headers(value: ValueTimestampHeaders[bytes]) -> bytes | None:
    inner = _inner_bytes(value)
    if inner is None:
        return None
    return encode_with_headers(value.headers, encode_timestamped(inner, value.timestamp))


def _decode_timestamped_headers(raw: bytes) -> ValueTimestampHeaders[bytes]:
    headers, payload = decode_with_headers(raw)
    stamped = decode_timestamped(payload)
    return ValueTimestampHeaders(stamped.value, stamped.timestamp, headers)


# -- columns ----------------------------------------------------------------------------------


def _stamped_column(values: list[bytes | None], timestamps: list[int]) -> list[bytes | None]:
    pack = _LONG.pack
    return [None if v is None else pack(t) + v for v, t in zip(values, timestamps)]


def _stamps_of(payloads: list[bytes]) -> tuple[list[bytes], list[int]]:
    unpack = _LONG.unpack_from
    try:
        stamps = [unpack(p)[0] for p in payloads]
    except struct.error:
        raise CorruptDataError(
            f"a timestamped window value needs at least {TIMESTAMP_SIZE} bytes"
        ) from None
    return [p[TIMESTAMP_SIZE:] for p in payloads], stamps


def _encode_plain_columns(
    values: list[bytes | None], timestamps: list[int] | None, headers: list[bytes | None] | None
) -> list[bytes | None]:
    return values


def _decode_plain_columns(raws: list[bytes]) -> tuple[list[Any], ...]:
    return (raws,)


def _encode_timestamped_columns(
    values: list[bytes | None], timestamps: list[int] | None, headers: list[bytes | None] | None
) -> list[bytes | None]:
    assert timestamps is not None
    return _stamped_column(values, timestamps)


def _decode_timestamped_columns(raws: list[bytes]) -> tuple[list[Any], ...]:
    return _stamps_of(raws)


def _encode_headers_columns(
    values: list[bytes | None], timestamps: list[int] | None, headers: list[bytes | None] | None
) -> list[bytes | None]:
    return headed_column(values, [None] * len(values) if headers is None else headers)


def _decode_headers_columns(raws: list[bytes]) -> tuple[list[Any], ...]:
    headers, payloads = split_headers_column(raws)
    return payloads, headers


def _encode_timestamped_headers_columns(
    values: list[bytes | None], timestamps: list[int] | None, headers: list[bytes | None] | None
) -> list[bytes | None]:
    assert timestamps is not None
    stamped = _stamped_column(values, timestamps)
    return headed_column(stamped, [None] * len(values) if headers is None else headers)


def _decode_timestamped_headers_columns(raws: list[bytes]) -> tuple[list[Any], ...]:
    headers, payloads = split_headers_column(raws)
    values, stamps = _stamps_of(payloads)
    return values, stamps, headers


PLAIN = WindowValueFormat(
    "WindowStore",
    None,
    DEFAULT_CF,
    (),
    _encode_plain,
    _decode_plain,
    False,
    False,
    _encode_plain_columns,
    _decode_plain_columns,
)
TIMESTAMPED = WindowValueFormat(
    "TimestampedWindowStore",
    ValueAndTimestamp,
    TIMESTAMPED_CF,
    ((DEFAULT_CF, convert_to_timestamped),),
    _encode_timestamped,
    decode_timestamped,
    True,
    False,
    _encode_timestamped_columns,
    _decode_timestamped_columns,
)
HEADERS = WindowValueFormat(
    "WindowStoreWithHeaders",
    ValueAndHeaders,
    WINDOW_HEADERS_CF,
    ((DEFAULT_CF, convert_to_header_format),),
    _encode_headers,
    _decode_headers,
    False,
    True,
    _encode_headers_columns,
    _decode_headers_columns,
)
TIMESTAMPED_HEADERS = WindowValueFormat(
    "TimestampedWindowStoreWithHeaders",
    ValueTimestampHeaders,
    TIMESTAMPED_HEADERS_CF,
    (
        (TIMESTAMPED_CF, convert_to_header_format),
        (DEFAULT_CF, convert_from_plain_to_header_format),
    ),
    _encode_timestamped_headers,
    _decode_timestamped_headers,
    True,
    True,
    _encode_timestamped_headers_columns,
    _decode_timestamped_headers_columns,
)


def encode_seqnum(seqnum: int) -> bytes:
    """The stored last sequence number (4-byte BE int)."""
    return _INT.pack(seqnum)


def decode_seqnum(raw: bytes | None) -> int:
    """The last sequence number given out (0 if none)."""
    return 0 if raw is None else int(_INT.unpack(raw)[0])


__all__ = [
    "HEADERS",
    "MAX_SEQNUM",
    "PLAIN",
    "SEQNUM_KEY",
    "SUFFIX_SIZE",
    "TIMESTAMPED",
    "TIMESTAMPED_HEADERS",
    "TIMESTAMPED_HEADERS_CF",
    "WINDOW_HEADERS_CF",
    "ColumnDecoder",
    "ColumnEncoder",
    "WindowValueFormat",
    "decode_seqnum",
    "decode_window_key",
    "decode_window_key_column",
    "encode_seqnum",
    "encode_window_key",
    "lower_range",
    "lower_range_fixed_size",
    "time_window_for_size",
    "upper_range",
    "upper_range_fixed_size",
    "window_key_suffixes",
]
