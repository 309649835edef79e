"""Byte layouts of the session stores: Kafka's ``SessionKeySchema`` keys and KIP-1271 values.

A session key is Kafka's ``SessionKeySchema.toBinary``: the serialized record key, then the
session's end, then its start (8-byte big-endian signed longs, as Java's ``ByteBuffer`` writes
them). Sessions are filed in the segment of their *end* time (``segmentTimestamp`` is the end),
so a whole segment of closed sessions expires at once. Kafka keeps one RocksDB per segment; this
library keeps *logical* segments (an 8-byte segment-id prefix, :mod:`stores.segments.store`) in
one RocksDB.

==============================  ============================  ==================================
column family                   RocksDB key                   RocksDB value
==============================  ============================  ==================================
``default``                     ``segment (8) + key +``       ``SessionStore``: the aggregate;
                                ``end (8) + start (8)``       ``SessionStoreWithHeaders``: a
                                                              plain store's legacy aggregate
                                                              (read with empty headers)
``sessionKeyValueWithHeaders``  same                          ``[varint headersSize][headers]``
                                                              ``[aggregate]``
``segmentsMetadata``            see :mod:`stores.segments`    observed stream time (8)
==============================  ============================  ==================================

The value of ``SessionStoreWithHeaders`` is Kafka's ``AggregationWithHeaders`` serialization
(``AggregationWithHeadersSerializer``): ``headersSize`` is a zig-zag varint, empty headers are no
bytes at all, so an aggregate with no headers is stored as ``00 + aggregate``
(:mod:`stores.formats.headers`). ``sessionKeyValueWithHeaders`` is Kafka's
``RocksDBMigratingSessionStoreWithHeaders.SESSION_STORE_HEADERS_VALUES_COLUMN_FAMILY_NAME``.

Key order inside a segment is the byte order of the whole binary key, so sessions of keys that
share a prefix (``a`` and ``aa``) interleave by bytes, exactly as in Kafka's RocksDB.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stores.errors import CorruptDataError, InvalidOptionError
from stores.formats.headers import (
    convert_to_header_format,
    decode_with_headers,
    encode_with_headers,
    headed_column,
    split_headers_column,
)
from stores.records import Headers, ValueAndHeaders
from stores.segments import ordered
from stores.segments.store import Converter

#: Kafka's ``RocksDBMigratingSessionStoreWithHeaders`` column family of header-aware values.
SESSION_HEADERS_CF = "sessionKeyValueWithHeaders"
#: The column family of a plain session store (and of legacy entries of a headers store).
SESSION_PLAIN_CF = "default"
TIMESTAMP_SIZE = 8
#: ``end (8) + start (8)`` after the record key.
SUFFIX_SIZE = 2 * TIMESTAMP_SIZE
MAX_LONG = 2**63 - 1
MIN_LONG = -(2**63)

_SUFFIX = struct.Struct(">qq")
_LONG = struct.Struct(">q")
_MIN_SUFFIX = bytes(SUFFIX_SIZE)


def encode_session_key(key: bytes, start: int, end: int) -> bytes:
    """Kafka's ``SessionKeySchema.toBinary(key, start, end)``: ``key + end (8) + start (8)``."""
    return key + _SUFFIX.pack(end, start)


def decode_session_key(binary: bytes) -> tuple[bytes, int, int]:
    """Split a binary session key into ``(key, start, end)``.

    Raises:
        CorruptDataError: ``binary`` is shorter than the two timestamps.
    """
    if len(binary) < SUFFIX_SIZE:
        raise CorruptDataError(
            f"a session key needs at least {SUFFIX_SIZE} bytes, got {len(binary)}"
        )
    end, start = _SUFFIX.unpack_from(binary, len(binary) - SUFFIX_SIZE)
    return binary[:-SUFFIX_SIZE], start, end


def session_key_suffixes(starts: list[int], ends: list[int]) -> list[bytes]:
    """The ``[end][start]`` suffixes of binary session keys (:func:`encode_session_key` is
    ``key + suffix``).

    Raises:
        struct.error: a time is out of range.
    """
    pack = _SUFFIX.pack
    return [pack(end, start) for start, end in zip(starts, ends)]


def decode_session_key_column(binaries: list[bytes]) -> tuple[list[bytes], list[int], list[int]]:
    """``(keys, starts, ends)`` of binary session keys (:func:`decode_session_key` per row).

    Raises:
        CorruptDataError: a binary key is shorter than the two timestamps.
    """
    sizes = set(map(len, binaries))
    if sizes and min(sizes) < SUFFIX_SIZE:
        raise CorruptDataError(f"a session key needs at least {SUFFIX_SIZE} bytes")
    if len(sizes) == 1:
        # Keys of one size (the usual case): the times come out of one C-level unpack.
        (size,) = sizes
        layout = struct.Struct(f">{size - SUFFIX_SIZE}xqq")
        times = list(layout.iter_unpack(b"".join(binaries)))
        ends = [end for end, _ in times]
        starts = [start for _, start in times]
    else:
        unpack = _LONG.unpack_from
        ends = [unpack(binary, len(binary) - SUFFIX_SIZE)[0] for binary in binaries]
        starts = [unpack(binary, len(binary) - TIMESTAMP_SIZE)[0] for binary in binaries]
    return [binary[:-SUFFIX_SIZE] for binary in binaries], starts, ends


def session_end(binary: bytes) -> int:
    """The end time of a binary session key (Kafka's ``extractEndTimestamp``).

    Raises:
        CorruptDataError: ``binary`` is shorter than the two timestamps.
    """
    return decode_session_key(binary)[2]


def lower_range(key_from: bytes) -> bytes:
    """Kafka's ``SessionKeySchema.lowerRange``: ``key_from`` + 16 zero bytes
    (``OrderedBytes.lowerRange``), below every binary key of a key >= ``key_from``."""
    return ordered.lower_range(key_from, _MIN_SUFFIX)


def upper_range(key_to: bytes, latest_start: int) -> bytes:
    """Kafka's ``SessionKeySchema.upperRange``: ``OrderedBytes.upperRange(key_to, [MAX_LONG
    (8)][latest_start (8)])``, byte for byte.

    The suffix starts with ``7f``, so the bound keeps the first byte of ``key_to`` and then its
    bytes while they are >= ``7f``. It is not a bound of every session of a key <= ``key_to``
    (a shorter key whose end's bytes sort above what follows it in ``key_to``: ``b""`` with an
    end of 2**55 or more against ``key_to`` ``b"\\x00"``); Kafka never reads those sessions in a
    key-range search, and we scan the same bounds so that we answer as Kafka does
    (:mod:`stores.segments.ordered`).
    """
    return ordered.upper_range(key_to, _SUFFIX.pack(MAX_LONG, latest_start))


def lower_range_fixed_size(key: bytes, earliest_end: int) -> bytes:
    """Kafka's ``SessionKeySchema.lowerRangeFixedSize``: the session ``[0, max(0,
    earliest_end)]`` of ``key``, the first binary key of a session of ``key`` ending then."""
    return encode_session_key(key, 0, max(0, earliest_end))


def upper_range_fixed_size(key: bytes, latest_start: int) -> bytes:
    """Kafka's ``SessionKeySchema.upperRangeFixedSize``: the session ``[latest_start,
    MAX_LONG]`` of ``key``, the last binary key of a session of ``key`` starting by then."""
    return encode_session_key(key, latest_start, MAX_LONG)


def encode_with_headers_value(value: bytes, headers: Headers) -> bytes:
    """``[varint headersSize][headers][aggregate]`` (``AggregationWithHeadersSerializer``)."""
    return encode_with_headers(headers, value)


def decode_with_headers_value(raw: bytes) -> ValueAndHeaders[bytes]:
    """Parse a header-aware stored value into ``ValueAndHeaders(aggregate, headers)``.

    Raises:
        CorruptDataError: the bytes do not follow the layout.
    """
    headers, payload = decode_with_headers(raw)
    return ValueAndHeaders(payload, headers)


def convert_plain_value(plain: bytes) -> bytes:
    """A legacy plain aggregate in the header-aware layout with empty headers (Kafka's
    ``HeadersBytesStore.convertToHeaderFormat``): ``v -> 00 + v``."""
    return convert_to_header_format(plain)


# -- value formats of the two store classes ---------------------------------------------------


@dataclass(frozen=True)
class SessionValueFormat:
    """How one session store class turns its aggregates into bytes, and where it keeps them:
    per value (``encode`` refuses a wrong type; None is a delete) and per column (the bulk
    paths: values as bytes or None, headers as KIP-1271 ``headersBytes``)."""

    data_cf: str
    legacy_cfs: tuple[tuple[str, Converter], ...]
    headers: bool
    encode: Callable[[Any], bytes | None]
    decode: Callable[[bytes], Any]
    encode_columns: Callable[[list[bytes | None], list[bytes | None] | None], list[bytes | None]]
    decode_columns: Callable[[list[bytes]], tuple[list[bytes], ...]]


def _encode_plain(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidOptionError(f"value must be bytes or None, got {type(value).__name__}")


def _decode_plain(raw: bytes) -> bytes:
    return raw


def _encode_plain_columns(
    values: list[bytes | None], headers: list[bytes | None] | None
) -> list[bytes | None]:
    return values


def _decode_plain_columns(raws: list[bytes]) -> tuple[list[bytes], ...]:
    return (raws,)


def _encode_headers(value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, ValueAndHeaders):
        raise InvalidOptionError(
            f"value must be ValueAndHeaders or None, got {type(value).__name__}"
        )
    if value.value is None:
        return None  # Kafka: an aggregate serialized to null is a delete
    payload = value.value
    if not isinstance(payload, bytes):
        if not isinstance(payload, (bytearray, memoryview)):
            raise InvalidOptionError(
                f"ValueAndHeaders.value must be bytes, got {type(payload).__name__}"
            )
        payload = bytes(payload)
    return encode_with_headers_value(payload, value.headers)


def _encode_headers_columns(
    values: list[bytes | None], headers: list[bytes | None] | None
) -> list[bytes | None]:
    return headed_column(values, [None] * len(values) if headers is None else headers)


def _decode_headers_columns(raws: list[bytes]) -> tuple[list[bytes], ...]:
    headers, payloads = split_headers_column(raws)
    return payloads, headers


#: ``SessionStore``: the aggregate as is, in ``default``.
PLAIN = SessionValueFormat(
    SESSION_PLAIN_CF, (), False, _encode_plain, _decode_plain, _encode_plain_columns,
    _decode_plain_columns,
)  # fmt: skip
#: ``SessionStoreWithHeaders``: ``[varint headersSize][headers][aggregate]``, reading a plain
#: store's ``default`` family lazily with empty headers.
WITH_HEADERS = SessionValueFormat(
    SESSION_HEADERS_CF, ((SESSION_PLAIN_CF, convert_plain_value),), True, _encode_headers,
    decode_with_headers_value, _encode_headers_columns, _decode_headers_columns,
)  # fmt: skip


__all__ = [
    "MAX_LONG",
    "MIN_LONG",
    "PLAIN",
    "WITH_HEADERS",
    "SessionValueFormat",
    "SESSION_HEADERS_CF",
    "SESSION_PLAIN_CF",
    "SUFFIX_SIZE",
    "TIMESTAMP_SIZE",
    "convert_plain_value",
    "decode_session_key",
    "decode_session_key_column",
    "decode_with_headers_value",
    "encode_session_key",
    "encode_with_headers_value",
    "lower_range",
    "lower_range_fixed_size",
    "session_end",
    "session_key_suffixes",
    "upper_range",
    "upper_range_fixed_size",
]
