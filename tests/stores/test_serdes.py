"""Serdes: byte-identical to Kafka's serializers (golden bytes), round trips (properties)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.errors import InvalidOptionError, SerdeError
from stores.serdes import serde_for

# Hex of what Kafka's serializers produce for these values.
GOLDEN = [
    ("string", "héllo", "68c3a96c6c6f"),
    ("string", "", ""),
    ("binary", b"\x00\xff", "00ff"),
    ("long", 1, "0000000000000001"),
    ("long", -2, "fffffffffffffffe"),
    ("long", 2**63 - 1, "7fffffffffffffff"),
    ("integer", -2, "fffffffe"),
    ("integer", 300, "0000012c"),
    ("short", -1, "ffff"),
    ("double", 1.5, "3ff8000000000000"),
    ("double", -0.0, "8000000000000000"),
    ("float", 1.5, "3fc00000"),
    ("boolean", True, "01"),
    ("boolean", False, "00"),
]


@pytest.mark.parametrize(("type_name", "value", "hex_bytes"), GOLDEN)
def test_golden_bytes_match_kafka(type_name: str, value: object, hex_bytes: str) -> None:
    serde = serde_for(type_name)
    assert serde.serialize(value).hex() == hex_bytes
    assert serde.deserialize(bytes.fromhex(hex_bytes)) == value
    # The vectorized path produces the same bytes, and keeps nulls.
    encoded = serde.encode(pa.array([value, None], serde.arrow_type))
    assert encoded.to_pylist() == [bytes.fromhex(hex_bytes), None]
    assert serde.decode(encoded).to_pylist() == [value, None]


STRATEGIES = {
    "string": st.text(),
    "binary": st.binary(),
    "long": st.integers(-(2**63), 2**63 - 1),
    "integer": st.integers(-(2**31), 2**31 - 1),
    "short": st.integers(-(2**15), 2**15 - 1),
    "double": st.floats(allow_nan=False),
    "float": st.floats(width=32, allow_nan=False),
    "boolean": st.booleans(),
}


@pytest.mark.parametrize("type_name", sorted(STRATEGIES))
def test_vectorized_and_scalar_paths_agree_and_round_trip(type_name: str) -> None:
    serde = serde_for(type_name)

    @settings(max_examples=50, deadline=None)
    @given(st.lists(st.none() | STRATEGIES[type_name], max_size=20), st.integers(0, 3))
    def check(values: list[object], offset: int) -> None:
        array = pa.array(values, serde.arrow_type).slice(min(offset, len(values)))
        encoded = serde.encode(array)
        assert encoded.to_pylist() == [
            None if v is None else serde.serialize(v) for v in array.to_pylist()
        ]
        assert serde.decode(encoded).to_pylist() == array.to_pylist()

    check()


STRUCT = {
    "type": "struct",
    "fields": [
        {"name": "rate", "type": "double", "nullable": True, "metadata": {}},
        {"name": "source", "type": "string", "nullable": True, "metadata": {}},
        {"name": "raw", "type": "binary", "nullable": True, "metadata": {}},
        {"name": "at", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
        {
            "name": "tags",
            "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "hops",
            "type": {"type": "array", "elementType": "integer", "containsNull": True},
            "nullable": True,
            "metadata": {},
        },
    ],
}


def test_struct_json_layout_is_compact_and_documented() -> None:
    serde = serde_for(STRUCT)
    value = {
        "rate": 1.25,
        "source": "ecb",
        "raw": b"\x00\x01",
        "at": dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc),
        "day": dt.date(2024, 5, 1),
        "amount": decimal.Decimal("3.10"),
        "tags": [("a", 1)],
        "hops": [1, None],
    }
    encoded = serde.encode(pa.array([value, None], serde.arrow_type))
    assert encoded[0].as_py() == (
        b'{"rate":1.25,"source":"ecb","raw":"AAE=","at":"2024-05-01T12:00:00Z",'
        b'"day":"2024-05-01","amount":"3.10","tags":{"a":1},"hops":[1,null]}'
    )
    assert serde.decode(encoded).to_pylist() == [value, None]


def test_plain_struct_round_trips_through_the_fast_path() -> None:
    plain = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long", "nullable": True, "metadata": {}},
            {"name": "b", "type": "string", "nullable": True, "metadata": {}},
        ],
    }
    serde = serde_for(plain)
    array = pa.array([{"a": 1, "b": "x"}, {"a": None, "b": None}, None], serde.arrow_type)
    assert serde.encode(array).to_pylist()[:2] == [b'{"a":1,"b":"x"}', b'{"a":null,"b":null}']
    assert serde.decode(serde.encode(array)).equals(array)


def test_bad_bytes_raise_serde_errors() -> None:
    with pytest.raises(SerdeError, match="8-byte"):
        serde_for("long").decode(pa.array([b"\x00"], pa.binary()))
    with pytest.raises(SerdeError, match="UTF-8"):
        serde_for("string").decode(pa.array([b"\xff"], pa.binary()))
    with pytest.raises(SerdeError, match="00/01"):
        serde_for("boolean").decode(pa.array([b"\x02"], pa.binary()))
    with pytest.raises(SerdeError, match="JSON"):
        serde_for(STRUCT).deserialize(b"not json")


def test_unsupported_types_name_the_column_and_what_is_accepted() -> None:
    with pytest.raises(InvalidOptionError, match=r"column 'key' has type date.*accepted: string"):
        serde_for("date", column="key")
    bad_map = {
        "type": "struct",
        "fields": [
            {
                "name": "m",
                "type": {"type": "map", "keyType": "long", "valueType": "long", "valueContainsNull": True},
                "nullable": True,
                "metadata": {},
            }
        ],
    }
    with pytest.raises(InvalidOptionError, match="map keys inside a struct must be strings"):
        serde_for(bad_map, column="value")
