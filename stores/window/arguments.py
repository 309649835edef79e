"""Argument binding of the window stores' overloaded ``fetch`` methods (Kafka's overloads,
told apart by their number of arguments) and the checks of the stores' parameters.
"""

from __future__ import annotations

from typing import Any

from stores.checks import checked_long
from stores.errors import InvalidOptionError

_FORMS = {
    2: ("single", ("key", "time")),
    3: ("key", ("key", "time_from", "time_to")),
    4: ("range", ("key_from", "key_to", "time_from", "time_to")),
}


def _bind(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, single_allowed: bool
) -> tuple[str, dict[str, Any]]:
    """``(form, arguments by name)`` of a ``fetch`` call: Kafka's overloads by argument count.
    """
    count = len(args) + len(kwargs)
    if count not in _FORMS or (count == 2 and not single_allowed):
        accepted = "2, 3 or 4" if single_allowed else "3 or 4"
        raise TypeError(f"{name}() takes {accepted} arguments, got {count}")
    form, names = _FORMS[count]
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in bound:
            raise TypeError(f"{name}() got an unexpected or repeated argument {key!r}")
        bound[key] = value
    return form, bound


def _configure(
    retention_ms: Any, window_size_ms: Any, retain_duplicates: Any, segment_interval_ms: Any
) -> tuple[int, int, bool, int | None]:
    """Checked ``(retention, window size, retain duplicates, segment interval)``; the interval
    is None if not given (the store picks Kafka's default)."""
    retention = _long(retention_ms, "retention_ms")
    size = _long(window_size_ms, "window_size_ms")
    if not isinstance(retain_duplicates, bool):
        raise InvalidOptionError(
            f"retain_duplicates must be a bool, got {type(retain_duplicates).__name__}"
        )
    interval = None
    if segment_interval_ms is not None:
        interval = _long(segment_interval_ms, "segment_interval_ms")
        if interval < 1:
            raise InvalidOptionError(
                f"segment_interval_ms cannot be zero or negative, got {interval}"
            )
    if size > retention:
        raise InvalidOptionError(
            "retention_ms must be no smaller than window_size_ms: "
            f"got window_size_ms={size}, retention_ms={retention}"
        )
    return retention, size, retain_duplicates, interval


def _long(value: Any, name: str, minimum: int = 0) -> int:
    return checked_long(value, name, minimum, unit="ms")
