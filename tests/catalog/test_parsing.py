"""Durations, instants and the partitioner."""

from __future__ import annotations

import zlib

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog.partition_hash import crc32_array
from catalog.partitioner import partition_of, partitions_of, spark_sql_expression
from stores.errors import InvalidOptionError
from stores.time import instant_ms, parse_duration_ms, parse_instant_ms


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("300000", 300_000),
        ("30 days", 30 * 86_400_000),
        ("1h 30min", 5_400_000),
        ("5 s", 5_000),
        ("2 weeks", 14 * 86_400_000),
        ("PT5M", 300_000),
        ("P1DT2H", 93_600_000),
        ("pt0.5s", 500),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration_ms(text, "historyRetention") == ms


@pytest.mark.parametrize("text", ["", "abc", "-5", "5 parsecs", "1.5 days", "P"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_OPTION\] option 'historyRetention'"):
        parse_duration_ms(text, "historyRetention")


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2024-05-01T12:00:00Z", 1_714_564_800_000),
        ("2024-05-01 14:00:00+02:00", 1_714_564_800_000),
        ("2024-05-01T12:00:00.123456Z", 1_714_564_800_123),
        ("1714564800000", 1_714_564_800_000),
        ("7", 7),
    ],
)
def test_instants(text: str, ms: int) -> None:
    assert parse_instant_ms(text, "asOfTimestamp") == ms


def test_instants_without_zone_or_unparsable_are_refused() -> None:
    with pytest.raises(InvalidOptionError, match="without a time zone"):
        parse_instant_ms("2024-05-01T12:00:00", "asOfTimestamp")
    with pytest.raises(InvalidOptionError, match="option 'asOfTimestamp' has value 'yesterday'"):
        parse_instant_ms("yesterday", "asOfTimestamp")


def test_one_instant_parser_two_sets_of_rules() -> None:
    # Option text: epoch ms as digits and a lowercase zone are instants.
    assert instant_ms("7", "asOfTimestamp", from_option=True) == 7
    assert instant_ms("1970-01-01T00:00:01z", "asOfTimestamp", from_option=True) == 1000
    # The Python API: a string is ISO-8601 only; ints, aware datetimes and ISO strings are.
    with pytest.raises(InvalidOptionError, match="time_from is '7', not an ISO-8601 time"):
        instant_ms("7", "time_from")
    with pytest.raises(InvalidOptionError, match="not an ISO-8601 time"):
        instant_ms("1970-01-01T00:00:01z", "time_from")
    with pytest.raises(InvalidOptionError, match="naive datetime"):
        instant_ms("1970-01-01T00:00:01", "as_of")
    with pytest.raises(InvalidOptionError, match="signed 64-bit long"):
        instant_ms(2**63, "as_of")
    assert instant_ms(" 1970-01-01T00:00:01.5Z ", "as_of") == 1500
    assert instant_ms("1969-12-31T23:59:59.9995+00:00", "as_of") == -1  # floored
    assert instant_ms(-5, "as_of") == -5


def test_partitioner_is_crc32_of_the_serialized_key() -> None:
    # Golden values: stable across processes, Python versions and hash seeds.
    assert zlib.crc32(b"EUR") == 0xCBB90FF0
    assert partition_of(b"EUR", 8) == 0xCBB90FF0 % 8
    assert partition_of(b"", 3) == 0


@given(st.lists(st.binary(max_size=20), max_size=50), st.integers(1, 64))
def test_vectorized_partitioner_agrees(keys: list[bytes], n: int) -> None:
    expected = [partition_of(k, n) for k in keys]
    assert partitions_of(keys, n).tolist() == expected
    assert partitions_of(pa.array(keys, pa.binary()), n).tolist() == expected


# Lengths around the even/odd padding and the numpy/zlib border (64), with nulls and slices.
_ROWS = st.lists(
    st.one_of(st.none(), st.binary(max_size=70), st.binary(min_size=15, max_size=17)), max_size=60
)


@given(_ROWS, st.integers(0, 10), st.sampled_from([pa.binary(), pa.large_binary()]))
def test_crc32_array_is_zlib_per_row(rows: list[bytes | None], cut: int, kind: pa.DataType) -> None:
    values = pa.array(rows, kind).slice(min(cut, len(rows)))
    assert crc32_array(values).tolist() == [zlib.crc32(v or b"") for v in values.to_pylist()]


@given(st.lists(st.binary(min_size=16, max_size=16), min_size=1, max_size=40), st.integers(0, 5))
def test_crc32_array_one_length_slice(rows: list[bytes], cut: int) -> None:
    # The no-copy path: all rows one length, from a sliced buffer.
    values = pa.array(rows, pa.binary()).slice(min(cut, len(rows) - 1))
    assert crc32_array(values).tolist() == [zlib.crc32(v) for v in values.to_pylist()]


def test_crc32_array_strings_and_chunks() -> None:
    texts = ["EUR", "", "ünïcödé", "x" * 100]
    expected = [zlib.crc32(t.encode()) for t in texts]
    assert crc32_array(pa.array(texts)).tolist() == expected
    assert crc32_array(pa.chunked_array([texts[:2], texts[2:]])).tolist() == expected
    with pytest.raises(TypeError, match="binary or string"):
        crc32_array(pa.array([1, 2]))


def test_spark_sql_expression_shapes() -> None:
    assert spark_sql_expression("string", 8) == "pmod(crc32(encode(`key`, 'UTF-8')), 8)"
    with pytest.raises(InvalidOptionError, match="no Spark SQL partition expression"):
        spark_sql_expression("double", 8)
