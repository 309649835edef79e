"""Kafka's IQv2 tests, ported scenario by scenario to the store-level API (bytes in, bytes out).

Sources: ``IQv2StoreIntegrationTest`` (its per-store checks), ``IQv2VersionedStoreIntegrationTest``,
``PositionTest``, ``PositionBoundTest``, ``StateQueryResultTest``, ``StoreQueryUtilsTest``,
``VersionedKeyQueryTest``, ``MultiVersionedKeyQueryTest``. Kafka's integration tests run one
store per partition of a two-partition topic; here two stores stand for the two partitions, each
with its own position, and :func:`_iq` asks both as ``KafkaStreams#query`` does.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from catalog.operations.query import StateQueryResult
from stores.adapters import SessionToHeadersStoreAdapter
from stores.errors import InvalidOptionError, QueryError
from stores.iterators import KeyValueIterator
from stores.key_value.store import KeyValueStore
from stores.protocols import VersionedRecord
from stores.query import (
    FailureReason,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    PositionBound,
    Query,
    QueryResult,
    RangeQuery,
    ResultOrder,
    TimestampedKeyQuery,
    TimestampedRangeQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
    query,
)
from stores.records import KeyValue, ValueAndHeaders, ValueAndTimestamp, Window, Windowed
from stores.session.store import SessionStore
from stores.timestamped.store import TimestampedKeyValueStore
from stores.versioned.store import VersionedKeyValueStore
from stores.window.store import TimestampedWindowStore, WindowStore

TOPIC = "input-topic"
MINUTE = 60_000
WINDOW_SIZE = 5 * MINUTE
WINDOW_START = 1_700_000_100_000 // WINDOW_SIZE * WINDOW_SIZE
INPUT_POSITION = Position.from_map({TOPIC: {0: 5, 1: 3}})
POSITION_0 = Position.from_map({TOPIC: {0: 5}})


class UnknownQuery(Query):
    """Kafka's test-local ``UnknownQuery implements Query<Void>``."""


def k(key: int) -> bytes:
    """Kafka's IntegerSerializer."""
    return struct.pack(">i", key)


def v(raw: bytes) -> int:
    return int(struct.unpack(">i", raw)[0])


def ts(i: int) -> int:
    return WINDOW_START + 2 * MINUTE * i


# The ten input records of IQv2StoreIntegrationTest: key i // 2, value i, time ts(i), written to
# partition key % 2.
RECORDS = [(i // 2, i, ts(i)) for i in range(10)]


class Partitions:
    """One store per input partition, with Kafka's positions after the input was processed."""

    def __init__(self, make: Callable[[Path], Any], tmp: Path) -> None:
        self.stores = {p: make(tmp / f"p{p}") for p in (0, 1)}
        self.positions = {p: Position.empty() for p in (0, 1)}

    def write(self, apply: Callable[[Any, int, int, int], None]) -> None:
        offsets = {0: -1, 1: -1}
        for key, value, time in RECORDS:
            p = key % 2
            offsets[p] += 1
            apply(self.stores[p], key, value, time)
            self.positions[p].with_component(TOPIC, p, offsets[p])

    def close(self) -> None:
        for store in self.stores.values():
            store.close()


def _iq(parts: Partitions, q: Query, bound: PositionBound | None = None,
        execution_info: bool = False) -> StateQueryResult:
    result = StateQueryResult()
    for p, store in parts.stores.items():
        result.add_result(p, query(
            store, q, PositionBound.at(INPUT_POSITION) if bound is None else bound,
            position=parts.positions[p], partition=p, collect_execution_info=execution_info,
        ))
    return result


def _kv_dsl(store: Any, key: int, value: int, time: int) -> None:
    store.put(k(key), k(value))


def _ts_kv(store: Any, key: int, value: int, time: int) -> None:
    store.put(k(key), ValueAndTimestamp(k(value), time))


def _window_papi(timestamped: bool) -> Callable[[Any, int, int, int], None]:
    def apply(store: Any, key: int, value: int, time: int) -> None:
        start = time // WINDOW_SIZE * WINDOW_SIZE
        store.put(k(key), ValueAndTimestamp(k(value), time) if timestamped else k(value), start)

    return apply


def _window_dsl(timestamped: bool) -> Callable[[Any, int, int, int], None]:
    def apply(store: Any, key: int, value: int, time: int) -> None:
        start = time // WINDOW_SIZE * WINDOW_SIZE
        old = store.fetch(k(key), start)
        total = value + (0 if old is None else v(old.value if timestamped else old))
        store.put(k(key), ValueAndTimestamp(k(total), time) if timestamped else k(total), start)

    return apply


def _session_papi(store: Any, key: int, value: int, time: int) -> None:
    store.put(k(key), time, time, k(value))


def _session_dsl(store: Any, key: int, value: int, time: int) -> None:
    # SessionWindows.ofInactivityGapWithNoGrace(5 min) summing values: merge overlapping sessions.
    merged_start, merged_end, total = time, time, value
    for entry in list(store.find_sessions(k(key), time - WINDOW_SIZE, time + WINDOW_SIZE)):
        merged_start = min(merged_start, entry.key.window.start)
        merged_end = max(merged_end, entry.key.window.end)
        total += v(entry.value)
        store.remove(entry.key)
    store.put(k(key), merged_start, merged_end, k(total))


STORES: dict[str, tuple[Callable[[Path], Any], Callable[[Any, int, int, int], None]]] = {
    "ROCKS_KV": (KeyValueStore, _kv_dsl),
    "TIME_ROCKS_KV": (TimestampedKeyValueStore, _ts_kv),
    "ROCKS_WINDOW_DSL": (lambda p: WindowStore(p, 24 * 60 * MINUTE, WINDOW_SIZE), _window_dsl(False)),
    "ROCKS_WINDOW_PAPI": (lambda p: WindowStore(p, 24 * 60 * MINUTE, WINDOW_SIZE), _window_papi(False)),
    "TIME_ROCKS_WINDOW_DSL": (
        lambda p: TimestampedWindowStore(p, 24 * 60 * MINUTE, WINDOW_SIZE), _window_dsl(True)
    ),
    "TIME_ROCKS_WINDOW_PAPI": (
        lambda p: TimestampedWindowStore(p, 24 * 60 * MINUTE, WINDOW_SIZE), _window_papi(True)
    ),
    "ROCKS_SESSION_DSL": (lambda p: SessionStore(p, 24 * 60 * MINUTE), _session_dsl),
    "ROCKS_SESSION_PAPI": (lambda p: SessionStore(p, 24 * 60 * MINUTE), _session_papi),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Partitions]]:
    parts: dict[str, Partitions] = {}
    for name, (make, apply) in STORES.items():
        parts[name] = Partitions(make, tmp_path_factory.mktemp(name))
        parts[name].write(apply)
    yield parts
    for each in parts.values():
        each.close()


def _values(result: StateQueryResult, extract: Callable[[Any], int] = v) -> list[int]:
    """Every partition's iterator, in partition order, as Kafka's tests read them."""
    out: list[int] = []
    for partition, answer in sorted(result.get_partition_results().items()):
        assert answer.is_success(), answer
        with pytest.raises(QueryError):
            answer.get_failure_reason()
        with pytest.raises(QueryError):
            answer.get_failure_message()
        with answer.get_result() as iterator:
            assert isinstance(iterator, KeyValueIterator)
            while iterator.has_next():
                out.append(extract(next(iterator).value))
        assert answer.get_execution_info() == []
    assert result.get_position() == INPUT_POSITION
    return out


# -- shouldRejectUnknownQuery, shouldCollectExecutionInfo(UnderFailure) -------------------------

UNKNOWN_PATTERN = re.compile(
    r"This store \(class .*\) doesn't know how to execute the given query \(.*\)\."
    r" Contact the store maintainer if you need support for a new query type\."
)


@pytest.mark.parametrize("name", sorted(STORES))
def test_should_reject_unknown_query(built: dict[str, Partitions], name: str) -> None:
    result = _iq(built[name], UnknownQuery(), PositionBound.unbounded())
    assert set(result.get_partition_results()) == {0, 1}
    for answer in result.get_partition_results().values():
        assert answer.is_failure() and not answer.is_success()
        assert answer.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        assert UNKNOWN_PATTERN.fullmatch(answer.get_failure_message()), answer
        with pytest.raises(QueryError):  # Kafka: IllegalArgumentException
            answer.get_result()
        with pytest.raises(ValueError):
            answer.get_result()
        assert answer.get_execution_info() == []


@pytest.mark.parametrize("name", sorted(STORES))
def test_should_collect_execution_info_also_under_failure(
    built: dict[str, Partitions], name: str
) -> None:
    for q in (KeyQuery.with_key(k(1)), UnknownQuery()):
        result = _iq(built[name], q, execution_info=True)
        assert set(result.get_partition_results()) == {0, 1}
        for answer in result.get_partition_results().values():
            assert answer.get_execution_info(), answer
            assert answer.get_execution_info()[0].startswith("Handled in class stores.")


# -- key-value stores: shouldHandleKeyQuery / TimestampedKeyQuery / range queries ---------------


@pytest.mark.parametrize("name", ["ROCKS_KV", "TIME_ROCKS_KV"])
def test_should_handle_key_query(built: dict[str, Partitions], name: str) -> None:
    only = _iq(built[name], KeyQuery.with_key(k(2))).get_only_partition_result()
    assert only is not None and only.is_success()
    with pytest.raises(QueryError, match="did not fail"):
        only.get_failure_reason()
    with pytest.raises(QueryError, match="did not fail"):
        only.get_failure_message()
    assert v(only.get_result()) == 5
    assert only.get_execution_info() == []
    assert only.get_position() == POSITION_0


def test_should_handle_timestamped_key_query(built: dict[str, Partitions]) -> None:
    only = _iq(built["TIME_ROCKS_KV"], TimestampedKeyQuery.with_key(k(2))).get_only_partition_result()
    assert only is not None and only.get_result() == ValueAndTimestamp(k(5), ts(5))
    assert only.get_position() == POSITION_0
    # PAPI over a plain key-value store: the query type is unknown, so there is no result.
    plain = _iq(built["ROCKS_KV"], TimestampedKeyQuery.with_key(k(2)))
    assert plain.get_only_partition_result() is None
    assert {r.get_failure_reason() for r in plain.get_partition_results().values()} == {
        FailureReason.UNKNOWN_QUERY_TYPE
    }


RANGE_CASES = [
    (0, 4, True, [1, 5, 9, 3, 7]),
    (1, 3, True, [5, 3, 7]),
    (3, None, True, [9, 7]),
    (None, 3, True, [1, 5, 3, 7]),
    (None, None, True, [1, 5, 9, 3, 7]),
    (0, 4, False, [9, 5, 1, 7, 3]),
    (1, 3, False, [5, 7, 3]),
    (3, None, False, [9, 7]),
    (None, 3, False, [5, 1, 7, 3]),
    (None, None, False, [9, 5, 1, 7, 3]),
]


def _bounds(lower: int | None, upper: int | None) -> tuple[bytes | None, bytes | None]:
    return (None if lower is None else k(lower)), (None if upper is None else k(upper))


@pytest.mark.parametrize("name", ["ROCKS_KV", "TIME_ROCKS_KV"])
@pytest.mark.parametrize(("lower", "upper", "ascending", "expected"), RANGE_CASES)
def test_should_handle_range_queries(
    built: dict[str, Partitions], name: str, lower: int | None, upper: int | None,
    ascending: bool, expected: list[int],
) -> None:
    q = RangeQuery.with_range(*_bounds(lower, upper))
    if not ascending:
        q = q.with_descending_keys()
    assert q.is_key_ascending() is ascending
    assert _values(_iq(built[name], q)) == expected


@pytest.mark.parametrize(("lower", "upper", "ascending", "expected"), RANGE_CASES)
def test_should_handle_timestamped_range_queries(
    built: dict[str, Partitions], lower: int | None, upper: int | None,
    ascending: bool, expected: list[int],
) -> None:
    q = TimestampedRangeQuery.with_range(*_bounds(lower, upper))
    if not ascending:
        q = q.with_descending_keys()
    got = _values(_iq(built["TIME_ROCKS_KV"], q), extract=lambda value: value)
    assert got == [ValueAndTimestamp(k(i), ts(i)) for i in expected]


def test_timestamped_range_query_on_a_plain_store_is_unknown(built: dict[str, Partitions]) -> None:
    result = _iq(built["ROCKS_KV"], TimestampedRangeQuery.with_no_bounds())
    assert all(r.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
               for r in result.get_partition_results().values())


# -- window stores ------------------------------------------------------------------------------

WINDOW_KEY_CASES = [  # (key, from, to, DSL expected, PAPI expected), times in minutes
    (0, 0, 0, {1}, {1}),
    (0, None, None, set(), set()),  # WINDOW_START - 1 on both ends
    (2, 0, 0, set(), set()),
    (999, 0, 0, set(), set()),
    (999, None, None, set(), set()),
    (0, 0, 5, {1}, {1}),
    (1, 0, 0, {2}, {2}),
    (2, 5, 10, {4, 5}, {4, 5}),
    (3, 5, 10, {13}, {7}),
    (4, 15, 20, {17}, {9}),
    (4, 20, 24, set(), set()),
]


def _at(minutes: int | None) -> int:
    return WINDOW_START - 1 if minutes is None else WINDOW_START + minutes * MINUTE


def _window_value(name: str) -> Callable[[Any], int]:
    return (lambda value: v(value.value)) if name.startswith("TIME") else v


@pytest.mark.parametrize("name", [n for n in STORES if "WINDOW" in n])
@pytest.mark.parametrize(("key", "start", "end", "dsl", "papi"), WINDOW_KEY_CASES)
def test_should_handle_window_key_queries(
    built: dict[str, Partitions], name: str, key: int, start: int | None, end: int | None,
    dsl: set[int], papi: set[int],
) -> None:
    q = WindowKeyQuery.with_key_and_window_start_range(k(key), _at(start), _at(end))
    result = _iq(built[name], q)
    got = set(_values(result, _window_value(name)))
    assert got == (dsl if name.endswith("DSL") else papi)
    keys = [e.key for r in _iq(built[name], q).get_partition_results().values() for e in r.get_result()]
    assert all(isinstance(key, int) for key in keys)  # WindowStoreIterator: window start -> value


WINDOW_RANGE_CASES = [  # (from, to, DSL expected, PAPI expected), times in minutes
    (None, None, set(), set()),
    (0, 0, {1, 2}, {1, 2}),
    (0, 5, {1, 2, 3, 4}, {1, 2, 3, 4}),
    (5, 10, {3, 4, 5, 13}, {3, 4, 5, 7}),
    (10, 15, {17, 5, 13}, {5, 7, 9}),
    (15, 20, {17}, {9}),
    (20, 25, set(), set()),
    (5, 15, {17, 3, 4, 5, 13}, {3, 4, 5, 7, 9}),
    (0, 15, {1, 17, 2, 3, 4, 5, 13}, {1, 2, 3, 4, 5, 7, 9}),
]


@pytest.mark.parametrize("name", [n for n in STORES if "WINDOW" in n])
@pytest.mark.parametrize(("start", "end", "dsl", "papi"), WINDOW_RANGE_CASES)
def test_should_handle_window_range_queries(
    built: dict[str, Partitions], name: str, start: int | None, end: int | None,
    dsl: set[int], papi: set[int],
) -> None:
    result = _iq(built[name], WindowRangeQuery.with_window_start_range(_at(start), _at(end)))
    assert set(_values(result, _window_value(name))) == (dsl if name.endswith("DSL") else papi)


@pytest.mark.parametrize("name", [n for n in STORES if "WINDOW" in n])
def test_window_store_refuses_window_range_query_with_key(
    built: dict[str, Partitions], name: str
) -> None:
    result = _iq(built[name], WindowRangeQuery.with_key(k(2)))
    pattern = (
        r"This store \(class stores\.window\..*WindowStore\) doesn't know how to execute the given"
        r" query \(WindowRangeQuery\{key=Optional\[.*\], timeFrom=Optional\.empty,"
        r" timeTo=Optional\.empty\}\) because WindowStores only supports"
        r" WindowRangeQuery\.withWindowStartRange\."
        r" Contact the store maintainer if you need support for a new query type\."
    )
    for answer in result.get_partition_results().values():
        assert answer.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        assert re.fullmatch(pattern, answer.get_failure_message()), answer.get_failure_message()


# -- session stores -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "dsl", "papi"),
    [(0, {1}, {0, 1}), (1, {5}, {2, 3}), (2, {9}, {4, 5}), (3, {13}, {6, 7}), (4, {17}, {8, 9}),
     (999, set(), set())],
)
@pytest.mark.parametrize("name", ["ROCKS_SESSION_DSL", "ROCKS_SESSION_PAPI"])
def test_should_handle_session_key_queries(
    built: dict[str, Partitions], name: str, key: int, dsl: set[int], papi: set[int]
) -> None:
    result = _iq(built[name], WindowRangeQuery.with_key(k(key)))
    assert set(_values(result)) == (dsl if name.endswith("DSL") else papi)


@pytest.mark.parametrize("name", ["ROCKS_SESSION_DSL", "ROCKS_SESSION_PAPI"])
def test_session_store_refuses_window_start_range(built: dict[str, Partitions], name: str) -> None:
    result = _iq(built[name], WindowRangeQuery.with_window_start_range(0, 0))
    for answer in result.get_partition_results().values():
        assert answer.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        message = answer.get_failure_message()
        assert "doesn't know how to execute the given query" in message
        assert "because SessionStores only support WindowRangeQuery.withKey." in message


def test_session_adapter_answers_as_a_session_store_with_headers(tmp_path: Path) -> None:
    with SessionToHeadersStoreAdapter(SessionStore(tmp_path / "s", 100_000)) as adapter:
        adapter.put(Windowed(k(1), Window(5, 9)), ValueAndHeaders(k(7), (("h", b"x"),)))
        sessions = list(query(adapter, WindowRangeQuery.with_key(k(1))).get_result())
        assert sessions == [KeyValue(Windowed(k(1), Window(5, 9)), k(7))]


# -- versioned stores (IQv2VersionedStoreIntegrationTest) ---------------------------------------

BASE = 1_672_567_200  # Kafka uses the base Instant's *seconds* as the record timestamps
STAMPS = [BASE, BASE + 10, BASE + 20, BASE + 30]
VALUES = [2, 20, 200, 2000]
NOW = 1_900_000_000_000


@pytest.fixture
def versioned(tmp_path: Path) -> Iterator[VersionedKeyValueStore]:
    store = VersionedKeyValueStore(tmp_path / "v", history_retention_ms=24 * 60 * MINUTE)
    for value, stamp in zip(VALUES, STAMPS, strict=True):
        store.put(k(2), k(value), stamp)
    yield store
    store.close()


VERSIONED_POSITION = Position.from_map({TOPIC: {0: 3}})


def _versioned_query(store: VersionedKeyValueStore, q: Query) -> QueryResult:
    return query(store, q, PositionBound.at(VERSIONED_POSITION), position=VERSIONED_POSITION,
                 partition=0)


@pytest.mark.parametrize(
    ("as_of", "index", "valid_to"),
    [(None, 3, None), (NOW, 3, None), (STAMPS[3], 3, None), (STAMPS[0], 0, STAMPS[1])],
)
def test_should_handle_versioned_key_query(
    versioned: VersionedKeyValueStore, as_of: int | None, index: int, valid_to: int | None
) -> None:
    q = VersionedKeyQuery.with_key(k(2))
    if as_of is not None:
        q = q.as_of(as_of)
    answer = _versioned_query(versioned, q)
    assert answer.is_success() and answer.get_execution_info() == []
    record = answer.get_result()
    assert record == VersionedRecord(k(VALUES[index]), STAMPS[index], valid_to)


def test_versioned_key_query_misses_give_null(versioned: VersionedKeyValueStore) -> None:
    assert _versioned_query(versioned, VersionedKeyQuery.with_key(k(2)).as_of(STAMPS[0] - 50)).get_result() is None
    assert _versioned_query(versioned, VersionedKeyQuery.with_key(k(3)).as_of(NOW)).get_result() is None


@pytest.mark.parametrize(
    ("from_time", "to_time", "order", "lowest"),
    [(None, None, ResultOrder.ANY, 0), (None, None, ResultOrder.ASCENDING, 0),
     (STAMPS[1] + 5, NOW, ResultOrder.ANY, 1)],
)
def test_should_handle_multi_versioned_key_query(
    versioned: VersionedKeyValueStore, from_time: int | None, to_time: int | None,
    order: ResultOrder, lowest: int,
) -> None:
    q = MultiVersionedKeyQuery.with_key(k(2)).from_time(from_time).to_time(to_time)
    if order is ResultOrder.ASCENDING:
        q = q.with_ascending_timestamps()
    answer = _versioned_query(versioned, q)
    with pytest.raises(QueryError):
        answer.get_failure_reason()
    indexes = list(range(lowest, 4))
    if order is not ResultOrder.ASCENDING:
        indexes.reverse()  # ANY is served newest first, as Kafka's test expects
    with answer.get_result() as iterator:
        got = list(iterator)
    assert got == [
        VersionedRecord(k(VALUES[i]), STAMPS[i], STAMPS[i + 1] if i < 3 else None)
        for i in indexes
    ]


@pytest.mark.parametrize("order", [ResultOrder.ANY, ResultOrder.ASCENDING])
def test_multi_versioned_key_query_misses_give_empty_iterators(
    versioned: VersionedKeyValueStore, order: ResultOrder
) -> None:
    for q in (MultiVersionedKeyQuery.with_key(k(2)).from_time(STAMPS[0] - 100).to_time(STAMPS[0] - 50),
              MultiVersionedKeyQuery.with_key(k(3))):
        if order is ResultOrder.ASCENDING:
            q = q.with_ascending_timestamps()
        iterator = _versioned_query(versioned, q).get_result()
        assert not iterator.has_next()
        iterator.close()


def test_multi_versioned_key_query_reads_a_snapshot(versioned: VersionedKeyValueStore) -> None:
    # shouldHandleRaceCondition: a write during iteration is not seen by the open iterator.
    iterator = _versioned_query(versioned, MultiVersionedKeyQuery.with_key(k(2))).get_result()
    first = [next(iterator), next(iterator)]
    versioned.put(k(2), k(999_999), STAMPS[0])
    rest = list(iterator)
    assert [r.value for r in first + rest] == [k(x) for x in reversed(VALUES)]


def test_versioned_query_null_keys() -> None:
    with pytest.raises(InvalidOptionError, match="Key can not be null."):
        VersionedKeyQuery.with_key(None)
    with pytest.raises(InvalidOptionError, match="key cannot be null."):
        MultiVersionedKeyQuery.with_key(None)


# -- Position, PositionBound, StoreQueryUtils, StateQueryResult, QueryResult --------------------


def test_position_create_from_map_copies_and_from_null() -> None:
    source = {"topic": {0: 5}, "topic1": {0: 5, 7: 0}}
    position = Position.from_map(source)
    assert position.get_topics() == {"topic", "topic1"}
    assert position.get_partition_positions("topic") == {0: 5}
    source["topic1"][99] = 99
    assert position.get_partition_positions("topic1") == {0: 5, 7: 0}
    assert Position.from_map(None).get_topics() == set()


def test_position_merge_update_copy_and_equality() -> None:
    position = Position.from_map({"topic": {0: 5}, "topic1": {0: 5, 7: 0}})
    merged = position.merge(Position.from_map({"topic": {0: 7}, "topic1": {8: 1}, "topic2": {9: 5}}))
    assert merged.get_topics() == {"topic", "topic1", "topic2"}
    assert merged.get_partition_positions("topic1") == {0: 5, 7: 0, 8: 1}
    assert position.merge(None) is position
    monotonic = Position.empty().with_component("topic", 3, 5).with_component("topic", 3, 4)
    assert monotonic.get_partition_positions("topic")[3] == 5
    assert monotonic.with_component("topic", 3, 6).get_partition_positions("topic")[3] == 6
    original = Position.from_map({"topic": {0: 5}})
    copy = original.copy()
    original.with_component("topic", 0, 6).with_component("topic2", 2, 4)
    assert copy.get_topics() == {"topic"} and copy.get_partition_positions("topic") == {0: 5}
    assert Position.empty().with_component("t", 0, 1) == Position.empty().with_component("t", 0, 1)
    assert Position.empty().with_component("t", 0, 1) != Position.empty().with_component("t", 0, 2)
    assert Position.empty() != None  # noqa: E711 - Kafka's shouldNotMatchNull
    with pytest.raises(TypeError):
        hash(Position.empty())
    with pytest.raises(TypeError):
        {Position.empty(): 5}  # noqa: B018


def test_position_bound_copies_equals_and_does_not_hash() -> None:
    position = Position.empty()
    bound = PositionBound.at(position)
    position.with_component("topic", 1, 2)
    assert bound.position().get_topics() == set() and bound.is_unbounded()
    assert PositionBound.unbounded().is_unbounded()
    assert PositionBound.at(Position.empty()) == PositionBound.at(Position.empty())
    assert PositionBound.unbounded() == PositionBound.unbounded()
    assert PositionBound.at(Position.empty()) != None  # noqa: E711
    with pytest.raises(TypeError):
        hash(bound)


def test_string_forms_are_kafkas() -> None:
    position = Position.empty().with_component("topic", 0, 1)
    assert repr(position) == "Position{position={topic={0=1}}}"
    assert repr(PositionBound.at(position)) == "PositionBound{position=Position{position={topic={0=1}}}}"
    assert repr(WindowRangeQuery.with_key(2)) == (
        "WindowRangeQuery{key=Optional[2], timeFrom=Optional.empty, timeTo=Optional.empty}"
    )
    assert repr(WindowRangeQuery.with_window_start_range(0, 1500)) == (
        "WindowRangeQuery{key=Optional.empty, timeFrom=Optional[1970-01-01T00:00:00Z],"
        " timeTo=Optional[1970-01-01T00:00:01.500Z]}"
    )
    assert repr(WindowKeyQuery.with_key_and_window_start_range(2, 0, 0)) == (
        "WindowKeyQuery{key=2, timeFrom=Optional[1970-01-01T00:00:00Z],"
        " timeTo=Optional[1970-01-01T00:00:00Z]}"
    )
    ok = QueryResult.for_result("Foo")
    assert repr(ok) == "SucceededQueryResult{result=Foo, executionInfo=[], position=null}"
    failed = QueryResult.for_failure(FailureReason.NOT_PRESENT, "gone")
    failed.add_execution_info("x")
    failed.set_position(position)
    assert repr(failed) == (
        "FailedQueryResult{failureReason=NOT_PRESENT, failure='gone', executionInfo=[x],"
        " position=Position{position={topic={0=1}}}}"
    )


def test_store_query_utils_bound_violation_message(tmp_path: Path) -> None:
    with KeyValueStore(tmp_path / "kv") as store:
        answer = query(
            store, KeyQuery.with_key(b"k"), PositionBound.at(Position.empty().with_component("topic", 0, 1)),
            position=Position.empty().with_component("topic", 0, 0), partition=0,
        )
    assert answer.get_failure_reason() is FailureReason.NOT_UP_TO_BOUND
    assert answer.get_failure_message() == (
        "For store partition 0, the current position Position{position={topic={0=0}}}"
        " is not yet up to the bound PositionBound{position=Position{position={topic={0=1}}}}"
    )


def test_state_query_result_only_partition_result() -> None:
    empty = StateQueryResult()
    empty.add_result(0, QueryResult.for_result(None))
    assert empty.get_only_partition_result() is None
    single = StateQueryResult()
    single.add_result(0, QueryResult.for_result("Foo"))
    assert single.get_only_partition_result().get_result() == "Foo"  # type: ignore[union-attr]
    many = StateQueryResult()
    many.add_result(0, QueryResult.for_result("Foo"))
    many.add_result(1, QueryResult.for_result("Foo"))
    with pytest.raises(QueryError, match="did not return exactly one partition result: {0="):
        many.get_only_partition_result()
    with pytest.raises(ValueError):  # Kafka: IllegalArgumentException
        many.get_only_partition_result()
    assert repr(single) == (
        "StateQueryResult{partitionResults={0=SucceededQueryResult{result=Foo, executionInfo=[],"
        " position=null}}, globalResult=null}"
    )


def test_results_are_kafka_iterators(built: dict[str, Partitions]) -> None:
    answer = query(built["ROCKS_KV"].stores[0], RangeQuery.with_no_bounds())
    iterator = answer.get_result()
    assert iterator.peek_next_key() == k(0)
    assert next(iterator) == KeyValue(k(0), k(1))
    assert iterator.has_next()
    iterator.close()
    with pytest.raises(Exception, match="closed"):
        next(iterator)
