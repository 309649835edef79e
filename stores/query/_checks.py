"""Argument checks shared by the query modules (Kafka's null checks); instants are parsed by
:func:`stores.time.instant_ms`."""

from __future__ import annotations

import operator
from typing import Any

from stores.errors import InvalidOptionError


def not_none(value: Any, message: str) -> Any:
    if value is None:
        raise InvalidOptionError(message)
    return value


def as_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidOptionError(f"{name} must be an int, got {type(value).__name__}")
    return operator.index(value)


def as_topic(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidOptionError(f"topic must be a str, got {type(value).__name__}")
    return value
