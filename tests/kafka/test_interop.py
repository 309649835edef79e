"""State in and out of a real Kafka Streams application on a real broker (issue 24), every route:

- **read out through the changelog**: the application processes input; its changelog topic,
  consumed, is imported into our store (``catalog.kafka.import_changelog``, and the Spark write
  ``writeFrom=kafkaChangelog``); our IQv2 answers equal the application's;
- **bootstrap**: that store exported as changelog records (``readAs=kafkaChangelog``), produced to
  a second application's changelog topic; the application restores them and answers as we do;
- **fast start**: the store exported as the second application's state directory, with the
  offsets of the records produced; it starts, restores nothing, and answers as we do;
- **read out through the state directory**: the stopped application's state directory imported
  (and served read-only to Spark, ``kafkaStateDir``); the offsets found let a changelog import
  continue from them.

Kafka's classes that judge: ``StoreChangelogReader`` (restore from the changelog, which a store
out of Kafka's restore order would lose records to), ``ProcessorStateManager`` and KIP-1035's
offsets column family (an offset trusted: nothing restored), ``RocksDBStore.openRocksDB`` (a
column family it does not declare fails the application).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog, StateQueryRequest
from catalog.catalog import StoreTable
from catalog.kafka import export_changelog, import_changelog, kafka_offsets
from stores.errors import InvalidOptionError
from tests.kafka.cluster import Broker, KafkaStreamsApp
from tests.kafka.ours import build_query, encode_result
from tests.kafka.scenarios import PARTITIONS, SCENARIOS, Scenario

#: The application's store kinds as our stores: (kind, parameters of ``Catalog.new_spec``).
WINDOWS = ("window", "timestamped_window", "window_duplicates", "timestamped_window_headers")


def our_kind(scenario: Scenario) -> tuple[str, dict[str, Any]]:
    """Our kind and parameters of the application's store."""
    kind, p = scenario.kind, scenario.params
    if kind in ("keyvalue", "key_value"):
        return "keyvalue", {}
    if kind.startswith("timestamped") and kind not in WINDOWS:
        return "timestamped", {"headers": kind.endswith("_headers")}
    if kind == "versioned":
        return "versioned", {"history_retention_ms": p["historyRetentionMs"]}
    if kind in WINDOWS:
        return "window", {
            "retention_ms": p["retentionMs"], "window_size_ms": p["windowSizeMs"],
            "retain_duplicates": kind == "window_duplicates",
            "timestamped": kind.startswith("timestamped"), "headers": kind.endswith("_headers"),
        }  # fmt: skip
    return "session", {"retention_ms": p["retentionMs"], "headers": kind.endswith("_headers")}


#: Every scenario of the application: each store kind on 4.3.1 (header stores also on 4.4.0,
#: which answers their IQv2 queries), a key-value store on 3.9.1 (``.checkpoint``, RocksDB 7.9:
#: table format 5) and under exactly_once_v2 (a store without a checkpointed offset is wiped).
CASES = SCENARIOS


def input_table(scenario: Scenario) -> pa.Table:
    """The scenario's input, partitioned by Kafka's default partitioner (as an application's
    input is: task ``p`` holds the keys of partition ``p``, which ``partitioner=kafka`` keeps)."""
    return scenario.table().drop_columns(["partition"])


def our_answer(catalog: Catalog, store: str, query: dict[str, Any]) -> Any:
    """Our IQv2 answer to a harness query spec, combined over partitions as
    ``KafkaStreamsApp.query_result`` combines the application's."""
    result = catalog.query(StateQueryRequest.in_store(store).with_query(build_query(query)))
    answers = {p: encode_result(r) for p, r in result.get_partition_results().items()}
    failed = {p: a for p, a in answers.items() if not a["ok"]}
    assert not failed, f"{query}: {failed}"
    results = [answers[p]["result"] for p in sorted(answers)]
    if any(isinstance(r, list) for r in results):
        return [item for r in results if r is not None for item in r]
    found = [r for r in results if r is not None]
    assert len(found) <= 1, found
    return found[0] if found else None


def normal(query: dict[str, Any], result: Any) -> Any:
    """Range answers come per partition, each in key order: compared sorted."""
    if isinstance(result, list) and "Range" in query["type"]:
        return sorted(result, key=repr)
    return result


def app_answers(app: KafkaStreamsApp, scenario: Scenario) -> list[Any]:
    return [normal(q, app.query_result(q)) for q, _ in scenario.queries]


def our_answers(catalog: Catalog, store: str, scenario: Scenario) -> list[Any]:
    return [normal(q, our_answer(catalog, store, q)) for q, _ in scenario.queries]


def new_store(catalog: Catalog, name: str, scenario: Scenario) -> StoreTable:
    kind, params = our_kind(scenario)
    return catalog.create_store(
        name, kind, "binary", "binary", PARTITIONS, partitioner="kafka", **params
    )


@pytest.mark.parametrize(
    "scenario", CASES, ids=[f"{s.kind}-{s.kafka_version}-{s.processing_guarantee}" for s in CASES]
)
def test_changelog_in_then_bootstrap_and_fast_start_out(
    scenario: Scenario,
    kafka_broker: Broker,
    kafka_app_factory: Callable[..., KafkaStreamsApp],
    tmp_path: Path,
) -> None:
    catalog = Catalog(str(tmp_path / "warehouse"))
    # The application processes its input; its answers are the scenario's.
    with kafka_app_factory(
        tmp_path / "a", kind=scenario.kind, params=scenario.params, partitions=PARTITIONS,
        kafka_version=scenario.kafka_version,
    ) as source:  # fmt: skip
        source.start()
        source.wait_processed(source.produce(input_table(scenario)))
        expected = app_answers(source, scenario)
        assert expected == [normal(q, a) for q, a in scenario.queries]
        assert source.stop()
        records = kafka_broker.consume(source.changelog_topic)

    # Read out: the changelog imported into our store answers as the application did.
    table = new_store(catalog, "imported", scenario)
    result = import_changelog(table, records)
    assert result.records == records.num_rows and result.null_keys == 0
    assert our_answers(catalog, "imported", scenario) == expected
    ends = {(source.changelog_topic, p): o for p, o in kafka_broker.end_offsets(
        source.changelog_topic).items() if o > 0}  # fmt: skip
    assert kafka_offsets(catalog.load("imported")) == {tp: o - 1 for tp, o in ends.items()}
    again = import_changelog(catalog.load("imported"), records)  # a rerun changes nothing
    assert again.already_applied == records.num_rows
    assert our_answers(catalog, "imported", scenario) == expected

    # Bootstrap: our store as changelog records, restored by a second application.
    with kafka_app_factory(
        tmp_path / "b", kind=scenario.kind, params=scenario.params, partitions=PARTITIONS,
        kafka_version=scenario.kafka_version,
    ) as target:  # fmt: skip
        exported = export_changelog(catalog.load("imported"), target.application_id, target.store)
        assert set(exported.column("topic").to_pylist()) == {target.changelog_topic}
        kafka_broker.create_topic(target.changelog_topic, PARTITIONS)
        produced = kafka_broker.produce(target.changelog_topic, exported)
        target.start()
        assert target.restored() == exported.num_rows
        assert app_answers(target, scenario) == expected
        assert target.stop()

    # Fast start: the store as a third application's state directory, with the offsets of its
    # changelog records; it restores nothing.
    with kafka_app_factory(
        tmp_path / "c", kind=scenario.kind, params=scenario.params, partitions=PARTITIONS,
        kafka_version=scenario.kafka_version,
    ) as fast:  # fmt: skip
        exported = export_changelog(catalog.load("imported"), fast.application_id, fast.store)
        kafka_broker.create_topic(fast.changelog_topic, PARTITIONS)
        produced = kafka_broker.produce(fast.changelog_topic, exported)
        catalog.load("imported").export_kafka_state_dir(
            str(tmp_path / "c"), fast.application_id, kafka_version=scenario.kafka_version,
            store=fast.store, subtopology=0, offsets=produced,
        )  # fmt: skip
        fast.start()
        assert fast.restored() == 0
        reopened = [
            normal(q, scenario.reopened[i]) if i in scenario.reopened else expected[i]
            for i, (q, _) in enumerate(scenario.queries)
        ]
        assert app_answers(fast, scenario) == reopened
        assert fast.stop()


@pytest.mark.parametrize(
    "scenario", CASES, ids=[f"{s.kind}-{s.kafka_version}-{s.processing_guarantee}" for s in CASES]
)
def test_state_dir_in_then_the_changelog_continues(
    scenario: Scenario,
    kafka_broker: Broker,
    kafka_app_factory: Callable[..., KafkaStreamsApp],
    tmp_path: Path,
) -> None:
    catalog = Catalog(str(tmp_path / "warehouse"))
    kind, params = our_kind(scenario)
    first, rest = scenario.records[:-1], scenario.records[-1:]
    head = Scenario(scenario.kind, scenario.params, first)
    tail = Scenario(scenario.kind, scenario.params, rest)
    with kafka_app_factory(
        tmp_path / "state", kind=scenario.kind, params=scenario.params, partitions=PARTITIONS,
        kafka_version=scenario.kafka_version,
    ) as app:  # fmt: skip
        app.start()
        app.wait_processed(app.produce(input_table(head)))
        with pytest.raises(InvalidOptionError, match="STATE_DIR_LOCKED"):
            catalog.import_kafka_state_dir(
                str(tmp_path / "state"), app.application_id, app.store, kind, **params
            )  # a running instance's directory is refused, and nothing is created
        assert not catalog.exists(app.store)
        assert app.stop()

        table = catalog.import_kafka_state_dir(
            str(tmp_path / "state"), app.application_id, app.store, kind, **params
        )
        held = kafka_offsets(table)
        assert held == {
            (app.changelog_topic, p): o - 1
            for p, o in kafka_broker.end_offsets(app.changelog_topic).items() if o > 0
        }  # fmt: skip

        # The application goes on; the changelog after the offsets found continues the store.
        app.start()
        app.wait_processed(app.produce(input_table(tail)))
        # The application reopened its own state without a restore: Kafka 4.3's versioned store
        # then misses its history (``scenario.reopened``), which ours, read from the files, has.
        expected = [normal(q, a) for q, a in scenario.queries]
        assert app_answers(app, scenario) == [
            normal(q, scenario.reopened[i]) if i in scenario.reopened else expected[i]
            for i, (q, _) in enumerate(scenario.queries)
        ]
        assert app.stop()
        records = kafka_broker.consume(app.changelog_topic)
        result = import_changelog(catalog.load(app.store), records)
        assert result.already_applied == sum(o + 1 for o in held.values())
        assert our_answers(catalog, app.store, scenario) == expected
