"""A real Kafka Streams application on a real broker (tests/kafka/cluster.py), one smoke test per
store kind: its input processed, its IQv2 answers (``KafkaStreams#query``) right; a clean stop and a
restart on the same state dir restores nothing (Kafka trusts its checkpointed offsets:
``ProcessorStateManager``, KIP-1035's offsets column family on 4.3); a restart on a wiped state
dir restores every changelog record (``StoreChangelogReader``) and answers the same.

Times are printed (run with ``-s``), never asserted.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from stores.columns.headers import HEADERS_TYPE
from tests.kafka.cluster import (
    CONSUMED_SCHEMA,
    Broker,
    KafkaStreamsApp,
    KafkaUnavailableError,
    broker_classpath,
)

PARTITIONS = 2


def _h(s: str) -> str:
    return s.encode().hex()


@dataclass
class Scenario:
    """Input records ``(key, value, time, headers)`` (key k<i> goes to partition i % 2) and the
    queries with the answers Kafka must give, combined over the partitions (``query_result``)."""

    kind: str
    params: dict[str, Any]
    records: list[tuple[str, str | None, int, list[tuple[str, bytes]]]]
    queries: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    kafka_version: str = "4.3.1"
    processing_guarantee: str = "at_least_once"
    #: Answers (by query index) Kafka gives otherwise after reopening its own state without restoring.
    reopened: dict[int, Any] = field(default_factory=dict)

    def table(self) -> pa.Table:
        return pa.table({
            "key": pa.array([k.encode() for k, _, _, _ in self.records], pa.binary()),
            "value": pa.array([None if v is None else v.encode() for _, v, _, _ in self.records], pa.binary()),
            "partition": pa.array([int(k[1:]) % PARTITIONS for k, _, _, _ in self.records], pa.int32()),
            "timestamp": pa.array([t for _, _, t, _ in self.records], pa.int64()),
            "headers": pa.array([[{"key": hk, "value": hv} for hk, hv in h] for _, _, _, h in self.records],
                                HEADERS_TYPE),
        })


KV_RECORDS: list[tuple[str, str | None, int, list[tuple[str, bytes]]]] = [
    ("k0", "a", 100, []), ("k1", "b", 110, []), ("k2", "c", 120, []), ("k3", "d", 130, []),
    ("k0", "a2", 140, []), ("k1", None, 150, []),
]

SCENARIOS = [
    Scenario("keyvalue", {}, KV_RECORDS, [
        ({"type": "KeyQuery", "key": _h("k0")}, _h("a2")),
        ({"type": "KeyQuery", "key": _h("k1")}, None),
        ({"type": "KeyQuery", "key": _h("k3")}, _h("d")),
        ({"type": "RangeQuery"}, [[_h("k0"), _h("a2")], [_h("k2"), _h("c")], [_h("k3"), _h("d")]]),
        ({"type": "RangeQuery", "lower": _h("k1"), "upper": _h("k2")}, [[_h("k2"), _h("c")]]),
    ]),
    Scenario("timestamped", {}, KV_RECORDS, [
        ({"type": "TimestampedKeyQuery", "key": _h("k0")}, {"v": _h("a2"), "t": 140}),
        ({"type": "TimestampedKeyQuery", "key": _h("k1")}, None),
        ({"type": "KeyQuery", "key": _h("k2")}, _h("c")),
        ({"type": "TimestampedRangeQuery"}, [[_h("k0"), {"v": _h("a2"), "t": 140}],
                                             [_h("k2"), {"v": _h("c"), "t": 120}],
                                             [_h("k3"), {"v": _h("d"), "t": 130}]]),
    ]),
    Scenario("versioned", {"historyRetentionMs": 100_000}, [
        ("k0", "a", 100, []), ("k0", "b", 200, []), ("k1", "c", 150, []), ("k1", None, 250, []),
        ("k2", "d", 120, []),
    ], [
        ({"type": "VersionedKeyQuery", "key": _h("k0")}, {"v": _h("b"), "t": 200, "to": None}),
        ({"type": "VersionedKeyQuery", "key": _h("k0"), "asOf": 150}, {"v": _h("a"), "t": 100, "to": 200}),
        ({"type": "VersionedKeyQuery", "key": _h("k1")}, None),
        ({"type": "VersionedKeyQuery", "key": _h("k1"), "asOf": 200}, {"v": _h("c"), "t": 150, "to": 250}),
        ({"type": "MultiVersionedKeyQuery", "key": _h("k0"), "ascending": True},
         [{"v": _h("a"), "t": 100, "to": 200}, {"v": _h("b"), "t": 200, "to": None}]),
    ], reopened={
        # Kafka's own behaviour (4.3.1): a RocksDBVersionedStore reopened from its state dir (no restore)
        # does not see its older versions: LogicalKeyValueSegments.openExisting opens the one RocksDB but
        # registers no logical segment, and get(key, asOf) only searches registered segments (until a
        # write creates that segment again). The latest values (the reserved segment) are there.
        1: None, 3: None, 4: [{"v": _h("b"), "t": 200, "to": None}],
    }),
    Scenario("window", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 105, []), ("k0", "b", 250, [("ws", b"200")]), ("k1", "c", 130, []),
        ("k0", "a2", 150, []),
    ], [
        ({"type": "WindowKeyQuery", "key": _h("k0"), "fromTime": 0, "toTime": 1000},
         [[100, _h("a2")], [200, _h("b")]]),
        ({"type": "WindowRangeQuery", "fromTime": 0, "toTime": 1000},
         [[{"k": _h("k0"), "s": 100, "e": 200}, _h("a2")], [{"k": _h("k0"), "s": 200, "e": 300}, _h("b")],
          [{"k": _h("k1"), "s": 100, "e": 200}, _h("c")]]),
    ]),
    Scenario("timestamped_window", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 105, []), ("k0", "b", 250, [("ws", b"200")]), ("k1", "c", 130, []),
    ], [
        ({"type": "WindowKeyQuery", "key": _h("k0"), "fromTime": 0, "toTime": 1000},
         [[100, {"v": _h("a"), "t": 105}], [200, {"v": _h("b"), "t": 250}]]),
    ]),
    Scenario("session", {"retentionMs": 100_000}, [
        ("k0", "a", 150, [("ss", b"100"), ("se", b"150")]), ("k0", "b", 300, []),
        ("k1", "c", 200, [("ss", b"100"), ("se", b"200")]), ("k0", None, 300, [("ss", b"300"), ("se", b"300")]),
    ], [
        ({"type": "WindowRangeQuery", "key": _h("k0")}, [[{"k": _h("k0"), "s": 100, "e": 150}, _h("a")]]),
        ({"type": "WindowRangeQuery", "key": _h("k1")}, [[{"k": _h("k1"), "s": 100, "e": 200}, _h("c")]]),
    ]),
    Scenario("window_duplicates", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 105, []), ("k0", "a", 110, []), ("k1", "c", 130, []),
    ], [
        ({"type": "WindowKeyQuery", "key": _h("k0"), "fromTime": 0, "toTime": 1000},
         [[100, _h("a")], [100, _h("a")]]),
    ]),
    # Kafka 4.3.1's header-aware stores answer no IQv2 query (UNKNOWN_QUERY_TYPE; KAFKA-20703 in 4.4):
    # processing, the changelog's headers and the restores only.
    Scenario("timestamped_headers", {}, [
        ("k0", "a", 100, [("h", b"x")]), ("k1", "b", 110, []), ("k0", "a2", 140, [("h", b"y"), ("ws", b"1")]),
    ]),
    Scenario("timestamped_headers", {}, [
        ("k0", "a", 100, [("h", b"x")]), ("k1", "b", 110, []), ("k0", "a2", 140, [("h", b"y"), ("ws", b"1")]),
    ], [
        ({"type": "TimestampedKeyWithHeadersQuery", "key": _h("k0")},
         {"key": _h("k0"), "v": _h("a2"), "t": 140, "h": [["h", _h("y")]]}),
        ({"type": "TimestampedKeyQuery", "key": _h("k1")}, {"v": _h("b"), "t": 110}),
    ], kafka_version="4.4.0"),
    Scenario("timestamped_window_headers", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 150, [("x", b"1")]), ("k0", "b", 300, [("ws", b"200")]), ("k1", "c", 200, []),
    ], [
        ({"type": "TimestampedWindowKeyWithHeadersQuery", "key": _h("k0"), "fromTime": 0, "toTime": 1000},
         [{"key": {"k": _h("k0"), "s": 100, "e": 200}, "v": _h("a"), "t": 150, "h": [["x", _h("1")]]},
          {"key": {"k": _h("k0"), "s": 200, "e": 300}, "v": _h("b"), "t": 300, "h": []}]),
    ], kafka_version="4.4.0"),
    Scenario("session_headers", {"retentionMs": 100_000}, [
        ("k0", "a", 150, [("ss", b"100"), ("se", b"150"), ("x", b"1")]), ("k1", "c", 200, []),
    ], [
        ({"type": "WindowRangeQuery", "key": _h("k0")}, [[{"k": _h("k0"), "s": 100, "e": 150}, _h("a")]]),
    ], kafka_version="4.4.0"),
    Scenario("keyvalue", {}, KV_RECORDS, [
        ({"type": "KeyQuery", "key": _h("k0")}, _h("a2")),
        ({"type": "RangeQuery"}, [[_h("k0"), _h("a2")], [_h("k2"), _h("c")], [_h("k3"), _h("d")]]),
    ], kafka_version="3.9.1"),
    Scenario("keyvalue", {}, KV_RECORDS, [
        ({"type": "KeyQuery", "key": _h("k0")}, _h("a2")),
        ({"type": "RangeQuery"}, [[_h("k0"), _h("a2")], [_h("k2"), _h("c")], [_h("k3"), _h("d")]]),
    ], processing_guarantee="exactly_once_v2"),
]
HEADER_KINDS = ("timestamped_headers", "timestamped_window_headers", "session_headers")
CONTROL_HEADERS = ("ws", "ss", "se")


def _normal(query: dict[str, Any], result: Any) -> Any:
    """Range answers come per partition, each in key order: compare them sorted."""
    if isinstance(result, list) and query["type"] in ("RangeQuery", "TimestampedRangeQuery", "WindowRangeQuery"):
        return sorted(result, key=repr)
    return result


def _answers(app: KafkaStreamsApp, scenario: Scenario) -> list[Any]:
    return [_normal(query, app.query_result(query)) for query, _ in scenario.queries]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[f"{s.kind}-{s.kafka_version}-{s.processing_guarantee}" for s in SCENARIOS])
def test_app_processes_answers_and_restores(
    scenario: Scenario, kafka_broker: Broker, kafka_app_factory: Callable[..., KafkaStreamsApp], tmp_path: Path,
) -> None:
    t0 = time.monotonic()
    with kafka_app_factory(tmp_path / "state", kind=scenario.kind, params=scenario.params, partitions=PARTITIONS,
                           kafka_version=scenario.kafka_version,
                           processing_guarantee=scenario.processing_guarantee) as app:
        jvm = time.monotonic() - t0
        first = app.start()
        assert first["state"] == "RUNNING" and first["kafka"] == scenario.kafka_version
        assert app.restored() == 0
        offsets = app.produce(scenario.table())
        app.wait_processed(offsets)
        answers = _answers(app, scenario)
        assert answers == [_normal(query, answer) for query, answer in scenario.queries]
        assert app.stop()

        # The changelog holds one record per write (Kafka's change-logging layer logs every put).
        changelog = kafka_broker.consume(app.changelog_topic)
        assert changelog.schema == CONSUMED_SCHEMA
        assert changelog.num_rows == len(scenario.records)
        # Header-aware stores log the headers they keep (the record's, less the control headers).
        assert changelog.column("headers").to_pylist() == [
            [{"key": k, "value": v} for k, v in h if k not in CONTROL_HEADERS] if scenario.kind in HEADER_KINDS else []
            for _, _, _, h in sorted(scenario.records, key=lambda r: int(r[0][1:]) % PARTITIONS)]
        subtopology = app.subtopology()
        assert sorted(p.name for p in app.app_dir.iterdir() if p.is_dir()) == [
            f"{subtopology}_{p}" for p in range(PARTITIONS)]

        app.start()
        restart = app.start_seconds
        assert app.restored() == 0  # the clean close left its offsets: nothing to restore
        reopened = [_normal(q, scenario.reopened[i]) if i in scenario.reopened else answers[i]
                    for i, (q, _) in enumerate(scenario.queries)]
        assert _answers(app, scenario) == reopened
        assert app.stop()

        shutil.rmtree(app.app_dir)
        app.start()
        wiped = app.start_seconds
        assert app.restored() == len(scenario.records)
        assert sum(app.restored_by_partition().values()) == len(scenario.records)
        assert _answers(app, scenario) == answers
        assert app.stop()
    print(f"\n[{scenario.kind} {scenario.kafka_version} {scenario.processing_guarantee}] broker start {kafka_broker.start_seconds:.2f}s, "
          f"app JVM {jvm:.2f}s, app start {first['start_ms'] / 1000:.2f}s, restart {restart:.2f}s, "
          f"restart after wipe {wiped:.2f}s, test {time.monotonic() - t0:.2f}s")


def test_consume_keeps_partitions_times_and_headers(kafka_broker: Broker) -> None:
    kafka_broker.create_topic("consume-shape", 3, {"retention.ms": "-1"})
    records = pa.table({
        "key": pa.array([b"a", b"b", None], pa.binary()),
        "value": pa.array([b"1", None, b"3"], pa.binary()),
        "partition": pa.array([2, 0, 2], pa.int32()),
        "timestamp": pa.array([5, 6, 7], pa.int64()),
        "headers": pa.array([[{"key": "x", "value": b"y"}, {"key": "n", "value": None}], [], []], HEADERS_TYPE),
    })
    offsets = kafka_broker.produce("consume-shape", records)
    assert offsets == {0: 0, 2: 1}
    got = kafka_broker.consume("consume-shape")
    assert got.select(["key", "value", "partition", "offset", "timestamp", "headers"]).to_pylist() == [
        {"key": b"b", "value": None, "partition": 0, "offset": 0, "timestamp": 6, "headers": []},
        {"key": b"a", "value": b"1", "partition": 2, "offset": 0, "timestamp": 5,
         "headers": [{"key": "x", "value": b"y"}, {"key": "n", "value": None}]},
        {"key": None, "value": b"3", "partition": 2, "offset": 1, "timestamp": 7, "headers": []},
    ]
    assert kafka_broker.end_offsets("consume-shape") == {0: 1, 1: 0, 2: 2}


def test_missing_maven_fails_saying_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no mvn
    with pytest.raises(KafkaUnavailableError, match="apt-get install openjdk-17-jdk-headless maven"):
        broker_classpath(tmp_path / "cache")
