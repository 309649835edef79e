"""The store partitioner: ``crc32(serialized key) mod numPartitions``.

It is stable (it depends on the key's serialized bytes only, never on Python's hash seed or the
Spark version) and Spark SQL can compute it too, so a DataFrame can be pre-partitioned the way the
store is: ``spark_sql_expression`` returns the expression, e.g. for a string key and 8 partitions
``pmod(crc32(encode(`key`, 'UTF-8')), 8)``. CRC-32 is the IEEE polynomial of zlib and Spark's
``crc32``. Kafka's producer uses murmur2, which Spark SQL cannot compute over bytes.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from catalog.partition_hash import crc32_array
from stores.errors import InvalidOptionError
from stores.types import TypeJson, describe


def partition_of(key: bytes, num_partitions: int) -> int:
    """The partition of one serialized key."""
    return zlib.crc32(key) % num_partitions


def partitions_of(keys: pa.Array | Sequence[bytes], num_partitions: int) -> np.ndarray:
    """The partitions of many serialized keys (a binary Arrow array, computed in bulk by
    ``catalog.partition_hash``, or a sequence of bytes), as an int32 array."""
    if isinstance(keys, (pa.Array, pa.ChunkedArray)):
        crcs = crc32_array(keys)
    else:
        crc = zlib.crc32
        crcs = np.fromiter((crc(k) for k in keys), dtype=np.uint32, count=len(keys))
    return (crcs % np.uint32(num_partitions)).astype(np.int32)


def _serialized(type_json: TypeJson, column: str) -> str:
    """A Spark SQL expression for the Kafka-serialized bytes of ``column``."""
    if type_json == "string":
        return f"encode({column}, 'UTF-8')"
    if type_json == "binary":
        return column
    if type_json == "long":
        return f"unhex(lpad(hex({column}), 16, '0'))"
    if type_json == "integer":
        return f"unhex(lpad(hex(cast({column} AS BIGINT) & 4294967295), 8, '0'))"
    if type_json == "short":
        return f"unhex(lpad(hex(cast({column} AS BIGINT) & 65535), 4, '0'))"
    if type_json == "boolean":
        return f"unhex(CASE WHEN {column} THEN '01' ELSE '00' END)"
    raise InvalidOptionError(
        f"keys of type {describe(type_json)} have no Spark SQL partition expression; "
        "accepted: string, binary, bigint, int, smallint, boolean"
    )


def spark_sql_expression(type_json: TypeJson, num_partitions: int, column: str = "`key`") -> str:
    """A Spark SQL expression computing the store partition of ``column``.

    Raises:
        InvalidOptionError: the key type has no such expression (doubles, floats, structs).
    """
    return f"pmod(crc32({_serialized(type_json, column)}), {num_partitions})"
