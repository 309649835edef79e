"""The session-store adapter: a plain ``SessionStore`` served as a ``SessionStoreWithHeaders``
(KIP-1271; see ``stores.adapters`` for the table and rules)."""

from __future__ import annotations

from typing import Any

from stores.adapters._base import (
    MappingKeyValueIterator,
    _Adapter,
    _add_aggregate_headers,
    _Conversion,
    _strip_aggregate_headers,
)
from stores.records import ValueAndHeaders
from stores.session.store import SessionStore


class SessionToHeadersStoreAdapter(_Adapter):
    """A plain ``SessionStore`` served as a ``SessionStoreWithHeaders`` (KIP-1271).

    Writes keep the aggregate (headers are dropped; None, or a ``ValueAndHeaders`` around None,
    removes the session, as Kafka's null aggregate does); reads give
    ``ValueAndHeaders(aggregate, ())``. Methods and argument forms are ``stores.session.store``'s.

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
