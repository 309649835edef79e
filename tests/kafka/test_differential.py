"""Kafka Streams' own stores judge ours: the same op sequences, byte for byte.

Hypothesis generates op sequences per store variant (``tests/kafka/sequences.py``); each runs
through Kafka's store, built as Kafka builds it (RocksDB, change logging on, in a
``TopologyTestDriver``: ``tests/kafka/harness.py``), and through ours with our change-logging
layer (``stores.change_logging``). Compared, byte for byte:

1. the contents of every column family Kafka writes (per segment for window and session
   stores: ours keeps one database with a segment prefix, split off before comparing);
2. the changelog records each side emits (key, value, timestamp, headers), in order;
3. every op's answer (values, iterators drained, validity intervals of versioned records).

Every store Kafka Streams 4.3.1 builds is checked, and every one Kafka Streams 3.9.1 has (no
header stores there); the header-aware stores also against 4.4.0, whose IQv2 answers they
follow. 200 sequences per variant run in CI; ``STATE_STORE_KAFKA_EXAMPLES=10000``
runs more.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.kafka.harness import HEADER_VARIANTS, KAFKA3_VARIANTS, KAFKA_VARIANTS
from tests.kafka.ours import run
from tests.kafka.sequences import WINDOW_PARAMS, params_of, sequences

EXAMPLES = int(os.environ.get("STATE_STORE_KAFKA_EXAMPLES", "200"))


def _same_answer(kafka: Any, ours: Any, variant: str, op: dict[str, Any]) -> bool:
    """Equal, or both an error (the exception classes are Java's and ours), or both the same
    failed query result (the reason compared; messages name Java or Python classes).

    Versioned ``get(key, asOf)`` and ``delete``: Kafka's processor-facing store drops the
    record's validTo (``MeteredVersionedKeyValueStore`` passes it through a
    ``ValueAndTimestamp``); ours answers as ``RocksDBVersionedStore`` itself does, with it. The
    value and timestamp are compared here; validity intervals by the IQv2 queries
    (``VersionedKeyQuery``, ``MultiVersionedKeyQuery``), which keep them in Kafka too."""
    if (
        variant == "versioned"
        and op["m"] in ("get", "delete")
        and len(op["a"]) == 2
        and isinstance(kafka, dict)
        and isinstance(ours, dict)
        and kafka.get("to", 0) is None
    ):
        ours = {**ours, "to": None}
    if isinstance(kafka, dict) and "error" in kafka:
        return isinstance(ours, dict) and "error" in ours
    if isinstance(kafka, dict) and kafka.get("ok") is False:
        return isinstance(ours, dict) and ours.get("failure") == kafka["failure"]
    return bool(kafka == ours)


def _cf_key(row: list[Any]) -> tuple[Any, ...]:
    return (-1 if row[0] is None else row[0], row[1], row[2], row[3])


def live_session_rows(
    rows: list[list[Any]], ops: list[dict[str, Any]], params: dict[str, Any]
) -> list[list[Any]]:
    """A session store's rows in segments live at the stream time ``ops`` reach.

    Kafka 3.9.1's session store drops expired segments on every put, one dropped as expired
    too (``KeyValueSegments.getOrCreateSegmentIfLive`` calls ``cleanupExpiredSegments`` after
    its super's, since KAFKA-14491); 4.3.1's only on a put it writes (``AbstractSegments``'
    cleanup sits in the live branch), and ours as 4.3.1. After a ``remove`` moves stream time
    on (it never cleans up) and a dropped put, 3.9.1 has dropped segments 4.3.1 keeps: rows
    no read returns, as they are past retention. Both keep the same live rows."""
    ends = [op["a"][0]["e"] for op in ops if op["m"] in ("put", "remove")]
    if not ends:
        return rows
    min_live = max(0, max(ends) - params["retentionMs"]) // params["segmentIntervalMs"]
    return [row for row in rows if row[0] is None or row[0] >= min_live]


def assert_same(
    variant: str,
    ops: list[dict[str, Any]],
    kafka: Any,
    ours: Any,
    rows: Callable[[list[list[Any]]], list[list[Any]]] = lambda rows: rows,
) -> None:
    """Kafka's run and ours agree; the message names the first difference. ``rows`` picks the
    column family rows compared (``live_session_rows`` for Kafka 3.9.1's session store)."""
    for index, (op, k, o) in enumerate(zip(ops, kafka.answers, ours.answers)):
        assert _same_answer(k, o, variant, op), f"op {index} {op}: Kafka answered {k}, ours {o}"
    assert len(kafka.answers) == len(ours.answers)
    for index, (k, o) in enumerate(zip(kafka.changelog, ours.changelog)):
        assert k == o, f"changelog record {index}: Kafka's {k}, ours {o}"
    assert len(kafka.changelog) == len(ours.changelog), (
        f"Kafka logged {len(kafka.changelog)} records, ours {len(ours.changelog)}: "
        f"{kafka.changelog[len(ours.changelog):] or ours.changelog[len(kafka.changelog):]}"
    )
    kafka_rows = sorted(rows(kafka.cfs), key=_cf_key)
    our_rows = sorted(rows(ours.cfs), key=_cf_key)
    only_kafka = [r for r in kafka_rows if r not in our_rows]
    only_ours = [r for r in our_rows if r not in kafka_rows]
    assert not only_kafka and not only_ours, (
        f"column families differ: only Kafka's {only_kafka[:5]}, only ours {only_ours[:5]}"
    )


#: Every store Kafka 4.3 builds, and the timestamped window stores with retainDuplicates too
#: (our ``WindowStoreWithHeaders`` has no Kafka counterpart: 4.3 has no public builder of it).
CASES = [(variant, params_of(variant)) for variant in KAFKA_VARIANTS] + [
    (variant, {**WINDOW_PARAMS, "retainDuplicates": True})
    for variant in ("timestamped_window", "timestamped_window_headers")
]
#: The stores Kafka 3.9 has (no KIP-1271 header stores).
CASES_3 = [(variant, params_of(variant)) for variant in KAFKA3_VARIANTS] + [
    ("timestamped_window", {**WINDOW_PARAMS, "retainDuplicates": True})
]
#: Kafka 3.9.1's session store, as a processor sees it, refuses the backward reads: its
#: ``AbstractReadWriteDecorator.SessionStoreReadWriteDecorator`` does not forward them (the
#: interface's defaults throw UnsupportedOperationException); 4.3 forwards them. Ours answers.
REFUSED_BY_3 = frozenset({"backwardFetch", "backwardFindSessions"})


def _ids(cases: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [v + ("_duplicates" if p.get("retainDuplicates") else "") for v, p in cases]


def check_same(
    harness: Any,
    variant: str,
    params: dict[str, Any],
    without: frozenset[str] = frozenset(),
    live_only: bool = False,
) -> None:
    """Generated sequences of ``variant`` run the same on Kafka's store and ours (with
    ``live_only``, their session rows in live segments: ``live_session_rows``)."""

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
    @given(ops=sequences(variant, params, without))
    def same(ops: list[dict[str, Any]]) -> None:
        kafka = harness.run(variant, params, ops)
        with tempfile.TemporaryDirectory(prefix="ours-") as folder:
            ours = run(variant, params, ops, Path(folder) / "store")
        if live_only:
            assert_same(variant, ops, kafka, ours, lambda r: live_session_rows(r, ops, params))
        else:
            assert_same(variant, ops, kafka, ours)

    same()


@pytest.mark.parametrize(("variant", "params"), CASES, ids=_ids(CASES))
def test_same_as_kafka(kafka_harness: Any, variant: str, params: dict[str, Any]) -> None:
    # Kafka 4.3.1's header-aware stores refuse every IQv2 query; ours answer as 4.4 does
    # (KAFKA-20703), checked against Kafka 4.4 in test_queries_kafka.py.
    without = frozenset({"query"}) if variant in HEADER_VARIANTS else frozenset()
    check_same(kafka_harness, variant, params, without)


#: The header-aware stores, whose IQv2 answers follow Kafka 4.4 (the first release to serve
#: them, KAFKA-20703), with the KIP-1356 header queries.
CASES_44 = [(variant, params_of(variant)) for variant in HEADER_VARIANTS] + [
    ("timestamped_window_headers", {**WINDOW_PARAMS, "retainDuplicates": True})
]


@pytest.mark.parametrize(("variant", "params"), CASES_44, ids=_ids(CASES_44))
def test_same_as_kafka_44(kafka_harness_44: Any, variant: str, params: dict[str, Any]) -> None:
    check_same(kafka_harness_44, variant, params)


@pytest.mark.parametrize(("variant", "params"), CASES_3, ids=_ids(CASES_3))
def test_same_as_kafka_3(kafka_harness_3: Any, variant: str, params: dict[str, Any]) -> None:
    session = variant.startswith("session")
    check_same(kafka_harness_3, variant, params, REFUSED_BY_3 if session else frozenset(), session)


def test_a_put_dropped_after_a_remove_moved_stream_time_on(
    kafka_harness: Any, kafka_harness_3: Any
) -> None:
    """The version difference ``live_session_rows`` allows, found by the generated sequences:
    a remove far in the future, then a put into an expired segment. Kafka 4.3.1 keeps the
    expired segment as ours does; 3.9.1 drops it; the live rows agree."""
    session, put = {"k": "", "s": 0, "e": 0}, {"m": "put", "rt": 0, "rh": []}
    ops = [
        {**put, "a": [session, ""]},
        {"m": "remove", "a": [{**session, "e": 2**55}], "rt": 0, "rh": []},
        {**put, "a": [session, ""]},
    ]
    params = params_of("session")
    with tempfile.TemporaryDirectory(prefix="ours-") as folder:
        ours = run("session", params, ops, Path(folder) / "store")
    assert_same("session", ops, kafka_harness.run("session", params, ops), ours)
    kafka_3 = kafka_harness_3.run("session", params, ops)
    assert kafka_3.cfs != ours.cfs  # (3.9.1 dropped segment 0)
    assert_same("session", ops, kafka_3, ours, lambda r: live_session_rows(r, ops, params))
