"""Golden bytes, round trips and corrupt input of KIP-258's and KIP-1271's value layouts
(:mod:`stores.formats.timestamped`, :mod:`stores.formats.headers`).

The golden values are worked out by hand from Kafka's ``ByteUtils.writeVarint`` (32-bit zig-zag,
7 bits a byte, low bits first), ``HeadersSerializer`` and ``LongSerializer`` (big-endian).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stores.errors import CorruptDataError, InvalidOptionError, SerdeError
from stores.formats.headers import (
    EMPTY_HEADERS_PREFIX,
    convert_from_plain_to_header_format,
    convert_to_header_format,
    decode_headers,
    decode_varint,
    decode_with_headers,
    encode_headers,
    encode_varint,
    encode_with_headers,
    split_headers,
    with_headers,
)
from stores.formats.timestamped import (
    TIMESTAMPED_CF,
    convert_to_timestamped,
    decode_timestamped,
    encode_timestamped,
    raw_timestamp,
)
from stores.records import ValueAndTimestamp

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

HEADER_KEYS = st.text(max_size=12)
HEADER_VALUES = st.one_of(st.none(), st.binary(max_size=20))
HEADERS = st.lists(st.tuples(HEADER_KEYS, HEADER_VALUES), max_size=6).map(tuple)
TIMESTAMPS = st.integers(LONG_MIN, LONG_MAX)


def h(text: str) -> bytes:
    return bytes.fromhex(text)


# -- timestamped layout -------------------------------------------------------------------------


def test_timestamped_column_family_is_kafkas() -> None:
    assert TIMESTAMPED_CF == "keyValueWithTimestamp"


@pytest.mark.parametrize(
    ("value", "timestamp", "golden"),
    [
        (b"v", 0, "0000000000000000 76"),
        (b"v", 1, "0000000000000001 76"),
        (b"", 1, "0000000000000001"),
        (b"v", -1, "ffffffffffffffff 76"),
        (b"ab", 1_700_000_000_000, "0000018bcfe56800 6162"),
        (b"v", LONG_MAX, "7fffffffffffffff 76"),
        (b"v", LONG_MIN, "8000000000000000 76"),
    ],
)
def test_timestamped_golden_bytes(value: bytes, timestamp: int, golden: str) -> None:
    raw = encode_timestamped(value, timestamp)
    assert raw == h(golden)
    assert decode_timestamped(raw) == ValueAndTimestamp(value, timestamp)
    assert raw_timestamp(raw) == timestamp


def test_plain_value_converts_with_unknown_timestamp() -> None:
    # Kafka's TimestampedBytesStore.convertToTimestampedFormat.
    assert convert_to_timestamped(b"abc") == h("ffffffffffffffff 616263")
    assert convert_to_timestamped(b"") == h("ffffffffffffffff")
    assert decode_timestamped(convert_to_timestamped(b"abc")) == ValueAndTimestamp(b"abc", -1)


@pytest.mark.parametrize("raw", [b"", b"\x00", b"\x00" * 7])
def test_timestamped_shorter_than_a_timestamp_is_corrupt(raw: bytes) -> None:
    with pytest.raises(CorruptDataError, match="CORRUPT_DATA"):
        decode_timestamped(raw)
    with pytest.raises(CorruptDataError):
        raw_timestamp(raw)


@given(value=st.binary(max_size=64), timestamp=TIMESTAMPS)
def test_timestamped_round_trip(value: bytes, timestamp: int) -> None:
    raw = encode_timestamped(value, timestamp)
    assert len(raw) == 8 + len(value)
    assert decode_timestamped(raw) == ValueAndTimestamp(value, timestamp)
    assert raw_timestamp(raw) == timestamp


@given(a=st.integers(0, LONG_MAX), b=st.integers(0, LONG_MAX))
def test_non_negative_timestamps_sort_as_their_bytes(a: int, b: int) -> None:
    assert (encode_timestamped(b"", a) < encode_timestamped(b"", b)) == (a < b)


# -- varints ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "golden"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (-2, "03"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (-65, "8101"),
        (300, "d804"),
        (-300, "d704"),
        (INT_MAX, "feffffff0f"),
        (INT_MIN, "ffffffff0f"),
    ],
)
def test_varint_golden_bytes(value: int, golden: str) -> None:
    assert encode_varint(value) == h(golden)
    assert decode_varint(h(golden)) == (value, len(h(golden)))


def test_varint_reads_from_a_position() -> None:
    assert decode_varint(h("ff d804 00"), 1) == (300, 3)


@pytest.mark.parametrize("value", [INT_MAX + 1, INT_MIN - 1, 2**40])
def test_varint_outside_32_bits_is_refused(value: int) -> None:
    with pytest.raises(SerdeError, match="SERDE_ERROR"):
        encode_varint(value)


@pytest.mark.parametrize("raw", ["", "80", "ff80", "ffffffff", "ffffffffff01", "8080808080"])
def test_truncated_or_overlong_varint_is_corrupt(raw: str) -> None:
    with pytest.raises(CorruptDataError, match="varint"):
        decode_varint(h(raw))


@given(st.integers(INT_MIN, INT_MAX))
def test_varint_round_trip(value: int) -> None:
    raw = encode_varint(value)
    assert 1 <= len(raw) <= 5
    assert decode_varint(raw + b"tail") == (value, len(raw))


@given(st.integers(-(2**20), 2**20), st.integers(-(2**20), 2**20))
def test_varint_length_grows_with_magnitude(a: int, b: int) -> None:
    # Zig-zag: the encoded length depends on |value|, so small negatives stay short too.
    if abs(a) < abs(b) - 1:
        assert len(encode_varint(a)) <= len(encode_varint(b))


# Columns of one varint width in every row (the matrix path) and of mixed widths.
_VARINT_COLUMNS = st.one_of(
    st.tuples(st.integers(0, 4), st.integers(1, 40)).flatmap(
        lambda wn: st.lists(
            st.integers(0 if wn[0] == 0 else 1 << (7 * wn[0]), (1 << (7 * wn[0] + 7)) - 1),
            min_size=wn[1], max_size=wn[1],
        )
    ),
    st.lists(st.integers(0, 2**35 - 1), max_size=40),
)  # fmt: skip


@given(st.lists(_VARINT_COLUMNS, min_size=1, max_size=3), st.booleans())
def test_varint_column_is_each_rows_varints(columns: list[list[int]], lead_zero: bool) -> None:
    import numpy as np

    from stores.bytes.sst import _varint as unsigned_varint  # one value at a time, in Python
    from stores.columns.encode import varint_column

    n = min(len(c) for c in columns)
    arrays = [np.array(c[:n], dtype=np.int64) for c in columns]
    expected = [
        (b"\x00" if lead_zero else b"") + b"".join(unsigned_varint(int(a[i])) for a in arrays)
        for i in range(n)
    ]
    assert varint_column(*arrays, lead_zero=lead_zero).to_pylist() == expected


# -- headers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "golden"),
    [
        ((), ""),
        (None, ""),
        ((("a", b"x"),), "02 02 61 02 78"),
        ((("k", None),), "02 02 6b 01"),
        ((("k", b""),), "02 02 6b 00"),
        ((("a", b"1"), ("a", b"2")), "04 02 61 02 31 02 61 02 32"),  # duplicates kept
        ((("b", b""), ("a", b"")), "04 02 62 00 02 61 00"),  # order kept
        ((("é", b"\x00"),), "02 04 c3a9 02 00"),  # UTF-8 key: two bytes
        ((("日本", None),), "02 0c e697a5e69cac 01"),
    ],
)
def test_headers_golden_bytes(
    headers: tuple[tuple[str, bytes | None], ...] | None, golden: str
) -> None:
    raw = encode_headers(headers)
    assert raw == h(golden)
    assert decode_headers(raw) == (headers or ())


def test_headers_given_as_a_mapping_or_list() -> None:
    assert encode_headers({"a": b"x"}) == h("02 02 61 02 78")
    assert encode_headers([["a", bytearray(b"x")]]) == h("02 02 61 02 78")


def test_a_long_header_value_has_a_two_byte_size() -> None:
    raw = encode_headers([("k", b"v" * 300)])
    assert raw[:5] == h("02 02 6b d804")
    assert decode_headers(raw) == (("k", b"v" * 300),)


def test_bad_headers_are_refused() -> None:
    with pytest.raises(InvalidOptionError, match="header key must be str"):
        encode_headers([(b"k", b"v")])
    with pytest.raises(InvalidOptionError, match="must be bytes or None"):
        encode_headers([("k", "v")])
    with pytest.raises(InvalidOptionError, match="pair"):
        encode_headers(["k"])


def test_empty_headers_are_the_single_prefix_byte() -> None:
    # KIP-1271: empty headers serialize to no bytes, so headersSize is 0 and nothing follows.
    assert EMPTY_HEADERS_PREFIX == h("00")
    assert encode_with_headers((), b"payload") == h("00") + b"payload"
    assert with_headers(b"", b"") == h("00")
    assert split_headers(h("00") + b"p") == (b"", b"p")
    assert decode_with_headers(h("00 0000000000000001 76")) == ((), h("0000000000000001 76"))


def test_value_timestamp_headers_golden_bytes() -> None:
    # [varint headersSize=5][02 02 61 02 78][8-byte ts 1][value "v"]
    raw = encode_with_headers([("a", b"x")], encode_timestamped(b"v", 1))
    assert raw == h("0a 0202610278 0000000000000001 76")
    headers, payload = decode_with_headers(raw)
    assert headers == (("a", b"x"),)
    assert decode_timestamped(payload) == ValueAndTimestamp(b"v", 1)


def test_older_formats_convert_to_the_header_format() -> None:
    # HeadersBytesStore.convertToHeaderFormat: [ts][v] -> 00 [ts][v]
    assert convert_to_header_format(h("0000000000000007 76")) == h("00 0000000000000007 76")
    # convertFromPlainToHeaderFormat: [v] -> 00 [ts=-1][v]
    assert convert_from_plain_to_header_format(b"v") == h("00 ffffffffffffffff 76")
    assert convert_from_plain_to_header_format(b"") == h("00 ffffffffffffffff")


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("80", "truncated varint"),  # count truncated
        ("01", "negative header count"),
        ("02", "truncated varint"),  # count 1, no key size
        ("02 0a 61", "key overruns"),  # key size 5, one byte
        ("02 01", "key overruns"),  # key size -1
        ("02 02 61", "truncated varint"),  # no value size
        ("02 02 61 0a 78", "value overruns"),  # value size 5, one byte
        ("02 02 61 03", "value overruns"),  # value size -2
        ("02 02 61 01 ff", "trailing"),
        ("02 02 ff 01", "not UTF-8"),
        ("04 02 61 01", "truncated varint"),  # second header missing
    ],
)
def test_corrupt_headers_are_refused(raw: str, match: str) -> None:
    with pytest.raises(CorruptDataError, match=match):
        decode_headers(h(raw))


@pytest.mark.parametrize("raw", ["", "80", "01 00", "0a 0000", "02"])
def test_corrupt_header_prefix_is_refused(raw: str) -> None:
    with pytest.raises(CorruptDataError):
        split_headers(h(raw))
    with pytest.raises(CorruptDataError):
        decode_with_headers(h(raw))


@given(HEADERS)
def test_headers_round_trip(headers: tuple[tuple[str, bytes | None], ...]) -> None:
    raw = encode_headers(headers)
    assert (raw == b"") == (not headers)
    assert decode_headers(raw) == headers


@given(headers=HEADERS, payload=st.binary(max_size=40))
def test_header_prefix_round_trip(
    headers: tuple[tuple[str, bytes | None], ...], payload: bytes
) -> None:
    headers_bytes = encode_headers(headers)
    raw = with_headers(headers_bytes, payload)
    assert raw == encode_with_headers(headers, payload)
    assert raw == encode_varint(len(headers_bytes)) + headers_bytes + payload
    assert split_headers(raw) == (headers_bytes, payload)
    assert decode_with_headers(raw) == (headers, payload)


@given(headers=HEADERS, value=st.binary(max_size=40), timestamp=TIMESTAMPS)
def test_value_timestamp_headers_round_trip(
    headers: tuple[tuple[str, bytes | None], ...], value: bytes, timestamp: int
) -> None:
    raw = encode_with_headers(headers, encode_timestamped(value, timestamp))
    got_headers, payload = decode_with_headers(raw)
    assert got_headers == headers
    assert decode_timestamped(payload) == ValueAndTimestamp(value, timestamp)


@given(value=st.binary(max_size=40), timestamp=TIMESTAMPS)
def test_conversions_equal_encoding_with_empty_headers(value: bytes, timestamp: int) -> None:
    timestamped = encode_timestamped(value, timestamp)
    assert convert_to_header_format(timestamped) == encode_with_headers((), timestamped)
    assert convert_from_plain_to_header_format(value) == encode_with_headers(
        (), convert_to_timestamped(value)
    )


@given(st.binary(max_size=30))
def test_arbitrary_bytes_decode_or_raise_corrupt_data(raw: bytes) -> None:
    # Whatever is stored, reading it never fails with anything but CorruptDataError.
    for decode in (decode_headers, split_headers, decode_with_headers, decode_varint):
        try:
            decode(raw)
        except CorruptDataError:
            pass
