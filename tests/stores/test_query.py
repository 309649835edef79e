"""IQv2 at store level: query objects, Position algebra, and every query on every store kind."""

from __future__ import annotations

import datetime as dt
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.errors import CorruptDataError, InvalidOptionError
from stores.key_value.store import KeyValueStore
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
    ReadOnlyRecord,
    ResultOrder,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    UnsupportedQueryError,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
    absent_result,
    is_permitted,
    query,
    store_family,
)
from stores.records import (
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
    Windowed,
)
from stores.versioned.store import VersionedKeyValueStore

HEADERS = (("h", b"1"), ("h", None))


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


TIMESTAMPED = _module("stores.timestamped.store")
WINDOW = _module("stores.window.store")
SESSION = _module("stores.session.store")


# -- Position and PositionBound -----------------------------------------------------------------


def test_position_components_are_monotonic_and_merge_keeps_the_larger_offset() -> None:
    position = Position.empty()
    assert position.is_empty() and position.get_topics() == frozenset()
    assert position.with_component("t", 0, 5) is position
    position.with_component("t", 0, 3).with_component("t", 1, 7).with_component("u", 0, 1)
    assert position.get_partition_positions("t") == {0: 5, 1: 7}
    assert position.get_topics() == {"t", "u"}
    assert position.get_partition_positions("missing") == {}
    other = Position.from_map({"t": {0: 9}, "v": {2: 2}})
    assert position.merge(other) is position and position.merge(None) is position
    assert position == Position.from_map({"t": {0: 9, 1: 7}, "u": {0: 1}, "v": {2: 2}})


def test_position_copies_share_nothing_and_positions_are_unhashable() -> None:
    source = {"t": {0: 1}}
    position = Position.from_map(source)
    source["t"][0] = 99
    copy = position.copy()
    copy.with_component("t", 0, 50)
    position.get_partition_positions("t")[0] = 77
    assert position.get_partition_positions("t") == {0: 1}
    assert copy != position and copy == Position.from_map({"t": {0: 50}})
    assert Position.from_map({"t": {}}) != Position.empty()
    with pytest.raises(TypeError):
        hash(position)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [(("t", "0", 1), "partition"), (("t", 0, 1.5), "offset"), ((1, 0, 1), "topic")],
)
def test_position_refuses_bad_components(args: tuple[Any, ...], pattern: str) -> None:
    with pytest.raises(InvalidOptionError, match=pattern):
        Position.empty().with_component(*args)


def test_position_bound_unbounded_at_and_equality() -> None:
    assert PositionBound.unbounded().is_unbounded()
    assert PositionBound.unbounded().position() == Position.empty()
    assert PositionBound.at(Position.empty()).is_unbounded()
    given_position = Position.from_map({"t": {0: 3}})
    bound = PositionBound.at(given_position)
    given_position.with_component("t", 0, 10)  # the bound took a copy
    assert not bound.is_unbounded()
    assert bound.position() == Position.from_map({"t": {0: 3}})
    assert bound == PositionBound.at(Position.from_map({"t": {0: 3}}))
    assert bound != PositionBound.unbounded()
    with pytest.raises(InvalidOptionError):
        PositionBound.at({"t": {0: 3}})  # type: ignore[arg-type]


def test_is_permitted_compares_each_bounded_partition() -> None:
    bound = PositionBound.at(Position.from_map({"t": {0: 5, 1: 9}, "u": {0: 1}}))
    seen = Position.from_map({"t": {0: 5, 1: 2}, "u": {0: 1}})
    # Kafka compares only the store's own partition of each topic.
    assert is_permitted(seen, bound, partition=0)
    assert not is_permitted(seen, bound, partition=1)
    assert is_permitted(seen, bound, partition=2)  # not bounded for partition 2
    # Without a partition, every bounded component must be reached.
    assert not is_permitted(seen, bound)
    assert is_permitted(Position.from_map({"t": {0: 6, 1: 9}, "u": {0: 4}}), bound)
    assert not is_permitted(Position.from_map({"t": {1: 9}}), bound, partition=0)
    assert is_permitted(Position.empty(), PositionBound.unbounded(), partition=0)


# -- QueryResult and query objects --------------------------------------------------------------


def test_query_result_accessors_refuse_the_wrong_side() -> None:
    ok = QueryResult.for_result(None)
    assert ok.is_success() and not ok.is_failure() and ok.get_result() is None
    with pytest.raises(QueryError, match="did not fail"):
        ok.get_failure_reason()
    with pytest.raises(QueryError, match="did not fail"):
        ok.get_failure_message()
    failed = QueryResult.for_failure(FailureReason.STORE_EXCEPTION, "boom")
    assert failed.is_failure() and failed.get_failure_message() == "boom"
    with pytest.raises(QueryError, match=r"Cannot get result for failed query\. Failure is STORE_EXCEPTION: boom"):
        failed.get_result()
    assert {r.name for r in FailureReason} == {
        "UNKNOWN_QUERY_TYPE", "NOT_ACTIVE", "NOT_UP_TO_BOUND", "NOT_PRESENT", "DOES_NOT_EXIST",
        "STORE_EXCEPTION",
    }


def test_query_builders_are_immutable_and_have_kafkas_accessors() -> None:
    key = KeyQuery.with_key(b"k")
    assert key.get_key() == b"k" and not key.is_skip_cache() and key.skip_cache().is_skip_cache()
    assert not key.is_skip_cache()
    ranged = RangeQuery.with_range(b"a", b"c")
    assert (ranged.get_lower_bound(), ranged.get_upper_bound()) == (b"a", b"c")
    assert ranged.result_order() is ResultOrder.ANY
    assert ranged.with_descending_keys().result_order() is ResultOrder.DESCENDING
    assert ranged.with_descending_keys().with_ascending_keys().result_order() is ResultOrder.ASCENDING
    assert RangeQuery.with_lower_bound(b"a").get_upper_bound() is None
    assert RangeQuery.with_upper_bound(b"z").get_lower_bound() is None
    assert RangeQuery.with_no_bounds().get_lower_bound() is None
    stamped = TimestampedRangeQuery.with_range(b"a", None)
    assert (stamped.lower_bound(), stamped.upper_bound()) == (b"a", None)
    assert TimestampedKeyQuery.with_key(b"k").key() == b"k"
    versioned = VersionedKeyQuery.with_key(b"k")
    assert versioned.as_of_timestamp() is None and versioned.as_of(5).as_of_timestamp() == 5
    multi = MultiVersionedKeyQuery.with_key(b"k")
    assert multi.from_time() is None and multi.to_time() is None
    bounded = multi.from_time(3).to_time(9).with_ascending_timestamps()
    assert (bounded.from_time(), bounded.to_time(), bounded.key()) == (3, 9, b"k")
    assert bounded.result_order() is ResultOrder.ASCENDING
    assert bounded.from_time(None).from_time() is None
    assert multi.with_descending_timestamps().result_order() is ResultOrder.DESCENDING
    window = WindowKeyQuery.with_key_and_window_start_range(b"k", 1, 2)
    assert (window.get_key(), window.get_time_from(), window.get_time_to()) == (b"k", 1, 2)
    by_key = WindowRangeQuery.with_key(b"k")
    assert (by_key.get_key(), by_key.get_time_from(), by_key.get_time_to()) == (b"k", None, None)
    by_time = WindowRangeQuery.with_window_start_range(1, 2)
    assert (by_time.get_key(), by_time.get_time_from(), by_time.get_time_to()) == (None, 1, 2)
    headed = TimestampedWindowRangeWithHeadersQuery.with_window_start_range(1, 2)
    assert (headed.key(), headed.time_from(), headed.time_to()) == (None, 1, 2)
    headed_key = TimestampedWindowKeyWithHeadersQuery.with_key_and_window_start_range(b"k", 1, 2)
    assert (headed_key.key(), headed_key.time_from(), headed_key.time_to()) == (b"k", 1, 2)
    assert TimestampedKeyWithHeadersQuery.with_key(b"k").skip_cache().is_skip_cache()
    assert TimestampedRangeWithHeadersQuery.with_no_bounds().result_order() is ResultOrder.ANY


def test_query_times_take_epoch_ms_or_aware_datetimes() -> None:
    aware = dt.datetime(1970, 1, 1, 0, 0, 1, 500_000, tzinfo=dt.timezone.utc)
    assert VersionedKeyQuery.with_key(b"k").as_of(aware).as_of_timestamp() == 1500
    with pytest.raises(InvalidOptionError, match="naive datetime"):
        VersionedKeyQuery.with_key(b"k").as_of(dt.datetime(2024, 1, 1))
    with pytest.raises(InvalidOptionError, match="time_from"):
        WindowKeyQuery.with_key_and_window_start_range(b"k", "0", 1)
    with pytest.raises(InvalidOptionError, match="null"):
        VersionedKeyQuery.with_key(b"k").as_of(None)


@pytest.mark.parametrize(
    "build",
    [KeyQuery.with_key, TimestampedKeyQuery.with_key, VersionedKeyQuery.with_key,
     MultiVersionedKeyQuery.with_key, WindowRangeQuery.with_key,
     TimestampedKeyWithHeadersQuery.with_key],
)
def test_a_null_key_is_refused(build: Callable[[Any], Any]) -> None:
    with pytest.raises(InvalidOptionError, match="(?i)null"):
        build(None)


# -- stores ---------------------------------------------------------------------------------------

ROWS = {b"a": b"1", b"b": b"2", b"c": b"3", b"d": b"4"}


def _kv(path: Path) -> Any:
    store = KeyValueStore(path)
    store.put_all(ROWS.items())
    return store


def _ts(path: Path) -> Any:
    store = TIMESTAMPED.TimestampedKeyValueStore(path)
    store.put_all((k, ValueAndTimestamp(v, 100 + i)) for i, (k, v) in enumerate(ROWS.items()))
    return store


def _ts_headers(path: Path) -> Any:
    store = TIMESTAMPED.TimestampedKeyValueStoreWithHeaders(path)
    store.put_all(
        (k, ValueTimestampHeaders(v, 100 + i, HEADERS)) for i, (k, v) in enumerate(ROWS.items())
    )
    return store


def _versioned(path: Path) -> Any:
    store = VersionedKeyValueStore(path, history_retention_ms=10_000)
    for key, value in ROWS.items():
        store.put(key, value, 10)
        store.put(key, value + b"'", 20)
    return store


def _window(cls_name: str, wrap: Callable[[bytes, int], Any]) -> Callable[[Path], Any]:
    def make(path: Path) -> Any:
        store = getattr(WINDOW, cls_name)(path, retention_ms=100_000, window_size_ms=10)
        for start in (0, 10, 20):
            for key, value in ROWS.items():
                store.put(key, wrap(value, start + 1), start)
        return store

    return make


def _session(cls_name: str, wrap: Callable[[bytes], Any]) -> Callable[[Path], Any]:
    def make(path: Path) -> Any:
        store = getattr(SESSION, cls_name)(path, retention_ms=100_000)
        for key, value in ROWS.items():
            store.put(key, 0, 5, wrap(value))
            store.put(key, 20, 30, wrap(value + b"+"))
        return store

    return make


FACTORIES: dict[str, Callable[[Path], Any]] = {"kv": _kv, "versioned": _versioned}
if TIMESTAMPED is not None:
    FACTORIES |= {"ts_kv": _ts, "ts_kv_headers": _ts_headers}
if WINDOW is not None:
    FACTORIES |= {
        "window": _window("WindowStore", lambda v, t: v),
        "ts_window": _window("TimestampedWindowStore", ValueAndTimestamp),
        "window_headers": _window("WindowStoreWithHeaders", lambda v, t: ValueAndHeaders(v, HEADERS)),
        "ts_window_headers": _window(
            "TimestampedWindowStoreWithHeaders", lambda v, t: ValueTimestampHeaders(v, t, HEADERS)
        ),
    }
if SESSION is not None:
    FACTORIES |= {
        "session": _session("SessionStore", lambda v: v),
        "session_headers": _session("SessionStoreWithHeaders", lambda v: ValueAndHeaders(v, HEADERS)),
    }


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened = FACTORIES[request.param](tmp_path / "db")
    yield opened
    opened.close()


ALL_QUERIES = {
    "KeyQuery": KeyQuery.with_key(b"a"),
    "RangeQuery": RangeQuery.with_no_bounds(),
    "TimestampedKeyQuery": TimestampedKeyQuery.with_key(b"a"),
    "TimestampedRangeQuery": TimestampedRangeQuery.with_no_bounds(),
    "TimestampedKeyWithHeadersQuery": TimestampedKeyWithHeadersQuery.with_key(b"a"),
    "TimestampedRangeWithHeadersQuery": TimestampedRangeWithHeadersQuery.with_no_bounds(),
    "VersionedKeyQuery": VersionedKeyQuery.with_key(b"a"),
    "MultiVersionedKeyQuery": MultiVersionedKeyQuery.with_key(b"a"),
    "WindowKeyQuery": WindowKeyQuery.with_key_and_window_start_range(b"a", 0, 100),
    "WindowRangeQuery.window": WindowRangeQuery.with_window_start_range(0, 100),
    "WindowRangeQuery.key": WindowRangeQuery.with_key(b"a"),
    "TimestampedWindowKeyWithHeadersQuery":
        TimestampedWindowKeyWithHeadersQuery.with_key_and_window_start_range(b"a", 0, 100),
    "TimestampedWindowRangeWithHeadersQuery.window":
        TimestampedWindowRangeWithHeadersQuery.with_window_start_range(0, 100),
    "TimestampedWindowRangeWithHeadersQuery.key": TimestampedWindowRangeWithHeadersQuery.with_key(b"a"),
}
_KV = {"KeyQuery", "RangeQuery"}
_TS = _KV | {"TimestampedKeyQuery", "TimestampedRangeQuery"}
_WINDOW = {"WindowKeyQuery", "WindowRangeQuery.window"}
#: What each store kind answers, written from Kafka Streams' Metered*Store query handlers and
#: checked against its stores (tests/kafka/test_queries_kafka.py): 4.3.1's for the stores without
#: headers; 4.4.0's for the KIP-1271 header-aware ones, which 4.3.1 refused (its RocksDB*With-
#: Headers stores overrode query() with forUnknownQueryType) and 4.4 serves (KAFKA-20703), with
#: KIP-1356's header queries (MeteredTimestampedKeyValueStoreWithHeaders, MeteredTimestamped-
#: WindowStoreWithHeaders, MeteredSessionStoreWithHeaders). window_headers (values with headers,
#: no timestamp) has no Kafka store: plain values, no records.
ANSWERS: dict[str, set[str]] = {
    "kv": _KV,
    "ts_kv": _TS,
    "ts_kv_headers": _TS | {"TimestampedKeyWithHeadersQuery", "TimestampedRangeWithHeadersQuery"},
    "versioned": {"VersionedKeyQuery", "MultiVersionedKeyQuery"},
    "window": _WINDOW,
    "ts_window": _WINDOW,
    "window_headers": _WINDOW,
    "ts_window_headers": _WINDOW | {
        "TimestampedWindowKeyWithHeadersQuery", "TimestampedWindowRangeWithHeadersQuery.window"
    },
    "session": {"WindowRangeQuery.key"},
    "session_headers": {"WindowRangeQuery.key", "TimestampedWindowRangeWithHeadersQuery.key"},
}


@pytest.mark.parametrize("name", sorted(ALL_QUERIES))
def test_every_store_answers_exactly_kafkas_query_types(store: Any, name: str) -> None:
    family = store_family(store)
    assert family is not None
    q = ALL_QUERIES[name]
    if family == "versioned" and name in ("KeyQuery", "RangeQuery"):
        # Kafka's sentence, then what to ask instead.
        with pytest.raises(
            UnsupportedQueryError, match=f"do not support {name} queries.*VersionedKeyQuery"
        ):
            query(store, q)
        return
    result = query(store, q)
    if name in ANSWERS[family]:
        assert result.is_success(), result
        answer = result.get_result()
        assert answer is not None
        if isinstance(answer, Iterator):
            assert list(answer)
    else:
        assert result.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        assert type(store).__name__ in result.get_failure_message()
    assert result.get_position() == Position.empty()


# -- key-value results ----------------------------------------------------------------------------

RANGES = [
    (RangeQuery.with_no_bounds(), [b"a", b"b", b"c", b"d"]),
    (RangeQuery.with_no_bounds().with_descending_keys(), [b"d", b"c", b"b", b"a"]),
    (RangeQuery.with_range(b"b", b"c"), [b"b", b"c"]),
    (RangeQuery.with_range(b"b", b"c").with_descending_keys(), [b"c", b"b"]),
    (RangeQuery.with_range(b"b", b"c").with_ascending_keys(), [b"b", b"c"]),
    (RangeQuery.with_lower_bound(b"c"), [b"c", b"d"]),
    (RangeQuery.with_upper_bound(b"b").with_descending_keys(), [b"b", b"a"]),
    (RangeQuery.with_range(b"c", b"b"), []),
    (RangeQuery.with_range(b"bb", b"zz"), [b"c", b"d"]),
]


@pytest.mark.parametrize(("q", "keys"), RANGES)
def test_range_queries_on_a_key_value_store(tmp_path: Path, q: RangeQuery, keys: list[bytes]) -> None:
    with _kv(tmp_path / "kv") as store:
        got = list(query(store, q).get_result())
    assert got == [KeyValue(k, ROWS[k]) for k in keys]
    assert all(isinstance(kv, KeyValue) for kv in got)


def test_key_query_on_a_key_value_store(tmp_path: Path) -> None:
    with _kv(tmp_path / "kv") as store:
        assert query(store, KeyQuery.with_key(b"b")).get_result() == b"2"
        missing = query(store, KeyQuery.with_key(b"zz"))
        assert missing.is_success() and missing.get_result() is None


@given(
    keys=st.dictionaries(st.binary(max_size=3), st.binary(max_size=3), max_size=12),
    lower=st.none() | st.binary(max_size=3),
    upper=st.none() | st.binary(max_size=3),
    descending=st.booleans(),
)
@settings(max_examples=40, deadline=None)
def test_range_query_matches_a_sorted_dict_model(
    tmp_path_factory: pytest.TempPathFactory,
    keys: dict[bytes, bytes],
    lower: bytes | None,
    upper: bytes | None,
    descending: bool,
) -> None:
    with KeyValueStore(tmp_path_factory.mktemp("model")) as store:
        store.put_all(keys.items())
        q = RangeQuery.with_range(lower, upper)
        if descending:
            q = q.with_descending_keys()
        got = list(query(store, q).get_result())
    expected = sorted(
        (k, v) for k, v in keys.items()
        if (lower is None or k >= lower) and (upper is None or k <= upper)
    )
    if descending:
        expected.reverse()
    if lower is not None and upper is not None and lower > upper:
        expected = []
    assert got == [KeyValue(k, v) for k, v in expected]


if TIMESTAMPED is not None:

    def test_timestamped_store_gives_plain_values_to_plain_queries(tmp_path: Path) -> None:
        with _ts(tmp_path / "ts") as store:
            assert query(store, KeyQuery.with_key(b"b")).get_result() == b"2"
            assert query(store, TimestampedKeyQuery.with_key(b"b")).get_result() == (
                ValueAndTimestamp(b"2", 101)
            )
            assert query(store, TimestampedKeyQuery.with_key(b"x")).get_result() is None
            assert list(query(store, RangeQuery.with_range(b"c", None)).get_result()) == [
                KeyValue(b"c", b"3"), KeyValue(b"d", b"4")
            ]
            descending = TimestampedRangeQuery.with_upper_bound(b"b").with_descending_keys()
            assert list(query(store, descending).get_result()) == [
                KeyValue(b"b", ValueAndTimestamp(b"2", 101)),
                KeyValue(b"a", ValueAndTimestamp(b"1", 100)),
            ]

    def test_header_store_serves_records_and_header_stripped_values(tmp_path: Path) -> None:
        # Kafka 4.4.0's MeteredTimestampedKeyValueStoreWithHeaders (KAFKA-20703, KIP-1356).
        with _ts_headers(tmp_path / "th") as store:
            assert query(store, KeyQuery.with_key(b"a")).get_result() == b"1"
            assert query(store, TimestampedKeyQuery.with_key(b"a")).get_result() == (
                ValueAndTimestamp(b"1", 100)
            )
            record = query(store, TimestampedKeyWithHeadersQuery.with_key(b"a")).get_result()
            assert record == ReadOnlyRecord(b"a", b"1", 100, HEADERS)
            assert query(store, TimestampedKeyWithHeadersQuery.with_key(b"q")).get_result() is None
            records = query(
                store, TimestampedRangeWithHeadersQuery.with_range(b"b", b"c").with_descending_keys()
            ).get_result()
            assert list(records) == [
                ReadOnlyRecord(b"c", b"3", 102, HEADERS), ReadOnlyRecord(b"b", b"2", 101, HEADERS)
            ]
            assert list(query(store, TimestampedRangeQuery.with_range(b"d", None)).get_result()) == [
                KeyValue(b"d", ValueAndTimestamp(b"4", 103))
            ]

    def test_header_store_checks_the_bound_as_the_basic_layer_does(tmp_path: Path) -> None:
        # 4.4's header-aware RocksDB store no longer overrides query(): the raw KeyQuery /
        # RangeQuery the metered store sends it meets StoreQueryUtils' position check.
        with _ts_headers(tmp_path / "th") as store:
            for q in (KeyQuery.with_key(b"a"), TimestampedKeyWithHeadersQuery.with_key(b"a"),
                      TimestampedRangeWithHeadersQuery.with_no_bounds()):  # fmt: skip
                failed = query(store, q, BEHIND, partition=0)
                assert failed.get_failure_reason() is FailureReason.NOT_UP_TO_BOUND

    def test_a_negative_stored_timestamp_cannot_become_a_record(tmp_path: Path) -> None:
        # runTimestampedKeyWithHeadersQuery: a STORE_EXCEPTION result; the record iterator's
        # next(): a StreamsException (ours: CorruptDataError).
        with TIMESTAMPED.TimestampedKeyValueStoreWithHeaders(tmp_path / "neg") as store:
            store.put(b"k", ValueTimestampHeaders(b"v", -1, ()))
            failed = query(store, TimestampedKeyWithHeadersQuery.with_key(b"k"))
            assert failed.get_failure_reason() is FailureReason.STORE_EXCEPTION
            assert "negative timestamp (-1)" in failed.get_failure_message()
            iterator = query(store, TimestampedRangeWithHeadersQuery.with_no_bounds()).get_result()
            with pytest.raises(CorruptDataError, match=r"timestamp \(-1\) is negative"):
                next(iterator)

    def test_header_adapters_answer_as_the_store_they_serve(tmp_path: Path) -> None:
        # Kafka's TimestampedToHeadersStoreAdapter / PlainToHeadersStoreAdapter pass KeyQuery and
        # RangeQuery to the older store; MeteredTimestampedKeyValueStoreWithHeaders strips the
        # headers (timestamp -1 from a plain store) or, for KIP-1356's queries (4.4), makes
        # records with empty headers; a plain store's -1 cannot become a record.
        from stores.adapters import PlainToHeadersStoreAdapter, TimestampedToHeadersStoreAdapter

        with TimestampedToHeadersStoreAdapter(_ts(tmp_path / "ts")) as adapter:
            assert query(adapter, KeyQuery.with_key(b"b")).get_result() == b"2"
            assert query(adapter, TimestampedKeyQuery.with_key(b"b")).get_result() == (
                ValueAndTimestamp(b"2", 101)
            )
            assert list(query(adapter, TimestampedRangeQuery.with_lower_bound(b"d")).get_result()) == [
                KeyValue(b"d", ValueAndTimestamp(b"4", 103))
            ]
            record = query(adapter, TimestampedKeyWithHeadersQuery.with_key(b"b")).get_result()
            assert record == ReadOnlyRecord(b"b", b"2", 101, ())
        with PlainToHeadersStoreAdapter(_kv(tmp_path / "kv")) as adapter:
            assert query(adapter, TimestampedKeyQuery.with_key(b"a")).get_result() == (
                ValueAndTimestamp(b"1", -1)
            )
            failed = query(adapter, TimestampedKeyWithHeadersQuery.with_key(b"a"))
            assert failed.get_failure_reason() is FailureReason.STORE_EXCEPTION
            assert list(query(adapter, RangeQuery.with_upper_bound(b"a")).get_result()) == [
                KeyValue(b"a", b"1")
            ]


# -- versioned results ----------------------------------------------------------------------------


def test_versioned_key_query_latest_and_as_of(tmp_path: Path) -> None:
    with _versioned(tmp_path / "v") as store:
        latest = query(store, VersionedKeyQuery.with_key(b"a")).get_result()
        assert latest == VersionedRecord(b"1'", 20, None)
        assert query(store, VersionedKeyQuery.with_key(b"a").as_of(15)).get_result() == (
            VersionedRecord(b"1", 10, 20)
        )
        assert query(store, VersionedKeyQuery.with_key(b"a").as_of(9)).get_result() is None
        assert query(store, VersionedKeyQuery.with_key(b"zz")).get_result() is None


def test_multi_versioned_key_query_orders_and_bounds(tmp_path: Path) -> None:
    with _versioned(tmp_path / "v") as store:
        store.put(b"a", None, 30)
        store.put(b"a", b"again", 40)
        base = MultiVersionedKeyQuery.with_key(b"a")
        newest_first = [r.timestamp for r in query(store, base).get_result()]
        assert newest_first == [40, 20, 10]
        descending = [r.timestamp for r in query(store, base.with_descending_timestamps()).get_result()]
        assert descending == [40, 20, 10]
        ascending = list(query(store, base.with_ascending_timestamps()).get_result())
        assert ascending == [
            VersionedRecord(b"1", 10, 20), VersionedRecord(b"1'", 20, 30),
            VersionedRecord(b"again", 40, None),
        ]
        window = base.from_time(15).to_time(35).with_ascending_timestamps()
        assert [r.timestamp for r in query(store, window).get_result()] == [10, 20]
        assert list(query(store, base.to_time(5)).get_result()) == []
        with pytest.raises(InvalidOptionError, match="fromTime"):
            query(store, base.from_time(9).to_time(3))


# -- bounds, failures, execution info ----------------------------------------------------------

BEHIND = PositionBound.at(Position.from_map({"t": {0: 10}}))
AT = Position.from_map({"t": {0: 10}})


def test_position_bound_not_reached_fails_and_reached_succeeds(tmp_path: Path) -> None:
    with _kv(tmp_path / "kv") as store:
        behind = query(store, KeyQuery.with_key(b"a"), BEHIND, position=Position.from_map({"t": {0: 9}}), partition=0)
        assert behind.get_failure_reason() is FailureReason.NOT_UP_TO_BOUND
        assert "partition 0" in behind.get_failure_message()
        assert behind.get_position() == Position.from_map({"t": {0: 9}})
        ok = query(store, KeyQuery.with_key(b"a"), BEHIND, position=AT, partition=0)
        assert ok.get_result() == b"1" and ok.get_position() == AT
        assert ok.get_position() is not AT  # a copy, as Kafka's stores hand out
        other_partition = query(store, KeyQuery.with_key(b"a"), BEHIND, position=Position.empty(), partition=1)
        assert other_partition.is_success()


def test_unknown_types_fail_before_the_bound_and_basic_types_after_it(tmp_path: Path) -> None:
    # StoreQueryUtils.handleBasicQueries: an unknown class fails at once, a basic one is checked
    # against the bound first.
    with _kv(tmp_path / "kv") as store:
        # TimestampedKeyQuery is unknown to the basic layer: UNKNOWN_QUERY_TYPE at once.
        unknown = query(store, TimestampedKeyQuery.with_key(b"a"), BEHIND, partition=0)
        assert unknown.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
        # WindowKeyQuery is a basic type: Kafka checks the bound before the store type.
        basic = query(store, WindowKeyQuery.with_key_and_window_start_range(b"a", 0, 1), BEHIND, partition=0)
        assert basic.get_failure_reason() is FailureReason.NOT_UP_TO_BOUND
        reached = query(store, WindowKeyQuery.with_key_and_window_start_range(b"a", 0, 1), BEHIND,
                        position=AT, partition=0)
        assert reached.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE


def test_versioned_key_and_range_queries_raise_even_out_of_bound(tmp_path: Path) -> None:
    with _versioned(tmp_path / "v") as store:
        with pytest.raises(UnsupportedQueryError, match=r"\[UNSUPPORTED_QUERY\].*KeyQuery"):
            query(store, KeyQuery.with_key(b"a"), BEHIND, partition=0)


def test_execution_info_only_when_asked(tmp_path: Path) -> None:
    with _kv(tmp_path / "kv") as store:
        assert query(store, KeyQuery.with_key(b"a")).get_execution_info() == []
        info = query(store, KeyQuery.with_key(b"a"), collect_execution_info=True).get_execution_info()
        assert len(info) == 1 and info[0].startswith("Handled in class stores.key_value.store.KeyValueStore in ")


def test_a_failing_store_gives_store_exception(tmp_path: Path) -> None:
    store = _versioned(tmp_path / "v")
    store.close()
    failed = query(store, VersionedKeyQuery.with_key(b"a"))
    assert failed.get_failure_reason() is FailureReason.STORE_EXCEPTION
    assert "StoreClosedError" in failed.get_failure_message()


def test_store_level_keys_must_be_bytes(tmp_path: Path) -> None:
    with _kv(tmp_path / "kv") as store:
        with pytest.raises(InvalidOptionError, match="bytes keys"):
            query(store, KeyQuery.with_key("a"))
        with pytest.raises(InvalidOptionError, match="bytes keys"):
            query(store, RangeQuery.with_range(b"a", 3))


def test_an_unknown_store_object_answers_nothing() -> None:
    result = query(object(), KeyQuery.with_key(b"a"))
    assert result.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE


@pytest.mark.parametrize("name", sorted(ALL_QUERIES))
def test_absent_result_is_what_a_store_without_the_key_answers(
    tmp_path: Path, store: Any, name: str
) -> None:
    q = ALL_QUERIES[name].map_keys(lambda key: b"\xffnot-there")
    if store_family(store) == "versioned" and name in ("KeyQuery", "RangeQuery"):
        with pytest.raises(UnsupportedQueryError):
            absent_result(type(store), q)
        return
    position = Position.from_map({"t": {0: 1}})
    for bound in (PositionBound.unbounded(), BEHIND):
        real = query(store, q, bound, position=position, partition=0)
        absent = absent_result(type(store), q, bound, position=position, partition=0)
        assert real.is_success() == absent.is_success()
        assert absent.get_position() == position
        if real.is_failure():
            assert real.get_failure_reason() is absent.get_failure_reason()
        elif q.routing_key() is not None:
            answer = real.get_result()
            expected = list(answer) if isinstance(answer, Iterator) else answer
            got = absent.get_result()
            assert (list(got) if isinstance(got, Iterator) else got) == expected


# -- windows and sessions (run once their stores exist) -----------------------------------------

if WINDOW is not None:

    @pytest.mark.parametrize("family", ["window", "ts_window", "window_headers", "ts_window_headers"])
    def test_window_queries(tmp_path: Path, family: str) -> None:
        # ts_window_headers: Kafka 4.4.0's MeteredTimestampedWindowStoreWithHeaders gives
        # ValueAndTimestamp (isUnderlyingStoreTimestamped); window_headers keeps no timestamp.
        store = FACTORIES[family](tmp_path / family)
        with store:
            by_key = list(query(store, WindowKeyQuery.with_key_and_window_start_range(b"b", 5, 20)).get_result())
            make: Callable[[bytes, int], Any] = (
                ValueAndTimestamp if family.startswith("ts_") else lambda v, t: v
            )
            assert by_key == [KeyValue(10, make(b"2", 11)), KeyValue(20, make(b"2", 21))]
            by_time = list(query(store, WindowRangeQuery.with_window_start_range(10, 10)).get_result())
            assert sorted(by_time) == sorted(
                KeyValue(Windowed(k, Window(10, 20)), make(v, 11)) for k, v in ROWS.items()
            )
            # MeteredWindowStore refuses the key form itself, before the bound is looked at.
            wrong = query(store, WindowRangeQuery.with_key(b"a"), BEHIND, partition=0)
            assert wrong.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
            assert "withWindowStartRange" in wrong.get_failure_message()

    def test_header_window_records(tmp_path: Path) -> None:
        # Kafka 4.4.0's MeteredTimestampedWindowStoreWithHeaders (KIP-1356): records keyed by
        # Windowed(key, [start, start + size)); the key form of the range query is refused by the
        # metered store itself, before the bound.
        with FACTORIES["ts_window_headers"](tmp_path / "twh") as store:
            records = query(
                store, TimestampedWindowKeyWithHeadersQuery.with_key_and_window_start_range(b"c", 0, 10)
            ).get_result()
            assert list(records) == [
                ReadOnlyRecord(Windowed(b"c", Window(0, 10)), b"3", 1, HEADERS),
                ReadOnlyRecord(Windowed(b"c", Window(10, 20)), b"3", 11, HEADERS),
            ]
            ranged = query(
                store, TimestampedWindowRangeWithHeadersQuery.with_window_start_range(20, 20)
            ).get_result()
            assert {r.key.key for r in ranged} == set(ROWS)
            wrong = query(store, TimestampedWindowRangeWithHeadersQuery.with_key(b"a"), BEHIND, partition=0)
            assert wrong.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
            assert "TimestampedWindowRangeWithHeadersQuery.withWindowStartRange" in (
                wrong.get_failure_message()
            )

    def test_header_window_adapters_answer_as_kafkas_metered_store(tmp_path: Path) -> None:
        # MeteredTimestampedWindowStoreWithHeaders.isUnderlyingStoreTimestamped: over
        # TimestampedToHeadersWindowStoreAdapter ValueAndTimestamp, over
        # PlainToHeadersWindowStoreAdapter the plain value.
        from stores.adapters import (
            PlainToHeadersWindowStoreAdapter,
            TimestampedToHeadersWindowStoreAdapter,
        )

        key_query = WindowKeyQuery.with_key_and_window_start_range(b"b", 5, 10)
        stamped = TimestampedToHeadersWindowStoreAdapter(FACTORIES["ts_window"](tmp_path / "t"))
        with stamped:
            assert list(query(stamped, key_query).get_result()) == [
                KeyValue(10, ValueAndTimestamp(b"2", 11))
            ]
        with PlainToHeadersWindowStoreAdapter(FACTORIES["window"](tmp_path / "p")) as plain:
            assert list(query(plain, key_query).get_result()) == [KeyValue(10, b"2")]
            by_time = query(plain, WindowRangeQuery.with_window_start_range(20, 20)).get_result()
            assert KeyValue(Windowed(b"a", Window(20, 30)), b"1") in list(by_time)

if SESSION is not None:

    def test_session_queries(tmp_path: Path) -> None:
        with FACTORIES["session"](tmp_path / "session") as store:
            sessions = list(query(store, WindowRangeQuery.with_key(b"d")).get_result())
            assert sessions == [
                KeyValue(Windowed(b"d", Window(0, 5)), b"4"),
                KeyValue(Windowed(b"d", Window(20, 30)), b"4+"),
            ]
            # MeteredSessionStore refuses the start-range form itself, before the bound.
            wrong = query(store, WindowRangeQuery.with_window_start_range(0, 10), BEHIND, partition=0)
            assert wrong.get_failure_reason() is FailureReason.UNKNOWN_QUERY_TYPE
            assert "withKey" in wrong.get_failure_message()

    def test_header_session_store_answers_as_kafka_4_4(tmp_path: Path) -> None:
        # Kafka 4.4.0's MeteredSessionStoreWithHeaders: header-stripped aggregates for
        # WindowRangeQuery.withKey, records stamped with the session end for KIP-1356's query;
        # a start range is refused by the metered store itself, before the bound.
        with FACTORIES["session_headers"](tmp_path / "sh") as store:
            sessions = list(query(store, WindowRangeQuery.with_key(b"d")).get_result())
            assert sessions == [
                KeyValue(Windowed(b"d", Window(0, 5)), b"4"),
                KeyValue(Windowed(b"d", Window(20, 30)), b"4+"),
            ]
            records = query(store, TimestampedWindowRangeWithHeadersQuery.with_key(b"a")).get_result()
            assert list(records) == [
                ReadOnlyRecord(Windowed(b"a", Window(0, 5)), b"1", 5, HEADERS),
                ReadOnlyRecord(Windowed(b"a", Window(20, 30)), b"1+", 30, HEADERS),
            ]
            behind = query(store, WindowRangeQuery.with_key(b"d"), BEHIND, partition=0)
            assert behind.get_failure_reason() is FailureReason.NOT_UP_TO_BOUND
            wrong = query(store, WindowRangeQuery.with_window_start_range(0, 10), BEHIND, partition=0)
            assert "SessionStores only support WindowRangeQuery.withKey" in wrong.get_failure_message()
            wrong = query(store, TimestampedWindowRangeWithHeadersQuery.with_window_start_range(0, 10))
            assert "SessionStores only support TimestampedWindowRangeWithHeadersQuery.withKey" in (
                wrong.get_failure_message()
            )


def test_key_fields_by_role() -> None:
    assert KeyQuery.with_key(b"k").key_fields() == {"key": b"k"}
    assert RangeQuery.with_range(b"a", None).key_fields() == {"lower": b"a", "upper": None}
    assert WindowRangeQuery.with_window_start_range(1, 2).key_fields() == {"key": None}
    assert KeyQuery.with_key(b"k").map_keys(bytes.upper).key_fields() == {"key": b"K"}
