"""Argument checks shared by the stores: bytes keys and values, 64-bit timestamps.

Every store refuses bad arguments with ``InvalidOptionError`` naming the argument and what it
accepts (Kafka throws NullPointerException or IllegalArgumentException in the same places).
"""

from __future__ import annotations

import operator
from typing import Any

from stores.errors import InvalidOptionError

MIN_LONG = -(2**63)
MAX_LONG = 2**63 - 1


def checked_bytes(value: Any, name: str = "key") -> bytes:
    """``value`` as bytes (bytearray and memoryview are copied).

    Raises:
        InvalidOptionError: not bytes-like (None included).
    """
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if value is None:
        raise InvalidOptionError(f"{name} cannot be None: {name} must be bytes")
    raise InvalidOptionError(f"{name} must be bytes, got {type(value).__name__}")


def checked_optional_bytes(value: Any, name: str = "value") -> bytes | None:
    """``value`` as bytes, or None.

    Raises:
        InvalidOptionError: neither bytes-like nor None.
    """
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise InvalidOptionError(f"{name} must be bytes or None, got {type(value).__name__}")


def checked_long(
    value: Any, name: str, minimum: int = MIN_LONG, *, unit: str = "epoch milliseconds"
) -> int:
    """``value`` as a Java long in ``[minimum, 2**63-1]``.

    Raises:
        InvalidOptionError: not an integer (bools refused) or out of range.
    """
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidOptionError(f"{name} must be an integer ({unit}), got {type(value).__name__}")
    number = operator.index(value)
    if not minimum <= number <= MAX_LONG:
        low = "-2**63" if minimum == MIN_LONG else str(minimum)
        raise InvalidOptionError(f"{name} must be between {low} and 2**63-1, got {number}")
    return number


__all__ = ["MAX_LONG", "MIN_LONG", "checked_bytes", "checked_long", "checked_optional_bytes"]
