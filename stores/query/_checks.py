"""Argument checks shared by the query modules (Kafka's null and ``Instant`` checks)."""

from __future__ import annotations

import datetime as dt
import operator
from typing import Any

from stores.errors import InvalidOptionError

MIN_LONG, MAX_LONG = -(2**63), 2**63 - 1


def not_none(value: Any, message: str) -> Any:
    if value is None:
        raise InvalidOptionError(message)
    return value


def millis(value: Any, name: str) -> int:
    """Epoch ms from an int, an aware datetime (Kafka takes an ``Instant``) or an ISO-8601
    string with a zone (``"2024-05-01T10:30:00Z"``)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidOptionError(
                f"{name} is {value!r}, not an ISO-8601 time; give e.g. '2024-05-01T10:30:00Z'"
            ) from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise InvalidOptionError(
                f"{name} is a naive datetime (or an ISO time without a zone); give epoch ms or "
                "a timezone-aware time"
            )
        delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return delta // dt.timedelta(milliseconds=1)
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidOptionError(
            f"{name} must be epoch ms (int), an aware datetime or an ISO-8601 string with a "
            f"zone, got {type(value).__name__}"
        )
    number = operator.index(value)
    if not MIN_LONG <= number <= MAX_LONG:
        raise InvalidOptionError(f"{name} must fit in a signed 64-bit long, got {number}")
    return number


def as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidOptionError(f"{name} must be an int, got {type(value).__name__}")
    return operator.index(value)


def as_topic(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidOptionError(f"topic must be a str, got {type(value).__name__}")
    return value
