"""Transactional stores restore as Kafka restores them, checked by Kafka's own restore.

The issue's sequence (put a, commit; put b; ``recover(committed offset)``; put c, commit) and
random ones run on a ``TransactionalStore`` under each processing guarantee. The records a
restore reads under that guarantee (``stores.transactional.restored_records``: everything
under ``at_least_once``, as Kafka's restore consumer ``read_uncommitted``; under
``exactly_once_v2`` none of an aborted or open transaction, as ``read_committed``) go through
Kafka's restore of the same store (``ProcessorStateManager.restore`` with the kind's record
converter, in the JVM), and the restored store equals ours, column family by column family.

A transactional store logs each operation's RocksDB writes. For a key-value store these are
exactly Kafka's changelog records (key, value; a delete is a tombstone); for a timestamped one
the value carries its 8-byte time, which Kafka's record keeps as the record's timestamp (the
converter ``rawValueToTimestampedValue`` puts it back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.key_value.store import KeyValueStore
from stores.records import ValueAndTimestamp
from stores.timestamped.store import TimestampedKeyValueStore
from stores.transactional import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE_V2,
    MemoryChangelog,
    TransactionalStore,
    restored_records,
)

KINDS = {
    "key_value": (KeyValueStore, "default", lambda v: v),
    "timestamped": (TimestampedKeyValueStore, "keyValueWithTimestamp",
                    lambda v: ValueAndTimestamp(v, 7)),
}  # fmt: skip


def kafka_records(changelog: MemoryChangelog, guarantee: str, family: str) -> list[dict[str, Any]]:
    """The records Kafka's restore consumer hands the store under ``guarantee``, as Kafka's
    changelog records of the store."""
    out: list[dict[str, Any]] = []
    for record in restored_records(changelog.read(0), guarantee):
        for op, cf, key, value in record.ops:
            assert op in ("put", "delete") and cf == family, (op, cf)
            if value is None or family == "default":
                out.append({"k": key.hex(), "v": None if value is None else value.hex(),
                            "t": 0, "h": []})  # fmt: skip
            else:  # a timestamped value: BE64 time, then the plain value
                out.append({"k": key.hex(), "v": value[8:].hex(),
                            "t": int.from_bytes(value[:8], "big", signed=True), "h": []})  # fmt: skip
    return out


def our_rows(tx: TransactionalStore[Any], family: str) -> list[list[Any]]:
    return [[None, family, k.hex(), v.hex()] for k, v in tx.db.items(family)]


def check_against_kafka(
    harness: Any, kind: str, tx: TransactionalStore[Any], changelog: MemoryChangelog, guarantee: str
) -> None:
    _, family, _ = KINDS[kind]
    restored = harness.restore(kind, {}, kafka_records(changelog, guarantee, family))
    assert restored.cfs == our_rows(tx, family)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("guarantee", [AT_LEAST_ONCE, EXACTLY_ONCE_V2])
def test_the_issue_sequence_restores_as_kafka(
    kafka_harness: Any, tmp_path: Path, kind: str, guarantee: str
) -> None:
    cls, _, value = KINDS[kind]
    changelog = MemoryChangelog()
    tx = TransactionalStore.of(tmp_path / "db", cls, changelog=changelog,
                               processing_guarantee=guarantee)  # fmt: skip
    with tx:
        tx.store.put(b"a", value(b"1"))
        tx.commit()
        tx.store.put(b"b", value(b"2"))
        tx.recover(tx.committed_offset())
        if guarantee == AT_LEAST_ONCE:
            tx.recover()  # b's record stays in the log: the store restores it before writing
        tx.store.put(b"c", value(b"3"))
        tx.commit()
        expected = [b"a", b"b", b"c"] if guarantee == AT_LEAST_ONCE else [b"a", b"c"]
        assert [k for k, _ in tx.db.items(KINDS[kind][1])] == expected
        check_against_kafka(kafka_harness, kind, tx, changelog, guarantee)


def _steps() -> st.SearchStrategy[list[tuple[str, int]]]:
    step = st.one_of(
        st.tuples(st.just("put"), st.integers(0, 4)),
        st.tuples(st.just("delete"), st.integers(0, 4)),
        st.tuples(st.sampled_from(["commit", "rollback", "recover"]), st.just(0)),
    )
    return st.lists(step, min_size=1, max_size=25)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("guarantee", [AT_LEAST_ONCE, EXACTLY_ONCE_V2])
def test_random_transactions_restore_as_kafka(
    kafka_harness: Any, tmp_path_factory: pytest.TempPathFactory, kind: str, guarantee: str
) -> None:
    cls, family, value = KINDS[kind]

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(steps=_steps())
    def restores_as_kafka(steps: list[tuple[str, int]]) -> None:
        changelog = MemoryChangelog()
        path = tmp_path_factory.mktemp("tx") / "db"
        with TransactionalStore.of(path, cls, changelog=changelog,
                                   processing_guarantee=guarantee) as tx:  # fmt: skip
            for number, (step, key) in enumerate(steps):
                if step == "put":
                    tx.store.put(b"k%d" % key, value(b"v%d" % number))
                elif step == "delete":
                    tx.store.delete(b"k%d" % key)
                elif step == "commit":
                    tx.commit()
                elif step == "rollback":
                    tx.rollback()
                    if tx.behind_changelog:
                        tx.recover()
                else:
                    tx.recover()
            tx.commit()
            check_against_kafka(kafka_harness, kind, tx, changelog, guarantee)

    restores_as_kafka()
