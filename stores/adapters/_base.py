"""What every format adapter shares: the mapping iterator, the value conversions both ways,
:class:`_Conversion` (which store an adapter wraps and how it converts) and :class:`_Adapter`
(the wrapped store, its checks, its lifecycle). The adapters themselves are in
``stores.adapters.window``, ``stores.adapters.key_value`` and ``stores.adapters.session``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from stores.bytes.protocol import BytesStore
from stores.errors import InvalidOptionError
from stores.records import (
    UNKNOWN_TIMESTAMP,
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
)

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
    def wrapped(self) -> BytesStore:
        """The bytes layer under the adapted store."""
        db: BytesStore = self._store.wrapped
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
