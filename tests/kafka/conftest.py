"""Fixtures only: the one Kafka harness JVM of the test session (see ``tests/kafka/harness.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kafka.harness import HarnessBuildError, HarnessDiedError, KafkaHarness, build


@pytest.fixture(scope="session")
def kafka_harness() -> Iterator[KafkaHarness]:
    """Kafka Streams 4.3.1's own stores in one JVM for the whole session.

    Maven builds the harness once per hash of ``pom.xml`` and the Java sources, into
    ``$XDG_CACHE_HOME/state_store/kafka-harness/<hash>`` (``~/.cache/...`` by default); later
    sessions reuse it. A missing Java 17 JDK or Maven, or a failed build, fails the test with
    what to install and Maven's output: never a skip.
    """
    try:
        harness = KafkaHarness(build().command())
    except (HarnessBuildError, HarnessDiedError, OSError) as exc:
        pytest.fail(f"Kafka harness unavailable: {exc}", pytrace=False)
    with harness:
        yield harness
