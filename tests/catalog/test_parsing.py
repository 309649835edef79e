"""Durations, instants and the partitioner."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog.durations import parse_duration_ms, parse_instant_ms
from catalog.partitioner import partition_of, partitions_of, spark_sql_expression
from stores.errors import InvalidOptionError


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


def test_partitioner_is_crc32_of_the_serialized_key() -> None:
    # Golden values: stable across processes, Python versions and hash seeds.
    assert zlib.crc32(b"EUR") == 0xCBB90FF0
    assert partition_of(b"EUR", 8) == 0xCBB90FF0 % 8
    assert partition_of(b"", 3) == 0


@given(st.lists(st.binary(max_size=20), max_size=50), st.integers(1, 64))
def test_vectorized_partitioner_agrees(keys: list[bytes], n: int) -> None:
    assert partitions_of(keys, n).tolist() == [partition_of(k, n) for k in keys]


def test_spark_sql_expression_shapes() -> None:
    assert spark_sql_expression("string", 8) == "pmod(crc32(encode(`key`, 'UTF-8')), 8)"
    with pytest.raises(InvalidOptionError, match="no Spark SQL partition expression"):
        spark_sql_expression("double", 8)
