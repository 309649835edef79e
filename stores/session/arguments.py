"""Argument binding of the session stores' overloaded methods (Kafka's ``put``, ``remove``,
``findSessions``, ``fetch`` overloads, told apart by count and names) and their key and
session checks.
"""

from __future__ import annotations

from typing import Any

from stores.checks import checked_bytes as _key
from stores.checks import checked_long as _long
from stores.errors import InvalidOptionError
from stores.records import Windowed


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
