"""``partitioner=kafka`` against Kafka's own partitioner, in the JVM.

For 100,000 random keys of every key type a store takes, our serialized key equals Kafka's
serializer's bytes (``StringSerializer``, ``LongSerializer``, ...), and our vectorized partition
of it equals ``BuiltInPartitioner.partitionForKey(key, n)`` (``Utils.toPositive(Utils.murmur2(
key)) % n``), for several partition counts: partition p of a store holds exactly the keys of
the application's task ``x_p``.
"""

from __future__ import annotations

import json
import random
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from catalog.partition_hash import murmur2_array
from catalog.partitioner import partitions_of
from stores.serdes import serde_for

N = 100_000
COUNTS = (1, 3, 8, 12, 100)


def _random_values(type_json: str, rng: random.Random) -> list[Any]:
    if type_json == "string":
        alphabet = "abcxyz019 é€😀"
        return ["".join(rng.choices(alphabet, k=rng.randint(0, 24))) for _ in range(N)]
    if type_json == "binary":
        return [rng.randbytes(rng.randint(0, 40)) for _ in range(N)]
    if type_json in ("long", "integer", "short"):
        bits = {"long": 64, "integer": 32, "short": 16}[type_json]
        edges = [0, 1, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1))]
        return edges + [rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for _ in range(N - 5)]
    if type_json in ("double", "float"):
        values = [0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf")]
        values += [rng.uniform(-1e9, 1e9) for _ in range(N - len(values))]
        if type_json == "float":  # values a float holds exactly, so both sides see the same one
            values = [struct.unpack(">f", struct.pack(">f", v))[0] for v in values]
        return values
    if type_json == "boolean":
        return [rng.random() < 0.5 for _ in range(N)]
    raise AssertionError(type_json)


ARROW = {
    "string": pa.string(),
    "binary": pa.binary(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "double": pa.float64(),
    "float": pa.float32(),
    "boolean": pa.bool_(),
}


@pytest.mark.parametrize("type_json", sorted(ARROW))
def test_partitions_equal_kafkas_for_every_key_type(kafka_harness: Any, type_json: str) -> None:
    rng = random.Random(f"partitioner-{type_json}")
    values = _random_values(type_json, rng)
    ours = serde_for(type_json, column="key").encode(pa.array(values, type=ARROW[type_json]))
    keys = ours.to_pylist()
    kafka_type = "bytes" if type_json == "binary" else type_json
    assert keys == kafka_harness.serialize(kafka_type, values), "serialized keys differ"
    assert murmur2_array(ours).tolist() == kafka_harness.murmur2(keys)
    for count in COUNTS:
        expected = kafka_harness.murmur2_partitions(keys, count)
        got = partitions_of(ours, count, "kafka")
        mismatches = np.flatnonzero(got != np.asarray(expected))
        assert mismatches.size == 0, (
            f"{type_json} keys, {count} partitions: {mismatches.size} differ, first "
            f"{keys[mismatches[0]]!r}: ours {got[mismatches[0]]}, Kafka {expected[mismatches[0]]}"
        )


def test_struct_keys_partition_as_their_bytes(kafka_harness: Any) -> None:
    """A struct key is stored as JSON bytes (no Kafka serializer to compare with); its
    partition is Kafka's of those bytes."""
    rng = random.Random("partitioner-struct")
    struct_type = {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": False, "metadata": {}},
            {"name": "tag", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    rows = [{"id": rng.randint(-(2**40), 2**40), "tag": rng.choice(["a", None, "é"])} for _ in range(N)]
    arrow = pa.array(rows, type=pa.struct([("id", pa.int64()), ("tag", pa.string())]))
    ours = serde_for(struct_type, column="key").encode(arrow)
    keys = ours.to_pylist()
    assert json.loads(keys[0]) == rows[0]
    assert partitions_of(ours, 12, "kafka").tolist() == kafka_harness.murmur2_partitions(keys, 12)
