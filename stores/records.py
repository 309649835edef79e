"""The records stores hand back, named as in Kafka Streams (snake_case attributes).

| Kafka                         | here                                                      |
|-------------------------------|-----------------------------------------------------------|
| ``KeyValue<K, V>``            | ``KeyValue(key, value)``, a named tuple                   |
| ``ValueAndTimestamp<V>``      | ``ValueAndTimestamp(value, timestamp)``                   |
| ``ValueAndHeaders<V>``        | ``ValueAndHeaders(value, headers)``                       |
| ``ValueTimestampHeaders<V>``  | ``ValueTimestampHeaders(value, timestamp, headers)``      |
| ``Window`` / ``TimeWindow``   | ``Window(start, end)``                                    |
| ``Windowed<K>``               | ``Windowed(key, window)``                                 |
| ``Headers``                   | a tuple of ``(key: str, value: bytes | None)`` pairs      |
| ``ReadOnlyRecord<K, V>``      | ``ReadOnlyRecord(key, value, timestamp, headers)``        |
| a changelog ``ProducerRecord``| ``ChangelogRecord(key, value, timestamp, headers)``       |
| ``InternalProcessorContext``  | ``ChangeLogContext``: the record time and headers of the  |
| (``logChange``)               | operation, and where its changelog records go             |

Headers keep their order and duplicate keys, as Kafka's ``RecordHeaders`` do; a header value
may be None. Timestamps are epoch milliseconds; ``-1`` is Kafka's "unknown" timestamp.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from stores.errors import InvalidOptionError

K = TypeVar("K")
V = TypeVar("V")

#: One header: a string key and a value that may be None.
Header = tuple[str, "bytes | None"]
#: Ordered headers; duplicate keys allowed.
Headers = tuple[Header, ...]

#: Kafka's ``RecordQueue.UNKNOWN`` / ``ConsumerRecord.NO_TIMESTAMP``: a timestamp not known.
UNKNOWN_TIMESTAMP = -1


class KeyValue(NamedTuple):
    """A key and its value (Kafka's ``KeyValue``); unpacks as a pair."""

    key: Any
    value: Any


def to_headers(headers: Iterable[Any] | None) -> Headers:
    """Normalize headers given as pairs (or a mapping) into the ``Headers`` tuple.

    Raises:
        InvalidOptionError: a header is not a ``(str, bytes | None)`` pair.
    """
    if headers is None:
        return ()
    if isinstance(headers, dict):
        headers = headers.items()
    out: list[Header] = []
    for header in headers:
        try:
            key, value = header
        except (TypeError, ValueError):
            raise InvalidOptionError(
                f"a header must be a (key, value) pair, got {header!r:.80}"
            ) from None
        if not isinstance(key, str):
            raise InvalidOptionError(f"header key must be str, got {type(key).__name__}")
        if value is not None and not isinstance(value, bytes):
            if not isinstance(value, (bytearray, memoryview)):
                raise InvalidOptionError(
                    f"header {key!r} value must be bytes or None, got {type(value).__name__}"
                )
            value = bytes(value)
        out.append((key, value))
    return tuple(out)


@dataclass(frozen=True)
class ValueAndTimestamp(Generic[V]):
    """A value and the timestamp of the record that wrote it (Kafka's ``ValueAndTimestamp``)."""

    value: V
    timestamp: int

    @staticmethod
    def make(value: V | None, timestamp: int) -> ValueAndTimestamp[V] | None:
        """Kafka's ``ValueAndTimestamp.make``: None for a None value (a tombstone)."""
        return None if value is None else ValueAndTimestamp(value, timestamp)


@dataclass(frozen=True)
class ValueAndHeaders(Generic[V]):
    """A value and its record's headers (Kafka's ``ValueAndHeaders``)."""

    value: V
    headers: Headers = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", to_headers(self.headers))

    @staticmethod
    def make(value: V | None, headers: Iterable[Any] | None = ()) -> ValueAndHeaders[V] | None:
        """None for a None value (a tombstone), as Kafka's ``make``."""
        return None if value is None else ValueAndHeaders(value, to_headers(headers))


@dataclass(frozen=True)
class ValueTimestampHeaders(Generic[V]):
    """A value, its timestamp and its record's headers (Kafka's ``ValueTimestampHeaders``)."""

    value: V
    timestamp: int
    headers: Headers = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", to_headers(self.headers))

    @staticmethod
    def make(
        value: V | None, timestamp: int, headers: Iterable[Any] | None = ()
    ) -> ValueTimestampHeaders[V] | None:
        """None for a None value (a tombstone), as Kafka's ``make``."""
        return None if value is None else ValueTimestampHeaders(value, timestamp, to_headers(headers))


@dataclass(frozen=True, order=True)
class Window:
    """A time window ``[start, end]`` in epoch ms (Kafka's ``Window``; ``TimeWindow`` for
    windowed stores, ``SessionWindow`` for sessions)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise InvalidOptionError(
                f"window end {self.end} is before its start {self.start}"
            )


@dataclass(frozen=True, order=True)
class Windowed(Generic[K]):
    """A key and the window it belongs to (Kafka's ``Windowed``)."""

    key: K
    window: Window

    @property
    def start(self) -> int:
        """``window.start``."""
        return self.window.start

    @property
    def end(self) -> int:
        """``window.end``."""
        return self.window.end


@dataclass(frozen=True)
class ReadOnlyRecord:
    """A record served by a header query (Kafka's ``ReadOnlyRecord``)."""

    key: Any
    value: Any
    timestamp: int
    headers: Headers = ()


@dataclass(frozen=True)
class ChangelogRecord:
    """One record of a store's changelog topic, as Kafka's change-logging layer sends it
    (``ProcessorContextImpl.logChange``): bytes key, bytes value (None: a tombstone), record
    timestamp and record headers.

    A record read back from a topic may have a None key (Kafka's restore skips it).
    """

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: Headers = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", to_headers(self.headers))

    def to_json(self) -> dict[str, Any]:
        """The Kafka harness's JSON shape: ``{"k": hex, "v": hex|None, "t": ts, "h": [[key,
        hex|None], ...]}``."""
        return {
            "k": None if self.key is None else self.key.hex(),
            "v": None if self.value is None else self.value.hex(),
            "t": self.timestamp,
            "h": [[k, None if v is None else v.hex()] for k, v in self.headers],
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> ChangelogRecord:
        """The record of the harness's JSON shape (see :meth:`to_json`).

        Raises:
            InvalidOptionError: a field is missing or not hex.
        """
        try:
            key, value = data["k"], data["v"]
            return ChangelogRecord(
                None if key is None else bytes.fromhex(key),
                None if value is None else bytes.fromhex(value),
                int(data["t"]),
                tuple(
                    (k, None if v is None else bytes.fromhex(v)) for k, v in data.get("h") or ()
                ),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidOptionError(
                f"a changelog record needs k, v (hex or null), t (int) and h, got {data!r:.120}"
            ) from e


class ChangeLogContext(Protocol):
    """What a kind's change-logging rules see of the operation being logged (Kafka's
    ``InternalProcessorContext``: ``recordContext().timestamp()``, ``recordContext().headers()``
    and ``logChange``)."""

    @property
    def record_timestamp(self) -> int:
        """The timestamp of the record being processed (Kafka's ``context.timestamp()``)."""
        ...

    @property
    def record_headers(self) -> Headers:
        """The headers of the record being processed."""
        ...

    def log(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        """Send one changelog record."""
        ...


__all__ = [
    "UNKNOWN_TIMESTAMP",
    "ChangeLogContext",
    "ChangelogRecord",
    "Header",
    "Headers",
    "KeyValue",
    "ReadOnlyRecord",
    "ValueAndHeaders",
    "ValueAndTimestamp",
    "ValueTimestampHeaders",
    "Window",
    "Windowed",
    "to_headers",
]
