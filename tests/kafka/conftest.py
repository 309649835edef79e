"""Fixtures only: the Kafka harness JVMs of the test session (see ``tests/kafka/harness.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.kafka.harness import (
    KAFKA3_VERSION,
    KAFKA44_VERSION,
    KAFKA_VERSION,
    HarnessBuildError,
    HarnessDiedError,
    KafkaHarness,
    build,
)


def _harness(kafka_version: str) -> Iterator[KafkaHarness]:
    try:
        harness = KafkaHarness(build(kafka_version=kafka_version).command())
    except (HarnessBuildError, HarnessDiedError, OSError) as exc:
        pytest.fail(f"Kafka {kafka_version} harness unavailable: {exc}", pytrace=False)
    with harness:
        yield harness


@pytest.fixture(scope="session")
def kafka_harness() -> Iterator[KafkaHarness]:
    """Kafka Streams 4.3.1's own stores in one JVM for the whole session.

    Maven builds the harness once per Kafka version and hash of ``pom.xml`` and the Java sources,
    into ``$XDG_CACHE_HOME/state_store/kafka-harness/<hash>`` (``~/.cache/...`` by default); later
    sessions reuse it. A missing Java 17 JDK or Maven, or a failed build, fails the test with
    what to install and Maven's output: never a skip.
    """
    yield from _harness(KAFKA_VERSION)


@pytest.fixture(scope="session")
def kafka_harness_3() -> Iterator[KafkaHarness]:
    """Kafka Streams 3.9.1's own stores in a second JVM, built and started only when a test asks.

    Its variants are ``KAFKA3_VARIANTS`` (no KIP-1271 header-aware stores); same cache and same
    failure rules as ``kafka_harness``.
    """
    yield from _harness(KAFKA3_VERSION)


@pytest.fixture(scope="session")
def kafka_harness_44() -> Iterator[KafkaHarness]:
    """Kafka Streams 4.4.0's own stores in another JVM, built and started only when a test asks.

    The judge of the header-aware stores' IQv2 answers: 4.4 is the first release whose
    KIP-1271 header-aware stores answer queries (KAFKA-20703) and that has KIP-1356's header
    query types. Same variants, cache and failure rules as ``kafka_harness``.
    """
    yield from _harness(KAFKA44_VERSION)
