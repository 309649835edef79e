"""Which store answers which IQv2 query, judged by Kafka Streams' own stores: 4.3.1's for the
stores without headers, 4.4.0's for the KIP-1271 header-aware ones.

Every query type against every store variant the harness builds (``tests/kafka/harness.py``:
``StateStore.query(query, PositionBound.unbounded(), new QueryConfig(false))`` on the metered
store a processor sees), after a few writes, and the same through ``stores.query.query`` on ours
(``tests/kafka/ours.py``). A success must be byte-equal (iterators drained), a failure must have
Kafka's ``FailureReason``, and where Kafka throws ours must raise.

What Kafka does (its sources): the metered stores' handlers and
``StoreQueryUtils.handleBasicQueries`` answer the plain, timestamped, versioned, window and
session stores. In 4.3.1 the KIP-1271 header-aware RocksDB stores
(``RocksDBTimestampedStoreWithHeaders``, ``RocksDBTimestampedWindowStoreWithHeaders``,
``RocksDBSessionStoreWithHeaders``) override ``query`` to answer everything
``UNKNOWN_QUERY_TYPE``, and KIP-1356's header queries (``TimestampedKeyWithHeadersQuery``, ...)
do not exist (a 4.3.1 harness sends a stand-in ``Query`` class). 4.4.0 serves the header-aware
stores (KAFKA-20703: the RocksDB stores no longer override ``query``) and adds KIP-1356's query
types, answered by ``MeteredTimestampedKeyValueStoreWithHeaders``,
``MeteredTimestampedWindowStoreWithHeaders`` and ``MeteredSessionStoreWithHeaders`` with
``ReadOnlyRecord`` results (harness encoding ``{"key", "v", "t", "h"}``). Ours follows 4.4.0 for
the header-aware variants (``kafka_harness_44``) and 4.3.1 for the others (``kafka_harness``);
4.4.0 answers those others as 4.3.1 does (checked below).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kafka.harness import HEADER_VARIANTS, KAFKA_VARIANTS, KafkaHarness
from tests.kafka.ours import run
from tests.kafka.sequences import params_of

A, B, C = b"a".hex(), b"b".hex(), b"c".hex()
HEADERS = [["h", "01"]]


def _put(*args: Any, rt: int = 0) -> dict[str, Any]:
    return {"m": "put", "a": list(args), "rt": rt}


def _writes(variant: str) -> list[dict[str, Any]]:
    """A few records of ``variant``, in Kafka's method names and the harness encoding."""
    if variant == "key_value":
        return [_put(A, "0a"), _put(B, "0b"), _put(C, "0c")]
    if variant in ("timestamped", "timestamped_headers"):

        def value(v: str, t: int) -> dict[str, Any]:
            return (
                {"v": v, "t": t, "h": HEADERS} if variant.endswith("headers") else {"v": v, "t": t}
            )

        return [_put(A, value("0a", 5)), _put(B, value("0b", 6)), _put(C, value("0c", 7))]
    if variant == "versioned":
        return [_put(A, "0a", 10), _put(A, "1a", 20), _put(B, "0b", 15)]
    if variant.startswith("session"):

        def agg(v: str) -> Any:
            return {"v": v, "h": HEADERS} if variant == "session_headers" else v

        return [
            _put({"k": A, "s": 0, "e": 5}, agg("0a")),
            _put({"k": A, "s": 10, "e": 20}, agg("1a")),
            _put({"k": B, "s": 3, "e": 4}, agg("0b")),
        ]

    def window_value(v: str, t: int) -> Any:
        if variant == "timestamped_window":
            return {"v": v, "t": t}
        if variant == "timestamped_window_headers":
            return {"v": v, "t": t, "h": HEADERS}
        return v

    return [
        _put(A, window_value("0a", 1), 0),
        _put(B, window_value("0b", 2), 10_000),
        _put(A, window_value("1a", 3), 20_000),
        _put(A, window_value("2a", 4), 20_000),  # window_duplicates keeps both
    ]


#: One query of each type and form, as the harness takes it (name: spec).
QUERIES: dict[str, dict[str, Any]] = {
    "KeyQuery": {"type": "KeyQuery", "key": A},
    "KeyQuery.missing": {"type": "KeyQuery", "key": "ff"},
    "RangeQuery.all": {"type": "RangeQuery"},
    "RangeQuery.desc": {"type": "RangeQuery", "lower": A, "upper": B, "ascending": False},
    "TimestampedKeyQuery": {"type": "TimestampedKeyQuery", "key": A},
    "TimestampedRangeQuery": {"type": "TimestampedRangeQuery", "lower": B, "ascending": True},
    "TimestampedKeyWithHeadersQuery": {"type": "TimestampedKeyWithHeadersQuery", "key": A},
    "TimestampedRangeWithHeadersQuery": {"type": "TimestampedRangeWithHeadersQuery"},
    "VersionedKeyQuery": {"type": "VersionedKeyQuery", "key": A},
    "VersionedKeyQuery.asOf": {"type": "VersionedKeyQuery", "key": A, "asOf": 15},
    "MultiVersionedKeyQuery": {
        "type": "MultiVersionedKeyQuery",
        "key": A,
        "fromTime": 0,
        "toTime": 30,
        "ascending": True,
    },
    "MultiVersionedKeyQuery.fromAfterTo": {
        "type": "MultiVersionedKeyQuery",
        "key": A,
        "fromTime": 30,
        "toTime": 0,
    },
    "WindowKeyQuery": {"type": "WindowKeyQuery", "key": A, "fromTime": 0, "toTime": 30_000},
    "WindowRangeQuery.key": {"type": "WindowRangeQuery", "key": A},
    "WindowRangeQuery.range": {"type": "WindowRangeQuery", "fromTime": 0, "toTime": 30_000},
    "TimestampedWindowKeyWithHeadersQuery": {
        "type": "TimestampedWindowKeyWithHeadersQuery",
        "key": A,
        "fromTime": 0,
        "toTime": 30_000,
    },
    "TimestampedWindowRangeWithHeadersQuery.key": {
        "type": "TimestampedWindowRangeWithHeadersQuery",
        "key": A,
    },
    "TimestampedWindowRangeWithHeadersQuery.range": {
        "type": "TimestampedWindowRangeWithHeadersQuery",
        "fromTime": 0,
        "toTime": 30_000,
    },
}

_KV = {"KeyQuery", "KeyQuery.missing", "RangeQuery.all", "RangeQuery.desc"}
_TS = _KV | {"TimestampedKeyQuery", "TimestampedRangeQuery"}
_WINDOW = {"WindowKeyQuery", "WindowRangeQuery.range"}
#: What Kafka answers with a result, per variant (4.3.1; the header-aware variants: 4.4.0); every
#: other query fails or throws.
ANSWERED: dict[str, set[str]] = {
    "key_value": _KV,
    "timestamped": _TS,
    "timestamped_headers": _TS | {
        "TimestampedKeyWithHeadersQuery", "TimestampedRangeWithHeadersQuery"
    },
    "versioned": {"VersionedKeyQuery", "VersionedKeyQuery.asOf", "MultiVersionedKeyQuery"},
    "window": _WINDOW,
    "timestamped_window": _WINDOW,
    "window_duplicates": _WINDOW,
    "timestamped_window_headers": _WINDOW | {
        "TimestampedWindowKeyWithHeadersQuery", "TimestampedWindowRangeWithHeadersQuery.range"
    },
    "session": {"WindowRangeQuery.key"},
    "session_headers": {"WindowRangeQuery.key", "TimestampedWindowRangeWithHeadersQuery.key"},
}
#: Where Kafka's metered store throws instead of answering (Java class: ours).
THROWN: dict[str, dict[str, str]] = {
    "versioned": {
        "KeyQuery": "UnsupportedOperationException",
        "KeyQuery.missing": "UnsupportedOperationException",
        "RangeQuery.all": "UnsupportedOperationException",
        "RangeQuery.desc": "UnsupportedOperationException",
        "MultiVersionedKeyQuery.fromAfterTo": "IllegalArgumentException",
    },
}
OUR_EXCEPTION = {
    "UnsupportedOperationException": "UnsupportedQueryError",
    "IllegalArgumentException": "InvalidOptionError",
    # Kafka 4.4's ReadOnlyRecordIterator.next() on a record it cannot build (negative timestamp).
    "StreamsException": "CorruptDataError",
}


def _params(variant: str) -> dict[str, Any]:
    params = params_of(variant)
    return {**params, "retainDuplicates": True} if variant == "window_duplicates" else params


def _queried(variant: str) -> list[dict[str, Any]]:
    return _writes(variant) + [{"m": "query", "a": [spec], "rt": 0} for spec in QUERIES.values()]


@pytest.fixture(scope="module")
def answers(
    kafka_harness: KafkaHarness,
    kafka_harness_44: KafkaHarness,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """Per variant: Kafka's and our answers to every query of ``QUERIES`` (one run each); the
    header-aware variants on Kafka 4.4.0, the others on 4.3.1."""
    out: dict[str, Any] = {}
    for variant in ANSWERED:
        judge = kafka_harness_44 if variant in HEADER_VARIANTS else kafka_harness
        kafka = judge.run(variant, _params(variant), _queried(variant))
        ours = run(variant, _params(variant), _queried(variant), tmp_path_factory.mktemp(variant) / "s")
        writes = len(_writes(variant))
        out[variant] = (
            dict(zip(QUERIES, kafka.answers[writes:])),
            dict(zip(QUERIES, ours.answers[writes:])),
        )
    return out


def test_every_harness_variant_is_covered(kafka_harness_44: KafkaHarness) -> None:
    assert set(ANSWERED) == set(KAFKA_VARIANTS)
    assert kafka_harness_44.kafka_version == "4.4.0"
    assert set(kafka_harness_44.variants) == set(KAFKA_VARIANTS)


@pytest.mark.parametrize("variant", [v for v in KAFKA_VARIANTS if v not in HEADER_VARIANTS])
def test_kafka_44_answers_the_stores_without_headers_as_4_3_1(
    kafka_harness: KafkaHarness, kafka_harness_44: KafkaHarness, variant: str
) -> None:
    """Why following 4.3.1 there is also following 4.4.0: same results, same failure reasons
    (the messages differ only in how a query class prints)."""

    def shape(answers: list[Any]) -> list[Any]:
        return [
            {k: v for k, v in a.items() if k != "msg"} if isinstance(a, dict) else a
            for a in answers
        ]

    old = kafka_harness.run(variant, _params(variant), _queried(variant)).answers
    new = kafka_harness_44.run(variant, _params(variant), _queried(variant)).answers
    assert shape(new) == shape(old)


@pytest.mark.parametrize("name", list(QUERIES))
@pytest.mark.parametrize("variant", list(ANSWERED))
def test_query_answers_as_kafka(answers: dict[str, Any], variant: str, name: str) -> None:
    kafka, ours = (side[name] for side in answers[variant])
    thrown = THROWN.get(variant, {}).get(name)
    if thrown is not None:
        assert kafka.get("error") == thrown, f"Kafka: {kafka}"
        assert ours.get("error") == OUR_EXCEPTION[thrown], f"ours: {ours}"
    elif name in ANSWERED[variant]:
        assert kafka["ok"], f"Kafka: {kafka}"
        assert ours == kafka
    else:
        assert kafka["ok"] is False, f"Kafka: {kafka}"
        assert ours.get("ok") is False and ours["failure"] == kafka["failure"], (
            f"Kafka: {kafka}; ours: {ours}"
        )


def test_header_records_carry_the_headers(answers: dict[str, Any]) -> None:
    """KIP-1356 (Kafka 4.4): a ReadOnlyRecord per entry, with the stored headers; a session's
    record is stamped with the session end (MeteredSessionStoreWithHeaders)."""
    kafka, ours = answers["session_headers"]
    records = kafka["TimestampedWindowRangeWithHeadersQuery.key"]["result"]
    assert [(r["t"], r["h"]) for r in records] == [(5, HEADERS), (20, HEADERS)]
    assert ours["TimestampedWindowRangeWithHeadersQuery.key"] == kafka[
        "TimestampedWindowRangeWithHeadersQuery.key"
    ]
    kafka, ours = answers["timestamped_window_headers"]
    refused = kafka["TimestampedWindowRangeWithHeadersQuery.key"]
    assert "MeteredTimestampedWindowStoreWithHeaders" in refused["msg"]
    assert "TimestampedWindowRangeWithHeadersQuery.withWindowStartRange" in refused["msg"]
    assert "TimestampedWindowRangeWithHeadersQuery.withWindowStartRange" in ours[
        "TimestampedWindowRangeWithHeadersQuery.key"
    ]["msg"]


#: A stored negative timestamp (a ValueTimestampHeaders put with t = -1): Kafka 4.4's record
#: queries cannot build a Record of it.
NEGATIVE: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "timestamped_headers": (
        [_put(A, {"v": "0a", "t": -1, "h": HEADERS})],
        {
            # runTimestampedKeyWithHeadersQuery: a failed result.
            "TimestampedKeyWithHeadersQuery": {"failure": "STORE_EXCEPTION"},
            # MeteredTimestampedKeyValueStoreWithHeadersReadOnlyRecordIterator.next(): throws.
            "TimestampedRangeWithHeadersQuery": {"error": "StreamsException"},
            "TimestampedKeyQuery": {"result": {"v": "0a", "t": -1}},
        },
    ),
    "timestamped_window_headers": (
        [_put(A, {"v": "0a", "t": -1, "h": HEADERS}, 0)],
        {
            # MeteredWindowStoreWithHeadersReadOnlyRecordIterator.next(): throws.
            "TimestampedWindowKeyWithHeadersQuery": {"error": "StreamsException"},
            "TimestampedWindowRangeWithHeadersQuery.range": {"error": "StreamsException"},
            "WindowKeyQuery": {"result": [[0, {"v": "0a", "t": -1}]]},
        },
    ),
}


@pytest.mark.parametrize("variant", list(NEGATIVE))
def test_a_negative_stored_timestamp_is_no_record(
    kafka_harness_44: KafkaHarness, tmp_path: Any, variant: str
) -> None:
    writes, expected = NEGATIVE[variant]
    ops = writes + [{"m": "query", "a": [QUERIES[name]], "rt": 0} for name in expected]
    kafka = kafka_harness_44.run(variant, _params(variant), ops).answers[len(writes):]
    ours = run(variant, _params(variant), ops, tmp_path / "s").answers[len(writes):]
    for (name, want), theirs, mine in zip(expected.items(), kafka, ours):
        if "error" in want:
            assert theirs.get("error") == want["error"], f"{name}: Kafka {theirs}"
            assert mine.get("error") == OUR_EXCEPTION[want["error"]], f"{name}: ours {mine}"
        elif "failure" in want:
            assert theirs["failure"] == mine["failure"] == want["failure"], (name, theirs, mine)
            assert "negative timestamp (-1)" in theirs["msg"] and "(-1)" in mine["msg"]
        else:
            assert theirs["result"] == mine["result"] == want["result"], (name, theirs, mine)
