"""``examples/kafka_streams.py`` runs as a user runs it, against the test broker; then a real Kafka
Streams application (``clicks-app``, store ``counts``, as the example describes it) starts on the
state directory the example wrote: it restores nothing (KIP-1035's offsets, trusted) and answers
from the state the example made in Spark."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.kafka.cluster import Broker, KafkaStreamsApp
from tests.test_examples import EXAMPLES


def test_kafka_streams_example(
    kafka_broker: Broker,
    kafka_app_factory: Callable[..., KafkaStreamsApp],
    spark_env: dict[str, str],
    tmp_path: Path,
) -> None:
    state = tmp_path / "kafka-streams-state"
    env = {**spark_env, "STATE_STORE_ROOT": str(tmp_path / "warehouse"),
           "KAFKA_BOOTSTRAP": kafka_broker.bootstrap, "KAFKA_STATE_DIR": str(state)}  # fmt: skip
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "kafka_streams.py")], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    out = result.stdout
    assert "Produced 4 records to clicks-app-counts-changelog" in out
    assert "Task directories: ['0_0', '0_1']" in out
    assert "|ada|   12|1970-01-01 00:00:01|" in out and "|dee|    1|" in out
    assert "clicks-app-counts-changelog" in out.split("Continue from:")[1]

    with kafka_app_factory(state, application_id="clicks-app", store="counts", kind="timestamped",
                           partitions=2) as app:  # fmt: skip
        app.start()
        assert app.restored() == 0
        answer = app.query_result({"type": "TimestampedKeyQuery", "key": b"ada".hex()})
        assert answer == {"v": (12).to_bytes(8, "big").hex(), "t": 1_000}
        assert app.stop()
