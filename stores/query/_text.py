"""Kafka's string forms (Java's ``toString``) for positions, results and queries.

Kafka's tests and users match on these strings (``Position{position={topic={0=1}}}``,
``WindowRangeQuery{key=Optional[2], timeFrom=Optional.empty, timeTo=Optional.empty}``), so the
query package renders its objects as Java would.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def java(value: Any) -> str:
    """``value`` as Java's ``String.valueOf`` shows it: ``null``, ``{k=v}``, ``[a, b]``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "{" + ", ".join(f"{java(k)}={java(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(java(item) for item in value) + "]"
    return str(value)


def optional(value: Any) -> str:
    """Java's ``Optional.toString``."""
    return "Optional.empty" if value is None else f"Optional[{java(value)}]"


def instant(millis: int | None) -> str:
    """Epoch ms as Java's ``Instant.toString`` (ISO-8601, UTC, ms shown only when non-zero)."""
    if millis is None:
        return "null"
    try:
        when = _EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError:
        return f"{millis}ms"  # beyond Python's datetime range; Java would print a huge year
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        text += f".{when.microsecond // 1000:03d}"
    return text + "Z"


def optional_instant(millis: int | None) -> str:
    """Java's ``Optional<Instant>.toString``."""
    return "Optional.empty" if millis is None else f"Optional[{instant(millis)}]"


def java_class(cls: type) -> str:
    """Java's ``Class.toString``: ``class`` and the qualified name."""
    return f"class {cls.__module__}.{cls.__qualname__}"
