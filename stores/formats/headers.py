"""KIP-1271's layouts: record headers stored in front of a value.

Value layout: ``[varint headersSize][headersBytes][payload]``, where ``payload`` is what the
store kept before headers (``[8-byte timestamp][value]`` for timestamped stores, ``[value]``
for plain window stores).

``headersBytes`` (Kafka's ``HeadersSerializer``):

| field                 | encoding                                          |
|-----------------------|---------------------------------------------------|
| header count          | varint                                            |
| per header: key size  | varint                                            |
| key                   | UTF-8                                             |
| value size            | varint, ``-1`` for a null value                   |
| value                 | bytes (absent for a null value)                   |

Empty headers serialize to no bytes at all, so their whole prefix is the single byte ``00``
(``headersSize`` 0). Every varint is Kafka's ``ByteUtils.writeVarint``: a 32-bit zig-zag
varint (``0 -> 00``, ``-1 -> 01``, ``1 -> 02``, ``300 -> D8 04``). Headers keep their order and
duplicate keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stores.errors import CorruptDataError, InvalidOptionError, SerdeError
from stores.formats.timestamped import encode_timestamped
from stores.records import UNKNOWN_TIMESTAMP, Headers, to_headers

#: The prefix of a value with no headers.
EMPTY_HEADERS_PREFIX = b"\x00"
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


def encode_varint(value: int) -> bytes:
    """Kafka's ``ByteUtils.writeVarint``: zig-zag, then 7 bits a byte, low bits first.

    Raises:
        SerdeError: ``value`` does not fit in a signed 32-bit int.
    """
    if not _INT_MIN <= value <= _INT_MAX:
        raise SerdeError(f"varint {value} does not fit in 32 bits")
    zigzag = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while zigzag & ~0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def decode_varint(data: bytes, pos: int = 0) -> tuple[int, int]:
    """Read a varint at ``pos``; return ``(value, position after it)``.

    Raises:
        CorruptDataError: the varint is truncated or longer than 5 bytes.
    """
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise CorruptDataError("truncated varint in stored headers")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 28:
            raise CorruptDataError("varint longer than 5 bytes in stored headers")
    result &= 0xFFFFFFFF
    return (result >> 1) ^ -(result & 1), pos


def encode_headers(headers: Iterable[Any] | None) -> bytes:
    """``headersBytes`` of ``headers`` (no bytes for none)."""
    items = to_headers(headers)
    if not items:
        return b""
    out = [encode_varint(len(items))]
    for key, value in items:
        try:
            raw_key = key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidOptionError(f"header key {key!r} cannot be encoded as UTF-8: {exc}") from exc
        out.append(encode_varint(len(raw_key)))
        out.append(raw_key)
        if value is None:
            out.append(encode_varint(-1))
        else:
            out.append(encode_varint(len(value)))
            out.append(value)
    return b"".join(out)


def decode_headers(data: bytes) -> Headers:
    """Parse ``headersBytes`` (empty bytes are empty headers).

    Raises:
        CorruptDataError: the bytes do not follow the layout.
    """
    if not data:
        return ()
    count, pos = decode_varint(data)
    if count < 0:
        raise CorruptDataError(f"negative header count {count} in stored headers")
    out: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        size, pos = decode_varint(data, pos)
        if size < 0 or pos + size > len(data):
            raise CorruptDataError("header key overruns the stored headers")
        try:
            key = data[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptDataError(f"header key is not UTF-8: {exc}") from exc
        pos += size
        size, pos = decode_varint(data, pos)
        if size == -1:
            out.append((key, None))
            continue
        if size < 0 or pos + size > len(data):
            raise CorruptDataError("header value overruns the stored headers")
        out.append((key, data[pos : pos + size]))
        pos += size
    if pos != len(data):
        raise CorruptDataError(f"{len(data) - pos} trailing byte(s) after stored headers")
    return tuple(out)


def with_headers(headers_bytes: bytes, payload: bytes) -> bytes:
    """``[varint headersSize][headersBytes][payload]`` from already encoded headers."""
    return encode_varint(len(headers_bytes)) + headers_bytes + payload


def encode_with_headers(headers: Iterable[Any] | None, payload: bytes) -> bytes:
    """``[varint headersSize][headersBytes][payload]``."""
    return with_headers(encode_headers(headers), payload)


def split_headers(raw: bytes) -> tuple[bytes, bytes]:
    """Split a stored value into ``(headersBytes, payload)`` without parsing the headers.

    Raises:
        CorruptDataError: the size prefix is bad or overruns the value.
    """
    size, pos = decode_varint(raw)
    if size < 0 or pos + size > len(raw):
        raise CorruptDataError(f"headers size {size} overruns a {len(raw)}-byte value")
    return raw[pos : pos + size], raw[pos + size :]


def decode_with_headers(raw: bytes) -> tuple[Headers, bytes]:
    """Split and parse a stored value into ``(headers, payload)``."""
    headers_bytes, payload = split_headers(raw)
    return decode_headers(headers_bytes), payload


def convert_to_header_format(value: bytes) -> bytes:
    """A value of the format before headers, with empty headers in front (Kafka's
    ``HeadersBytesStore.convertToHeaderFormat``): ``[ts][v] -> 00 [ts][v]``, ``[v] -> 00 [v]``."""
    return EMPTY_HEADERS_PREFIX + value


def convert_from_plain_to_header_format(value: bytes) -> bytes:
    """A plain (pre-KIP-258) value as a timestamped value with headers: empty headers and
    timestamp -1 (Kafka's ``convertFromPlainToHeaderFormat``)."""
    return EMPTY_HEADERS_PREFIX + encode_timestamped(value, UNKNOWN_TIMESTAMP)



#: ``varint(n)`` for the sizes that fit one byte (zig-zag: ``n << 1`` below 64).
_SMALL_SIZES = [bytes((n << 1,)) for n in range(64)]


def headed_column(
    payloads: list[bytes | None], headers: list[bytes | None]
) -> list[bytes | None]:
    """``[varint hsize][headersBytes][payload]`` per row (None payloads stay None); an empty
    or None ``headersBytes`` is the one-byte prefix ``00``, as for empty headers.

    Raises:
        TypeError: a payload or headersBytes is not bytes.
    """
    small = _SMALL_SIZES
    return [
        None if p is None
        else (small[len(h)] + h + p if len(h) < 64 else with_headers(h, p)) if h
        else small[0] + p
        for p, h in zip(payloads, headers)
    ]


def split_headers_column(raws: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """``(headersBytes, payloads)`` of header-aware stored values, headers not parsed.

    Raises:
        CorruptDataError: a value's headers size is bad or overruns it.
    """
    headers: list[bytes] = []
    payloads: list[bytes] = []
    add_headers, add_payload = headers.append, payloads.append
    for raw in raws:
        first = raw[0] if raw else 0x80
        if first == 0:  # the common case: no headers, nothing to parse
            add_headers(b"")
            add_payload(raw[1:])
        elif first < 0x80 and not first & 1 and (first >> 1) < len(raw):
            # A one-byte size (below 64 bytes of headers) that fits: sliced inline.
            end = 1 + (first >> 1)
            add_headers(raw[1:end])
            add_payload(raw[end:])
        else:
            h, p = split_headers(raw)
            add_headers(h)
            add_payload(p)
    return headers, payloads


__all__ = [
    "headed_column",
    "split_headers_column",
    "EMPTY_HEADERS_PREFIX",
    "convert_from_plain_to_header_format",
    "convert_to_header_format",
    "decode_headers",
    "decode_varint",
    "decode_with_headers",
    "encode_headers",
    "encode_varint",
    "encode_with_headers",
    "split_headers",
    "with_headers",
]
