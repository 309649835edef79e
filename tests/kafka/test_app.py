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
from tests.kafka.scenarios import PARTITIONS, SCENARIOS, Scenario

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
