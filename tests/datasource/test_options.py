"""Option parsing: one frozen dataclass validates everything Spark hands over."""

from __future__ import annotations

import pytest

from datasource.options import StoreOptions
from stores.errors import InvalidOptionError


def test_options_are_case_insensitive_and_parsed() -> None:
    options = StoreOptions.parse(
        {
            "STORE": "rates",
            "numpartitions": "4",
            "historyretention": "30 days",
            "segmentInterval": "1 day",
            "kind": "Versioned",
            "asoftimestamp": "2024-05-01T12:00:00Z",
            "root": "/tmp/w",
        }
    )
    assert options == StoreOptions(
        store="rates",
        root="/tmp/w",
        kind="versioned",
        num_partitions=4,
        params={"history_retention_ms": 30 * 86_400_000, "segment_interval_ms": 86_400_000},
        reads={"asOfTimestamp": 1_714_564_800_000},
    )


def test_partitioner_is_a_creation_option() -> None:
    assert StoreOptions.parse({"store": "s"}).partitioner is None
    options = StoreOptions.parse({"store": "s", "PARTITIONER": "Kafka"})
    assert options.partitioner == "kafka" and options.creation_value("partitioner") == "kafka"
    assert StoreOptions.parse({"store": "s", "partitioner": "crc32"}).partitioner == "crc32"


def test_path_names_the_store() -> None:
    assert StoreOptions.parse({"path": "rates"}).store == "rates"
    assert StoreOptions.parse({"path": "rates", "store": "rates"}).store == "rates"
    with pytest.raises(InvalidOptionError, match="give the store name once"):
        StoreOptions.parse({"path": "a", "store": "b"})


def test_misspelt_option_names_the_closest_valid_one() -> None:
    with pytest.raises(InvalidOptionError, match=r"\[UNKNOWN_OPTION\].*'asOfTimestmp'.*'asOfTimestamp'"):
        StoreOptions.parse({"store": "s", "asOfTimestmp": "5"})


@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({}, "no store named"),
        ({"store": "a b"}, "store name 'a b' is not valid"),
        ({"store": "s", "numPartitions": "0"}, "option 'numPartitions' has value '0'"),
        ({"store": "s", "numPartitions": "two"}, "option 'numPartitions'"),
        ({"store": "s", "historyRetention": "soon"}, "option 'historyRetention'"),
        ({"store": "s", "asOfTimestamp": "noon"}, "option 'asOfTimestamp'"),
        ({"store": "s", "partitioner": "murmur"},
         r"option 'partitioner' is 'murmur'.*Accepted: 'crc32' .* or 'kafka'"),
    ],
)
def test_bad_values_name_the_option(options: dict[str, str], pattern: str) -> None:
    with pytest.raises(InvalidOptionError, match=pattern):
        StoreOptions.parse(options)


def test_window_options_booleans_and_start_range() -> None:
    options = StoreOptions.parse(
        {
            "store": "clicks",
            "kind": "window",
            "windowsize": "5 minutes",
            "retention": "PT1H",
            "retainDuplicates": "TRUE",
            "headers": "false",
            "windowStartFrom": "2024-05-01T00:00:00Z",
            "windowstartto": "1714521600001",
        }
    )
    assert options.creation_params() == {
        "history_retention_ms": None,
        "segment_interval_ms": None,
        "retention_ms": 3_600_000,
        "window_size_ms": 300_000,
        "retain_duplicates": True,
        "timestamped": None,
        "headers": False,
    }
    scan = options.scan()
    assert (scan.as_of, scan.time_from, scan.time_to) == (None, 1_714_521_600_000, 1_714_521_600_001)


def test_a_catalog_table_s_properties_and_missing_options_say_how_catalog_tables_work() -> None:
    # CREATE TABLE t USING state_store (no columns): Spark asks for the schema with these.
    with pytest.raises(InvalidOptionError, match=r"\[CATALOG_TABLE_OPTIONS\] .*'owner'.*declares its columns"):
        StoreOptions.parse({"owner": "root", "provider": "state_store"})
    # SELECT * FROM t (no WITH): no options at all.
    with pytest.raises(InvalidOptionError, match=r"\[MISSING_OPTION\] no store named.*WITH \('store' = 'rates'\)"):
        StoreOptions.parse({})
