"""Durations and instants: parsing them from options and arguments, and writing durations.

Timestamps are epoch milliseconds inside; :func:`instant_ms` is the one parser of instants
(option text, and the Python API's ints, datetimes and ISO-8601 strings).
"""

from __future__ import annotations

import datetime as dt
import operator
import re
from typing import Any

from stores.checks import MAX_LONG, MIN_LONG
from stores.errors import InvalidOptionError

_UNITS_MS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
    "w": 604_800_000, "week": 604_800_000, "weeks": 604_800_000,
}  # fmt: skip
_HUMAN = re.compile(r"(\d+)\s*([a-z]+)")
#: Epoch milliseconds as an option's text (``str.isdigit`` digits, as ``int`` reads them).
_EPOCH_MS = re.compile(r"-?\d+")
_ISO = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d{1,3})?)S)?)?"
)


def parse_duration_ms(text: str, option: str) -> int:
    """Parse ``"30 days"``, ``"1h 30m"``, ``"PT5M"`` or plain milliseconds (``"300000"``).

    Raises:
        InvalidOptionError: the text is not a non-negative duration (names ``option``).
    """
    s = text.strip().lower()
    if re.fullmatch(r"\d+", s):
        return int(s)
    iso = _ISO.fullmatch(text.strip().upper())
    if iso and any(iso.groupdict().values()):
        g = {k: v or "0" for k, v in iso.groupdict().items()}
        return (
            int(g["d"]) * 86_400_000
            + int(g["h"]) * 3_600_000
            + int(g["m"]) * 60_000
            + round(float(g["s"]) * 1000)
        )
    parts = _HUMAN.findall(s)
    if parts and _HUMAN.sub("", s).replace(",", "").strip() == "":
        total = 0
        for number, unit in parts:
            if unit not in _UNITS_MS:
                break
            total += int(number) * _UNITS_MS[unit]
        else:
            return total
    raise InvalidOptionError(
        f"option {option!r} has value {text!r}, which is not a duration; "
        "accepted: milliseconds ('300000'), '<n> <unit>' with unit ms|s|min|h|days|weeks "
        "('30 days', '1h 30min'), or ISO-8601 ('PT5M')"
    )


def format_duration_ms(ms: int) -> str:
    """A duration as a person writes it and ``parse_duration_ms`` reads it back:
    ``86400000`` -> ``"1 day"``, ``5400000`` -> ``"1h 30min"``, ``250`` -> ``"250 ms"``."""
    if ms % 86_400_000 == 0 and ms:
        days = ms // 86_400_000
        return f"{days} day" if days == 1 else f"{days} days"
    parts = []
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size:
            parts.append(f"{ms // size}{unit}")
            ms %= size
    if ms or not parts:
        parts.append(f"{ms} ms" if not parts else f"{ms}ms")
    return " ".join(parts)


def instant_ms(value: Any, name: str, *, from_option: bool = False) -> int:
    """Epoch milliseconds of an instant: the one parser of instants, for two kinds of caller
    whose rules differ on purpose (each kept as its callers have always had it).

    - ``from_option=False``, a value of the Python API (the query classes, ``to_arrow``):
      epoch ms as an int (a Java long), an aware ``datetime``, or an ISO-8601 string with a
      zone (``'Z'`` or an offset). A string is ISO-8601 only: digits alone are refused, as is a
      lowercase ``'z'``; naive times are refused as "naive datetime".
    - ``from_option=True``, the text of an option or command-line flag (``parse_instant_ms``):
      epoch ms as digits (optionally negative), or ISO-8601 with a zone (``'Z'``, ``'z'`` or an
      offset). Messages name the option (``option 'asOfTimestamp' has value ...``).

    Floors to the millisecond, as Kafka truncates an ``Instant`` to millis.

    Args:
        value: the instant.
        name: the argument or option it was given as (messages name it).
        from_option: whether ``value`` is an option's text (the second set of rules).

    Raises:
        InvalidOptionError: not an instant under the rules, a time without a zone, or an int
            outside a Java long.
    """
    if isinstance(value, str):
        text = value.strip()
        if from_option and _EPOCH_MS.fullmatch(text):
            return int(text)
        iso = text.replace("Z", "+00:00")
        if from_option:
            iso = iso.replace("z", "+00:00")
        try:
            parsed = dt.datetime.fromisoformat(iso)
        except ValueError:
            raise InvalidOptionError(_not_an_instant(value, name, from_option)) from None
        if from_option and parsed.tzinfo is None:
            raise InvalidOptionError(
                f"option {name!r} has value {value!r} without a time zone; add one "
                "('Z' or '+02:00') so that the instant is unambiguous"
            )
        value = parsed
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise InvalidOptionError(
                f"{name} is a naive datetime (or an ISO time without a zone); give epoch ms or "
                "a timezone-aware time"
            )
        return datetime_to_ms(value)
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidOptionError(
            f"{name} must be epoch ms (int), an aware datetime or an ISO-8601 string with a "
            f"zone, got {type(value).__name__}"
        )
    number = operator.index(value)
    if not MIN_LONG <= number <= MAX_LONG:
        raise InvalidOptionError(f"{name} must fit in a signed 64-bit long, got {number}")
    return number


def parse_instant_ms(text: str, option: str) -> int:
    """Parse an option's instant: ISO-8601 with a zone (``2024-05-01T12:00:00Z``) or epoch
    milliseconds (:func:`instant_ms` with ``from_option=True``).

    Raises:
        InvalidOptionError: unparsable, or a date-time without a zone (names ``option``).
    """
    return instant_ms(text, option, from_option=True)


def _not_an_instant(text: str, name: str, from_option: bool) -> str:
    if from_option:
        return (
            f"option {name!r} has value {text!r}, which is not a timestamp; accepted: "
            "ISO-8601 with a zone ('2024-05-01T12:00:00Z', '2024-05-01 14:00:00+02:00') "
            "or epoch milliseconds ('1714564800000')"
        )
    return f"{name} is {text!r}, not an ISO-8601 time; give e.g. '2024-05-01T10:30:00Z'"


def datetime_to_ms(value: dt.datetime) -> int:
    """Epoch milliseconds of an aware datetime (floor, as Kafka truncates to millis)."""
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000
