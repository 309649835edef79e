"""A stopped Kafka Streams application's store moved to a new ``application.id``, optionally to
another partition count: what ``Catalog.move_kafka_application`` (``state-store kafka-move``)
checks before it writes anything, and how the new application's changelog records get to Kafka.

The move: the old application's state directory imported (``routes.import_state_dir``),
rescaled (``rescale``), its changelog records produced to the new application's changelog
topic (``produce_changelog``: a topic the move creates, or an empty one of the right partition
count) or written to a Parquet file for the operator to produce (``write_records``), and the
state directory written for the new application with the offsets of those records, so that
an instance started on it restores nothing (``export_dir.write_state_dir``). Kafka keeps a
record's partition and timestamp only through a producer that sets them; Spark's Kafka sink
sets no record time, which a timestamped or versioned store's records need.

``plan_move`` is every check the move makes before it writes (a dry run stops there):
the source directory holds the store and is not locked, the target directory holds none of
it and is not locked, the new store's parameters are the old one's, the warehouse has no
store of that name, the records' destination is free.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from catalog.kafka.export_dir import check_target
from catalog.kafka.rescale import check_partition_count
from catalog.kafka.state_dir import read_state_dir, state_dir_partitions
from catalog.kafka.task_dirs import changelog_topic
from catalog.log.spec import StoreSpec
from catalog.partitioner import partitions_of
from stores.errors import InvalidOptionError, StoreNotFoundError


@dataclass(frozen=True)
class MovePlan:
    """What a move does (a dry run's answer), and after it what it did.

    Attributes:
        source: the old application's directory (``<state.dir>/<application.id>``).
        target: the new application's directory.
        store: the warehouse store made of the old state (kept after the move).
        changelog_topic: the new application's changelog topic of the store.
        source_partitions: the old application's partition count (its tasks').
        num_partitions: the new one's.
        rows: the rows the old state directory reads (every window, session, version).
        rows_by_partition: of those, how many each new partition gets.
        records: where the changelog records go (a bootstrap server or a Parquet file).
        dry_run: nothing was written.
        commits: the store's commits the move made (import, rescale).
        offsets: new partition -> offset of its last changelog record (the state
            directory's checkpoint).
        task_dirs: the new application's task directories written.
    """

    source: str
    target: str
    store: str
    changelog_topic: str
    source_partitions: int
    num_partitions: int
    rows: int
    rows_by_partition: dict[int, int]
    records: str
    dry_run: bool = True
    commits: tuple[int, ...] = ()
    offsets: dict[int, int] | None = None
    task_dirs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-able data."""
        return asdict(self)


def check_same_store(
    spec: StoreSpec, to_params: Mapping[str, Any] | None, made: StoreSpec
) -> None:
    """Refuse a new application whose store is built otherwise than the old one's: the
    state would not be its store's. ``made``: a spec built of ``to_params``.

    Raises:
        InvalidOptionError: PARAMS_MISMATCH, naming each parameter and both values.
    """
    if to_params is None:
        return
    differ = {
        name: (spec.params.get(name), made.params.get(name))
        for name in sorted(set(spec.params) | set(made.params))
        if spec.params.get(name) != made.params.get(name)
    }
    if made.kind != spec.kind:
        differ["kind"] = (spec.kind, made.kind)
    if differ:
        said = ", ".join(f"{n}: {old!r} there, {new!r} here" for n, (old, new) in differ.items())
        raise InvalidOptionError(
            f"the new application's store differs from the old one's ({said}); a move "
            "carries the state of one store definition: give the new application the old "
            "store's parameters, or rewrite the state first",
            code="PARAMS_MISMATCH",
        )


def plan_move(
    source: str,
    store: str,
    spec: StoreSpec,
    target: str,
    target_store: str,
    num_partitions: int | None,
    records: str,
) -> MovePlan:
    """Every check of a move, and what it would do (see the module doc).

    Args:
        source: the old application's directory.
        store: the store's name in the old application.
        spec: the store as the warehouse will hold it (kind, types, parameters, name).
        target: the new application's directory.
        target_store: the store's name in the new application.
        num_partitions: the new partition count (None: the old one).
        records: where the changelog records go: ``kafka://<bootstrap servers>`` or a path.

    Raises:
        StoreNotFoundError: no source directory, or none of its tasks holds the store.
        InvalidOptionError: a locked directory (STATE_DIR_LOCKED), a target holding the
            store (STORE_DIR_EXISTS), a bad count (INVALID_PARTITION_COUNT), a Parquet path
            that exists (RECORDS_EXIST), a changelog topic that holds records or has another
            partition count (``check_changelog_topic``), the source's errors
            (WRONG_STORE_KIND, ...).
    """
    found = state_dir_partitions(source, store)
    if not found:
        raise StoreNotFoundError(f"no task directory of {source} holds store {store!r}")
    old_count = max(found) + 1
    count = old_count if num_partitions is None else check_partition_count(num_partitions)
    if os.path.realpath(source) == os.path.realpath(target):
        raise InvalidOptionError(
            f"the target directory {target} is the source's: a move writes a new "
            "application's state beside the old one",
            code="STORE_DIR_EXISTS",
        )
    check_target(target, target_store, spec.kind)
    topic = changelog_topic(os.path.basename(os.path.normpath(target)), target_store)
    if records.startswith("kafka://"):
        check_changelog_topic(records[len("kafka://") :], topic, count)
    elif os.path.exists(records):
        raise InvalidOptionError(
            f"{records} exists; the changelog records go to a new file (or to Kafka: "
            "kafka://<bootstrap servers>)",
            code="RECORDS_EXIST",
        )
    by_partition = np.zeros(count, dtype=np.int64)
    rows = 0
    for task in read_state_dir(source, store, spec):
        keys = task.raw.column("key")
        rows += len(keys)
        if len(keys):
            by_partition += np.bincount(partitions_of(keys, count, "kafka"), minlength=count)
    return MovePlan(
        source=source, target=target, store=spec.name,
        changelog_topic=topic,
        source_partitions=old_count, num_partitions=count, rows=rows,
        rows_by_partition={p: int(n) for p, n in enumerate(by_partition)}, records=records,
    )  # fmt: skip


def write_records(records: pa.Table, path: str) -> dict[int, int]:
    """Write the changelog records to a new Parquet file (via a temporary name, renamed in);
    returns the offsets they will have once produced in order to an empty topic (partition
    -> offset of its last record: 0, 1, ... in each partition)."""
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        pq.write_table(records, tmp)
        os.rename(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return _counted(records)


def _counted(records: pa.Table) -> dict[int, int]:
    parts = records.column("partition").to_numpy(zero_copy_only=False)
    counts = np.bincount(parts) if len(parts) else np.zeros(0, np.int64)
    return {p: int(n) - 1 for p, n in enumerate(counts) if n}


def produce_changelog(
    records: pa.Table, bootstrap: str, topic: str, partitions: int
) -> dict[int, int]:
    """Produce the changelog records to ``topic`` keeping each one's partition, timestamp and
    headers (an idempotent producer, in order), creating the topic (compacted, ``partitions``
    partitions) if it does not exist; returns partition -> offset of its last record.

    Raises:
        InvalidOptionError: the topic exists with another partition count
            (PARTITION_COUNT_MISMATCH) or holds records (TOPIC_NOT_EMPTY), nothing produced;
            confluent-kafka is missing (MISSING_DEPENDENCY: pip install 'state_store[kafka]').
        OSError: the broker refused or lost a record (the topic then holds some).
    """
    ck = _client()
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    if not check_changelog_topic(bootstrap, topic, partitions):
        admin = ck.admin.AdminClient(config)  # (held: its futures fail once it is freed)
        created = admin.create_topics(
            [ck.admin.NewTopic(topic, partitions, config={"cleanup.policy": "compact"})]
        )
        for future in created.values():
            future.result()
    return produce_records(records, bootstrap, topic)


def check_topic_exists(bootstrap: str, topic: str, partitions: int) -> None:
    """Refuse a changelog topic that does not exist or has another partition count.

    Raises:
        InvalidOptionError: TOPIC_NOT_FOUND, PARTITION_COUNT_MISMATCH, MISSING_DEPENDENCY.
    """
    if _partition_count(bootstrap, topic, partitions) is None:
        raise InvalidOptionError(
            f"changelog topic {topic!r} does not exist at {bootstrap}; check the application "
            "id and store name (the topic is '<application id>-<store>-changelog')",
            code="TOPIC_NOT_FOUND",
        )


def _partition_count(bootstrap: str, topic: str, partitions: int) -> int | None:
    """The partition count of ``topic`` (None: no such topic), refused unless ``partitions``.

    Raises:
        InvalidOptionError: PARTITION_COUNT_MISMATCH, MISSING_DEPENDENCY.
    """
    ck = _client()
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    # All topics listed: a request for one topic may create it on a broker that
    # auto-creates topics.
    found = ck.admin.AdminClient(config).list_topics(timeout=30).topics.get(topic)
    if found is None or found.error is not None:
        return None
    if len(found.partitions) != partitions:
        raise InvalidOptionError(
            f"changelog topic {topic!r} has {len(found.partitions)} partition(s); the "
            f"store's application has {partitions}: delete the topic first or give the "
            "application's partition count",
            code="PARTITION_COUNT_MISMATCH",
        )
    return partitions


def produce_records(records: pa.Table, bootstrap: str, topic: str) -> dict[int, int]:
    """Produce changelog records to the existing ``topic``, keeping each one's partition,
    timestamp and headers (an idempotent producer, in order); returns partition -> offset of
    its last record.

    Raises:
        InvalidOptionError: confluent-kafka is missing (MISSING_DEPENDENCY).
        OSError: the broker refused or lost a record (the topic then holds some).
    """
    ck = _client()
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    producer = ck.Producer({**config, "enable.idempotence": True, "acks": "all"})
    last: dict[int, int] = {}
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())

    for batch in records.to_batches():
        for row in batch.to_pylist():
            headers = [(h["key"], h["value"]) for h in row["headers"] or []]
            producer.produce(
                topic, key=row["key"], value=row["value"], partition=row["partition"],
                timestamp=row["timestamp"], headers=headers, on_delivery=delivered,
            )  # fmt: skip
            producer.poll(0)
    producer.flush()
    if errors:
        raise OSError(f"producing to {topic!r} failed: {errors[0]} ({len(errors)} records)")
    return last


def _client() -> Any:
    """The ``confluent_kafka`` module (the ``kafka`` extra).

    Raises:
        InvalidOptionError: it is missing (MISSING_DEPENDENCY).
    """
    try:
        import confluent_kafka
        import confluent_kafka.admin  # noqa: F401 (loads ``confluent_kafka.admin``)
    except ImportError as exc:
        raise InvalidOptionError(
            "producing the changelog records needs confluent-kafka: pip install "
            "'state_store[kafka]' (or write them to a file and produce them yourself)",
            code="MISSING_DEPENDENCY",
        ) from exc
    return confluent_kafka


def check_changelog_topic(bootstrap: str, topic: str, partitions: int) -> bool:
    """Whether the new application's changelog topic exists; refused if it has another
    partition count or holds records (its offsets would not be the state's).

    Raises:
        InvalidOptionError: PARTITION_COUNT_MISMATCH, TOPIC_NOT_EMPTY, MISSING_DEPENDENCY.
    """
    if _partition_count(bootstrap, topic, partitions) is None:
        return False
    ck = _client()
    config: dict[str, str | int | float | bool] = {"bootstrap.servers": bootstrap}
    consumer = ck.Consumer({**config, "group.id": f"state-store-{uuid.uuid4().hex}"})
    try:
        for p in range(partitions):
            low, high = consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30)
            if high > low:
                raise InvalidOptionError(
                    f"changelog topic {topic!r} partition {p} holds records (offsets {low} to "
                    f"{high - 1}); the new application's state must be its only content: "
                    "delete the topic first",
                    code="TOPIC_NOT_EMPTY",
                )
    finally:
        consumer.close()
    return True


__all__ = [
    "MovePlan",
    "check_changelog_topic",
    "check_same_store",
    "check_topic_exists",
    "plan_move",
    "produce_changelog",
    "produce_records",
    "write_records",
]
