"""Kafka's ``OrderedBytes``: the binary bounds a window or session store scans for a key range.

A key range read (Kafka's ``AbstractRocksDBSegmentedBytesStore.fetch(keyFrom, keyTo, from,
to)``) scans, in each segment, the store keys between ``lowerRange(keyFrom)`` and
``upperRange(keyTo)`` (both inclusive, a null key an open bound) and keeps the rows its
``HasNextCondition`` accepts. Keys have variable length and the time suffix follows them, so a
row of a key inside ``[keyFrom, keyTo]`` can sort outside those bounds: Kafka never sees it, and
neither must we. Kafka's accident, kept: for instance a window store holding key ``b""`` at
window starts 0 and 1 answers ``fetch(None, b"\\x00", 0, 1)`` with the window at 0 only, as the
upper bound ``00 + [1 (8)][MAX_INT (4)]`` sorts below the row ``[1 (8)][0 (4)]``.
"""

from __future__ import annotations

#: ``OrderedBytes.MIN_KEY_LENGTH``: ``upperRange`` assumes keys of at least one byte.
MIN_KEY_LENGTH = 1


def upper_range(key: bytes, max_suffix: bytes) -> bytes:
    """Kafka's ``OrderedBytes.upperRange(key, maxSuffix)``, byte for byte.

    With a first suffix byte of 0 it is ``key + max_suffix``; otherwise the first byte of
    ``key`` and then its bytes while they are ``>=`` the first suffix byte, then ``max_suffix``.
    """
    first = max_suffix[0]
    if first == 0:
        return key + max_suffix
    i = min(MIN_KEY_LENGTH, len(key))
    while i < len(key) and key[i] >= first:
        i += 1
    return key[:i] + max_suffix


def lower_range(key: bytes, min_suffix: bytes) -> bytes:
    """Kafka's ``OrderedBytes.lowerRange(key, minSuffix)``: ``key + min_suffix``."""
    return key + min_suffix


__all__ = ["MIN_KEY_LENGTH", "lower_range", "upper_range"]
