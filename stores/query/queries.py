"""The query classes, with Kafka's names in snake_case and Kafka's static factories."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, is_dataclass, replace
from enum import Enum
from typing import Any, TypeVar

from stores.query._checks import not_none
from stores.query._text import java, optional, optional_instant
from stores.time import instant_ms

Q = TypeVar("Q", bound="Query")
_MISSING: Any = object()
#: The fields that hold keys, and the names ``Query.key_fields`` gives them.
_KEY_FIELDS = {"_key": "key", "_lower": "lower", "_upper": "upper"}


class ResultOrder(Enum):
    """Order of range and multi-version results (Kafka's ``ResultOrder``)."""

    ANY = "ANY"
    ASCENDING = "ASCENDING"
    DESCENDING = "DESCENDING"


class Query:
    """Base of every query. ``map_keys`` rewrites the query's keys (the catalog serializes
    typed keys with it); ``routing_key`` is the one key the query is about, if any."""

    def key_fields(self) -> dict[str, Any]:
        """The query's keys by role, as held (a bound may be None): ``key`` of a key query,
        ``lower`` and ``upper`` of a range; empty for a query without keys (Kafka's custom
        ``Query`` types)."""
        fields = _KEY_FIELDS.items()
        return {role: getattr(self, name) for name, role in fields if hasattr(self, name)}

    def map_keys(self: Q, convert: Callable[[Any], Any]) -> Q:
        """A copy with every key and key bound passed through ``convert`` (None stays None)."""
        changes = {
            name: None if getattr(self, name) is None else convert(getattr(self, name))
            for name in _KEY_FIELDS
            if hasattr(self, name)
        }
        if not changes or not is_dataclass(self):
            return self  # a query of the caller's own type (Kafka's custom Query) has no keys
        return replace(self, **changes)  # type: ignore[type-var]

    def routing_key(self) -> Any:
        """The key whose partition alone can hold the answer, or None."""
        return getattr(self, "_key", None)

    def _fields(self) -> list[tuple[str, str]]:
        """(name, Java-rendered value) pairs for ``repr``, in Kafka's field order."""
        return []

    def __repr__(self) -> str:
        # Kafka's toString form (its failure messages quote the query), e.g.
        # WindowRangeQuery{key=Optional[2], timeFrom=Optional.empty, timeTo=Optional.empty}
        inner = ", ".join(f"{name}={value}" for name, value in self._fields())
        return f"{type(self).__name__}{{{inner}}}"


@dataclass(frozen=True, repr=False)
class KeyQuery(Query):
    """One key's value (Kafka's ``KeyQuery``)."""

    _key: Any
    _skip_cache: bool = False

    @staticmethod
    def with_key(key: Any) -> KeyQuery:
        """Query ``key``.

        Raises:
            InvalidOptionError: ``key`` is None.
        """
        return KeyQuery(not_none(key, "the key should not be null"))

    def skip_cache(self) -> KeyQuery:
        """The same query, skipping any cache (stores here have none)."""
        return replace(self, _skip_cache=True)

    def get_key(self) -> Any:
        """The key."""
        return self._key

    def is_skip_cache(self) -> bool:
        """Whether to skip the cache."""
        return self._skip_cache

    def _fields(self) -> list[tuple[str, str]]:
        return [("key", java(self._key)), ("skipCache", java(self._skip_cache))]


@dataclass(frozen=True, repr=False)
class TimestampedKeyQuery(Query):
    """One key's value and timestamp (Kafka's ``TimestampedKeyQuery``, KIP-992)."""

    _key: Any
    _skip_cache: bool = False

    @staticmethod
    def with_key(key: Any) -> TimestampedKeyQuery:
        """Query ``key``.

        Raises:
            InvalidOptionError: ``key`` is None.
        """
        return TimestampedKeyQuery(not_none(key, "the key should not be null"))

    def skip_cache(self) -> TimestampedKeyQuery:
        """The same query, skipping any cache."""
        return replace(self, _skip_cache=True)

    def key(self) -> Any:
        """The key."""
        return self._key

    def is_skip_cache(self) -> bool:
        """Whether to skip the cache."""
        return self._skip_cache

    def _fields(self) -> list[tuple[str, str]]:
        return [("key", java(self._key)), ("skipCache", java(self._skip_cache))]


@dataclass(frozen=True, repr=False)
class TimestampedKeyWithHeadersQuery(Query):
    """One key's record with headers (Kafka's ``TimestampedKeyWithHeadersQuery``, KIP-1356, Kafka
    4.4): a ``ReadOnlyRecord``, from a ``TimestampedKeyValueStoreWithHeaders`` (see
    :mod:`stores.query`)."""

    _key: Any
    _skip_cache: bool = False

    @staticmethod
    def with_key(key: Any) -> TimestampedKeyWithHeadersQuery:
        """Query ``key``.

        Raises:
            InvalidOptionError: ``key`` is None.
        """
        return TimestampedKeyWithHeadersQuery(not_none(key, "the key should not be null"))

    def skip_cache(self) -> TimestampedKeyWithHeadersQuery:
        """The same query, skipping any cache."""
        return replace(self, _skip_cache=True)

    def key(self) -> Any:
        """The key."""
        return self._key

    def is_skip_cache(self) -> bool:
        """Whether to skip the cache."""
        return self._skip_cache

    def _fields(self) -> list[tuple[str, str]]:
        return [("key", java(self._key)), ("skipCache", java(self._skip_cache))]


@dataclass(frozen=True, repr=False)
class _Range(Query):
    """Key bounds (inclusive; None is open) and an order, shared by the range queries."""

    _lower: Any = None
    _upper: Any = None
    _order: ResultOrder = ResultOrder.ANY

    @classmethod
    def with_range(cls: type[R], lower: Any, upper: Any) -> R:
        """Keys from ``lower`` to ``upper``, both inclusive (None is open)."""
        return cls(lower, upper)

    @classmethod
    def with_lower_bound(cls: type[R], lower: Any) -> R:
        """Keys from ``lower`` on."""
        return cls(lower, None)

    @classmethod
    def with_upper_bound(cls: type[R], upper: Any) -> R:
        """Keys up to ``upper``."""
        return cls(None, upper)

    @classmethod
    def with_no_bounds(cls: type[R]) -> R:
        """Every key."""
        return cls()

    def with_descending_keys(self: R) -> R:
        """The same range, keys in descending serialized-byte order."""
        return replace(self, _order=ResultOrder.DESCENDING)

    def with_ascending_keys(self: R) -> R:
        """The same range, keys in ascending serialized-byte order."""
        return replace(self, _order=ResultOrder.ASCENDING)

    def result_order(self) -> ResultOrder:
        """The requested order (``ANY`` is served ascending)."""
        return self._order

    def is_key_ascending(self) -> bool:
        """Whether keys come in ascending byte order (Kafka's older ``isKeyAscending``)."""
        return self._order is not ResultOrder.DESCENDING

    def routing_key(self) -> Any:
        return None

    def _fields(self) -> list[tuple[str, str]]:
        return [
            ("lower", optional(self._lower)),
            ("upper", optional(self._upper)),
            ("order", self._order.name),
        ]


R = TypeVar("R", bound=_Range)


@dataclass(frozen=True, repr=False)
class RangeQuery(_Range):
    """A key range or a full scan (Kafka's ``RangeQuery``, KIP-805)."""

    def get_lower_bound(self) -> Any:
        """The lower bound, or None."""
        return self._lower

    def get_upper_bound(self) -> Any:
        """The upper bound, or None."""
        return self._upper


@dataclass(frozen=True, repr=False)
class TimestampedRangeQuery(_Range):
    """A range of values with timestamps (Kafka's ``TimestampedRangeQuery``, KIP-992)."""

    def lower_bound(self) -> Any:
        """The lower bound, or None."""
        return self._lower

    def upper_bound(self) -> Any:
        """The upper bound, or None."""
        return self._upper


@dataclass(frozen=True, repr=False)
class TimestampedRangeWithHeadersQuery(_Range):
    """A range of records with headers (Kafka's ``TimestampedRangeWithHeadersQuery``, KIP-1356,
    Kafka 4.4): an iterator of ``ReadOnlyRecord``, from a ``TimestampedKeyValueStoreWithHeaders``."""

    def lower_bound(self) -> Any:
        """The lower bound, or None."""
        return self._lower

    def upper_bound(self) -> Any:
        """The upper bound, or None."""
        return self._upper


@dataclass(frozen=True, repr=False)
class VersionedKeyQuery(Query):
    """One key's latest version, or the one valid at a time (Kafka's ``VersionedKeyQuery``)."""

    _key: Any
    _as_of: int | None = None

    @staticmethod
    def with_key(key: Any) -> VersionedKeyQuery:
        """The latest version of ``key``.

        Raises:
            InvalidOptionError: ``key`` is None.
        """
        return VersionedKeyQuery(not_none(key, "Key can not be null."))

    def as_of(self, as_of_timestamp: Any) -> VersionedKeyQuery:
        """The version valid at ``as_of_timestamp`` (the latest one with timestamp <= it).

        Raises:
            InvalidOptionError: the timestamp is None or not epoch ms.
        """
        not_none(as_of_timestamp, "asOfTimestamp can not be null.")
        return replace(self, _as_of=instant_ms(as_of_timestamp, "as_of_timestamp"))

    def key(self) -> Any:
        """The key."""
        return self._key

    def as_of_timestamp(self) -> int | None:
        """The as-of time in epoch ms, or None for the latest version."""
        return self._as_of

    def _fields(self) -> list[tuple[str, str]]:
        return [("key", java(self._key)), ("asOfTimestamp", optional_instant(self._as_of))]


@dataclass(frozen=True, repr=False)
class MultiVersionedKeyQuery(Query):
    """Every version of a key in a time range (Kafka's ``MultiVersionedKeyQuery``, KIP-968)."""

    _key: Any
    _from: int | None = None
    _to: int | None = None
    _order: ResultOrder = ResultOrder.ANY

    @staticmethod
    def with_key(key: Any) -> MultiVersionedKeyQuery:
        """Every version of ``key``.

        Raises:
            InvalidOptionError: ``key`` is None.
        """
        return MultiVersionedKeyQuery(not_none(key, "key cannot be null."))

    def from_time(self, from_time: Any = _MISSING) -> Any:
        """With an argument, the query from that time (None: unbounded); without, the bound.

        Kafka overloads ``fromTime(Instant)`` (builder) and ``fromTime()`` (accessor).

        Raises:
            InvalidOptionError: the time is not epoch ms.
        """
        if from_time is _MISSING:
            return self._from
        start = None if from_time is None else instant_ms(from_time, "from_time")
        return replace(self, _from=start)

    def to_time(self, to_time: Any = _MISSING) -> Any:
        """With an argument, the query up to that time (None: unbounded); without, the bound.

        Raises:
            InvalidOptionError: the time is not epoch ms.
        """
        if to_time is _MISSING:
            return self._to
        return replace(self, _to=None if to_time is None else instant_ms(to_time, "to_time"))

    def with_ascending_timestamps(self) -> MultiVersionedKeyQuery:
        """Oldest version first."""
        return replace(self, _order=ResultOrder.ASCENDING)

    def with_descending_timestamps(self) -> MultiVersionedKeyQuery:
        """Newest version first."""
        return replace(self, _order=ResultOrder.DESCENDING)

    def key(self) -> Any:
        """The key."""
        return self._key

    def result_order(self) -> ResultOrder:
        """The requested order (``ANY`` is served newest first)."""
        return self._order

    def _fields(self) -> list[tuple[str, str]]:
        return [
            ("key", java(self._key)),
            ("fromTime", optional_instant(self._from)),
            ("toTime", optional_instant(self._to)),
            ("order", self._order.name),
        ]


@dataclass(frozen=True, repr=False)
class WindowKeyQuery(Query):
    """One key's windows by window start (Kafka's ``WindowKeyQuery``, KIP-806)."""

    _key: Any
    _time_from: int | None = None
    _time_to: int | None = None

    @staticmethod
    def with_key_and_window_start_range(key: Any, time_from: Any, time_to: Any) -> WindowKeyQuery:
        """Windows of ``key`` starting in ``[time_from, time_to]``.

        Raises:
            InvalidOptionError: ``key`` is None or a time is not epoch ms.
        """
        return WindowKeyQuery(
            not_none(key, "the key should not be null"),
            instant_ms(time_from, "time_from"),
            instant_ms(time_to, "time_to"),
        )

    def get_key(self) -> Any:
        """The key."""
        return self._key

    def get_time_from(self) -> int | None:
        """Lower window-start bound (inclusive)."""
        return self._time_from

    def get_time_to(self) -> int | None:
        """Upper window-start bound (inclusive)."""
        return self._time_to

    def _fields(self) -> list[tuple[str, str]]:
        return _window_fields(java(self._key), self._time_from, self._time_to)


@dataclass(frozen=True, repr=False)
class _WindowRange(Query):
    _key: Any = None
    _time_from: int | None = None
    _time_to: int | None = None

    @classmethod
    def with_key(cls: type[W], key: Any) -> W:
        """Every session of ``key`` (answered by session stores only).

        Raises:
            InvalidOptionError: ``key`` is None.
        """
        return cls(not_none(key, "the key should not be null"))

    @classmethod
    def with_window_start_range(cls: type[W], time_from: Any, time_to: Any) -> W:
        """Every key's windows starting in ``[time_from, time_to]`` (window stores only).

        Raises:
            InvalidOptionError: a time is not epoch ms.
        """
        return cls(None, instant_ms(time_from, "time_from"), instant_ms(time_to, "time_to"))

    def _fields(self) -> list[tuple[str, str]]:
        return _window_fields(optional(self._key), self._time_from, self._time_to)


def _window_fields(key: str, time_from: int | None, time_to: int | None) -> list[tuple[str, str]]:
    return [
        ("key", key),
        ("timeFrom", optional_instant(time_from)),
        ("timeTo", optional_instant(time_to)),
    ]


W = TypeVar("W", bound=_WindowRange)


@dataclass(frozen=True, repr=False)
class WindowRangeQuery(_WindowRange):
    """Kafka's ``WindowRangeQuery``: a window-start range (window stores) or a key (sessions)."""

    def get_key(self) -> Any:
        """The key of a ``with_key`` query, else None."""
        return self._key

    def get_time_from(self) -> int | None:
        """Lower window-start bound of a ``with_window_start_range`` query, else None."""
        return self._time_from

    def get_time_to(self) -> int | None:
        """Upper window-start bound of a ``with_window_start_range`` query, else None."""
        return self._time_to


@dataclass(frozen=True, repr=False)
class TimestampedWindowKeyWithHeadersQuery(Query):
    """One key's windowed records with headers (Kafka's
    ``TimestampedWindowKeyWithHeadersQuery``, KIP-1356, Kafka 4.4): ``ReadOnlyRecord`` s keyed by
    ``Windowed``, from a ``TimestampedWindowStoreWithHeaders``."""

    _key: Any
    _time_from: int | None = None
    _time_to: int | None = None

    @staticmethod
    def with_key_and_window_start_range(
        key: Any, time_from: Any, time_to: Any
    ) -> TimestampedWindowKeyWithHeadersQuery:
        """Records of ``key`` whose window starts in ``[time_from, time_to]``.

        Raises:
            InvalidOptionError: ``key`` is None or a time is not epoch ms.
        """
        return TimestampedWindowKeyWithHeadersQuery(
            not_none(key, "the key should not be null"),
            instant_ms(time_from, "time_from"),
            instant_ms(time_to, "time_to"),
        )

    def key(self) -> Any:
        """The key."""
        return self._key

    def time_from(self) -> int | None:
        """Lower window-start bound (inclusive)."""
        return self._time_from

    def time_to(self) -> int | None:
        """Upper window-start bound (inclusive)."""
        return self._time_to

    def _fields(self) -> list[tuple[str, str]]:
        return _window_fields(java(self._key), self._time_from, self._time_to)


@dataclass(frozen=True, repr=False)
class TimestampedWindowRangeWithHeadersQuery(_WindowRange):
    """Kafka's ``TimestampedWindowRangeWithHeadersQuery`` (KIP-1356, Kafka 4.4): records with
    headers by window-start range (``TimestampedWindowStoreWithHeaders``) or by key
    (``SessionStoreWithHeaders``, stamped with the session end)."""

    def key(self) -> Any:
        """The key of a ``with_key`` query, else None."""
        return self._key

    def time_from(self) -> int | None:
        """Lower window-start bound, else None."""
        return self._time_from

    def time_to(self) -> int | None:
        """Upper window-start bound, else None."""
        return self._time_to


__all__ = [
    "KeyQuery",
    "MultiVersionedKeyQuery",
    "Query",
    "RangeQuery",
    "ResultOrder",
    "TimestampedKeyQuery",
    "TimestampedKeyWithHeadersQuery",
    "TimestampedRangeQuery",
    "TimestampedRangeWithHeadersQuery",
    "TimestampedWindowKeyWithHeadersQuery",
    "TimestampedWindowRangeWithHeadersQuery",
    "VersionedKeyQuery",
    "WindowKeyQuery",
    "WindowRangeQuery",
]
