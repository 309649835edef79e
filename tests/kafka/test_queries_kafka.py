"""Which store answers which IQv2 query, judged by Kafka Streams 4.3.1's own stores.

Every query type against every store variant the harness builds (``tests/kafka/harness.py``:
``StateStore.query(query, PositionBound.unbounded(), new QueryConfig(false))`` on the metered
store a processor sees), after a few writes, and the same through ``stores.query.query`` on ours
(``tests/kafka/ours.py``). A success must be byte-equal (iterators drained), a failure must have
Kafka's ``FailureReason``, and where Kafka throws ours must raise.

What Kafka 4.3.1 does (its sources): the metered stores' handlers and
``StoreQueryUtils.handleBasicQueries`` answer the plain, timestamped, versioned, window and
session stores; the KIP-1271 header-aware RocksDB stores (``RocksDBTimestampedStoreWithHeaders``,
``RocksDBTimestampedWindowStoreWithHeaders``, ``RocksDBSessionStoreWithHeaders``) override
``query`` to answer everything ``UNKNOWN_QUERY_TYPE`` (KAFKA-20185 / KAFKA-20202; Kafka 4.4
serves them, KAFKA-20703). KIP-1356's header queries (``TimestampedKeyWithHeadersQuery``, ...)
do not exist in 4.3.1: the harness sends a stand-in ``Query`` class, which every store refuses as
it refuses any query class it has no handler for.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.kafka.harness import KAFKA_VARIANTS
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
_WINDOW = {"WindowKeyQuery", "WindowRangeQuery.range"}
#: What Kafka 4.3.1 answers with a result, per variant; every other query fails or throws.
ANSWERED: dict[str, set[str]] = {
    "key_value": _KV,
    "timestamped": _KV | {"TimestampedKeyQuery", "TimestampedRangeQuery"},
    "timestamped_headers": set(),
    "versioned": {"VersionedKeyQuery", "VersionedKeyQuery.asOf", "MultiVersionedKeyQuery"},
    "window": _WINDOW,
    "timestamped_window": _WINDOW,
    "window_duplicates": _WINDOW,
    "timestamped_window_headers": set(),
    "session": {"WindowRangeQuery.key"},
    "session_headers": set(),
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
}


@pytest.fixture(scope="module")
def answers(kafka_harness: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Per variant: Kafka's and our answers to every query of ``QUERIES`` (one run each)."""
    out: dict[str, Any] = {}
    for variant in ANSWERED:
        params = params_of(variant)
        if variant == "window_duplicates":
            params = {**params, "retainDuplicates": True}
        ops = _writes(variant) + [{"m": "query", "a": [spec], "rt": 0} for spec in QUERIES.values()]
        kafka = kafka_harness.run(variant, params, ops)
        ours = run(variant, params, ops, tmp_path_factory.mktemp(variant) / "store")
        writes = len(_writes(variant))
        out[variant] = (
            dict(zip(QUERIES, kafka.answers[writes:])),
            dict(zip(QUERIES, ours.answers[writes:])),
        )
    return out


def test_every_harness_variant_is_covered() -> None:
    assert set(ANSWERED) == set(KAFKA_VARIANTS)


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


def test_header_stores_refuse_even_a_key_query(answers: dict[str, Any]) -> None:
    """RocksDBTimestampedStoreWithHeaders.query: forUnknownQueryType for every query (4.3.1)."""
    kafka, ours = answers["timestamped_headers"]
    assert kafka["KeyQuery"]["failure"] == ours["KeyQuery"]["failure"] == "UNKNOWN_QUERY_TYPE"
    assert "RocksDBTimestampedStoreWithHeaders" in kafka["KeyQuery"]["msg"]
    assert "TimestampedKeyValueStoreWithHeaders" in ours["KeyQuery"]["msg"]
