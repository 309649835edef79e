"""The key-value-store adapters: a plain or timestamped ``KeyValueStore`` served as a
timestamped one or one with headers (see ``stores.adapters`` for the table and rules)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from stores.adapters._base import (
    MappingKeyValueIterator,
    PeekingIterator,
    _Adapter,
    _add_headers,
    _add_timestamp,
    _add_timestamp_and_headers,
    _Conversion,
    _strip_headers,
    _strip_headers_and_timestamp,
    _strip_timestamp,
)
from stores.iterators import KeyValueIterator
from stores.key_value.store import KeyValueStore
from stores.records import KeyValue, ValueAndTimestamp, ValueTimestampHeaders
from stores.timestamped.store import TimestampedKeyValueStore


class _KeyValueAdapter(_Adapter):
    """A key-value store of an older format, served with the newer one's API
    (``stores.timestamped.store``)."""

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
