"""Fixtures only: the Kafka harness JVMs of the test session (see ``tests/kafka/harness.py``), the
real Kafka broker and the Kafka Streams applications on it (see ``tests/kafka/cluster.py``)."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.kafka.cluster import Broker, KafkaStreamsApp, KafkaUnavailableError
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


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A real Apache Kafka 4.3.1 broker (KRaft, one broker+controller node on 127.0.0.1) for the
    whole session, its log dirs under a pytest temp dir; stopped cleanly at the session's end.

    Maven resolves its classpath once (``tests/kafka/broker/pom.xml``, cached beside the harness
    builds). Missing Java, Maven or confluent-kafka fails the test saying what to install.
    """
    try:
        broker = Broker.start(tmp_path_factory.mktemp("kafka-broker"))
    except (KafkaUnavailableError, OSError) as exc:
        pytest.fail(f"Kafka broker unavailable: {exc}", pytrace=False)
    with broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_app_factory(kafka_broker: Broker) -> Iterator[Callable[..., KafkaStreamsApp]]:
    """Builds :class:`tests.kafka.cluster.KafkaStreamsApp` s on ``kafka_broker``.

    ``kafka_app_factory(state_dir, *, application_id=None, store="store", kind="keyvalue",
    params=None, partitions=1, kafka_version="4.3.1", processing_guarantee="at_least_once",
    streams_config=None, aggregate=None)`` (``aggregate``: a counting or looking-up application
    with an output topic, see ``tests/kafka/cluster.py``): ``application_id`` defaults to a fresh unique name (topics outlive a
    test: each application needs its own). The Maven build is the harness' (one per Kafka version,
    cached); each application is its own JVM, closed by the test (``with``) or at the session's end.
    """
    apps: list[KafkaStreamsApp] = []
    counter = itertools.count(1)

    def make(state_dir: str | os.PathLike[str], *, application_id: str | None = None,
             **kwargs: Any) -> KafkaStreamsApp:
        app_id = application_id or f"app{next(counter)}-{uuid.uuid4().hex[:8]}"
        try:
            app = KafkaStreamsApp(kafka_broker, app_id, state_dir, **kwargs)
        except KafkaUnavailableError as exc:
            pytest.fail(f"Kafka Streams application unavailable: {exc}", pytrace=False)
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()
