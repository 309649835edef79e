"""Adapters that let a store of an older value format serve where a newer one is expected.

Kafka wraps a user-supplied store of an older format in an adapter when a newer store type is
asked for (KIP-258 for timestamps; KIP-1271 / KIP-1285 for headers): the adapter strips what the
older store cannot keep on write and fills in defaults on read. Kafka's adapters work on bytes;
ours sit on the typed stores, through their public API only, with the same effect.

========================================================  =================================
adapter (Kafka's name): store wrapped -> served as        write keeps -> read gives
========================================================  =================================
``KeyValueToTimestampedKeyValueByteStoreAdapter``:        value -> timestamp -1
``KeyValueStore`` -> ``TimestampedKeyValueStore``
``TimestampedToHeadersStoreAdapter``:                     value, timestamp -> empty headers
``TimestampedKeyValueStore`` -> ``...WithHeaders``
``PlainToHeadersStoreAdapter``:                           value -> timestamp -1, empty
``KeyValueStore`` -> ``TimestampedKeyValueStoreWithHeaders``  headers
``WindowToTimestampedWindowByteStoreAdapter``:            value -> timestamp -1
``WindowStore`` -> ``TimestampedWindowStore``
``TimestampedToHeadersWindowStoreAdapter``:               value, timestamp -> empty headers
``TimestampedWindowStore`` -> ``...WithHeaders``
``PlainToHeadersWindowStoreAdapter``:                     value -> timestamp -1, empty
``WindowStore`` -> ``TimestampedWindowStoreWithHeaders``  headers
``SessionToHeadersStoreAdapter``:                         aggregate -> empty headers
``SessionStore`` -> ``SessionStoreWithHeaders``
========================================================  =================================

Kafka has no adapter in the other direction (a header store served as a plain one) and none for
the plain-value-with-headers ``WindowStoreWithHeaders`` (KIP-1300, still a draft).
``SessionToHeadersStoreAdapter`` (KIP-1271, with its iterator ``SessionToHeadersIteratorAdapter``,
here :class:`MappingKeyValueIterator`) strips the headers of the ``ValueAndHeaders`` aggregate on
``put`` and gives ``ValueAndHeaders(aggregate, ())`` on ``fetch_session`` and every iterator;
``remove`` and lifecycle go straight to the store. (Kafka also refuses a non-persistent store;
every store here is persistent.)

Every adapter names the store family it serves (``query_family``), so IQv2
(:func:`stores.query.query`) answers it as that store type, through the adapter's API; Kafka's
adapters likewise sit under the metered store of the newer type, which handles the queries.

Rules, as Kafka's:

- A None value, or a record whose value is None, deletes (Kafka's serializers turn both into
  null bytes). Headers given on write are dropped; so is the timestamp for a plain store.
- Reads, ``put_if_absent`` and ``delete`` return the newer record type with the defaults:
  timestamp ``-1`` (``UNKNOWN_TIMESTAMP``) and empty headers.
- Iterators keep ``has_next`` / ``peek_next_key`` / ``close`` of the store's iterator and map
  each value (Kafka's ``MappingKeyValueIteratorAdapter``).
- The constructor refuses a store of the wrong format (Kafka: ``IllegalArgumentException``,
  "Provided store must be a timestamped store, but it is not."); closing the adapter closes the
  store. Window properties (retention, size, ...) are the store's (Kafka's
  ``WithRetentionPeriod`` on the adapters).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from stores.errors import InvalidOptionError
from stores.iterators import KeyValueIterator
from stores.key_value import KeyValueStore
from stores.records import (
    UNKNOWN_TIMESTAMP,
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
)
from stores.rocksdb_bytes import RocksDBBytesStore
from stores.session import SessionStore
from stores.timestamped import TimestampedKeyValueStore
from stores.window import TimestampedWindowStore, WindowStore

Mapper = Callable[[Any], Any]


class PeekingIterator(Protocol):
    """What a store iterator offers (Kafka's ``KeyValueIterator``)."""

    def __next__(self) -> KeyValue: ...
    def has_next(self) -> bool: ...
    def peek_next_key(self) -> Any: ...
    def close(self) -> None: ...


class MappingKeyValueIterator:
    """Kafka's ``MappingKeyValueIteratorAdapter``: the inner iterator with each value mapped."""

    __slots__ = ("_inner", "_mapper")

    def __init__(self, inner: PeekingIterator, mapper: Mapper) -> None:
        self._inner = inner
        self._mapper = mapper

    def __iter__(self) -> MappingKeyValueIterator:
        return self

    def __next__(self) -> KeyValue:
        entry = next(self._inner)
        return KeyValue(entry.key, self._mapper(entry.value))

    def has_next(self) -> bool:
        """Whether another entry follows (the inner iterator's answer).

        Raises:
            StoreClosedError: the iterator is closed.
        """
        return self._inner.has_next()

    def peek_next_key(self) -> Any:
        """The next key, not consumed (keys are not mapped).

        Raises:
            StopIteration: no entry follows.
            StoreClosedError: the iterator is closed.
        """
        return self._inner.peek_next_key()

    def close(self) -> None:
        """Close the inner iterator."""
        self._inner.close()

    def __enter__(self) -> MappingKeyValueIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- value conversions ------------------------------------------------------------------------


def _payload(value: Any) -> Any:
    """The wrapped value, or None for a delete (None, or a record around None)."""
    return None if value is None else value.value


def _strip_timestamp(value: ValueAndTimestamp[bytes] | None) -> bytes | None:
    inner: bytes | None = _payload(value)
    return inner


def _strip_headers(value: ValueTimestampHeaders[bytes] | None) -> ValueAndTimestamp[bytes] | None:
    if value is None or value.value is None:
        return None
    return ValueAndTimestamp(value.value, value.timestamp)


def _strip_headers_and_timestamp(value: ValueTimestampHeaders[bytes] | None) -> bytes | None:
    inner: bytes | None = _payload(value)
    return inner


def _add_timestamp(value: bytes) -> ValueAndTimestamp[bytes]:
    return ValueAndTimestamp(value, UNKNOWN_TIMESTAMP)


def _add_headers(value: ValueAndTimestamp[bytes]) -> ValueTimestampHeaders[bytes]:
    return ValueTimestampHeaders(value.value, value.timestamp, ())


def _add_timestamp_and_headers(value: bytes) -> ValueTimestampHeaders[bytes]:
    return ValueTimestampHeaders(value, UNKNOWN_TIMESTAMP, ())


def _strip_aggregate_headers(value: ValueAndHeaders[bytes] | None) -> bytes | None:
    inner: bytes | None = _payload(value)
    return inner


def _add_aggregate_headers(value: bytes) -> ValueAndHeaders[bytes]:
    return ValueAndHeaders(value, ())


@dataclass(frozen=True)
class _Conversion:
    """How one adapter converts: which store it wraps, which records it takes, both ways."""

    inner_type: type  # the exact store class wrapped
    value_type: type  # the record type the adapter takes and gives
    to_inner: Mapper
    from_inner: Mapper
    refusal: str  # why another store is refused


class _Adapter:
    """What every adapter shares: the wrapped store, its checks, its lifecycle."""

    _conversion: ClassVar[_Conversion]
    query_family: ClassVar[str]  # the store family IQv2 answers the adapter as

    def __init__(self, store: Any) -> None:
        conversion = self._conversion
        if type(store) is not conversion.inner_type:
            raise InvalidOptionError(
                f"{type(self).__name__}: {conversion.refusal}, got {type(store).__name__}"
            )
        self._store: Any = store

    @property
    def store(self) -> Any:
        """The adapted store."""
        return self._store

    @property
    def wrapped(self) -> RocksDBBytesStore:
        """The bytes layer under the adapted store."""
        db: RocksDBBytesStore = self._store.wrapped
        return db

    def _encode(self, value: Any) -> Any:
        expected = self._conversion.value_type
        if value is not None and not isinstance(value, expected):
            raise InvalidOptionError(
                f"value must be {expected.__name__} or None for a "
                f"{type(self).__name__}, got {type(value).__name__}"
            )
        return self._conversion.to_inner(value)

    def _decode(self, value: Any) -> Any:
        return None if value is None else self._conversion.from_inner(value)

    def _map(self, iterator: PeekingIterator) -> MappingKeyValueIterator:
        return MappingKeyValueIterator(iterator, self._conversion.from_inner)

    @property
    def closed(self) -> bool:
        """Whether the adapted store is closed."""
        closed = getattr(self._store, "closed", None)
        return bool(self.wrapped.closed if closed is None else closed)

    def close(self) -> None:
        """Close the adapted store."""
        self._store.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- window stores ----------------------------------------------------------------------------


class _WindowAdapter(_Adapter):
    """A window store of an older format, served with the newer one's API (``stores.window``)."""

    def put(self, key: bytes, value: Any, window_start: int) -> None:
        """Put ``value`` (converted to the store's format; None deletes).

        Raises:
            InvalidOptionError: a wrong key, value or time.
            StoreClosedError: the store is closed.
        """
        self._store.put(key, self._encode(value), window_start)

    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        """The store's ``fetch`` (2, 3 or 4 arguments, see ``stores.window``), values converted.

        Raises:
            InvalidOptionError: a wrong key or time.
            StoreClosedError: the store is closed.
            TypeError: not 2, 3 or 4 arguments.
        """
        result = self._store.fetch(*args, **kwargs)
        if len(args) + len(kwargs) == 2:
            return self._decode(result)
        return self._map(result)

    def backward_fetch(self, *args: Any, **kwargs: Any) -> MappingKeyValueIterator:
        """The store's ``backward_fetch``, values converted.

        Raises:
            InvalidOptionError: a wrong key or time.
            StoreClosedError: the store is closed.
            TypeError: not 3 or 4 arguments.
        """
        return self._map(self._store.backward_fetch(*args, **kwargs))

    def fetch_all(self, time_from: int, time_to: int) -> MappingKeyValueIterator:
        """The store's ``fetch_all``, values converted.

        Raises:
            InvalidOptionError: a time is not an integer.
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.fetch_all(time_from, time_to))

    def backward_fetch_all(self, time_from: int, time_to: int) -> MappingKeyValueIterator:
        """The store's ``backward_fetch_all``, values converted.

        Raises:
            InvalidOptionError: a time is not an integer.
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.backward_fetch_all(time_from, time_to))

    def all(self) -> MappingKeyValueIterator:
        """The store's ``all``, values converted.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.all())

    def backward_all(self) -> MappingKeyValueIterator:
        """The store's ``backward_all``, values converted.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.backward_all())

    @property
    def retention_ms(self) -> int:
        """The store's retention."""
        value: int = self._store.retention_ms
        return value

    @property
    def window_size_ms(self) -> int:
        """The store's window size."""
        value: int = self._store.window_size_ms
        return value

    @property
    def retain_duplicates(self) -> bool:
        """Whether the store keeps duplicates."""
        value: bool = self._store.retain_duplicates
        return value

    @property
    def segment_interval_ms(self) -> int:
        """The store's segment interval."""
        value: int = self._store.segment_interval_ms
        return value

    @property
    def observed_stream_time(self) -> int:
        """The store's observed stream time.

        Raises:
            StoreClosedError: the store is closed.
        """
        value: int = self._store.observed_stream_time
        return value


class WindowToTimestampedWindowByteStoreAdapter(_WindowAdapter):
    """A plain ``WindowStore`` served as a ``TimestampedWindowStore`` (KIP-258).

    Writes keep the value (the timestamp is dropped); reads give ``ValueAndTimestamp(value,
    -1)``.

    Raises:
        InvalidOptionError: ``store`` is not a ``WindowStore``.
    """

    query_family = "ts_window"
    _conversion = _Conversion(
        inner_type=WindowStore,
        value_type=ValueAndTimestamp,
        to_inner=_strip_timestamp,
        from_inner=_add_timestamp,
        refusal="provided store must be a plain (non-timestamped) WindowStore",
    )


class TimestampedToHeadersWindowStoreAdapter(_WindowAdapter):
    """A ``TimestampedWindowStore`` served as a ``TimestampedWindowStoreWithHeaders``.

    Writes keep value and timestamp (headers are dropped); reads add empty headers.

    Raises:
        InvalidOptionError: ``store`` is not a ``TimestampedWindowStore``.
    """

    query_family = "ts_window_headers"
    _conversion = _Conversion(
        inner_type=TimestampedWindowStore,
        value_type=ValueTimestampHeaders,
        to_inner=_strip_headers,
        from_inner=_add_headers,
        refusal="provided store must be a timestamped store (TimestampedWindowStore)",
    )


class PlainToHeadersWindowStoreAdapter(_WindowAdapter):
    """A plain ``WindowStore`` served as a ``TimestampedWindowStoreWithHeaders``.

    Writes keep the value (timestamp and headers are dropped); reads give timestamp -1 and empty
    headers.

    Raises:
        InvalidOptionError: ``store`` is not a ``WindowStore``.
    """

    query_family = "ts_window_headers"
    _conversion = _Conversion(
        inner_type=WindowStore,
        value_type=ValueTimestampHeaders,
        to_inner=_strip_headers_and_timestamp,
        from_inner=_add_timestamp_and_headers,
        refusal="provided store must be a plain (non-timestamped) WindowStore",
    )


# -- key-value stores -------------------------------------------------------------------------


class _KeyValueAdapter(_Adapter):
    """A key-value store of an older format, served with the newer one's API
    (``stores.timestamped``)."""

    def put(self, key: bytes, value: Any) -> None:
        """Put ``value`` (converted; None deletes).

        Raises:
            InvalidOptionError: a wrong key or value.
            StoreClosedError: the store is closed.
        """
        self._store.put(key, self._encode(value))

    def put_if_absent(self, key: bytes, value: Any) -> Any:
        """Put ``value`` if ``key`` has none; the value that was there, converted.

        Raises:
            InvalidOptionError: a wrong key or value.
            StoreClosedError: the store is closed.
        """
        return self._decode(self._store.put_if_absent(key, self._encode(value)))

    def put_all(self, entries: Iterable[tuple[bytes, Any]]) -> None:
        """Put every ``(key, value)``, converted, as the store's one batch.

        Raises:
            InvalidOptionError: a wrong key or value (nothing is written).
            StoreClosedError: the store is closed.
        """
        converted = [(key, self._encode(value)) for key, value in entries]
        self._store.put_all(converted)

    def get(self, key: bytes) -> Any:
        """The value of ``key``, converted, or None.

        Raises:
            InvalidOptionError: ``key`` is not bytes.
            StoreClosedError: the store is closed.
        """
        return self._decode(self._store.get(key))

    def delete(self, key: bytes) -> Any:
        """Delete ``key``; its old value, converted.

        Raises:
            InvalidOptionError: ``key`` is not bytes.
            StoreClosedError: the store is closed.
        """
        return self._decode(self._store.delete(key))

    def range(
        self, start: bytes | None = None, end: bytes | None = None, *, reverse: bool = False
    ) -> MappingKeyValueIterator:
        """The store's inclusive ``range`` (None: open), values converted.

        Raises:
            InvalidOptionError: a bound is not bytes.
            StoreClosedError: the store is closed.
        """
        return self._map(self._iterator(self._store.range(start, end, reverse=reverse)))

    def reverse_range(
        self, start: bytes | None = None, end: bytes | None = None
    ) -> MappingKeyValueIterator:
        """Kafka's ``reverseRange``.

        Raises:
            InvalidOptionError: a bound is not bytes.
            StoreClosedError: the store is closed.
        """
        return self.range(start, end, reverse=True)

    def all(self, *, reverse: bool = False) -> MappingKeyValueIterator:
        """Every entry in key order (``reverse``: descending), values converted.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self._map(self._iterator(self._store.all(reverse=reverse)))

    def reverse_all(self) -> MappingKeyValueIterator:
        """Kafka's ``reverseAll``.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self.all(reverse=True)

    def prefix_scan(self, prefix: bytes) -> MappingKeyValueIterator:
        """Every key starting with ``prefix``, values converted.

        Raises:
            InvalidOptionError: ``prefix`` is not bytes.
            StoreClosedError: the store is closed.
        """
        return self._map(self._iterator(self._store.prefix_scan(prefix)))

    def approximate_num_entries(self) -> int:
        """The store's estimate.

        Raises:
            StoreClosedError: the store is closed.
        """
        count: int = self._store.approximate_num_entries()
        return count

    def _iterator(self, entries: Any) -> PeekingIterator:
        if hasattr(entries, "peek_next_key"):
            iterator: PeekingIterator = entries
            return iterator
        # The plain store yields bare pairs: give them Kafka's iterator API.
        return KeyValueIterator(_pairs(entries), str(self.wrapped.path))


def _pairs(entries: Iterator[tuple[bytes, Any]]) -> Iterator[KeyValue]:
    for key, value in entries:
        yield KeyValue(key, value)


class KeyValueToTimestampedKeyValueByteStoreAdapter(_KeyValueAdapter):
    """A plain ``KeyValueStore`` served as a ``TimestampedKeyValueStore`` (KIP-258).

    Writes keep the value; reads give ``ValueAndTimestamp(value, -1)``.

    Raises:
        InvalidOptionError: ``store`` is not a ``KeyValueStore``.
    """

    query_family = "ts_kv"
    _conversion = _Conversion(
        inner_type=KeyValueStore,
        value_type=ValueAndTimestamp,
        to_inner=_strip_timestamp,
        from_inner=_add_timestamp,
        refusal="provided store must be a plain (non-timestamped) KeyValueStore",
    )


class TimestampedToHeadersStoreAdapter(_KeyValueAdapter):
    """A ``TimestampedKeyValueStore`` served as a ``TimestampedKeyValueStoreWithHeaders``.

    Writes keep value and timestamp (headers are dropped); reads add empty headers.

    Raises:
        InvalidOptionError: ``store`` is not a ``TimestampedKeyValueStore``.
    """

    query_family = "ts_kv_headers"
    _conversion = _Conversion(
        inner_type=TimestampedKeyValueStore,
        value_type=ValueTimestampHeaders,
        to_inner=_strip_headers,
        from_inner=_add_headers,
        refusal="provided store must be a timestamped store (TimestampedKeyValueStore)",
    )


class PlainToHeadersStoreAdapter(_KeyValueAdapter):
    """A plain ``KeyValueStore`` served as a ``TimestampedKeyValueStoreWithHeaders``.

    Writes keep the value (timestamp and headers are dropped); reads give timestamp -1 and empty
    headers.

    Raises:
        InvalidOptionError: ``store`` is not a ``KeyValueStore``.
    """

    query_family = "ts_kv_headers"
    _conversion = _Conversion(
        inner_type=KeyValueStore,
        value_type=ValueTimestampHeaders,
        to_inner=_strip_headers_and_timestamp,
        from_inner=_add_timestamp_and_headers,
        refusal="provided store must be a plain (non-timestamped) KeyValueStore",
    )


# -- session stores ---------------------------------------------------------------------------


class SessionToHeadersStoreAdapter(_Adapter):
    """A plain ``SessionStore`` served as a ``SessionStoreWithHeaders`` (KIP-1271).

    Writes keep the aggregate (headers are dropped; None, or a ``ValueAndHeaders`` around None,
    removes the session, as Kafka's null aggregate does); reads give
    ``ValueAndHeaders(aggregate, ())``. Methods and argument forms are ``stores.session``'s.

    Raises:
        InvalidOptionError: ``store`` is not a plain ``SessionStore``.
    """

    query_family = "session_headers"
    _conversion = _Conversion(
        inner_type=SessionStore,
        value_type=ValueAndHeaders,
        to_inner=_strip_aggregate_headers,
        from_inner=_add_aggregate_headers,
        refusal="provided store must be a plain SessionStore (without headers)",
    )

    def put(self, *args: Any, **kwargs: Any) -> None:
        """``put(session_key: Windowed, value)`` or ``put(key, start, end, value)``; the value
        (``ValueAndHeaders`` or None) loses its headers, None removes.

        Raises:
            InvalidOptionError: a wrong key, window, value or argument count.
            StoreClosedError: the store is closed.
        """
        if "value" in kwargs:
            kwargs["value"] = self._encode(kwargs["value"])
        elif args:
            args = (*args[:-1], self._encode(args[-1]))
        self._store.put(*args, **kwargs)

    def remove(self, *args: Any, **kwargs: Any) -> None:
        """The store's ``remove`` (``remove(Windowed)`` or ``remove(key, start, end)``).

        Raises:
            InvalidOptionError: a wrong key, window or argument count.
            StoreClosedError: the store is closed.
        """
        self._store.remove(*args, **kwargs)

    def fetch_session(self, key: bytes, start: int, end: int) -> ValueAndHeaders[bytes] | None:
        """The session's aggregate with empty headers, or None.

        Raises:
            InvalidOptionError: a wrong key or times.
            StoreClosedError: the store is closed.
        """
        found: ValueAndHeaders[bytes] | None = self._decode(
            self._store.fetch_session(key, start, end)
        )
        return found

    def find_sessions(self, *args: Any, **kwargs: Any) -> MappingKeyValueIterator:
        """The store's ``find_sessions`` (every form), aggregates with empty headers.

        Raises:
            InvalidOptionError: wrong keys, times or argument count.
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.find_sessions(*args, **kwargs))

    def backward_find_sessions(self, *args: Any, **kwargs: Any) -> MappingKeyValueIterator:
        """The store's ``backward_find_sessions``, aggregates with empty headers.

        Raises:
            InvalidOptionError: wrong keys, times or argument count.
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.backward_find_sessions(*args, **kwargs))

    def find_sessions_by_end(
        self, earliest_session_end: int, latest_session_end: int
    ) -> MappingKeyValueIterator:
        """The store's ``find_sessions_by_end``, aggregates with empty headers.

        Raises:
            InvalidOptionError: a time is not an integer.
            StoreClosedError: the store is closed.
        """
        return self._map(
            self._store.find_sessions_by_end(earliest_session_end, latest_session_end)
        )

    def fetch(self, *args: Any, **kwargs: Any) -> MappingKeyValueIterator:
        """The store's ``fetch(key)`` / ``fetch(key_from, key_to)``, aggregates with empty
        headers.

        Raises:
            InvalidOptionError: wrong keys or argument count.
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.fetch(*args, **kwargs))

    def backward_fetch(self, *args: Any, **kwargs: Any) -> MappingKeyValueIterator:
        """The store's ``backward_fetch``, aggregates with empty headers.

        Raises:
            InvalidOptionError: wrong keys or argument count.
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.backward_fetch(*args, **kwargs))

    def all(self, *, reverse: bool = False) -> MappingKeyValueIterator:
        """Every live session (the store's ``all``), aggregates with empty headers.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self._map(self._store.all(reverse=reverse))

    def backward_all(self) -> MappingKeyValueIterator:
        """:meth:`all` in reverse order.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self.all(reverse=True)

    @property
    def retention_ms(self) -> int:
        """The store's retention."""
        value: int = self._store.retention_ms
        return value

    @property
    def segment_interval_ms(self) -> int:
        """The store's segment interval."""
        value: int = self._store.segment_interval_ms
        return value

    @property
    def observed_stream_time(self) -> int:
        """The store's observed stream time.

        Raises:
            StoreClosedError: the store is closed.
        """
        value: int = self._store.observed_stream_time
        return value


__all__ = [
    "KeyValueToTimestampedKeyValueByteStoreAdapter",
    "MappingKeyValueIterator",
    "PlainToHeadersStoreAdapter",
    "PlainToHeadersWindowStoreAdapter",
    "SessionToHeadersStoreAdapter",
    "TimestampedToHeadersStoreAdapter",
    "TimestampedToHeadersWindowStoreAdapter",
    "WindowToTimestampedWindowByteStoreAdapter",
]
