"""Parsing of durations and instants given as option strings."""

from __future__ import annotations

import datetime as dt
import re

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


def parse_instant_ms(text: str, option: str) -> int:
    """Parse an instant: ISO-8601 with a zone (``2024-05-01T12:00:00Z``) or epoch milliseconds.

    Raises:
        InvalidOptionError: unparsable, or a date-time without a zone (names ``option``).
    """
    s = text.strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    try:
        parsed = dt.datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None:
        raise InvalidOptionError(
            f"option {option!r} has value {text!r}, which is not a timestamp; accepted: "
            "ISO-8601 with a zone ('2024-05-01T12:00:00Z', '2024-05-01 14:00:00+02:00') "
            "or epoch milliseconds ('1714564800000')"
        )
    if parsed.tzinfo is None:
        raise InvalidOptionError(
            f"option {option!r} has value {text!r} without a time zone; add one "
            "('Z' or '+02:00') so that the instant is unambiguous"
        )
    return datetime_to_ms(parsed)


def datetime_to_ms(value: dt.datetime) -> int:
    """Epoch milliseconds of an aware datetime (floor, as Kafka truncates to millis)."""
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000
