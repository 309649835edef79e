"""Kafka's IQv2 integration scenarios (IQv2StoreIntegrationTest, IQv2IntegrationTest,
IQv2VersionedStoreIntegrationTest) over catalog stores, with typed keys and values.

A catalog partition plays a Kafka task's store partition; its position is
``{store: {partition: commit id}}``. Keys go to partitions by the catalog's partitioner, so the
expected cross-partition order is computed from it (Kafka's tests used ``key % 2``).
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.operations.query import StateQueryRequest, StateQueryResult, query
from catalog.partitioner import partition_of
from stores.errors import StoreNotFoundError
from stores.iterators import KeyValueIterator
from stores.protocols import VersionedRecord
from stores.query import (
    FailureReason,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    PositionBound,
    Query,
    QueryError,
    RangeQuery,
    TimestampedKeyQuery,
    TimestampedRangeQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from stores.records import ValueAndTimestamp
from stores.serdes import serde_for

MINUTE = 60_000
START = 1_700_000_100_000 // (5 * MINUTE) * (5 * MINUTE)
# IQv2StoreIntegrationTest's input: key i // 2, value i, time START + 2 min * i.
RECORDS = [(i // 2, i, START + 2 * MINUTE * i) for i in range(10)]
INTS = serde_for("integer")


class UnknownQuery(Query):
    """Kafka's test-local query type no store knows."""


def _owner(key: int, partitions: int = 2) -> int:
    return partition_of(INTS.serialize(key), partitions)


def _ask(catalog: Catalog, store: str, q: Query, **steps: Any) -> StateQueryResult:
    request = StateQueryRequest.in_store(store).with_query(q)
    for step, args in steps.items():
        request = getattr(request, step)(*args)
    return query(catalog, request)


@pytest.fixture
def kv(catalog: Catalog) -> Catalog:
    table = catalog.create_store("kv", "keyvalue", "integer", "integer", num_partitions=2)
    table.commit(table.stage(pa.array([r[0] for r in RECORDS], pa.int32()),
                             pa.array([r[1] for r in RECORDS], pa.int32()), None))
    return catalog


def _latest() -> dict[int, int]:
    return {key: value for key, value, _ in RECORDS}


def test_should_handle_key_query(kv: Catalog) -> None:
    result = _ask(kv, "kv", KeyQuery.with_key(2), with_partitions=({0, 1},),
                  with_position_bound=(PositionBound.at(Position.from_map({"kv": {0: 2, 1: 2}})),))
    only = result.get_only_partition_result()
    assert only is not None and only.is_success() and only.get_result() == 5
    with pytest.raises(QueryError):
        only.get_failure_reason()
    assert only.get_execution_info() == []
    assert only.get_position() == Position.from_map({"kv": {_owner(2): 2}})  # 1 created it
    assert result.get_position() == Position.from_map({"kv": {0: 2, 1: 2}})


@pytest.mark.parametrize(
    ("lower", "upper", "descending"),
    [(0, 4, False), (1, 3, False), (3, None, False), (None, 3, False), (None, None, False),
     (0, 4, True), (1, 3, True), (3, None, True), (None, 3, True), (None, None, True)],
)
def test_should_handle_range_queries(
    kv: Catalog, lower: int | None, upper: int | None, descending: bool
) -> None:
    q = RangeQuery.with_range(lower, upper)
    if descending:
        q = q.with_descending_keys()
    result = _ask(kv, "kv", q, with_partitions=({0, 1},))
    got: list[int] = []
    for _, answer in sorted(result.get_partition_results().items()):
        with answer.get_result() as iterator:
            assert isinstance(iterator, KeyValueIterator)
            while iterator.has_next():
                got.append(next(iterator).value)
    # Kafka: partitions in order, each partition's keys in serialized-byte order.
    expected: list[int] = []
    for partition in (0, 1):
        keys = sorted(
            (key for key in _latest() if _owner(key) == partition
             and (lower is None or key >= lower) and (upper is None or key <= upper)),
            key=INTS.serialize, reverse=descending,
        )
        expected += [_latest()[key] for key in keys]
    assert got == expected
    assert result.get_position() == Position.from_map({"kv": {0: 2, 1: 2}})


def test_unknown_query_and_execution_info_under_failure(kv: Catalog) -> None:
    result = _ask(kv, "kv", UnknownQuery())
    assert set(result.get_partition_results()) == {0, 1}
    pattern = (r"This store \(.*\) doesn't know how to execute the given query \(.*\)\."
               r" Contact the store maintainer if you need support for a new query type\.")
    for answer in result.get_partition_results().values():
        assert answer.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        assert re.fullmatch(pattern, answer.get_failure_message())
        assert answer.get_execution_info() == []
        with pytest.raises(QueryError):
            answer.get_result()
    info = _ask(kv, "kv", UnknownQuery(), enable_execution_info=())
    assert all(r.get_execution_info() for r in info.get_partition_results().values())
    collected = _ask(kv, "kv", KeyQuery.with_key(1), enable_execution_info=())
    assert all(r.get_execution_info() for r in collected.get_partition_results().values())


def test_fetch_from_partition_and_all_partitions_and_unknown_store(kv: Catalog) -> None:
    assert set(_ask(kv, "kv", KeyQuery.with_key(1), with_partitions=({1},)).get_partition_results()) == {1}
    assert set(_ask(kv, "kv", KeyQuery.with_key(1), with_all_partitions=()).get_partition_results()) == {0, 1}
    with pytest.raises(StoreNotFoundError):
        _ask(kv, "unknown-store", KeyQuery.with_key(1))


def test_timestamped_key_and_range_queries(catalog: Catalog) -> None:
    table = catalog.create_store("tkv", "timestamped", "integer", "integer", num_partitions=2)
    table.commit(table.stage(
        pa.array([r[0] for r in RECORDS], pa.int32()), pa.array([r[1] for r in RECORDS], pa.int32()),
        {"timestamp": pa.array([r[2] for r in RECORDS], pa.int64())},
    ))
    assert _ask(catalog, "tkv", KeyQuery.with_key(2)).get_only_partition_result().get_result() == 5  # type: ignore[union-attr]
    stamped = _ask(catalog, "tkv", TimestampedKeyQuery.with_key(2)).get_only_partition_result()
    assert stamped is not None and stamped.get_result() == ValueAndTimestamp(5, RECORDS[5][2])
    rows = [kv for r in _ask(catalog, "tkv", TimestampedRangeQuery.with_no_bounds())
            .get_partition_results().values() for kv in r.get_result()]
    assert sorted((kv.key, kv.value) for kv in rows) == sorted(
        (key, ValueAndTimestamp(value, RECORDS[value][2])) for key, value in _latest().items()
    )


def test_window_and_session_refusals_name_the_typed_query(catalog: Catalog) -> None:
    windows = catalog.create_store("w", "window", "integer", "integer", num_partitions=2,
                                   retention_ms=24 * 60 * MINUTE, window_size_ms=5 * MINUTE)
    windows.commit(windows.stage(
        pa.array([r[0] for r in RECORDS], pa.int32()), pa.array([r[1] for r in RECORDS], pa.int32()),
        {"window_start": pa.array([r[2] // (5 * MINUTE) * (5 * MINUTE) for r in RECORDS], pa.int64())},
    ))
    found = _ask(catalog, "w", WindowKeyQuery.with_key_and_window_start_range(0, START, START))
    assert {kv.value for r in found.get_partition_results().values() for kv in r.get_result()} == {1}
    refused = _ask(catalog, "w", WindowRangeQuery.with_key(2))
    for answer in refused.get_partition_results().values():
        assert answer.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        assert re.fullmatch(
            r"This store \(class .*WindowStore\) doesn't know how to execute the given query"
            r" \(WindowRangeQuery\{key=Optional\[2\], timeFrom=Optional\.empty,"
            r" timeTo=Optional\.empty\}\) because WindowStores only supports"
            r" WindowRangeQuery\.withWindowStartRange\. Contact the store maintainer if you need"
            r" support for a new query type\.",
            answer.get_failure_message(),
        ), answer.get_failure_message()
    sessions = catalog.create_store("s", "session", "integer", "integer", num_partitions=2,
                                    retention_ms=24 * 60 * MINUTE)
    sessions.commit(sessions.stage(
        pa.array([r[0] for r in RECORDS], pa.int32()), pa.array([r[1] for r in RECORDS], pa.int32()),
        {"session_start": pa.array([r[2] for r in RECORDS], pa.int64()),
         "session_end": pa.array([r[2] for r in RECORDS], pa.int64())},
    ))
    by_key = _ask(catalog, "s", WindowRangeQuery.with_key(3))
    assert {kv.value for r in by_key.get_partition_results().values() for kv in r.get_result()} == {6, 7}
    wrong = _ask(catalog, "s", WindowRangeQuery.with_window_start_range(0, 0))
    for answer in wrong.get_partition_results().values():
        assert "because SessionStores only support WindowRangeQuery.withKey." in answer.get_failure_message()


def test_versioned_queries(catalog: Catalog) -> None:
    stamps = [1_672_567_200, 1_672_567_210, 1_672_567_220, 1_672_567_230]
    values = [2, 20, 200, 2000]
    table = catalog.create_store("v", "versioned", "integer", "integer", num_partitions=1,
                                 history_retention_ms=24 * 60 * MINUTE)
    table.commit(table.stage(pa.array([2] * 4, pa.int32()), pa.array(values, pa.int32()),
                             {"timestamp": pa.array(stamps, pa.int64())}))
    latest = _ask(catalog, "v", VersionedKeyQuery.with_key(2)).get_only_partition_result()
    assert latest is not None and latest.get_result() == VersionedRecord(2000, stamps[3], None)
    old = _ask(catalog, "v", VersionedKeyQuery.with_key(2).as_of(stamps[0])).get_only_partition_result()
    assert old is not None and old.get_result() == VersionedRecord(2, stamps[0], stamps[1])
    assert _ask(catalog, "v", VersionedKeyQuery.with_key(2).as_of(stamps[0] - 50)).get_only_partition_result() is None
    assert _ask(catalog, "v", VersionedKeyQuery.with_key(3)).get_only_partition_result() is None
    history = _ask(catalog, "v", MultiVersionedKeyQuery.with_key(2)).get_partition_results()[0]
    iterator = history.get_result()
    first = next(iterator)
    table.commit(table.stage(pa.array([2], pa.int32()), pa.array([999_999], pa.int32()),
                             {"timestamp": pa.array([stamps[0]], pa.int64())}))
    assert [first.value, *(r.value for r in iterator)] == list(reversed(values))  # a snapshot


def test_state_query_result_string_form(kv: Catalog) -> None:
    result = _ask(kv, "kv", KeyQuery.with_key(2), with_partitions=({_owner(2)},))
    text = repr(result)
    assert text.startswith(f"StateQueryResult{{partitionResults={{{_owner(2)}=SucceededQueryResult{{result=5,")
    assert text.endswith("globalResult=null}")
