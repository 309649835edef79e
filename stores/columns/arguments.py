"""Column lists for the bulk paths of the stores: the argument checks of their
``put_columns``, and the chunking and key-order merging of scan batches (as
:meth:`stores.segments.store.SegmentedBytesStore.scan_columns` merges its segments).
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from stores.checks import MAX_LONG, checked_bytes, checked_long, checked_optional_bytes
from stores.errors import InvalidOptionError

_OPTIONAL_BYTES = {bytes, type(None)}


# -- column checks (the bulk paths of the stores built on this layer) ---------------------------


def check_same_length(method: str, columns: Sequence[Sequence[Any]]) -> None:
    """Refuse columns of different lengths.

    Raises:
        InvalidOptionError: they differ (the message gives every length).
    """
    lengths = {len(column) for column in columns}
    if len(lengths) > 1:
        shown = ", ".join(str(len(column)) for column in columns)
        raise InvalidOptionError(f"{method} needs columns of one length, got {shown}")


def checked_bytes_column(items: Sequence[Any], name: str) -> list[bytes]:
    """``items`` as a list of bytes (the common all-bytes case costs one pass).

    Raises:
        InvalidOptionError: an item is not bytes-like.
    """
    if set(map(type, items)) <= {bytes}:
        return list(items)
    return [checked_bytes(item, f"an item of {name}") for item in items]


def checked_optional_bytes_column(items: Sequence[Any], name: str) -> list[bytes | None]:
    """``items`` as a list of bytes or None.

    Raises:
        InvalidOptionError: an item is neither bytes-like nor None.
    """
    if set(map(type, items)) <= _OPTIONAL_BYTES:
        return list(items)
    return [checked_optional_bytes(item, f"an item of {name}") for item in items]


def checked_long_column(items: Sequence[Any], name: str, minimum: int) -> list[int]:
    """``items`` as Java longs ``>= minimum`` (bools refused, as the per-row methods do).

    Raises:
        InvalidOptionError: an item is not an integer or out of range.
    """
    if set(map(type, items)) <= {int} and (
        not items or (min(items) >= minimum and max(items) <= MAX_LONG)
    ):
        return list(items)
    return [checked_long(item, f"an item of {name}", minimum, unit="ms") for item in items]


# -- scan batches ---------------------------------------------------------------------------------


def chunked(
    rows: Iterator[tuple[bytes, bytes]], batch_rows: int
) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """``(key, value)`` pairs as ``(keys, values)`` lists of up to ``batch_rows`` each."""
    while True:
        chunk = list(islice(rows, batch_rows))
        if not chunk:
            return
        yield [key for key, _ in chunk], [value for _, value in chunk]


def merge_columns(
    cursors: list[Iterator[tuple[list[bytes], list[bytes]]]], batch_rows: int
) -> Iterator[tuple[list[bytes], list[bytes]]]:
    """Merge column batches, each stream sorted by key, into key order (stable: on equal keys
    the earlier stream first).

    Each round takes, from every stream, the rows up to the smallest last key of the streams'
    current batches (none of them can be preceded by a row not yet read), sorts them (timsort
    merges the sorted runs) and emits them; at least one batch is used up per round.
    """
    heads: list[list[Any]] = []
    for cursor in cursors:
        batch = _next_batch(cursor)
        if batch is not None:
            heads.append([batch[0], batch[1], 0, cursor])
    while len(heads) > 1:
        frontier = min(head[0][-1] for head in heads)
        rows: list[tuple[bytes, bytes]] = []
        for head in heads:
            keys, values, pos, _ = head
            stop = bisect_right(keys, frontier, pos)
            rows.extend(zip(keys[pos:stop], values[pos:stop]))
            head[2] = stop
        rows.sort(key=operator.itemgetter(0))
        for start in range(0, len(rows), batch_rows):
            chunk = rows[start : start + batch_rows]
            yield [key for key, _ in chunk], [value for _, value in chunk]
        refilled = []
        for head in heads:
            keys, values, pos, cursor = head
            if pos < len(keys):
                refilled.append(head)
                continue
            batch = _next_batch(cursor)
            if batch is not None:
                refilled.append([batch[0], batch[1], 0, cursor])
        heads = refilled
    if heads:
        keys, values, pos, cursor = heads[0]
        if pos:
            keys, values = keys[pos:], values[pos:]
        yield keys, values
        yield from cursor


def _next_batch(
    cursor: Iterator[tuple[list[bytes], list[bytes]]],
) -> tuple[list[bytes], list[bytes]] | None:
    """The next non-empty batch of ``cursor``, or None at its end."""
    for batch in cursor:
        if batch[0]:
            return batch
    return None
