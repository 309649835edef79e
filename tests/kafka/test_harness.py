"""Tests of the Kafka harness itself: the JVM answers as Kafka Streams 4.3.1's own classes do, the
3.9.1 build (fixture ``kafka_harness_3``) as 3.9.1's do, and the 4.4.0 build (fixture
``kafka_harness_44``) as 4.4.0's do.

Each expectation cites the Kafka class whose behaviour it states.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.kafka.harness import (
    KAFKA3_VARIANTS,
    KAFKA3_VERSION,
    KAFKA44_VERSION,
    KAFKA_VARIANTS,
    KAFKA_VERSION,
    HarnessBuildError,
    HarnessDiedError,
    HarnessRequestError,
    KafkaHarness,
    build,
    source_hash,
)

# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
MURMUR2_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

HEADERS = [["trace", "0102"], ["none", None]]

#: Per variant: params, one op that writes, one op that reads, the read's answer, the segment ids.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any, set[int | None]]] = {
    "key_value": (
        {},
        {"m": "put", "a": ["01", "aa"], "rt": 5},
        {"m": "get", "a": ["01"], "rt": 6},
        "aa",
        {None},
    ),
    "timestamped": (
        {},
        {"m": "put", "a": ["01", {"v": "aa", "t": 7}], "rt": 5},
        {"m": "get", "a": ["01"], "rt": 6},
        {"v": "aa", "t": 7},
        {None},
    ),
    "timestamped_headers": (
        {},
        {"m": "put", "a": ["01", {"v": "aa", "t": 7, "h": HEADERS}], "rt": 5},
        {"m": "get", "a": ["01"], "rt": 6},
        {"v": "aa", "t": 7, "h": HEADERS},
        {None},
    ),
    "versioned": (
        {"historyRetentionMs": 10_000, "segmentIntervalMs": 1_000},
        {"m": "put", "a": ["01", "aa", 1_500], "rt": 1_500},
        {"m": "get", "a": ["01"], "rt": 1_600},
        {"v": "aa", "t": 1_500, "to": None},
        {None},
    ),
    "window": (
        {"retentionMs": 10_000, "windowSizeMs": 100, "segmentIntervalMs": 1_000},
        {"m": "put", "a": ["01", "aa", 1_500], "rt": 1_500},
        {"m": "fetch", "a": ["01", 1_500], "rt": 1_600},
        "aa",
        {1},
    ),
    "timestamped_window": (
        {"retentionMs": 10_000, "windowSizeMs": 100, "segmentIntervalMs": 1_000},
        {"m": "put", "a": ["01", {"v": "aa", "t": 1_510}, 1_500], "rt": 1_500},
        {"m": "fetch", "a": ["01", 1_500], "rt": 1_600},
        {"v": "aa", "t": 1_510},
        {1},
    ),
    "timestamped_window_headers": (
        {"retentionMs": 10_000, "windowSizeMs": 100, "segmentIntervalMs": 1_000},
        {"m": "put", "a": ["01", {"v": "aa", "t": 1_510, "h": HEADERS}, 2_500], "rt": 2_500},
        {"m": "fetch", "a": ["01", 0, 3_000], "rt": 2_600},
        [[2_500, {"v": "aa", "t": 1_510, "h": HEADERS}]],
        {2},
    ),
    "window_duplicates": (
        {"retentionMs": 10_000, "windowSizeMs": 100, "segmentIntervalMs": 1_000},
        {"m": "put", "a": ["01", "aa", 1_500], "rt": 1_500},
        {"m": "fetch", "a": ["01", 0, 3_000], "rt": 1_600},
        [[1_500, "aa"], [1_500, "aa"]],  # the write op runs twice, below
        {1},
    ),
    "session": (
        {"retentionMs": 10_000},
        {"m": "put", "a": [{"k": "01", "s": 100, "e": 200}, "aa"], "rt": 200},
        {"m": "fetchSession", "a": ["01", 100, 200], "rt": 300},
        "aa",
        {0},
    ),
    "session_headers": (
        {"retentionMs": 10_000, "segmentIntervalMs": 100},
        {"m": "put", "a": [{"k": "01", "s": 100, "e": 250}, {"v": "aa", "h": HEADERS}], "rt": 250},
        {"m": "fetchSession", "a": ["01", 100, 250], "rt": 300},
        {"v": "aa", "h": HEADERS},
        {2},
    ),
}


def test_every_kafka_variant_has_a_case() -> None:
    assert set(CASES) == set(KAFKA_VARIANTS)


def test_murmur2_matches_kafka_utils_test(kafka_harness: KafkaHarness) -> None:
    keys = list(MURMUR2_VECTORS)
    assert kafka_harness.murmur2(keys) == [MURMUR2_VECTORS[k] for k in keys]


def test_partitions_are_to_positive_murmur2_mod_n(kafka_harness: KafkaHarness) -> None:
    """``BuiltInPartitioner.partitionForKey`` = ``Utils.toPositive(Utils.murmur2(key)) % n``."""
    keys = [bytes([i]) * (i % 7) for i in range(64)]
    hashes = kafka_harness.murmur2(keys)
    assert kafka_harness.murmur2_partitions(keys, 12) == [(h & 0x7FFFFFFF) % 12 for h in hashes]


def test_serializers_are_kafkas(kafka_harness: KafkaHarness) -> None:
    """``LongSerializer`` etc.: big-endian, IEEE 754, UTF-8; ``BooleanSerializer`` one byte."""
    assert kafka_harness.serialize("long", [1, -1, None]) == [
        bytes.fromhex("0000000000000001"), b"\xff" * 8, None
    ]
    assert kafka_harness.serialize("integer", [258]) == [bytes.fromhex("00000102")]
    assert kafka_harness.serialize("short", [-2]) == [bytes.fromhex("fffe")]
    assert kafka_harness.serialize("double", [1.0]) == [bytes.fromhex("3ff0000000000000")]
    assert kafka_harness.serialize("float", [1.5]) == [bytes.fromhex("3fc00000")]
    assert kafka_harness.serialize("boolean", [True, False]) == [b"\x01", b"\x00"]
    assert kafka_harness.serialize("string", ["é"]) == ["é".encode()]
    assert kafka_harness.serialize("bytes", [b"\x00\x01"]) == [b"\x00\x01"]
    uuid = "123e4567-e89b-12d3-a456-426614174000"
    assert kafka_harness.serialize("uuid", [uuid]) == [uuid.encode()]  # UUIDSerializer: its string


def test_key_value_layout_is_rocksdb_store(kafka_harness: KafkaHarness) -> None:
    """``RocksDBStore``: raw key -> raw value in ``default``; ``ChangeLoggingKeyValueBytesStore``
    logs raw key and value (null for a delete) with ``context.timestamp()``; KIP-1035 adds the
    ``offsets`` column family to the DB (excluded from ``cfs``)."""
    ops = [
        {"m": "put", "a": ["02", "bb"], "rt": 5},
        {"m": "put", "a": ["01", "aa"], "rt": 6},
        {"m": "delete", "a": ["02"], "rt": 7},
        {"m": "putIfAbsent", "a": ["01", "cc"], "rt": 8},
        {"m": "all", "a": [], "rt": 9},
    ]
    result = kafka_harness.run("key_value", {}, ops)
    assert result.answers == [None, None, "bb", "aa", [["01", "aa"]]]
    assert result.cfs == [[None, "default", "01", "aa"]]
    assert result.changelog == [
        {"k": "02", "v": "bb", "t": 5, "h": []},
        {"k": "01", "v": "aa", "t": 6, "h": []},
        {"k": "02", "v": None, "t": 7, "h": []},
    ]
    assert result.dbs == [[None, "rocksdb/store", ["default", "offsets"]]]
    assert result.segment_interval is None


def test_timestamped_layout_is_rocksdb_timestamped_store(kafka_harness: KafkaHarness) -> None:
    """``RocksDBTimestampedStore``: ``keyValueWithTimestamp`` holds BE64 ts + value;
    ``ChangeLoggingTimestampedKeyValueBytesStore`` logs the plain value at the value's time."""
    result = kafka_harness.run("timestamped", {}, [{"m": "put", "a": ["01", {"v": "aa", "t": 42}], "rt": 5}])
    assert result.cfs == [[None, "keyValueWithTimestamp", "01", "000000000000002aaa"]]
    assert result.changelog == [{"k": "01", "v": "aa", "t": 42, "h": []}]


@pytest.mark.parametrize("variant", sorted(CASES))
def test_each_variant_puts_gets_logs_and_writes(kafka_harness: KafkaHarness, variant: str) -> None:
    params, write, read, expected, segments = CASES[variant]
    writes = [write, write] if variant == "window_duplicates" else [write]
    result = kafka_harness.run(variant, params, [*writes, read])
    assert result.answers[-1] == expected
    assert result.changelog, "change logging is on: every write is logged"
    assert result.cfs, "the write reached a column family"
    assert {entry[0] for entry in result.cfs} == segments
    assert all(entry[1] != "offsets" for entry in result.cfs)
    assert all("offsets" in db[2] for db in result.dbs), "KIP-1035: every RocksDB has an offsets CF"
    if "headers" in variant:
        assert all(record["h"] == HEADERS for record in result.changelog), "KIP-1271: record headers"


@pytest.mark.parametrize("variant", sorted(CASES))
def test_restoring_the_changelog_rebuilds_the_same_column_families(
    kafka_harness: KafkaHarness, variant: str
) -> None:
    """``ProcessorStateManager.restore`` with the converter of ``StateManagerUtil.converterForStore``."""
    params, write, read, expected, _ = CASES[variant]
    writes = [write, write] if variant == "window_duplicates" else [write]
    written = kafka_harness.run(variant, params, writes)
    restored = kafka_harness.restore(variant, params, written.changelog, ops=[read])
    assert restored.cfs == written.cfs
    assert restored.answers == [expected]
    assert restored.changelog == []


def test_restore_of_a_timestamped_store_takes_the_record_time(kafka_harness: KafkaHarness) -> None:
    """``RecordConverters.rawValueToTimestampedValue``: store value = BE64(record.timestamp) + value."""
    records = [
        {"k": "01", "v": "aa", "t": 42, "h": []},
        {"k": "02", "v": "bb", "t": 43, "h": []},
        {"k": "02", "v": None, "t": 44, "h": []},
    ]
    result = kafka_harness.restore("timestamped", {}, records, ops=[{"m": "get", "a": ["01"], "rt": 0}])
    assert result.answers == [{"v": "aa", "t": 42}]
    assert result.cfs == [[None, "keyValueWithTimestamp", "01", "000000000000002aaa"]]


def test_a_thrown_exception_is_an_answer_and_the_run_goes_on(kafka_harness: KafkaHarness) -> None:
    """``MeteredKeyValueStore.put``: ``Objects.requireNonNull(key, "key cannot be null")``."""
    ops = [
        {"m": "put", "a": [None, "aa"], "rt": 1},
        {"m": "get", "a": ["01", "02"], "rt": 2},
        {"m": "put", "a": ["01", "aa"], "rt": 3},
        {"m": "get", "a": ["01"], "rt": 4},
    ]
    result = kafka_harness.run("key_value", {}, ops)
    assert result.answers[0] == {"error": "NullPointerException", "msg": "key cannot be null"}
    assert result.answers[1]["error"] == "UnsupportedOperationException"
    assert result.answers[2:] == [None, "aa"]


def test_iqv2_key_query(kafka_harness: KafkaHarness) -> None:
    """``MeteredTimestampedKeyValueStore``: a ``KeyQuery`` answers the plain value."""
    ops = [
        {"m": "put", "a": ["01", {"v": "aa", "t": 7}], "rt": 1},
        {"m": "query", "a": [{"type": "KeyQuery", "key": "01"}], "rt": 2},
        {"m": "query", "a": [{"type": "TimestampedKeyQuery", "key": "01"}], "rt": 2},
    ]
    result = kafka_harness.run("timestamped", {}, ops)
    assert result.answers[1] == {"ok": True, "failure": None, "result": "aa"}
    assert result.answers[2] == {"ok": True, "failure": None, "result": {"v": "aa", "t": 7}}


def test_default_segment_interval_is_reported(kafka_harness: KafkaHarness) -> None:
    """``Stores.persistentWindowStore``: segment interval ``max(retention / 2, 60 000)``."""
    result = kafka_harness.run("window", {"retentionMs": 300_000, "windowSizeMs": 10}, [])
    assert result.segment_interval == 150_000
    assert result.params["segmentIntervalMs"] == 150_000


def test_unknown_and_missing_variants_are_refused(kafka_harness: KafkaHarness) -> None:
    with pytest.raises(HarnessRequestError, match="window_headers: Kafka Streams 4.3.1 has no"):
        kafka_harness.run("window_headers", {"retentionMs": 1000, "windowSizeMs": 10}, [])
    with pytest.raises(HarnessRequestError, match="unknown variant 'nope'"):
        kafka_harness.run("nope", {}, [])
    with pytest.raises(HarnessRequestError, match="must be no smaller than its window size"):
        kafka_harness.run("window", {"retentionMs": 10, "windowSizeMs": 100}, [])
    assert kafka_harness.run("key_value", {}, []).answers == []  # still serving


def test_a_dead_jvm_is_reported_with_its_stderr() -> None:
    with pytest.raises(HarnessDiedError, match="(?s)Kafka harness JVM.*NoSuchHarnessClass"):
        KafkaHarness(["java", "-cp", "/nonexistent", "NoSuchHarnessClass"])


def test_a_failed_build_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(HarnessBuildError, match="(?s)Java 17 JDK.*Maven 3.8"):
        build(tmp_path, mvn="false")


def test_the_harness_knows_its_version_and_variants(kafka_harness: KafkaHarness) -> None:
    assert kafka_harness.kafka_version == KAFKA_VERSION
    assert kafka_harness.variants == KAFKA_VARIANTS


def test_builds_are_cached_per_kafka_version(tmp_path: Path) -> None:
    assert source_hash(KAFKA_VERSION) != source_hash(KAFKA3_VERSION)
    assert source_hash(KAFKA_VERSION) != source_hash(KAFKA44_VERSION)
    with pytest.raises(ValueError, match=r"kafka_version='4\.0\.0'.*4\.3\.x, 4\.4\.x or 3\.9\.x"):
        build(tmp_path, kafka_version="4.0.0")


# -- Kafka Streams 3.9.1 -------------------------------------------------------------------------


def test_kafka3_harness_is_kafka_3_9_on_rocksdb_7_9(kafka_harness_3: KafkaHarness) -> None:
    """3.9.1 depends on ``rocksdbjni`` 7.9.2 and has no KIP-1271 header-aware stores."""
    assert kafka_harness_3.kafka_version == KAFKA3_VERSION
    assert kafka_harness_3.versions["rocksdb"] == "7.9.2"
    assert kafka_harness_3.variants == KAFKA3_VARIANTS


def test_kafka3_murmur2_matches_kafka_utils_test(kafka_harness_3: KafkaHarness) -> None:
    """``Utils.murmur2`` and ``BuiltInPartitioner.partitionForKey`` of 3.9.1: as 4.3.1's."""
    keys = list(MURMUR2_VECTORS)
    assert kafka_harness_3.murmur2(keys) == [MURMUR2_VECTORS[k] for k in keys]
    more = [bytes([i]) * (i % 7) for i in range(64)]
    assert kafka_harness_3.murmur2_partitions(more, 12) == [
        (h & 0x7FFFFFFF) % 12 for h in kafka_harness_3.murmur2(more)
    ]


@pytest.mark.parametrize("variant", KAFKA3_VARIANTS)
def test_kafka3_each_variant_puts_gets_logs_and_writes(kafka_harness_3: KafkaHarness, variant: str) -> None:
    """Each 3.9 variant answers, logs and writes; its RocksDBs have no ``offsets`` column family
    (KIP-1035's ``RocksDBStore`` offsets came with 4.x: 3.9 keeps ``.checkpoint`` files)."""
    params, write, read, expected, segments = CASES[variant]
    writes = [write, write] if variant == "window_duplicates" else [write]
    result = kafka_harness_3.run(variant, params, [*writes, read])
    assert result.answers[-1] == expected
    assert result.changelog, "change logging is on: every write is logged"
    assert result.cfs, "the write reached a column family"
    assert {entry[0] for entry in result.cfs} == segments
    assert result.dbs and all("offsets" not in db[2] for db in result.dbs)


@pytest.mark.parametrize("variant", KAFKA3_VARIANTS)
def test_kafka3_restore_rebuilds_the_same_column_families(kafka_harness_3: KafkaHarness, variant: str) -> None:
    """3.9.1's ``ProcessorStateManager.restore`` with ``StateManagerUtil.converterForStore``."""
    params, write, read, expected, _ = CASES[variant]
    writes = [write, write] if variant == "window_duplicates" else [write]
    written = kafka_harness_3.run(variant, params, writes)
    restored = kafka_harness_3.restore(variant, params, written.changelog, ops=[read])
    assert restored.cfs == written.cfs
    assert restored.answers == [expected]
    assert restored.changelog == []


def test_kafka3_refuses_the_header_variants(kafka_harness_3: KafkaHarness) -> None:
    for variant in sorted(set(KAFKA_VARIANTS) - set(KAFKA3_VARIANTS)):
        with pytest.raises(HarnessRequestError, match=f"'{variant}' does not exist in Kafka Streams 3.9.1"):
            kafka_harness_3.run(variant, {"retentionMs": 1000, "windowSizeMs": 10}, [])
    with pytest.raises(HarnessRequestError, match="window_headers: Kafka Streams 3.9.1 has no header-aware"):
        kafka_harness_3.run("window_headers", {"retentionMs": 1000, "windowSizeMs": 10}, [])
    assert kafka_harness_3.run("key_value", {}, []).answers == []  # still serving


def test_kafka3_processors_session_store_has_no_backward_fetches(
    kafka_harness_3: KafkaHarness, kafka_harness: KafkaHarness
) -> None:
    """3.9.1's ``AbstractReadWriteDecorator.SessionStoreReadWriteDecorator`` (the session store a
    processor gets from ``context.getStateStore``) forwards no ``backwardFetch`` or
    ``backwardFindSessions``: ``ReadOnlySessionStore``'s defaults throw. 4.3.1's forwards them."""
    ops = [
        {"m": "put", "a": [{"k": "01", "s": 100, "e": 200}, "aa"], "rt": 200},
        {"m": "backwardFetch", "a": ["01"], "rt": 300},
        {"m": "backwardFindSessions", "a": ["01", 0, 300], "rt": 300},
        {"m": "fetch", "a": ["01"], "rt": 300},
    ]
    session = [[{"k": "01", "s": 100, "e": 200}, "aa"]]
    refused = {
        "error": "UnsupportedOperationException",
        "msg": "This API is not supported by this implementation of ReadOnlySessionStore.",
    }
    assert kafka_harness_3.run("session", {"retentionMs": 10_000}, ops).answers == [None, refused, refused, session]
    assert kafka_harness.run("session", {"retentionMs": 10_000}, ops).answers == [None, session, session, session]


# -- Kafka Streams 4.4.0 -------------------------------------------------------------------------


def test_kafka44_harness_is_kafka_4_4_with_the_same_variants(kafka_harness_44: KafkaHarness) -> None:
    """4.4.0 keeps 4.3's KIP-1271 header-aware stores (the same harness sources, src/kafka43)."""
    assert kafka_harness_44.kafka_version == KAFKA44_VERSION
    assert kafka_harness_44.variants == KAFKA_VARIANTS


@pytest.mark.parametrize("variant", sorted(CASES))
def test_kafka44_each_variant_puts_gets_logs_writes_and_restores(
    kafka_harness_44: KafkaHarness, variant: str
) -> None:
    """4.4.0's stores answer, log and lay out as 4.3.1's for these writes, and
    ``ProcessorStateManager.restore`` rebuilds them (HarnessAccess / HarnessRestore still fit)."""
    params, write, read, expected, segments = CASES[variant]
    writes = [write, write] if variant == "window_duplicates" else [write]
    result = kafka_harness_44.run(variant, params, [*writes, read])
    assert result.answers[-1] == expected
    assert result.changelog and result.cfs
    assert {entry[0] for entry in result.cfs} == segments
    restored = kafka_harness_44.restore(variant, params, result.changelog, ops=[read])
    assert restored.cfs == result.cfs
    assert restored.answers == [expected]


def test_kafka44_has_kip_1356_header_queries(kafka_harness_44: KafkaHarness, kafka_harness: KafkaHarness) -> None:
    """``MeteredTimestampedKeyValueStoreWithHeaders.runTimestampedKeyWithHeadersQuery`` (4.4): a
    ``ReadOnlyRecord`` (``{"key", "v", "t", "h"}``); 4.3.1 has no such query class (the harness's
    stand-in is refused) and its header-aware store refuses even a ``KeyQuery`` (KAFKA-20703)."""
    ops = [
        {"m": "put", "a": ["01", {"v": "aa", "t": 7, "h": HEADERS}], "rt": 1},
        {"m": "query", "a": [{"type": "TimestampedKeyWithHeadersQuery", "key": "01"}], "rt": 2},
        {"m": "query", "a": [{"type": "KeyQuery", "key": "01"}], "rt": 2},
    ]
    new = kafka_harness_44.run("timestamped_headers", {}, ops).answers
    assert new[1] == {"ok": True, "failure": None, "result": {"key": "01", "v": "aa", "t": 7, "h": HEADERS}}
    assert new[2] == {"ok": True, "failure": None, "result": "aa"}
    old = kafka_harness.run("timestamped_headers", {}, ops).answers
    assert old[1]["failure"] == old[2]["failure"] == "UNKNOWN_QUERY_TYPE"
    assert "absent in Kafka Streams 4.3.1" in old[1]["msg"]
