"""A Kafka Streams application's state rescaled to another input partition count and moved to a
new application id, end to end on a real broker (issue 37).

Each case is an aggregating application (``tests/kafka/cluster.py``'s ``aggregate``: a count, a
windowed count, a versioned table's lookup before each write), whose output records depend on
the state it holds:

1. application A counts the first part of the input on a topic of ``old`` partitions and stops
   cleanly;
2. its state is moved to application B in one command (``Catalog.move_kafka_application``,
   ``state-store kafka-move``; a dry run first, which writes nothing): the state directory
   imported, rescaled to ``new`` partitions (``StoreTable.rescale``), the changelog records
   produced to B's changelog topic (created with ``new`` partitions), the state directory
   written with the offsets produced;
3. B starts on that directory, restores nothing (``ProcessorStateManager`` trusts the offsets of
   KIP-1035's ``offsets`` column family) and processes the rest of the input, produced to its
   ``new``-partition input topic with Kafka's partitioner (``BuiltInPartitioner.partitionForKey``,
   from the harness' JVM);
4. once instead, application C starts on the exported changelog alone (an empty state directory:
   ``StoreChangelogReader`` restores every record) and processes the same rest.

B's and C's IQv2 answers, and their output for the rest of the input, equal those of a reference
application R that processed all of the input on a ``new``-partition topic without any move: the
output compared as a multiset and, per key (one partition holds a key), in order. A's output
equals R's for the first part. Every time lies within the window retention and the history
retention of each store, in every layout: Kafka's per-task stream time, which a regrouping of keys
changes, then expires nothing (the expiry after regrouping is a unit test's subject).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from catalog import Catalog
from stores.errors import InvalidOptionError
from tests.kafka.cluster import Broker, KafkaStreamsApp
from tests.kafka.harness import KAFKA_VERSION, KafkaHarness

KEYS = [f"k{i:02d}".encode() for i in range(40)]
#: Records of the input, and how many of them the first application processes.
RECORDS, SPLIT = 300, 180
#: The input's times: record i at FIRST_TIME + STEP * i (unique: an output record's time names
#: its input record); the split falls inside a window, whose count then spans both applications.
FIRST_TIME, STEP = 1_000, 10
WINDOW_MS = 500
#: A time no query reaches past.
TIME_LIMIT = 1_000_000


@dataclass(frozen=True)
class Case:
    """An aggregating application (Kafka's kind and params) moved from ``old`` to ``new``
    input partitions."""

    kind: str
    aggregate: str
    params: dict[str, Any]
    old: int
    new: int

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.aggregate}-{self.old}to{self.new}"

    def ours(self) -> tuple[str, dict[str, Any]]:
        """Our kind and parameters of the application's store."""
        if self.kind == "keyvalue":
            return "keyvalue", {}
        if self.kind == "versioned":
            return "versioned", {"history_retention_ms": self.params["historyRetentionMs"]}
        return "window", {
            "retention_ms": self.params["retentionMs"],
            "window_size_ms": self.params["windowSizeMs"],
        }


CASES = [
    Case("keyvalue", "count", {}, 2, 3),
    Case("window", "count", {"windowSizeMs": WINDOW_MS, "retentionMs": 100_000}, 2, 5),
    Case("versioned", "lookup", {"historyRetentionMs": 100_000}, 2, 3),
    Case("keyvalue", "count", {}, 5, 2),  # shrinking
]


def input_records(case: Case) -> pa.Table:
    """The input: keys drawn from :data:`KEYS`, increasing unique times; a versioned table's
    values are distinct, one in eleven a tombstone."""
    rng = random.Random(37)
    keys = [rng.choice(KEYS) for _ in range(RECORDS)]
    if case.kind == "versioned":
        values = [None if i % 11 == 10 else f"v{i}".encode() for i in range(RECORDS)]
    else:
        values = [b"x"] * RECORDS
    return pa.table({
        "key": pa.array(keys, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "timestamp": pa.array([FIRST_TIME + STEP * i for i in range(RECORDS)], pa.int64()),
    })  # fmt: skip


def partitioned(records: pa.Table, partitions: int, harness: KafkaHarness) -> pa.Table:
    """``records`` with the partition Kafka's producer gives each key on a topic of
    ``partitions`` partitions (``BuiltInPartitioner.partitionForKey``, computed by Kafka)."""
    keys = records.column("key").to_pylist()
    return records.append_column(
        "partition", pa.array(harness.murmur2_partitions(keys, partitions), pa.int32())
    )


def queries(case: Case, records: pa.Table) -> list[dict[str, Any]]:
    """IQv2 specs over every key (and one never written)."""
    keys = [k.hex() for k in [*KEYS, b"absent"]]
    if case.kind == "keyvalue":
        return [{"type": "RangeQuery"}, *({"type": "KeyQuery", "key": k} for k in keys)]
    if case.kind == "window":
        whole = {"fromTime": 0, "toTime": TIME_LIMIT}
        return [
            {"type": "WindowRangeQuery", **whole},
            *({"type": "WindowKeyQuery", "key": k, **whole} for k in keys),
        ]
    split_time = records.column("timestamp")[SPLIT].as_py()
    return [
        q
        for k in keys
        for q in (
            {"type": "VersionedKeyQuery", "key": k},
            {"type": "VersionedKeyQuery", "key": k, "asOf": split_time - 1},
            {"type": "VersionedKeyQuery", "key": k, "asOf": FIRST_TIME + STEP * (SPLIT // 2)},
            {"type": "MultiVersionedKeyQuery", "key": k, "ascending": True},
        )
    ]


def answers(app: KafkaStreamsApp, specs: list[dict[str, Any]]) -> list[Any]:
    """The application's answers; a range's, which come per partition, sorted."""
    out: list[Any] = []
    for spec in specs:
        result = app.query_result(spec)
        if isinstance(result, list) and "Range" in spec["type"]:
            result = sorted(result, key=repr)
        out.append(result)
    return out


def by_key(output: pa.Table) -> dict[bytes, list[tuple[bytes, int]]]:
    """Output records per key, in the order of their partition: ``(value, time)``."""
    keyed: dict[bytes, list[tuple[bytes, int]]] = {}
    for row in output.sort_by([("partition", "ascending"), ("offset", "ascending")]).to_pylist():
        keyed.setdefault(row["key"], []).append((row["value"], row["timestamp"]))
    return keyed


def multiset(output: pa.Table) -> Counter[tuple[bytes, bytes, int]]:
    """Output records as a multiset of ``(key, value, time)``."""
    return Counter(zip(*(output.column(c).to_pylist() for c in ("key", "value", "timestamp")),
                       strict=True))  # fmt: skip


def since(output: pa.Table, time: int) -> pa.Table:
    """The output records of input records at ``time`` or later."""
    return output.filter(pc.greater_equal(output.column("timestamp"), time))


def assert_moved_as_reference(
    app: KafkaStreamsApp, specs: list[dict[str, Any]], expected: list[Any], reference: pa.Table,
) -> None:  # fmt: skip
    """``app``'s answers are ``expected``; its output is the reference's for the same input."""
    assert answers(app, specs) == expected
    output = app.output()
    assert multiset(output) == multiset(reference)
    assert by_key(output) == by_key(reference)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_state_rescaled_and_moved_continues_as_without_the_move(
    case: Case,
    kafka_broker: Broker,
    kafka_app_factory: Callable[..., KafkaStreamsApp],
    kafka_harness: KafkaHarness,
    tmp_path: Path,
) -> None:
    records = input_records(case)
    head, rest = records.slice(0, SPLIT), records.slice(SPLIT)
    split_time = rest.column("timestamp")[0].as_py()
    specs = queries(case, records)

    def app(directory: str, partitions: int) -> KafkaStreamsApp:
        return kafka_app_factory(
            tmp_path / directory, kind=case.kind, params=case.params, partitions=partitions,
            aggregate=case.aggregate,
        )  # fmt: skip

    # R: every input record on the new partition count, no move.
    with app("r", case.new) as reference:
        reference.start()
        reference.wait_processed(reference.produce(partitioned(records, case.new, kafka_harness)))
        expected = answers(reference, specs)
        reference_output = reference.output()
        assert reference.stop()
    assert reference_output.num_rows == RECORDS
    rest_output = since(reference_output, split_time)

    # A: the first part on the old partition count; its output is R's for the same records.
    with app("a", case.old) as first:
        first.start()
        first.wait_processed(first.produce(partitioned(head, case.old, kafka_harness)))
        assert multiset(first.output()) == multiset(reference_output) - multiset(rest_output)
        assert first.stop()

    # B: A's state moved to it in one command (``Catalog.move_kafka_application``: imported,
    # rescaled, the changelog records produced to B's changelog topic, which the move creates,
    # the state directory written with their offsets); it restores nothing.
    catalog = Catalog(str(tmp_path / "warehouse"))
    kind, params = case.ours()
    with app("b", case.new) as moved:
        move = {
            "to_state_dir": str(tmp_path / "b"), "to_application_id": moved.application_id,
            "to_store": moved.store, "kafka_version": KAFKA_VERSION,
            "records": f"kafka://{kafka_broker.bootstrap}", "num_partitions": case.new, **params,
        }  # fmt: skip
        source = (str(tmp_path / "a"), first.application_id, first.store, kind)
        plan = catalog.move_kafka_application(*source, **move, dry_run=True)
        assert (plan.source_partitions, plan.num_partitions) == (case.old, case.new)
        assert not catalog.exists(first.store)
        assert not (tmp_path / "b" / moved.application_id).exists()
        done = catalog.move_kafka_application(*source, **move)
        ends = kafka_broker.end_offsets(moved.changelog_topic)
        assert done.offsets == {p: end - 1 for p, end in ends.items() if end}
        assert len(ends) == case.new and sum(ends.values()) > 0
        table = catalog.load(first.store)
        assert table.spec.num_partitions == case.new
        assert table.rescale(case.new) is None  # already there: no commit
        # The changelog topic holds the state now: a second move to it is refused.
        with pytest.raises(InvalidOptionError, match="TOPIC_NOT_EMPTY"):
            catalog.move_kafka_application(
                *source, **{**move, "to_state_dir": str(tmp_path / "b2")}, name="again",
                dry_run=True,
            )  # fmt: skip
        moved.start()
        assert moved.restored() == 0
        moved.wait_processed(moved.produce(partitioned(rest, case.new, kafka_harness)))
        assert_moved_as_reference(moved, specs, expected, rest_output)
        assert moved.stop()

    # C: the rescaled store as its changelog alone; it restores every record.
    with app("c", case.new) as restored:
        exported = table.export_kafka_changelog(restored.application_id, store=restored.store)
        kafka_broker.create_topic(restored.changelog_topic, case.new)
        kafka_broker.produce(restored.changelog_topic, exported)
        restored.start()
        assert restored.restored() == exported.num_rows
        restored.wait_processed(restored.produce(partitioned(rest, case.new, kafka_harness)))
        assert_moved_as_reference(restored, specs, expected, rest_output)
        assert restored.stop()
