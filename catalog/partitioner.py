"""The store partitioner: which partition of a store holds a key, from its serialized bytes.

A store picks its partitioner when it is created (option ``partitioner``, kept in its spec):

| name      | partition of a serialized key                     | Spark SQL can compute it |
|-----------|---------------------------------------------------|--------------------------|
| ``crc32`` | ``crc32(key) mod numPartitions`` (the default)    | yes: ``spark_sql_expression`` |
| ``kafka`` | ``toPositive(murmur2(key)) % numPartitions``: Kafka's ``BuiltInPartitioner.partitionForKey``, the default partitioner of Kafka's producer and of Kafka Streams | no (Spark has no murmur2 over bytes) |

Both depend on the key's serialized bytes only, never on Python's hash seed or the Spark
version. With ``kafka`` and the application's partition count, partition ``p`` of a store holds
exactly the keys of Kafka Streams task ``x_p`` (whose input topic the default partitioner
filled). ``crc32`` stays the default because Spark SQL computes it, so a DataFrame can be
pre-partitioned the way the store is: ``spark_sql_expression`` returns the expression, e.g. for a
string key and 8 partitions ``pmod(crc32(encode(`key`, 'UTF-8')), 8)``. CRC-32 is the IEEE
polynomial of zlib and Spark's ``crc32``.
"""

from __future__ import annotations

import difflib
import zlib
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from catalog.partition_hash import crc32_array, murmur2, murmur2_array
from stores.errors import InvalidOptionError
from stores.types import TypeJson, describe

#: The partitioner of a store created without option ``partitioner`` (and of every store whose
#: spec names none: those created before the option).
DEFAULT_PARTITIONER = "crc32"
#: Each partitioner by name: the hash of one serialized key, and of a binary column (as the
#: ``uint32`` the partition is taken ``mod numPartitions`` of).
_HASHES: dict[str, tuple[Callable[[bytes], int], Callable[[pa.Array], np.ndarray]]] = {
    "crc32": (zlib.crc32, crc32_array),
    # Kafka's Utils.toPositive: the sign bit cleared (not the absolute value).
    "kafka": (
        lambda key: murmur2(key) & 0x7FFFFFFF,
        lambda keys: murmur2_array(keys).view(np.uint32) & np.uint32(0x7FFFFFFF),
    ),
}
#: The accepted values of option ``partitioner``, the default first.
PARTITIONERS = tuple(_HASHES)
_ACCEPTED = (
    "'crc32' (crc32(key) mod numPartitions, the default; Spark SQL computes it) or 'kafka' "
    "(Kafka's default partitioner, murmur2: partition p holds the keys of Kafka Streams task x_p)"
)


def check_partitioner(name: object) -> str:
    """``name`` as a partitioner's name (lower-cased).

    Raises:
        InvalidOptionError: not one of ``PARTITIONERS`` (names them, and the closest).
    """
    text = str(name).strip().lower()
    if text in _HASHES:
        return text
    close = difflib.get_close_matches(text, PARTITIONERS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InvalidOptionError(f"option 'partitioner' is {name!r}{hint} Accepted: {_ACCEPTED}")


def partition_of(key: bytes, num_partitions: int, partitioner: str = DEFAULT_PARTITIONER) -> int:
    """The partition of one serialized key.

    Raises:
        InvalidOptionError: an unknown ``partitioner``.
    """
    one, _ = _HASHES[check_partitioner(partitioner)]
    return one(key) % num_partitions


def partitions_of(
    keys: pa.Array | pa.ChunkedArray | Sequence[bytes],
    num_partitions: int,
    partitioner: str = DEFAULT_PARTITIONER,
) -> np.ndarray:
    """The partitions of many serialized keys (a binary Arrow array, computed in bulk by
    ``catalog.partition_hash``, or a sequence of bytes), as an int32 array.

    ``partitions_of(keys, n, "kafka")[i]`` is Kafka's
    ``BuiltInPartitioner.partitionForKey(keys[i], n)``.

    Raises:
        InvalidOptionError: an unknown ``partitioner``.
    """
    _, many = _HASHES[check_partitioner(partitioner)]
    if not isinstance(keys, (pa.Array, pa.ChunkedArray)):
        keys = pa.array(keys, pa.binary())
    return (many(keys) % np.uint32(num_partitions)).astype(np.int32)


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


def spark_sql_expression(
    type_json: TypeJson,
    num_partitions: int,
    column: str = "`key`",
    partitioner: str = DEFAULT_PARTITIONER,
) -> str:
    """A Spark SQL expression computing the store partition of ``column``.

    Raises:
        InvalidOptionError: the key type has no such expression (doubles, floats, structs),
            or the partitioner is ``kafka`` (Spark SQL has no murmur2 over bytes: compute
            ``partitions_of`` over the serialized keys, e.g. in ``mapInArrow``).
    """
    if check_partitioner(partitioner) != "crc32":
        raise InvalidOptionError(
            f"partitioner {partitioner!r} has no Spark SQL expression (Spark SQL has no "
            "murmur2 over bytes); accepted: a store with partitioner 'crc32', or "
            "catalog.partitioner.partitions_of over the serialized keys (e.g. in mapInArrow)"
        )
    return f"pmod(crc32({_serialized(type_json, column)}), {num_partitions})"
