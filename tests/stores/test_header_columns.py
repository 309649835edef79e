"""The ``headers`` column in bulk (``stores.columns.headers``) against KIP-1271's per-row
encoding and decoding (``stores.formats.headers``)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stores.columns.headers import HEADERS_TYPE, headers_from_arrow, headers_to_arrow
from stores.errors import CorruptDataError, InvalidOptionError
from stores.formats.headers import encode_headers

# Keys and values around the one-byte varint border (zig-zag: 63 bytes fit one byte).
_HEADER = st.fixed_dictionaries(
    {
        "key": st.text(max_size=70),
        "value": st.one_of(st.none(), st.binary(max_size=70)),
    }
)
_ROWS = st.lists(st.one_of(st.none(), st.lists(_HEADER, max_size=4)), max_size=30)


@given(_ROWS, st.integers(0, 3))
def test_headers_round_trip_as_kafka_encodes_them(rows: list, cut: int) -> None:
    column = pa.array(rows, HEADERS_TYPE).slice(min(cut, len(rows)))
    kept = column.to_pylist()
    encoded = headers_from_arrow(column)
    assert encoded.to_pylist() == [
        encode_headers([(h["key"], h["value"]) for h in r]) if r else b"" for r in kept
    ]
    stored = pa.array([None if r is None else e for r, e in zip(kept, encoded.to_pylist())])
    assert headers_to_arrow(stored).to_pylist() == kept


def test_a_null_header_key_is_refused() -> None:
    column = pa.array([[{"key": None, "value": b"v"}]], HEADERS_TYPE)
    with pytest.raises(InvalidOptionError, match="NULL_HEADER_KEY"):
        headers_from_arrow(column)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x03", "negative header count"),  # zig-zag 3 is -2
        (b"\x02\x0aab", "overruns"),  # a 5-byte key in 2 bytes
        (b"\x02\x02a\x01extra", "trailing bytes"),
        (b"\x02\x02\xff\x01", "not UTF-8"),
        (b"\x02\x80", "inside a varint"),
    ],
)
def test_damaged_stored_headers_are_refused(raw: bytes, message: str) -> None:
    with pytest.raises(CorruptDataError, match=message):
        headers_to_arrow(pa.array([b"", raw], pa.binary()))
