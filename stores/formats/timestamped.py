"""KIP-258's value layout: a value with the timestamp of the record that wrote it.

| bytes  | field                                               |
|--------|-----------------------------------------------------|
| 0..7   | timestamp, 8-byte big-endian two's complement (ms)  |
| 8..    | the serialized value                                |

Column families (Kafka's ``RocksDBTimestampedStore``): entries in the new format live in
``keyValueWithTimestamp``; a store created before KIP-258 keeps plain values in ``default``.
Reading a plain value converts it with timestamp ``-1`` ("unknown"): ``convert_to_timestamped``.
"""

from __future__ import annotations

import struct

from stores.errors import CorruptDataError
from stores.records import UNKNOWN_TIMESTAMP, ValueAndTimestamp

#: The column family of KIP-258's format (Kafka's ``RocksDBTimestampedStore``).
TIMESTAMPED_CF = "keyValueWithTimestamp"
TIMESTAMP_SIZE = 8
_LONG = struct.Struct(">q")


def encode_timestamped(value: bytes, timestamp: int) -> bytes:
    """``[8-byte BE timestamp][value]``."""
    return _LONG.pack(timestamp) + value


def decode_timestamped(raw: bytes) -> ValueAndTimestamp[bytes]:
    """Split ``[timestamp][value]``.

    Raises:
        CorruptDataError: fewer than 8 bytes.
    """
    if len(raw) < TIMESTAMP_SIZE:
        raise CorruptDataError(
            f"a timestamped value needs at least {TIMESTAMP_SIZE} bytes, got {len(raw)}"
        )
    return ValueAndTimestamp(raw[TIMESTAMP_SIZE:], _LONG.unpack_from(raw)[0])


def raw_timestamp(raw: bytes) -> int:
    """The timestamp of ``[timestamp][value]`` without copying the value."""
    if len(raw) < TIMESTAMP_SIZE:
        raise CorruptDataError(
            f"a timestamped value needs at least {TIMESTAMP_SIZE} bytes, got {len(raw)}"
        )
    return int(_LONG.unpack_from(raw)[0])


def convert_to_timestamped(plain: bytes) -> bytes:
    """A pre-KIP-258 value in the new format, with timestamp -1 (Kafka's
    ``convertToTimestampedFormat``)."""
    return encode_timestamped(plain, UNKNOWN_TIMESTAMP)


__all__ = [
    "TIMESTAMPED_CF",
    "TIMESTAMP_SIZE",
    "convert_to_timestamped",
    "decode_timestamped",
    "encode_timestamped",
    "raw_timestamp",
]
