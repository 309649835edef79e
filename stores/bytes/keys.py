"""Byte-key arithmetic the stores share over a bytes store, whose ranges are ``[start, end)``
in byte order."""

from __future__ import annotations


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest key greater than every key starting with ``prefix`` (None if unbounded):
    the exclusive end of a prefix scan."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])


__all__ = ["prefix_end"]
