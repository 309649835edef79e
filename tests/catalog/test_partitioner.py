"""The store partitioner option: Kafka's murmur2 (``BuiltInPartitioner.partitionForKey``) or
crc32, vectorized, kept in the store's spec and used by writes, reads and queries."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog import Catalog
from catalog.log import spec as spec_module
from catalog.log.spec import StoreSpec
from catalog.operations.query import StateQueryRequest, query
from catalog.partition_hash import murmur2, murmur2_array
from catalog.partitioner import (
    DEFAULT_PARTITIONER,
    PARTITIONERS,
    check_partitioner,
    partition_of,
    partitions_of,
    spark_sql_expression,
)
from stores.errors import CorruptDataError, InvalidOptionError
from stores.query import KeyQuery

#: Kafka's ``UtilsTest.testMurmur2`` (clients/src/test/java/org/apache/kafka/common/utils/), the
#: expected ``Utils.murmur2`` of each key as Java's signed int.
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def kafka_partition(key: bytes, n: int) -> int:
    """Kafka's ``BuiltInPartitioner.partitionForKey``: ``Utils.toPositive(Utils.murmur2(key))
    % n``, toPositive being ``number & 0x7fffffff`` (not the absolute value)."""
    return (murmur2(key) & 0x7FFFFFFF) % n


@pytest.mark.parametrize(("key", "expected"), KAFKA_MURMUR2.items())
def test_murmur2_is_kafkas_on_kafkas_own_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected
    assert murmur2_array(pa.array([key])).tolist() == [expected]


def test_murmur2_array_of_kafkas_vectors_at_once_in_every_arrow_shape() -> None:
    keys, expected = list(KAFKA_MURMUR2), list(KAFKA_MURMUR2.values())
    for array in (
        pa.array(keys, pa.binary()),
        pa.array(keys, pa.large_binary()),
        pa.array([k.decode() for k in keys], pa.string()),
        pa.array([k.decode() for k in keys], pa.large_string()),
        pa.chunked_array([keys[:2], keys[2:]], pa.binary()),
        pa.array([b"pad", *keys, b"pad"], pa.binary()).slice(1, len(keys)),
    ):
        got = murmur2_array(array)
        assert got.dtype == np.int32 and got.tolist() == expected
    assert murmur2_array(pa.array([], pa.binary())).tolist() == []
    assert murmur2_array(pa.chunked_array([], pa.binary())).tolist() == []
    with pytest.raises(TypeError, match="binary or string"):
        murmur2_array(pa.array([1, 2]))


def test_kafka_partitions_of_kafkas_vectors_are_topositive_mod_n() -> None:
    # toPositive clears the sign bit: -973932308 & 0x7fffffff = 1173551340, not 973932308.
    assert partition_of(b"21", 1_000_000_000, "kafka") == 1_173_551_340 % 1_000_000_000
    for n in (1, 2, 3, 7, 12, 100, 10_000):
        expected = [(h & 0x7FFFFFFF) % n for h in KAFKA_MURMUR2.values()]
        assert [partition_of(k, n, "kafka") for k in KAFKA_MURMUR2] == expected
        assert partitions_of(pa.array(list(KAFKA_MURMUR2)), n, "kafka").tolist() == expected
        assert partitions_of(list(KAFKA_MURMUR2), n, partitioner="kafka").tolist() == expected


# Lengths 0..13 cover every tail (0 to 3 bytes after 0 to 3 whole blocks); longer ones more
# blocks, with rows of different block counts side by side.
short_keys = st.binary(min_size=0, max_size=13)
keys_lists = st.lists(st.one_of(short_keys, st.binary(min_size=14, max_size=80)), max_size=60)


@settings(max_examples=300)
@given(keys=keys_lists, nulls=st.lists(st.booleans(), max_size=60), n=st.integers(1, 10_000))
def test_vectorized_murmur2_equals_the_scalar_reference(
    keys: list[bytes], nulls: list[bool], n: int
) -> None:
    mask = [i < len(nulls) and nulls[i] for i in range(len(keys))]
    array = pa.array([None if m else k for k, m in zip(keys, mask, strict=True)], pa.binary())
    # A null counts as empty bytes, as crc32_array counts it.
    expected = [murmur2(b"" if m else k) for k, m in zip(keys, mask, strict=True)]
    assert murmur2_array(array).tolist() == expected
    if keys:
        tail = array.slice(1)
        assert murmur2_array(tail).tolist() == expected[1:]
    present = [k for k, m in zip(keys, mask, strict=True) if not m]
    assert partitions_of(pa.array(present, pa.binary()), n, "kafka").tolist() == [
        kafka_partition(k, n) for k in present
    ]


@given(length=st.integers(0, 13), rows=st.integers(1, 20), data=st.data())
def test_one_length_at_a_time_every_tail(length: int, rows: int, data: st.DataObject) -> None:
    keys = [data.draw(st.binary(min_size=length, max_size=length)) for _ in range(rows)]
    assert murmur2_array(pa.array(keys, pa.binary())).tolist() == [murmur2(k) for k in keys]


def test_empty_key_and_every_tail_of_one_key() -> None:
    key = bytes(range(200, 214))
    prefixes = [key[:i] for i in range(len(key) + 1)]
    assert murmur2_array(pa.array(prefixes, pa.binary())).tolist() == [murmur2(k) for k in prefixes]
    # Kafka's h = seed ^ length, no block, no tail: only the final mix of 0x9747b28c.
    h = 0x9747B28C
    h ^= h >> 13
    h = (h * 0x5BD1E995) & 0xFFFFFFFF
    h ^= h >> 15
    assert murmur2(b"") == (h - (1 << 32) if h >> 31 else h)


@given(keys=st.lists(st.binary(max_size=40), max_size=50), n=st.integers(1, 10_000))
def test_crc32_stays_the_default_and_unchanged(keys: list[bytes], n: int) -> None:
    expected = [zlib.crc32(k) % n for k in keys]
    assert partitions_of(pa.array(keys, pa.binary()), n).tolist() == expected
    assert partitions_of(keys, n, "crc32").tolist() == expected
    assert [partition_of(k, n) for k in keys] == expected


def test_partitioner_names() -> None:
    assert PARTITIONERS == ("crc32", "kafka") and DEFAULT_PARTITIONER == "crc32"
    # The spec (in the log, which imports nothing of the partitioner) agrees on the default.
    assert spec_module.DEFAULT_PARTITIONER == DEFAULT_PARTITIONER
    assert spec_module.KNOWN_PARTITIONERS == PARTITIONERS
    assert check_partitioner(" Kafka ") == "kafka"
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_OPTION\] option 'partitioner' is "
                       r"'murmur2'.*Accepted: 'crc32' .* or 'kafka'"):  # fmt: skip
        check_partitioner("murmur2")
    with pytest.raises(InvalidOptionError, match="did you mean 'kafka'"):
        partitions_of([b"a"], 2, "kafak")


def test_spark_sql_has_no_expression_for_kafkas_partitioner() -> None:
    assert spark_sql_expression("string", 8) == "pmod(crc32(encode(`key`, 'UTF-8')), 8)"
    with pytest.raises(InvalidOptionError, match="partitioner 'kafka' has no Spark SQL expression"):
        spark_sql_expression("string", 8, partitioner="kafka")


# -- the option in the catalog -----------------------------------------------------------------

def _spec_on_disk(warehouse: str, name: str) -> dict:  # type: ignore[type-arg]
    raw = json.loads(Path(warehouse, name, "commits", f"{1:020d}.json").read_text())
    return raw["spec"]  # type: ignore[no-any-return]


def test_a_kafka_store_keeps_its_partitioner(catalog: Catalog, warehouse: str) -> None:
    catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=4, partitioner="kafka")
    catalog.create_store("old", "keyvalue", "string", "long", num_partitions=4)
    reopened = Catalog(warehouse)
    assert reopened.load("kv").spec.partitioner == "kafka"
    assert reopened.load("old").spec.partitioner == "crc32"
    assert reopened.describe("kv")["partitioner"] == "kafka"
    stores = {r["name"]: r["parameters"] for r in reopened.stores_table().to_pylist()}
    assert stores == {"kv": "partitioner=kafka", "old": ""}
    # A crc32 spec is written as before the option (readable by the releases before it); a
    # kafka one is format 3, which those releases refuse ("upgrade") rather than misplace keys.
    kafka_spec, crc_spec = _spec_on_disk(warehouse, "kv"), _spec_on_disk(warehouse, "old")
    assert kafka_spec["partitioner"] == "kafka" and kafka_spec["format_version"] == 3
    assert "partitioner" not in crc_spec and crc_spec["format_version"] == 2


def test_a_spec_without_partitioner_reads_as_crc32() -> None:
    raw = StoreSpec("s", "keyvalue", "string", "long", 3).to_dict()
    assert "partitioner" not in raw
    raw["format_version"] = 1
    assert StoreSpec.from_dict(raw, "record 1", "s").partitioner == "crc32"
    raw["partitioner"] = 7
    with pytest.raises(CorruptDataError, match="malformed kind, parameters or partitioner"):
        StoreSpec.from_dict(raw, "record 1", "s")
    raw.update(partitioner="murmur", format_version=3)
    with pytest.raises(CorruptDataError, match=r"partitioner 'murmur'; .*crc32, kafka.*upgrade"):
        StoreSpec.from_dict(raw, "record 1", "s")


def test_an_unknown_partitioner_creates_nothing(catalog: Catalog) -> None:
    with pytest.raises(InvalidOptionError, match="option 'partitioner' is 'hash'.*Accepted"):
        catalog.create_store("kv", "keyvalue", "string", "long", partitioner="hash")
    assert catalog.list() == []


@pytest.mark.parametrize(
    ("key_type", "arrow_keys", "serialized"),
    [
        ("string", pa.array([f"user-{i}" for i in range(300)] + [""]),
         [f"user-{i}".encode() for i in range(300)] + [b""]),
        # Kafka's LongSerializer: 8 bytes big-endian.
        ("long", pa.array(range(-150, 150), pa.int64()),
         [struct.pack(">q", i) for i in range(-150, 150)]),
    ],
)  # fmt: skip
def test_writes_put_each_key_where_kafkas_partitioner_does(
    catalog: Catalog, key_type: str, arrow_keys: pa.Array, serialized: list[bytes]
) -> None:
    n = 7
    table = catalog.create_store("kv", "keyvalue", key_type, "long", num_partitions=n,
                                 partitioner="kafka")  # fmt: skip
    values = pa.array(range(len(arrow_keys)), pa.int64())
    table.commit(table.stage(arrow_keys, values, None))
    snapshot = table.log.latest_id()
    where = {}
    for partition in range(n):
        for batch in table.read_partition(partition, snapshot):
            for key in batch.column("key").to_pylist():
                where[key] = partition
    assert where == {
        k: kafka_partition(s, n) for k, s in zip(arrow_keys.to_pylist(), serialized, strict=True)
    }
    # Not crc32's placement: the option changed where keys go.
    assert any(zlib.crc32(s) % n != kafka_partition(s, n) for s in serialized)
    # IQv2 opens only the key's own partition: it finds each key there.
    for key, value in list(zip(arrow_keys.to_pylist(), values.to_pylist(), strict=True))[:20]:
        request = StateQueryRequest.in_store("kv").with_query(KeyQuery.with_key(key))
        found = query(catalog, request).get_only_partition_result()
        assert found is not None and found.get_result() == value
