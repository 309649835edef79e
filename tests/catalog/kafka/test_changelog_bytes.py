"""A changelog import keeps the records' bytes (``Stager.add_serialized``), checked by the
store's types as Kafka's deserializers (``StringDeserializer``, ``LongDeserializer``, ...) would
read them, and the columnar export paths that skip work agree with the general ones."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.kafka.changelog import export_partition, records_from_raw
from catalog.kafka.records import RECORD_SCHEMA
from catalog.kafka.restore import import_changelog
from catalog.log.spec import StoreSpec
from catalog.staging import undecodable
from stores.errors import SerdeError
from stores.types import TypeJson


def _records(keys: list[bytes | None], values: list[bytes | None]) -> pa.Table:
    n = len(keys)
    return pa.table({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
        "topic": ["app-s-changelog"] * n, "partition": pa.array([0] * n, pa.int32()),
        "offset": pa.array(range(100, 100 + n), pa.int64()),
        "timestamp": pa.array([10] * n, pa.int64()),
    })  # fmt: skip


def _staged(warehouse: str) -> list[Path]:
    return [p for p in Path(warehouse, "s", "changelog").rglob("*") if p.is_file()]


STRUCT: TypeJson = {"type": "struct", "fields": [
    {"name": "a", "type": "long", "nullable": True, "metadata": {}}]}  # fmt: skip

# (type, good bytes, bad bytes, what the bad bytes break)
CASES = [
    ("string", "é".encode(), b"\xff\xfe", "not UTF-8 (StringDeserializer)"),
    ("long", struct.pack(">q", -2), b"\x00" * 7, "not 8 bytes (LongDeserializer)"),
    ("integer", struct.pack(">i", 3), b"\x00" * 8, "not 4 bytes (IntegerDeserializer)"),
    ("short", struct.pack(">h", 3), b"\x00", "not 2 bytes (ShortDeserializer)"),
    ("double", struct.pack(">d", 1.5), b"\x00" * 4, "not 8 bytes (DoubleDeserializer)"),
    ("float", struct.pack(">f", 1.5), b"", "not 4 bytes (FloatDeserializer)"),
    ("boolean", b"\x01", b"\x02", "not 00/01 (BooleanDeserializer)"),
    (STRUCT, b'{"a":1}', b'{"a":', "not JSON"),
]


@pytest.mark.parametrize(
    ("type_json", "good", "bad", "why"), CASES, ids=[str(c[0])[:10] for c in CASES]
)
def test_undecodable_finds_the_first_bad_element(
    type_json: TypeJson, good: bytes, bad: bytes, why: str
) -> None:
    data = [good] * 1000
    assert undecodable(type_json, pa.array(data + [None], pa.binary())) is None
    for at in (0, 1, 537, 999):
        broken = data.copy()
        broken[at] = bad
        broken[-1] = bad  # a later bad one too: the first is named
        found = undecodable(type_json, pa.array(broken, pa.binary()))
        assert found is not None and found[0] == min(at, 999), why
        assert isinstance(found[1], SerdeError)
    assert undecodable("binary", pa.array([b"\xff", b""])) is None  # ByteArrayDeserializer


@pytest.mark.parametrize("what", ["key", "value"])
def test_an_undecodable_record_is_named_and_nothing_is_staged(
    catalog: Catalog, warehouse: str, what: str
) -> None:
    table = catalog.create_store("s", "keyvalue", "long", "integer", 2, partitioner="kafka")
    keys = [struct.pack(">q", i) for i in range(300)]
    values = [struct.pack(">i", i) for i in range(300)]
    (keys if what == "key" else values)[123] = b"\x00\x01\x02"
    with pytest.raises(
        SerdeError, match=rf"\[UNDECODABLE_{what.upper()}\].*partition 0 offset 223"
    ):
        import_changelog(table, _records(keys, values))  # type: ignore[arg-type]
    assert table.log.latest_id() == 1 and _staged(warehouse) == []


def test_the_records_bytes_are_kept_as_they_are(catalog: Catalog) -> None:
    # Kafka's restore puts the changelog's bytes; a struct's JSON is not rewritten either.
    table = catalog.create_store("s", "keyvalue", "string", STRUCT, partitioner="kafka")
    spaced = b'{ "a" : 7 }'
    import_changelog(table, _records([b"k"], [spaced]))
    assert table.to_arrow().to_pylist() == [{"key": "k", "value": {"a": 7}}]
    exported = pa.Table.from_batches(list(export_partition(table, 0, 2, "app")), RECORD_SCHEMA)
    assert exported.column("value").to_pylist() == [spaced]
    assert json.loads(spaced) == {"a": 7}


@pytest.mark.parametrize("kind", ["window", "session"])
@pytest.mark.parametrize("lengths", [(3,), (1, 2, 5)], ids=["one key length", "several"])
def test_window_and_session_keys_round_trip(
    catalog: Catalog, kind: str, lengths: tuple[int, ...]
) -> None:
    # Keys of one length take a numpy layout, others Arrow's join: the same records.
    params = {"retention_ms": 10_000, "segment_interval_ms": 1_000}
    if kind == "window":
        params["window_size_ms"] = 10
    table = catalog.create_store("s", kind, "binary", "string", partitioner="kafka", **params)
    rng = random.Random(7)
    keys, stamps = [], []
    for i in range(200):
        plain = bytes(rng.randrange(256) for _ in range(rng.choice(lengths)))
        a, b = rng.randrange(5_000), rng.randrange(5_000)
        suffix = (
            struct.pack(">qi", a // 10 * 10, 0)
            if kind == "window"
            else struct.pack(">qq", max(a, b), min(a, b))
        )
        keys.append(plain + suffix)
        stamps.append(a // 10 * 10 if kind == "window" else max(a, b))
    records = _records(keys, [b"v%d" % i for i in range(200)])  # type: ignore[arg-type]
    records = records.set_column(5, "timestamp", pa.array(stamps, pa.int64()))
    import_changelog(table, records)
    exported = pa.Table.from_batches(list(export_partition(table, 0, 2, "app")), RECORD_SCHEMA)
    out_stamps = exported.column("timestamp").to_numpy()
    assert (np.diff(out_stamps) >= 0).all()  # ascending time: restore drops none
    # Distinct (key, window) records all come back, as they went (last value per key).
    latest = {k: (v, t) for k, v, t in zip(keys, records.column("value").to_pylist(), stamps)}
    got = {k: (v, t) for k, v, t in zip(exported.column("key").to_pylist(),
                                        exported.column("value").to_pylist(), out_stamps.tolist())}  # fmt: skip
    assert got == latest


def test_a_versioned_scan_in_any_order_gives_the_same_records() -> None:
    # A state directory's scan need not come sorted; a store's does (then no sort is made).
    spec = StoreSpec(name="s", kind="versioned", key_type="binary", value_type="binary",
                     num_partitions=1,
                     params={"history_retention_ms": 100, "segment_interval_ms": 10})  # fmt: skip
    rows = [(b"a", b"1", 0, 5), (b"a", b"2", 5, None), (b"b", b"3", 2, 4), (b"b", b"4", 6, 8),
            (b"c", b"5", 1, None)]  # fmt: skip
    sorted_raw = _raw(rows)
    expected = records_from_raw(sorted_raw, spec, "t", 0)
    assert expected.column("timestamp").to_pylist() == [0, 1, 2, 4, 5, 6, 8]
    assert expected.column("value").to_pylist() == [b"1", b"5", b"3", None, b"2", b"4", None]
    for seed in range(5):
        shuffled = rows.copy()
        random.Random(seed).shuffle(shuffled)
        got = records_from_raw(_raw(shuffled), spec, "t", 0)
        assert sorted(zip(*got.to_pydict().values()), key=repr) == sorted(
            zip(*expected.to_pydict().values()), key=repr
        )
        assert got.column("timestamp").to_pylist() == expected.column("timestamp").to_pylist()


def _raw(rows: list[tuple[bytes, bytes, int, int | None]]) -> pa.Table:
    return pa.table({
        "key": pa.array([r[0] for r in rows], pa.binary()),
        "value": pa.array([r[1] for r in rows], pa.binary()),
        "valid_from": pa.array([r[2] for r in rows], pa.int64()),
        "valid_to": pa.array([r[3] for r in rows], pa.int64()),
    })  # fmt: skip
