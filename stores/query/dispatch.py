"""The store-level :func:`query`: which store family answers which query, and how.

The table in :mod:`stores.query` lists what each store kind answers; the handlers here mirror
the metered stores' query handlers and ``StoreQueryUtils.handleBasicQueries``: Kafka Streams
4.3.1's for the stores without headers, 4.4.0's for the KIP-1271 header-aware ones (4.3.1's
``RocksDB*WithHeaders`` stores refused every query; 4.4 serves them, KAFKA-20703, and adds
KIP-1356's header queries, answered by ``MeteredTimestampedKeyValueStoreWithHeaders``,
``MeteredTimestampedWindowStoreWithHeaders`` and ``MeteredSessionStoreWithHeaders`` with
``ReadOnlyRecord`` results). Kafka's adapters that serve an older store as a header-aware one
(``TimestampedToHeadersStoreAdapter``, ...) pass the queries to the older store under the
header-aware metered store: ours (``stores.adapters``) are answered as the family they serve.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from stores.bytes.rocksdb import is_rocksdb_failure
from stores.checks import MAX_LONG, MIN_LONG
from stores.errors import CorruptDataError, InvalidOptionError, UnsupportedQueryError
from stores.iterators import KeyValueIterator
from stores.key_value.store import KeyValueStore
from stores.query.position import Position, PositionBound, is_permitted
from stores.query.queries import (
    KeyQuery,
    MultiVersionedKeyQuery,
    Query,
    RangeQuery,
    ResultOrder,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from stores.query.results import FailureReason, QueryResult, _class_name, _Placeholder
from stores.records import KeyValue, ReadOnlyRecord, ValueAndTimestamp
from stores.session.store import SessionStore, SessionStoreWithHeaders
from stores.timestamped.store import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders
from stores.versioned.store import VersionedKeyValueStore
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

# Store classes, most specific first (a subclass before its base), with their family names.
_STORE_CLASSES: tuple[tuple[type, str], ...] = (
    (TimestampedKeyValueStoreWithHeaders, "ts_kv_headers"),
    (TimestampedKeyValueStore, "ts_kv"),
    (VersionedKeyValueStore, "versioned"),
    (KeyValueStore, "kv"),
    (TimestampedWindowStoreWithHeaders, "ts_window_headers"),
    (WindowStoreWithHeaders, "window_headers"),
    (TimestampedWindowStore, "ts_window"),
    (WindowStore, "window"),
    (SessionStoreWithHeaders, "session_headers"),
    (SessionStore, "session"),
)

#: The key range queries (Kafka names their getters differently).
_KeyRange = RangeQuery | TimestampedRangeQuery | TimestampedRangeWithHeadersQuery
#: The window range queries: a window-start range (window stores) or a key (session stores).
_WindowRange = WindowRangeQuery | TimestampedWindowRangeWithHeadersQuery

# Query types that Kafka's basic layer (StoreQueryUtils) knows: their position bound is checked
# before the store finds out whether it can answer them.
_BASIC = (KeyQuery, RangeQuery, WindowKeyQuery, WindowRangeQuery, VersionedKeyQuery,
          MultiVersionedKeyQuery)


def store_family(store: Any) -> str | None:
    """The family name of a store object or class (``kv``, ``ts_window_headers``, ...)."""
    cls = store if isinstance(store, type) else type(store)
    served = getattr(cls, "query_family", None)
    if isinstance(served, str):
        # A format adapter (stores.adapters) answers as the store type it serves, through that
        # type's API, as Kafka's adapters sit under the metered store of the newer type.
        return served
    for candidate, family in _STORE_CLASSES:
        if issubclass(cls, candidate):
            return family
    return None


@dataclass(frozen=True)
class _Handler:
    run: Callable[[Any, Any], Any]  # (store, query) -> result, or a failed QueryResult
    single: bool  # a single value (absent: None) rather than an iterator (absent: empty)


def query(
    store: Any,
    query: Query,
    position_bound: PositionBound | None = None,
    *,
    position: Position | None = None,
    partition: int | None = None,
    collect_execution_info: bool = False,
    described_as: Query | None = None,
) -> QueryResult:
    """Run ``query`` on an open bytes store as Kafka's ``StateStore#query`` does.

    Args:
        store: an open store of this package (keys and values are bytes).
        query: a query whose keys and key bounds are bytes.
        position_bound: the position the store must have reached (default unbounded).
        position: the store's position (default empty); a copy is set on every result.
        partition: the store partition's number, to compare with the bound as Kafka does.
        collect_execution_info: record how the query was handled.
        described_as: the query to name in failure messages (the catalog's typed query, as
            Kafka's metered store names the typed one); default ``query``.

    Returns:
        The result. Iterator results are ``stores.iterators.KeyValueIterator`` objects (Kafka's
        ``KeyValueIterator``: ``has_next``, ``peek_next_key``, ``close``), lazy and valid while
        the store is open; close them when done.

    Raises:
        InvalidOptionError: a key or bound is not bytes, or (multi-versioned) from > to.
        UnsupportedQueryError: a KeyQuery or RangeQuery on a versioned store (Kafka throws).
    """
    return _answer(
        store, type(store), query, position_bound, position, partition, collect_execution_info,
        lambda handler: handler.run(store, query), described_as,
    )


def absent_result(
    store_class: type,
    query: Query,
    position_bound: PositionBound | None = None,
    *,
    position: Position | None = None,
    partition: int | None = None,
    collect_execution_info: bool = False,
    described_as: Query | None = None,
) -> QueryResult:
    """What :func:`query` returns from a store of ``store_class`` that lacks the query's key.

    The catalog answers a key query's other partitions with this, without opening them: the
    same failures (unknown type, bound not reached), else None or an empty iterator.

    Raises:
        InvalidOptionError: a key or bound is not bytes, or (multi-versioned) from > to.
        UnsupportedQueryError: a KeyQuery or RangeQuery on a versioned store (Kafka throws).
    """
    return _answer(
        _Placeholder(store_class), store_class, query, position_bound, position, partition,
        collect_execution_info,
        lambda handler: (
            None if handler.single else KeyValueIterator(iter(()), store_class.__name__)
        ),
        described_as,
    )


def _answer(
    store: Any,
    store_class: type,
    query: Query,
    position_bound: PositionBound | None,
    position: Position | None,
    partition: int | None,
    collect_execution_info: bool,
    produce: Callable[[_Handler], Any],
    described_as: Query | None,
) -> QueryResult:
    start = time.perf_counter_ns()
    shown = query if described_as is None else described_as
    bound = PositionBound.unbounded() if position_bound is None else position_bound
    here = Position.empty() if position is None else position
    _check_keys(query)
    family = store_family(store_class)
    handler = None if family is None else _HANDLERS.get((family, type(query)))
    if handler is not None:
        # Kafka's metered stores throw these before the query reaches the inner store.
        if handler.run in (_unsupported_key, _unsupported_range):
            handler.run(store, query)
        if isinstance(query, MultiVersionedKeyQuery):
            _multi_bounds(query)
    # Kafka's metered window and session stores refuse a window range query of the wrong form
    # before it reaches the inner store (so before its position bound is looked at).
    wrong = _wrong_form(store, query, family, shown)
    if wrong is not None:
        result = wrong
    elif handler is None and not isinstance(query, _BASIC):
        result = QueryResult.for_unknown_query_type(shown, store)
    elif not is_permitted(here, bound, partition):
        result = QueryResult.not_up_to_bound(here, bound, partition)
    elif handler is None:
        result = QueryResult.for_unknown_query_type(shown, store)
    else:
        try:
            answer = produce(handler)
        except InvalidOptionError:
            raise
        except Exception as exc:  # Kafka turns every store exception into the result
            if is_rocksdb_failure(exc):
                raise  # a damaged database, not a failed query: its owner repairs it
            # Kafka's parseStoreException: "<class> failed to handle query <q>:" + the trace.
            answer = QueryResult.for_failure(
                FailureReason.STORE_EXCEPTION,
                f"{_class_name(store)} failed to handle query {shown!r}:\n"
                f"{type(exc).__name__}: {exc}",
            )
        if isinstance(answer, QueryResult):
            result = answer
        else:
            result = QueryResult.for_result(_as_iterator(answer, store_class))
    if collect_execution_info:
        # Kafka's "Handled in <class> in <n>ns"; a partition answered without opening says so.
        how = "Answered for" if isinstance(store, _Placeholder) else "Handled in"
        tail = " without opening it" if isinstance(store, _Placeholder) else ""
        result.add_execution_info(
            f"{how} {_class_name(store)}{tail} in {time.perf_counter_ns() - start}ns"
        )
    result.set_position(here.copy())
    return result


def _as_iterator(answer: Any, store_class: type) -> Any:
    """A many-valued answer as Kafka's ``KeyValueIterator``; closing it closes the store's."""
    if answer is None or isinstance(answer, KeyValueIterator) or not isinstance(answer, Iterator):
        return answer
    return KeyValueIterator(_closing(answer), store_class.__name__)


def _closing(source: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from source
    finally:
        _close(source)


def _check_keys(query: Query) -> None:
    for name, value in query.key_fields().items():
        if value is not None and not isinstance(value, bytes):
            raise InvalidOptionError(
                f"a store-level query needs bytes keys; {name} is "
                f"{type(value).__name__} (typed keys are for the catalog's query)"
            )


def _wrong_form(store: Any, query: Query, family: str | None, shown: Query) -> QueryResult | None:
    """The failure Kafka's metered window and session stores give for the form of a window
    range query they do not take (``MeteredWindowStore`` / ``MeteredSessionStore`` and their
    header-aware kin, which refuse ``TimestampedWindowRangeWithHeadersQuery`` the same way),
    before the inner store or the position bound is asked."""
    if family is None or (family, type(query)) not in _HANDLERS:
        return None
    if not isinstance(query, (WindowRangeQuery, TimestampedWindowRangeWithHeadersQuery)):
        return None
    name = type(query).__name__
    key = _window_range_key(query)
    if family.startswith("session") and key is None:
        return QueryResult.for_unknown_query_type(
            shown, store, f" because SessionStores only support {name}.withKey"
        )
    if "window" in family and key is not None:
        return QueryResult.for_unknown_query_type(
            shown, store, f" because WindowStores only supports {name}.withWindowStartRange"
        )
    return None


# -- handlers -------------------------------------------------------------------------------------


def _pairs(
    entries: Iterable[Any], convert: Callable[[Any], Any] | None = None
) -> Iterator[KeyValue]:
    try:
        for key, value in entries:
            yield KeyValue(key, value if convert is None else convert(value))
    finally:
        _close(entries)


def _records(
    entries: Iterable[Any], stamp: Callable[[Any, Any], int], what: str
) -> Iterator[ReadOnlyRecord]:
    """Kafka 4.4's ``ReadOnlyRecordIterator`` of the header-aware metered stores: one record per
    entry, raising (Kafka: ``StreamsException`` from ``next()``) at an entry that cannot become
    a ``Record``: a null value (window stores) or a negative timestamp."""
    try:
        for key, value in entries:
            yield _checked_record(key, value, stamp(key, value), what)
    finally:
        _close(entries)


def _checked_record(key: Any, value: Any, when: int, what: str) -> ReadOnlyRecord:
    shown = f"key [{key.key!r}] and window [{key.window}]" if what == "window" else f"key [{key!r}]"
    if value is None and what == "window":
        raise CorruptDataError(
            f"Cannot represent the stored record for {shown} as a ReadOnlyRecord: its value is null."
        )
    if when < 0:
        raise CorruptDataError(
            f"Cannot represent the stored record for {shown} as a ReadOnlyRecord: its timestamp "
            f"({when}) is negative."
        )
    if value is None:
        return ReadOnlyRecord(key, None, when, ())
    return ReadOnlyRecord(key, value.value, when, value.headers)


def _close(entries: Any) -> None:
    close = getattr(entries, "close", None)
    if close is not None:
        close()


def _kv_range(store: Any, query: _KeyRange) -> Iterator[tuple[Any, Any]]:
    descending = query.result_order() is ResultOrder.DESCENDING
    if isinstance(query, RangeQuery):  # Kafka's getters: getLowerBound, or lowerBound (KIP-992)
        lower, upper = query.get_lower_bound(), query.get_upper_bound()
    else:
        lower, upper = query.lower_bound(), query.upper_bound()
    if lower is None and upper is None:
        return iter(store.all(reverse=descending))
    return iter(store.range(lower, upper, reverse=descending))


def _window_range_key(query: _WindowRange) -> Any:
    """The key of a window range query (set by ``with_key``; None for a start range)."""
    return query.get_key() if isinstance(query, WindowRangeQuery) else query.key()


def _window_times(query: _WindowRange) -> tuple[int | None, int | None]:
    """The window-start bounds of a window range query (None unless ``with_window_start_range``)."""
    if isinstance(query, WindowRangeQuery):
        return query.get_time_from(), query.get_time_to()
    return query.time_from(), query.time_to()


def _plain(value: Any) -> Any:
    return None if value is None else value.value


def _stamped(value: Any) -> Any:
    if value is None or isinstance(value, ValueAndTimestamp):
        return value
    return ValueAndTimestamp(value.value, value.timestamp)


def _kv_key(store: Any, query: KeyQuery) -> Any:
    return store.get(query.get_key())


def _ts_key_record(store: Any, query: TimestampedKeyWithHeadersQuery) -> Any:
    """``MeteredTimestampedKeyValueStoreWithHeaders.runTimestampedKeyWithHeadersQuery`` (4.4): a
    negative stored timestamp is a failed result, not an exception."""
    found = store.get(query.key())
    if found is None:
        return None
    if found.timestamp < 0:
        return QueryResult.for_failure(
            FailureReason.STORE_EXCEPTION,
            f"Stored record for the queried key has a negative timestamp ({found.timestamp}); "
            "cannot construct a ReadOnlyRecord.",
        )
    return ReadOnlyRecord(query.key(), found.value, found.timestamp, found.headers)


def _ts_range_records(store: Any, query: _KeyRange) -> Iterator[ReadOnlyRecord]:
    return _records(_kv_range(store, query), lambda key, value: value.timestamp, "key")


def _unsupported_key(store: Any, query: Any) -> Any:
    raise UnsupportedQueryError(
        "Versioned stores do not support KeyQuery queries at this time. Ask a versioned store "
        "with VersionedKeyQuery.with_key(key) (its latest value, or .as_of(t)), or "
        "MultiVersionedKeyQuery for a key's versions."
    )


def _unsupported_range(store: Any, query: Any) -> Any:
    raise UnsupportedQueryError(
        "Versioned stores do not support RangeQuery queries at this time. Read the store with "
        "Spark (spark.read.format('state_store'), optionally asOfTimestamp) for many keys, or "
        "ask one key with VersionedKeyQuery."
    )


def _versioned_key(store: Any, query: VersionedKeyQuery) -> Any:
    return store.get(query.key(), query.as_of_timestamp())


def _multi_bounds(query: MultiVersionedKeyQuery) -> tuple[int, int]:
    from_time, to_time = query.from_time(), query.to_time()
    lower = MIN_LONG if from_time is None else from_time
    upper = MAX_LONG if to_time is None else to_time
    if lower > upper:
        raise InvalidOptionError(
            "The `fromTime` timestamp must be smaller than the `toTime` timestamp "
            f"(from_time={lower}, to_time={upper})."
        )
    return lower, upper


def _multi_versions(store: Any, query: MultiVersionedKeyQuery) -> Iterator[Any]:
    lower, upper = _multi_bounds(query)
    ascending = query.result_order() is ResultOrder.ASCENDING
    return iter(store.versions(query.key(), lower, upper, ascending=ascending))


def _window_key(convert: Callable[[Any], Any] | None) -> Callable[[Any, Any], Any]:
    def run(store: Any, query: WindowKeyQuery) -> Any:
        entries = store.fetch(query.get_key(), query.get_time_from(), query.get_time_to())
        return _pairs(entries, convert)

    return run


def _window_range(convert: Callable[[Any], Any] | None) -> Callable[[Any, Any], Any]:
    def run(store: Any, query: WindowRangeQuery) -> Any:
        return _pairs(store.fetch_all(query.get_time_from(), query.get_time_to()), convert)

    return run


def _headers_window_value(store: Any, value: Any) -> Any:
    """A value of a ``TimestampedWindowStoreWithHeaders`` (or an adapter served as one), as
    Kafka's ``MeteredTimestampedWindowStoreWithHeaders`` gives it (``isUnderlyingStoreTimestamped``):
    the plain value over a plain window store (``PlainToHeadersWindowStoreAdapter``), else a
    ``ValueAndTimestamp``."""
    if isinstance(getattr(store, "store", None), WindowStore):
        return _plain(value)
    return _stamped(value)


def _headers_window(fetch: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def run(store: Any, query: Any) -> Any:
        return _pairs(fetch(store, query), lambda value: _headers_window_value(store, value))

    return run


def _window_key_records(store: Any, query: TimestampedWindowKeyWithHeadersQuery) -> Any:
    # Kafka keys each record Windowed(key, TimeWindow(start, start + window size)): the window
    # the store's fetch gives.
    entries = store.fetch(query.key(), query.key(), query.time_from(), query.time_to())
    return _records(entries, lambda key, value: value.timestamp, "window")


def _window_range_records(store: Any, query: TimestampedWindowRangeWithHeadersQuery) -> Any:
    entries = store.fetch_all(*_window_times(query))
    return _records(entries, lambda key, value: value.timestamp, "window")


def _session_key(convert: Callable[[Any], Any] | None) -> Callable[[Any, Any], Any]:
    def run(store: Any, query: WindowRangeQuery) -> Any:
        return _pairs(store.fetch(query.get_key()), convert)

    return run


def _session_records(store: Any, query: TimestampedWindowRangeWithHeadersQuery) -> Any:
    # A session has no event time of its own: Kafka 4.4 stamps its record with the session end
    # (MeteredSessionStoreWithHeaders' record iterator; Record refuses a negative one).
    return _records(store.fetch(query.key()), lambda key, value: key.window.end, "key")


def _handlers() -> dict[tuple[str, type], _Handler]:
    """What each family answers: Kafka Streams 4.3.1's answers for the families without headers,
    4.4.0's for the header-aware ones (which 4.3.1 refused, KAFKA-20703)."""
    one, many = True, False
    table: dict[tuple[str, type], _Handler] = {
        ("kv", KeyQuery): _Handler(_kv_key, one),
        ("kv", RangeQuery): _Handler(lambda s, q: _pairs(_kv_range(s, q)), many),
        ("versioned", KeyQuery): _Handler(_unsupported_key, one),
        ("versioned", RangeQuery): _Handler(_unsupported_range, many),
        ("versioned", VersionedKeyQuery): _Handler(_versioned_key, one),
        ("versioned", MultiVersionedKeyQuery): _Handler(_multi_versions, many),
    }
    for family in ("ts_kv", "ts_kv_headers"):
        table[(family, KeyQuery)] = _Handler(lambda s, q: _plain(s.get(q.get_key())), one)
        table[(family, TimestampedKeyQuery)] = _Handler(lambda s, q: _stamped(s.get(q.key())), one)
        table[(family, RangeQuery)] = _Handler(lambda s, q: _pairs(_kv_range(s, q), _plain), many)
        table[(family, TimestampedRangeQuery)] = _Handler(
            lambda s, q: _pairs(_kv_range(s, q), _stamped), many
        )
    table[("ts_kv_headers", TimestampedKeyWithHeadersQuery)] = _Handler(_ts_key_record, one)
    table[("ts_kv_headers", TimestampedRangeWithHeadersQuery)] = _Handler(_ts_range_records, many)
    for family in ("window", "ts_window"):
        table[(family, WindowKeyQuery)] = _Handler(_window_key(None), many)
        table[(family, WindowRangeQuery)] = _Handler(_window_range(None), many)
    # Values with headers but no timestamp: no Kafka store keeps them (KIP-1300 is a draft);
    # answered with the plain values, as Kafka's header-aware metered window store answers over
    # a store without timestamps, and no ReadOnlyRecord (it has no timestamp to give).
    table[("window_headers", WindowKeyQuery)] = _Handler(_window_key(_plain), many)
    table[("window_headers", WindowRangeQuery)] = _Handler(_window_range(_plain), many)
    table[("ts_window_headers", WindowKeyQuery)] = _Handler(
        _headers_window(lambda s, q: s.fetch(q.get_key(), q.get_time_from(), q.get_time_to())),
        many,
    )
    table[("ts_window_headers", WindowRangeQuery)] = _Handler(
        _headers_window(lambda s, q: s.fetch_all(q.get_time_from(), q.get_time_to())), many
    )
    table[("ts_window_headers", TimestampedWindowKeyWithHeadersQuery)] = _Handler(
        _window_key_records, many
    )
    table[("ts_window_headers", TimestampedWindowRangeWithHeadersQuery)] = _Handler(
        _window_range_records, many
    )
    table[("session", WindowRangeQuery)] = _Handler(_session_key(None), many)
    table[("session_headers", WindowRangeQuery)] = _Handler(_session_key(_plain), many)
    table[("session_headers", TimestampedWindowRangeWithHeadersQuery)] = _Handler(
        _session_records, many
    )
    return table


_HANDLERS = _handlers()


__all__ = ["absent_result", "query", "store_family"]
