"""IQv2 over catalog stores: requests, partitions, position bounds, typed keys, no Spark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.operations.query import StateQueryRequest, StateQueryResult, query
from catalog.partitioner import partition_of
from stores.errors import InvalidOptionError, SerdeError, StoreNotFoundError
from stores.protocols import VersionedRecord
from stores.query import (
    FailureReason,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    PositionBound,
    QueryError,
    QueryResult,
    RangeQuery,
    TimestampedKeyQuery,
    UnsupportedQueryError,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from stores.records import KeyValue, Window, Windowed

RATES = {"EUR": 1.1, "GBP": 1.3, "JPY": 0.007, "CHF": 1.2, "USD": 1.0, "SEK": 0.09}


def _rates(catalog: Catalog, partitions: int = 3) -> Any:
    table = catalog.create_store("fx", "keyvalue", "string", "double", num_partitions=partitions)
    table.commit(table.stage(pa.array(list(RATES)), pa.array(list(RATES.values())), None))
    return table


def _owner(key: str, partitions: int = 3) -> int:
    return partition_of(key.encode(), partitions)


def _ask(catalog: Catalog, q: Any, **request: Any) -> StateQueryResult:
    built = StateQueryRequest.in_store(request.pop("store", "fx")).with_query(q)
    for step, argument in request.items():
        built = getattr(built, step)(*argument)
    return query(catalog, built)


def test_request_builder_is_immutable_with_kafkas_defaults() -> None:
    q = KeyQuery.with_key("EUR")
    request = StateQueryRequest.in_store("fx").with_query(q)
    assert request.get_store_name() == "fx" and request.get_query() is q
    assert request.is_all_partitions() and request.get_position_bound().is_unbounded()
    assert not request.execution_info_enabled() and not request.is_require_active()
    with pytest.raises(QueryError, match="all partitions"):
        request.get_partitions()
    some = request.with_partitions([2, 0]).enable_execution_info().require_active()
    assert some.get_partitions() == {0, 2} and some.execution_info_enabled() and some.is_require_active()
    assert request.is_all_partitions() and some.with_all_partitions().is_all_partitions()
    bound = PositionBound.at(Position.from_map({"fx": {0: 1}}))
    assert request.with_position_bound(bound).get_position_bound() == bound
    with pytest.raises(InvalidOptionError):
        request.with_partitions(["0"])  # type: ignore[list-item]
    with pytest.raises(InvalidOptionError):
        StateQueryRequest.in_store("fx").with_query("get EUR")  # type: ignore[arg-type]


def test_key_query_with_typed_keys_over_all_partitions(catalog: Catalog) -> None:
    _rates(catalog)
    result = _ask(catalog, KeyQuery.with_key("EUR"))
    partitions = result.get_partition_results()
    assert sorted(partitions) == [0, 1, 2]
    assert all(r.is_success() for r in partitions.values())
    assert partitions[_owner("EUR")].get_result() == 1.1
    assert [p for p, r in partitions.items() if r.get_result() is not None] == [_owner("EUR")]
    only = result.get_only_partition_result()
    assert only is not None and only.get_result() == 1.1
    # Kafka's semantics: every partition answers; the ones without the key answer None.
    missing = _ask(catalog, KeyQuery.with_key("XXX"))
    assert missing.get_only_partition_result() is None
    assert all(r.is_success() for r in missing.get_partition_results().values())
    assert result.get_global_result() is None


def test_positions_are_store_partition_commit_and_merge(catalog: Catalog) -> None:
    table = _rates(catalog)
    result = _ask(catalog, KeyQuery.with_key("GBP"))
    for partition, answer in result.get_partition_results().items():
        assert answer.get_position() == Position.from_map({"fx": {partition: 2}})  # 1 created it
    assert result.get_position() == Position.from_map({"fx": {0: 2, 1: 2, 2: 2}})
    table.commit(table.stage(pa.array(["GBP"]), pa.array([1.25]), None))
    again = _ask(catalog, KeyQuery.with_key("GBP"), with_position_bound=(PositionBound.at(result.get_position()),))
    assert again.get_only_partition_result().get_result() == 1.25  # type: ignore[union-attr]
    assert again.get_position() == Position.from_map({"fx": {0: 3, 1: 3, 2: 3}})


def test_range_query_over_some_partitions(catalog: Catalog) -> None:
    _rates(catalog)
    everything = _ask(catalog, RangeQuery.with_no_bounds())
    with pytest.raises(QueryError, match="exactly one partition"):
        everything.get_only_partition_result()  # iterators are results, as in Kafka
    rows: dict[str, float] = {}
    for answer in everything.get_partition_results().values():
        iterator = answer.get_result()
        assert isinstance(iterator, Iterator)
        entries = list(iterator)
        assert all(isinstance(e, KeyValue) for e in entries)
        assert [e.key for e in entries] == sorted(e.key for e in entries)  # byte order
        rows.update(entries)
    assert rows == RATES
    some = _ask(catalog, RangeQuery.with_range("C", "J").with_descending_keys(), with_partitions=([0, 2],))
    assert sorted(some.get_partition_results()) == [0, 2]
    per_partition = {p: list(r.get_result()) for p, r in some.get_partition_results().items()}
    for entries in per_partition.values():
        assert [e.key for e in entries] == sorted((e.key for e in entries), reverse=True)
    got = {k: v for entries in per_partition.values() for k, v in entries}
    assert got == {k: v for k, v in RATES.items() if "C" <= k <= "J" and _owner(k) in (0, 2)}


def test_key_query_on_partitions_without_the_key_answers_none(catalog: Catalog) -> None:
    _rates(catalog)
    others = sorted({0, 1, 2} - {_owner("CHF")})
    result = _ask(catalog, KeyQuery.with_key("CHF"), with_partitions=(others,))
    assert sorted(result.get_partition_results()) == others
    assert all(r.is_success() and r.get_result() is None for r in result.get_partition_results().values())
    assert result.get_position() == Position.from_map({"fx": {p: 2 for p in others}})


def test_position_bound_not_reached(catalog: Catalog) -> None:
    _rates(catalog)
    ahead = PositionBound.at(Position.from_map({"fx": {0: 5, 1: 1}}))
    result = _ask(catalog, KeyQuery.with_key("EUR"), with_position_bound=(ahead,))
    partitions = result.get_partition_results()
    assert partitions[0].get_failure_reason() is FailureReason.NOT_UP_TO_BOUND
    assert "partition 0" in partitions[0].get_failure_message()
    assert partitions[0].get_position() == Position.from_map({"fx": {0: 2}})
    assert partitions[1].is_success() and partitions[2].is_success()  # 2 is not bounded
    # Kafka runs a require-active request unbounded.
    active = _ask(catalog, KeyQuery.with_key("EUR"), with_position_bound=(ahead,), require_active=())
    assert all(r.is_success() for r in active.get_partition_results().values())
    # As in Kafka, a bounded topic/partition the store has never seen is not reached.
    elsewhere = PositionBound.at(Position.from_map({"other": {0: 99}}))
    answers = _ask(catalog, RangeQuery.with_no_bounds(), with_position_bound=(elsewhere,))
    assert [r.is_success() for r in answers.get_partition_results().values()] == [False, True, True]


def test_unknown_store_raises_as_kafka_does(catalog: Catalog) -> None:
    _rates(catalog)
    with pytest.raises(StoreNotFoundError, match=r"\[STORE_NOT_FOUND\] store 'fxx'.*did you mean 'fx'"):
        _ask(catalog, KeyQuery.with_key("EUR"), store="fxx")


def test_partitions_outside_the_store_do_not_exist(catalog: Catalog) -> None:
    _rates(catalog)
    result = _ask(catalog, KeyQuery.with_key("EUR"), with_partitions=([_owner("EUR"), 3, -1],))
    partitions = result.get_partition_results()
    assert sorted(partitions) == [-1, _owner("EUR"), 3]
    for outside in (3, -1):
        assert partitions[outside].get_failure_reason() is FailureReason.DOES_NOT_EXIST
        assert "partitions 0 to 2" in partitions[outside].get_failure_message()
    assert result.get_only_partition_result().get_result() == 1.1  # type: ignore[union-attr]
    nothing = _ask(catalog, RangeQuery.with_no_bounds(), with_partitions=([7],))
    assert list(nothing.get_partition_results()) == [7]


def test_unknown_query_types_fail_on_every_partition(catalog: Catalog) -> None:
    _rates(catalog)
    for q in (TimestampedKeyQuery.with_key("EUR"), VersionedKeyQuery.with_key("EUR"),
              WindowRangeQuery.with_window_start_range(0, 10)):
        result = _ask(catalog, q)
        reasons = {r.get_failure_reason() for r in result.get_partition_results().values()}
        assert reasons == {FailureReason.UNKNOWN_QUERY_TYPE}, q
        assert result.get_only_partition_result() is None


def test_typed_keys_must_fit_the_key_type(catalog: Catalog) -> None:
    _rates(catalog)
    with pytest.raises(SerdeError, match="expected str"):
        _ask(catalog, KeyQuery.with_key(42))
    longs = catalog.create_store("counts", "keyvalue", "long", "string", num_partitions=2)
    longs.commit(longs.stage(pa.array([1, 2, 300]), pa.array(["one", "two", "many"]), None))
    assert _ask(catalog, KeyQuery.with_key(300), store="counts").get_only_partition_result().get_result() == "many"  # type: ignore[union-attr]
    ranged = _ask(catalog, RangeQuery.with_range(2, 400), store="counts")
    got = sorted(kv for r in ranged.get_partition_results().values() for kv in r.get_result())
    assert got == [KeyValue(2, "two"), KeyValue(300, "many")]


def test_execution_info_is_recorded_when_enabled(catalog: Catalog) -> None:
    _rates(catalog)
    plain = _ask(catalog, KeyQuery.with_key("EUR"))
    assert all(r.get_execution_info() == [] for r in plain.get_partition_results().values())
    info = _ask(catalog, KeyQuery.with_key("EUR"), enable_execution_info=())
    owner = info.get_partition_results()[_owner("EUR")].get_execution_info()
    assert owner[0].startswith("Handled in class stores.key_value.store.KeyValueStore in ") and "at commit 2" in owner[1]
    other = info.get_partition_results()[(_owner("EUR") + 1) % 3].get_execution_info()
    assert other and "without opening" in other[0]


def test_a_store_without_data_answers_empty_at_its_creation(catalog: Catalog) -> None:
    catalog.create_store("empty", "keyvalue", "string", "long", num_partitions=2)
    result = _ask(catalog, RangeQuery.with_no_bounds(), store="empty")
    assert [list(r.get_result()) for r in result.get_partition_results().values()] == [[], []]
    assert result.get_position() == Position.from_map({"empty": {0: 1, 1: 1}})


def _fx_history(catalog: Catalog) -> None:
    table = catalog.create_store(
        "hist", "versioned", "string", "double", num_partitions=2, history_retention_ms=100_000
    )
    keys = ["EUR", "EUR", "EUR", "GBP"]
    values = pa.array([1.10, 1.12, None, 1.30], pa.float64())
    stamps = pa.array([1_000, 2_000, 3_000, 1_500], pa.int64())
    table.commit(table.stage(pa.array(keys), values, {"timestamp": stamps}))


def test_versioned_queries_over_the_catalog(catalog: Catalog) -> None:
    _fx_history(catalog)
    as_of = _ask(catalog, VersionedKeyQuery.with_key("EUR").as_of(2_500), store="hist")
    assert as_of.get_only_partition_result().get_result() == VersionedRecord(1.12, 2_000, 3_000)  # type: ignore[union-attr]
    assert _ask(catalog, VersionedKeyQuery.with_key("EUR"), store="hist").get_only_partition_result() is None
    latest = _ask(catalog, VersionedKeyQuery.with_key("GBP"), store="hist").get_only_partition_result()
    assert latest is not None and latest.get_result() == VersionedRecord(1.30, 1_500, None)
    history = _ask(catalog, MultiVersionedKeyQuery.with_key("EUR").with_ascending_timestamps(), store="hist")
    owner = history.get_partition_results()[_owner("EUR", 2)]
    assert list(owner.get_result()) == [VersionedRecord(1.10, 1_000, 2_000), VersionedRecord(1.12, 2_000, 3_000)]
    other = history.get_partition_results()[1 - _owner("EUR", 2)]
    assert other.is_success() and list(other.get_result()) == []
    with pytest.raises(UnsupportedQueryError):
        _ask(catalog, RangeQuery.with_no_bounds(), store="hist")


def test_window_and_session_stores_over_the_catalog(catalog: Catalog) -> None:
    windows = catalog.create_store(
        "clicks", "window", "string", "long", num_partitions=2, retention_ms=100_000, window_size_ms=10
    )
    windows.commit(windows.stage(
        pa.array(["a", "a", "b"]), pa.array([1, 2, 3]), {"window_start": pa.array([0, 10, 10], pa.int64())}
    ))
    by_key = _ask(catalog, WindowKeyQuery.with_key_and_window_start_range("a", 0, 10), store="clicks")
    assert list(by_key.get_partition_results()[_owner("a", 2)].get_result()) == [KeyValue(0, 1), KeyValue(10, 2)]
    by_time = _ask(catalog, WindowRangeQuery.with_window_start_range(10, 10), store="clicks")
    got = sorted(kv for r in by_time.get_partition_results().values() for kv in r.get_result())
    assert got == [KeyValue(Windowed("a", Window(10, 20)), 2), KeyValue(Windowed("b", Window(10, 20)), 3)]
    sessions = catalog.create_store("visits", "session", "string", "long", retention_ms=100_000)
    sessions.commit(sessions.stage(
        pa.array(["u"]), pa.array([7]),
        {"session_start": pa.array([5], pa.int64()), "session_end": pa.array([9], pa.int64())},
    ))
    found = _ask(catalog, WindowRangeQuery.with_key("u"), store="visits").get_partition_results()[0]
    assert list(found.get_result()) == [KeyValue(Windowed("u", Window(5, 9)), 7)]


def test_state_query_result_semantics() -> None:
    result = StateQueryResult()
    assert result.get_only_partition_result() is None and result.get_position() == Position.empty()
    result.add_result(1, QueryResult.for_failure(FailureReason.NOT_PRESENT, "gone"))
    result.add_result(0, QueryResult.for_result(None))
    assert result.get_only_partition_result() is None  # failures and None results are skipped
    result.add_result(2, QueryResult.for_result("x"))
    assert result.get_only_partition_result().get_result() == "x"  # type: ignore[union-attr]
    assert list(result.get_partition_results()) == [0, 1, 2]
