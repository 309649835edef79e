"""Argument binding of the session stores' overloaded methods (Kafka's ``put``, ``remove``,
``findSessions``, ``fetch`` overloads, told apart by count and names), their key and session
checks, and the checks of the stores' parameters.
"""

from __future__ import annotations

from typing import Any

from stores.checks import checked_bytes as _key
from stores.checks import checked_long as _long
from stores.errors import InvalidOptionError
from stores.records import Windowed
from stores.session.format import MAX_LONG


def _count(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return len(args) + len(kwargs)


def _bind(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], names: tuple[str, ...]
) -> tuple[Any, ...]:
    """Bind positional and keyword arguments to one overload's parameter names."""
    if len(args) > len(names):
        raise InvalidOptionError(f"{method}() takes {_signature(names)}, got {len(args)} arguments")
    bound = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in names or name in bound:
            raise InvalidOptionError(
                f"{method}() got an unexpected or repeated argument {name!r}; "
                f"accepted: {_signature(names)}"
            )
        bound[name] = value
    missing = [name for name in names if name not in bound]
    if missing:
        raise InvalidOptionError(
            f"{method}() is missing {', '.join(missing)}; takes {_signature(names)}"
        )
    return tuple(bound[name] for name in names)


def _signature(names: tuple[str, ...]) -> str:
    return "(" + ", ".join(names) + ")"


def _optional_key(key: Any, name: str) -> bytes | None:
    return None if key is None else _key(key, name)


def _session(key: Any, start: Any, end: Any) -> tuple[bytes, int, int]:
    key = _key(key, "key")
    start = _long(start, "start", 0)
    end = _long(end, "end", 0)
    if end < start:
        raise InvalidOptionError(f"end ({end}) must not be before start ({start})")
    return key, start, end


def _windowed(session_key: Any) -> tuple[bytes, int, int]:
    if not isinstance(session_key, Windowed):
        raise InvalidOptionError(
            f"session_key must be a Windowed, got {type(session_key).__name__}"
        )
    return _session(session_key.key, session_key.window.start, session_key.window.end)


def _search_arguments(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, times: bool
) -> tuple[bytes | None, bytes | None, int, int, bool]:
    """``(key_from, key_to, earliest_session_end, latest_session_start, single key)`` of a
    ``find_sessions`` call (``times``) or of a ``fetch`` call (every session: no times)."""
    count = 3 if times else 1
    if _count(args, kwargs) == count and "key_from" not in kwargs and "key_to" not in kwargs:
        names = ("key", "earliest_session_end", "latest_session_start")[:count]
        key, *bounds = _bind(method, args, kwargs, names)
        key = _key(key, "key")
        earliest, latest = _times(*bounds) if times else (0, MAX_LONG)
        return key, key, earliest, latest, True
    names = ("key_from", "key_to", "earliest_session_end", "latest_session_start")[: count + 1]
    key_from, key_to, *bounds = _bind(method, args, kwargs, names)
    key_from = _optional_key(key_from, "key_from")
    key_to = _optional_key(key_to, "key_to")
    earliest, latest = _times(*bounds) if times else (0, MAX_LONG)
    return key_from, key_to, earliest, latest, False


def _times(earliest: Any, latest: Any) -> tuple[int, int]:
    return _long(earliest, "earliest_session_end"), _long(latest, "latest_session_start")


def _configure(retention_ms: Any, segment_interval_ms: Any) -> tuple[int, int | None]:
    """Checked ``(retention, segment interval)``; the interval is None if not given (the store
    picks Kafka's default)."""
    retention = _long(retention_ms, "retention_ms", 0)
    if segment_interval_ms is None:
        return retention, None
    interval = _long(segment_interval_ms, "segment_interval_ms", 0)
    if interval < 1:
        raise InvalidOptionError(f"segment_interval_ms must be at least 1, got {interval}")
    return retention, interval
