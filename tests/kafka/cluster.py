"""A real Kafka broker and real Kafka Streams applications for the interop tests (issue 24).

**Broker** (:class:`Broker`, session fixture ``kafka_broker``): Apache Kafka :data:`BROKER_VERSION`
(``org.apache.kafka:kafka_2.13``), one KRaft node that is broker and controller at once, on 127.0.0.1
with two free ports, a small heap, its log dirs under a pytest temp dir. Maven resolves its classpath
(``tests/kafka/broker/pom.xml``) once per version and pom hash into the harness' cache directory
(:func:`broker_classpath`); :meth:`Broker.start` formats the storage (``kafka.tools.StorageTool format
--standalone``) and starts ``kafka.Kafka``, then polls the metadata with the Python client until the
broker answers. Settings for tests: replication factor 1 everywhere (offsets and transaction state
topics, min ISR 1), ``group.initial.rebalance.delay.ms=0``, no automatic topic creation, and no
retention check and no log cleaner pass for a day (``log.initial.task.delay.ms``,
``log.retention.check.interval.ms``, ``log.cleaner.backoff.ms``): records with small epoch-ms times
stay in a window changelog, whose ``compact,delete`` policy would delete them, and nothing is
compacted, so a changelog holds every write. The client side is confluent-kafka (the ``test``
extra).

**Application** (:class:`KafkaStreamsApp`, session fixture ``kafka_app_factory``): the Java
application ``statestore.app.App`` (``tests/kafka/src/main/java/statestore/app/``), compiled into the
harness' Maven build (so it exists for every Kafka Streams version the harness builds: 4.3.x, 4.4.x,
3.9.x), run in its own JVM and driven over JSON lines like the harness. Topology: source
``<application_id>-input`` (ByteArray serdes) -> one processor that owns the store (built exactly as
the harness builds ``kind``: ``Stores.*`` persistent supplier, change logging on, caching off) -> no
sink. Each input record becomes one write, with the record's time:

==========================================  ===================================================================
kind                                        write
==========================================  ===================================================================
``keyvalue`` (= ``key_value``)              ``put(key, value)``; a null value deletes
``timestamped``                             ``put(key, ValueAndTimestamp(value, time))``; null deletes
``timestamped_headers`` (4.3+)              ``put(key, ValueTimestampHeaders(value, time, headers))``
``versioned``                               ``put(key, value, time)``; null is a tombstone at ``time``
``window``, ``timestamped_window``,         ``put(key, value', windowStart)``: ``windowStart`` = header ``ws``
``timestamped_window_headers`` (4.3+),      (decimal string), else ``time - time % windowSizeMs``; value' as
``window_duplicates``                       for the key-value kinds
``session``, ``session_headers`` (4.3+)     ``put(Windowed(key, SessionWindow(ss, se)), value')`` with headers
                                            ``ss`` / ``se`` (decimal; default: the record time); null removes
==========================================  ===================================================================

Header-aware stores keep the record's headers without the control headers ``ws``, ``ss``, ``se``.

An **aggregating** application (``aggregate=...``, issue 37) reads the key's state before each write
and forwards one record per input record (the input's key, time and headers) to a sink topic,
``<application_id>-output`` (created with the input's partition count), as Kafka's DSL aggregations
do without their cache (``statestore.app.Aggregator``; BE64 = 8-byte big-endian long, ``+``
concatenates):

==============  =====================================  ========================================
``aggregate``   kinds: write                           output value
==============  =====================================  ========================================
``"count"``     ``keyvalue``, ``timestamped``: the     ``BE64 count``
                key's count (absent: 0) + 1, as BE64
``"count"``     ``window``, ``timestamped_window``:    ``BE64 ws + BE64 count``
                the count of window ``ws = time -
                time % windowSizeMs`` + 1
``"lookup"``    ``versioned``: ``put(key, value,       ``BE64 validTo + before's value``
                time)`` after ``before = get(key,      (nothing: no version or a tombstone);
                time)``                                ``validTo`` is ``put``'s answer
==============  =====================================  ========================================

A timestamped count's time is the larger of the old one and the record's (``KStreamAggregate``).

Records with a null key are skipped (counted). ``params`` are the harness' (Kafka's names):
``retentionMs``, ``windowSizeMs``, ``segmentIntervalMs``, ``historyRetentionMs``,
``retainDuplicates``. The changelog is ``<application_id>-<store>-changelog``; the state lives in
``<state_dir>/<application_id>/<subtopology>_<partition>/``.

Queries (:meth:`KafkaStreamsApp.query`) are the harness' IQv2 JSON specs (``{"type": "KeyQuery",
"key": hex}``, ``RangeQuery`` with ``lower``/``upper``/``ascending``, ``TimestampedKeyQuery``,
``TimestampedRangeQuery``, ``VersionedKeyQuery`` with ``asOf``, ``MultiVersionedKeyQuery``,
``WindowKeyQuery`` with ``key``/``fromTime``/``toTime``, ``WindowRangeQuery``), sent through
``KafkaStreams#query(StateQueryRequest.inStore(store).withQuery(q))`` over all partitions (or those
given). Each partition answers as the harness' ``"m": "query"`` op: ``{"ok", "failure", "result"}``
with the harness' encodings (bytes hex, ``{"v", "t"}``, ``{"v", "t", "to"}``, ``[k, v]``, ...).

Kafka's own behaviour, seen through these (``tests/kafka/test_app.py``): a clean stop leaves the
offsets (4.3: the ``offsets`` column family, no ``.checkpoint``), so a restart restores nothing; a
``RocksDBVersionedStore`` reopened that way answers as-of queries for its older versions with null
(``LogicalKeyValueSegments.openExisting`` registers no segment) until a write recreates the segment;
4.3.1's header-aware stores answer every IQv2 query with ``UNKNOWN_QUERY_TYPE`` (4.4 answers them);
``window_duplicates`` numbers its changelog keys' sequence with one counter per store instance
(1, 2, 3, ... across keys), not per key.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from stores.columns.headers import HEADERS_TYPE
from tests.kafka.harness import KAFKA_VERSION
from tests.kafka.jvms import (
    BROKER_VERSION,
    INSTALL_HINT,
    AppRequestError,
    JsonLinesProcess,
    KafkaUnavailableError,
    app_command,
    broker_classpath,
    client,
    free_port,
    log,
    tail,
)

__all__ = [
    "BROKER_VERSION", "CONSUMED_SCHEMA", "INSTALL_HINT", "AppRequestError", "Broker",
    "KafkaStreamsApp", "KafkaUnavailableError", "broker_classpath",
]

#: The schema of :meth:`Broker.consume`: Spark's Kafka source, with int64 epoch-ms timestamps.
CONSUMED_SCHEMA = pa.schema([
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADERS_TYPE),
])

class Broker:
    """One KRaft broker+controller JVM on 127.0.0.1 (see the module docstring).

    Attributes:
        bootstrap: ``"127.0.0.1:<port>"`` for clients.
        directory: its directory (``server.properties``, ``data/`` log dirs, ``broker.log``).
        start_seconds: wall time from the format step to the first metadata answer.
    """

    def __init__(self, directory: Path, *, classpath: str, java: str = "java",
                 heap: str = "384m", timeout: float = 90.0) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port, self.controller_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self._log_path = self.directory / "broker.log"
        self._admin: Any = None
        self._proc: subprocess.Popen[bytes] | None = None
        data = self.directory / "data"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "log.dirs": str(data),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "min.insync.replicas": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # No deletion and no compaction during a session: tests write records with small epoch-ms
            # times, which a window/session changelog's retention (compact,delete; retention + 1 day)
            # would delete at the broker's next retention check (the first 30 s after start) or the
            # log cleaner's next pass (every 15 s: it also deletes for compact,delete topics).
            "log.initial.task.delay.ms": str(24 * 3600 * 1000),
            "log.retention.check.interval.ms": str(24 * 3600 * 1000),
            "log.cleaner.backoff.ms": str(24 * 3600 * 1000),
        }
        config = self.directory / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        base = [java, f"-Xmx{heap}", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath]
        t0 = time.monotonic()
        # Kafka's ids are URL-safe base64 and one in 64 starts with "-"; given as a separate
        # argument, such an id is read by the tool's argument parser as an unknown option.
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        fmt = subprocess.run([*base, "kafka.tools.StorageTool", "format", "--standalone", f"--cluster-id={cluster_id}",
                              "-c", str(config)], capture_output=True, text=True, check=False)
        if fmt.returncode != 0:
            raise KafkaUnavailableError(
                f"formatting the broker's storage failed (exit {fmt.returncode}): {INSTALL_HINT}.\n"
                f"{(fmt.stdout + fmt.stderr)[-3000:]}"
            )
        with open(self._log_path, "wb") as log:
            self._proc = subprocess.Popen([*base, "kafka.Kafka", str(config)], stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0

    @classmethod
    def start(cls, directory: Path, *, kafka_version: str = BROKER_VERSION, **kwargs: Any) -> Broker:
        """Resolve the classpath (cached) and start the broker in ``directory``."""
        return cls(directory, classpath=broker_classpath(kafka_version=kafka_version), **kwargs)

    def __enter__(self) -> Broker:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the broker's log."""
        return tail(self._log_path, lines)

    def _config(self, **extra: Any) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, "logger": log, **extra}

    def _wait_ready(self, timeout: float) -> None:
        admin = client().admin.AdminClient(self._config())
        deadline = time.monotonic() + timeout
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise KafkaUnavailableError(
                    f"the Kafka broker exited with {self._proc.returncode}; {INSTALL_HINT}.\n"
                    f"broker log (tail):\n{self.log_tail()}"
                )
            try:
                if 1 in admin.list_topics(timeout=1.0).brokers:
                    self._admin = admin
                    return
            except client().KafkaException:
                pass  # not listening yet: list_topics itself waited up to 1 s
            if time.monotonic() > deadline:
                raise KafkaUnavailableError(
                    f"the Kafka broker answered no metadata within {timeout} s.\n"
                    f"broker log (tail):\n{self.log_tail()}"
                )

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the broker cleanly (SIGTERM: controlled shutdown), killing it after ``timeout``."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._admin = None

    @property
    def admin(self) -> Any:
        """A confluent-kafka ``AdminClient`` of this broker."""
        if self._admin is None:
            raise KafkaUnavailableError("the broker is stopped")
        return self._admin

    # -- topics -------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None,
                     timeout: float = 30.0) -> None:
        """Create ``name`` with ``partitions`` partitions and topic ``config``; waits until every
        partition has a leader in the metadata."""
        ck = client()
        topic = ck.admin.NewTopic(name, num_partitions=partitions, replication_factor=1,
                                  config={k: str(v) for k, v in (config or {}).items()})
        self.admin.create_topics([topic], operation_timeout=timeout)[name].result(timeout)
        deadline = time.monotonic() + timeout
        while True:
            meta = self.admin.list_topics(topic=name, timeout=timeout).topics.get(name)
            if meta is not None and meta.error is None and len(meta.partitions) == partitions and all(
                    p.leader >= 0 for p in meta.partitions.values()):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name!r} has no leader for every partition after {timeout} s")

    def partitions(self, topic: str) -> int:
        """The number of partitions of ``topic``."""
        meta = self.admin.list_topics(topic=topic, timeout=30).topics[topic]
        if meta.error is not None:
            raise KeyError(f"topic {topic!r}: {meta.error}")
        return len(meta.partitions)

    def end_offsets(self, topic: str, *, committed_only: bool = True) -> dict[int, int]:
        """Per partition, the offset the next record gets (read_committed: the last stable offset)."""
        ck = client()
        admin = ck.admin
        level = ck.IsolationLevel.READ_COMMITTED if committed_only else ck.IsolationLevel.READ_UNCOMMITTED
        request = {ck.TopicPartition(topic, p): admin.OffsetSpec.latest() for p in range(self.partitions(topic))}
        futures = self.admin.list_offsets(request, isolation_level=level, request_timeout=30)
        return {tp.partition: f.result().offset for tp, f in futures.items()}

    # -- records ------------------------------------------------------------------------------

    def produce(self, topic: str, records: pa.Table, *, timeout: float = 60.0) -> dict[int, int]:
        """Write ``records`` to ``topic`` in order; returns the last offset written per partition.

        ``records`` has ``key`` and ``value`` (binary, nullable) and optionally ``partition`` (int;
        null or absent: Kafka's default partitioner, murmur2 of the key), ``timestamp`` (int64 epoch
        ms; null or absent: now) and ``headers`` (list<struct<key string, value binary>>); other
        columns (``topic``, ``offset``, ...) are ignored. Idempotent producer, acks=all.
        """
        ck = client()
        producer = ck.Producer(self._config(**{
            "enable.idempotence": True, "acks": "all", "linger.ms": 5, "partitioner": "murmur2_random",
        }))
        last: dict[int, int] = {}
        errors: list[str] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())

        names = set(records.column_names)
        for row in records.to_pylist():
            kwargs: dict[str, Any] = {"key": row.get("key"), "value": row.get("value"), "on_delivery": delivered}
            if "partition" in names and row["partition"] is not None:
                kwargs["partition"] = int(row["partition"])
            if "timestamp" in names and row["timestamp"] is not None:
                kwargs["timestamp"] = int(row["timestamp"])
            if "headers" in names and row["headers"]:
                kwargs["headers"] = [(h["key"], h["value"]) for h in row["headers"]]
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.1)
        left = producer.flush(timeout)
        if left or errors:
            raise RuntimeError(f"producing to {topic!r}: {left} records undelivered, errors {errors[:5]}")
        return dict(sorted(last.items()))

    def consume(self, topic: str, *, timeout: float = 60.0) -> pa.Table:
        """Every committed record of ``topic`` up to its current end offsets (read_committed), as
        :data:`CONSUMED_SCHEMA` (Spark's Kafka source shape, timestamps int64 epoch ms), ordered by
        partition and offset."""
        ck = client()
        ends = self.end_offsets(topic)
        consumer = ck.Consumer(self._config(**{
            "group.id": f"state-store-tests-{uuid.uuid4().hex}", "enable.auto.commit": False,
            "isolation.level": "read_committed", "enable.partition.eof": True,
        }))
        rows: list[dict[str, Any]] = []
        try:
            pending = {p for p, end in ends.items() if end > 0}
            consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in sorted(pending)])
            deadline = time.monotonic() + timeout
            while pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"consuming {topic!r}: partitions {sorted(pending)} not read to "
                                       f"their ends {ends} within {timeout} s")
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error() is not None:
                    if msg.error().code() == ck.KafkaError._PARTITION_EOF:
                        if msg.offset() >= ends[msg.partition()]:
                            pending.discard(msg.partition())
                        continue
                    raise RuntimeError(f"consuming {topic!r}: {msg.error()}")
                p, offset = msg.partition(), msg.offset()
                if offset >= ends[p]:
                    pending.discard(p)
                    continue
                ts_type, ts = msg.timestamp()
                rows.append({
                    "key": msg.key(), "value": msg.value(), "topic": topic, "partition": p,
                    "offset": offset, "timestamp": ts, "timestampType": 0 if ts_type == 1 else 1,
                    "headers": [{"key": k, "value": v} for k, v in (msg.headers() or [])],
                })
                if offset + 1 >= ends[p]:
                    pending.discard(p)
        finally:
            consumer.close()
        rows.sort(key=lambda r: (r["partition"], r["offset"]))
        return pa.Table.from_pylist(rows, schema=CONSUMED_SCHEMA)


class KafkaStreamsApp:
    """One Kafka Streams application instance (its own JVM) over ``broker``; see the module docstring.

    The JVM starts with the object and lives until :meth:`close`; :meth:`start` / :meth:`stop` start
    and cleanly close a ``KafkaStreams`` inside it, any number of times (a restart on the same state
    dir, or on a wiped one). Use as a context manager.

    Attributes:
        application_id, store, kind, params, partitions, state_dir, kafka_version, aggregate:
            as given.
        input_topic: ``<application_id>-input`` (created with ``partitions`` partitions if missing).
        output_topic: ``<application_id>-output`` of an aggregating application (created like
            ``input_topic``), else None.
        changelog_topic: ``<application_id>-<store>-changelog``.
        app_dir: ``<state_dir>/<application_id>``.
        start_seconds: wall time of the last :meth:`start` (``KafkaStreams#start`` to RUNNING).
    """

    def __init__(self, broker: Broker, application_id: str, state_dir: str | os.PathLike[str], *,
                 store: str = "store", kind: str = "keyvalue", params: dict[str, Any] | None = None,
                 partitions: int = 1, kafka_version: str = KAFKA_VERSION,
                 processing_guarantee: str = "at_least_once", streams_config: dict[str, Any] | None = None,
                 command: list[str] | None = None, aggregate: str | None = None) -> None:
        self.broker = broker
        self.application_id = application_id
        self.state_dir = Path(state_dir)
        self.store, self.kind, self.params = store, kind, dict(params or {})
        self.partitions, self.kafka_version = partitions, kafka_version
        self.processing_guarantee = processing_guarantee
        self.streams_config = dict(streams_config or {})
        self.aggregate = aggregate
        self.input_topic = f"{application_id}-input"
        self.output_topic = f"{application_id}-output" if aggregate is not None else None
        self.changelog_topic = f"{application_id}-{store}-changelog"
        self.app_dir = self.state_dir / application_id
        self.start_seconds = 0.0
        self.started: dict[str, Any] = {}
        topics = broker.admin.list_topics(timeout=30).topics
        for topic in (self.input_topic, self.output_topic):
            if topic is not None and topic not in topics:
                broker.create_topic(topic, partitions)
        self._jvm = JsonLinesProcess(command or app_command(kafka_version))
        try:
            self.versions = self._jvm.call({"cmd": "ping"})
        except BaseException:
            self._jvm.close()
            raise

    def __enter__(self) -> KafkaStreamsApp:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def config(self) -> dict[str, Any]:
        """The JSON config the JVM's ``start`` takes (see ``statestore.app.Instance``)."""
        config = {
            "bootstrap": self.broker.bootstrap, "application_id": self.application_id,
            "state_dir": str(self.state_dir), "store": self.store, "kind": self.kind,
            "params": self.params, "processing_guarantee": self.processing_guarantee,
            "streams": {k: str(v) for k, v in self.streams_config.items()},
        }
        if self.aggregate is not None:
            config.update(aggregate=self.aggregate, output=self.output_topic)
        return config

    def start(self, timeout: float = 120.0) -> dict[str, Any]:
        """Start the application and wait until it is RUNNING (restoration done).

        Returns the JVM's answer: ``{"state": "RUNNING", "kafka": version, "start_ms": int,
        "params": Kafka's effective store params, "restored": {partition: records}}``.
        """
        t0 = time.monotonic()
        self.started = self._jvm.call({"cmd": "start", "config": {**self.config(),
                                                                  "timeout_ms": int(timeout * 1000)}})
        self.start_seconds = time.monotonic() - t0
        return self.started

    def stop(self) -> bool:
        """Close ``KafkaStreams`` cleanly (stores flushed, offsets checkpointed, group left);
        True when it closed within its timeout."""
        return bool(self._jvm.call({"cmd": "stop"})["clean"])

    def close(self) -> None:
        """Stop the application if it runs and quit the JVM."""
        self._jvm.close()

    def produce(self, records: pa.Table) -> dict[int, int]:
        """:meth:`Broker.produce` to :attr:`input_topic`."""
        return self.broker.produce(self.input_topic, records)

    def output(self) -> pa.Table:
        """:meth:`Broker.consume` of :attr:`output_topic` (an aggregating application's output).

        Raises:
            ValueError: the application does not aggregate (it has no output topic).
        """
        if self.output_topic is None:
            raise ValueError(f"application {self.application_id!r} has no output topic "
                             "(aggregate=... makes one)")
        return self.broker.consume(self.output_topic)

    def wait_processed(self, offsets: dict[int, int], timeout: float = 60.0) -> dict[int, int]:
        """Wait until the application's committed input offsets pass ``offsets`` (partition -> last
        offset, as :meth:`Broker.produce` returns); returns the committed offsets."""
        request = {"cmd": "processed", "offsets": {str(p): o for p, o in offsets.items()},
                   "timeout_ms": int(timeout * 1000)}
        return {int(p): o for p, o in self._jvm.call(request)["committed"].items()}

    def restored(self) -> int:
        """Records restored into the store since the last :meth:`start` (the restore listener's count)."""
        return int(self._jvm.call({"cmd": "restored"})["total"])

    def restored_by_partition(self) -> dict[int, int]:
        """:meth:`restored` per changelog partition."""
        return {int(p): n for p, n in self._jvm.call({"cmd": "restored"})["partitions"].items()}

    def describe(self) -> dict[str, Any]:
        """``Topology#describe()``: ``{"subtopologies": [{"id", "stores", "nodes"}], "text"}``."""
        return self._jvm.call({"cmd": "describe"})

    def subtopology(self) -> int:
        """The id of the subtopology that owns the store (the ``<subtopology>`` of the task dirs)."""
        return next(s["id"] for s in self.describe()["subtopologies"] if self.store in s["stores"])

    def query(self, query: dict[str, Any], partitions: list[int] | None = None) -> dict[int, dict[str, Any]]:
        """IQv2 ``query`` (a harness query spec) over all partitions (or ``partitions``):
        ``{partition: {"ok", "failure", "result"}}``."""
        request: dict[str, Any] = {"cmd": "query", "query": query}
        if partitions is not None:
            request["partitions"] = list(partitions)
        return {int(p): r for p, r in self._jvm.call(request)["partitions"].items()}

    def query_result(self, query: dict[str, Any]) -> Any:
        """The answer of ``query`` over all partitions, combined: the one non-null result for a
        single-valued query (None when none), the concatenation in partition order for iterators.

        Raises:
            AppRequestError: a partition failed (its failure reason and message).
        """
        answers = self.query(query)
        failed = {p: (a["failure"], a.get("msg")) for p, a in answers.items() if not a["ok"]}
        if failed:
            raise AppRequestError(f"query {query} failed on partitions {failed}")
        results = [answers[p]["result"] for p in sorted(answers)]
        if any(isinstance(r, list) for r in results):
            return [item for r in results if r is not None for item in r]
        found = [r for r in results if r is not None]
        if len(found) > 1:
            raise AppRequestError(f"query {query} answered on several partitions: {found}")
        return found[0] if found else None

