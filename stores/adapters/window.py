"""The window-store adapters: a plain or timestamped ``WindowStore`` served as a timestamped
one or one with headers (see ``stores.adapters`` for the table and rules)."""

from __future__ import annotations

from typing import Any

from stores.adapters._base import (
    MappingKeyValueIterator,
    _Adapter,
    _add_headers,
    _add_timestamp,
    _add_timestamp_and_headers,
    _Conversion,
    _strip_headers,
    _strip_headers_and_timestamp,
    _strip_timestamp,
)
from stores.records import ValueAndTimestamp, ValueTimestampHeaders
from stores.window.store import TimestampedWindowStore, WindowStore


class _WindowAdapter(_Adapter):
    """A window store of an older format, served with the newer one's API (``stores.window.store``)."""

    def put(self, key: bytes, value: Any, window_start: int) -> None:
        """Put ``value`` (converted to the store's format; None deletes).

        Raises:
            InvalidOptionError: a wrong key, value or time.
            StoreClosedError: the store is closed.
        """
        self._store.put(key, self._encode(value), window_start)

    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        """The store's ``fetch`` (2, 3 or 4 arguments, see ``stores.window.store``), values converted.

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
