"""The bulk paths the window and session stores share (``put_columns``, ``scan_columns``).

Each kind's lookups object (:class:`stores.window.lookups.WindowLookups`,
:class:`stores.session.lookups.SessionLookups`) lays out its own keys and values; this module
holds what is the same for both: checking the columns, staging them as one atomic
``put_many`` with Kafka's expired-segment warning, and turning raw scan batches into column
batches that end quietly once their store closes (as the stores' iterators do).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from stores.checks import MIN_LONG, checked_long
from stores.columns.arguments import (
    check_same_length,
    checked_bytes_column,
    checked_long_column,
    checked_optional_bytes_column,
)
from stores.errors import InvalidOptionError
from stores.segments.dropped import dropped as tell_dropped
from stores.segments.store import SegmentedBytesStore

#: Raw scan batches of a segmented layer: ``(store keys, stored values)`` lists.
RawBatches = Iterator[tuple[list[bytes], list[bytes]]]
#: A kind's decoding of one raw batch into its column lists, or None if no row is kept.
BatchDecoder = Callable[[list[bytes], list[bytes]], tuple[list[Any], ...] | None]
#: A time column of ``put_columns``: its items, its name, its minimum.
TimeColumn = tuple[Sequence[Any], str, int]


@dataclass(frozen=True)
class CheckedColumns:
    """The columns of one ``put_columns`` call, checked: keys, values, the time columns in the
    order given, and headers (None if not given)."""

    keys: list[bytes]
    values: list[bytes | None]
    times: list[list[int]]
    headers: list[bytes | None] | None


def checked_columns(
    store_name: str,
    keys: Sequence[Any],
    values: Sequence[Any],
    times: Sequence[TimeColumn],
    headers: Sequence[Any] | None,
    *,
    takes_headers: bool,
) -> CheckedColumns:
    """The columns of ``put_columns``, checked in the order the stores always checked them.

    Raises:
        InvalidOptionError: ``headers`` given to a store without headers, columns of different
            lengths, or an item of a wrong type or range.
    """
    if headers is not None and not takes_headers:
        raise InvalidOptionError(
            f"a {store_name} keeps no headers: pass headers=None to put_columns"
        )
    extra = [] if headers is None else [headers]
    check_same_length("put_columns", [keys, values, *(column for column, _, _ in times), *extra])
    return CheckedColumns(
        checked_bytes_column(keys, "keys"),
        checked_optional_bytes_column(values, "values"),
        [checked_long_column(column, name, minimum) for column, name, minimum in times],
        None if headers is None else checked_optional_bytes_column(headers, "headers"),
    )


class SegmentedLookups:
    """Bulk puts and scans over one store's segmented layer.

    Args:
        segments: the store's segmented layer (its ``db`` is the store's bytes store).
        alive: whether the store is still open (scans end quietly once it is not).
        log: the store's logger (the bulk put warns there, as the store's ``put`` does).
    """

    def __init__(
        self,
        segments: SegmentedBytesStore,
        *,
        alive: Callable[[], bool],
        log: logging.Logger,
    ) -> None:
        self.segments = segments
        self.alive = alive
        self.log = log

    def put(
        self,
        keys: list[bytes],
        raws: list[bytes | None],
        times: list[int],
        suffixes: list[bytes],
        meta: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        """Stage ``put_many`` of the rows (and ``meta`` rows in the metadata family) as one
        atomic operation; warn as Kafka does if rows fell in expired segments."""
        segments = self.segments
        with segments.db.operation():
            for key, value in meta:
                segments.db.put(key, value, segments.meta_cf)
            dropped = segments.put_many(keys, raws, times, key_suffixes=suffixes)
        tell_dropped(self.log, dropped)

    def scan(
        self, batches: RawBatches, decode: BatchDecoder
    ) -> Generator[tuple[list[Any], ...], None, None]:
        """``decode`` of each raw batch, skipping batches it keeps nothing of; ends quietly
        once the store closes, and closes ``batches`` (its RocksDB iterator) when done."""
        try:
            while self.alive():
                batch = next(batches, None)
                if batch is None:
                    return
                columns = decode(*batch)
                if columns is not None:
                    yield columns
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()


def checked_batch_rows(batch_rows: Any) -> int:
    """``batch_rows`` of ``scan_columns``.

    Raises:
        InvalidOptionError: not a positive integer.
    """
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InvalidOptionError(f"batch_rows must be a positive integer, got {batch_rows!r}")
    return batch_rows


def checked_time_bound(value: Any, name: str, *, unit: str = "epoch milliseconds") -> int | None:
    """A ``time_from`` / ``time_to`` bound of ``scan_columns`` (None: open).

    Raises:
        InvalidOptionError: not an integer.
    """
    return None if value is None else checked_long(value, name, MIN_LONG, unit=unit)


def kept(indices: list[int], *columns: list[Any]) -> list[list[Any]]:
    """``columns`` reduced to the rows at ``indices``."""
    return [[column[i] for i in indices] for column in columns]


__all__ = [
    "BatchDecoder",
    "CheckedColumns",
    "RawBatches",
    "SegmentedLookups",
    "TimeColumn",
    "checked_batch_rows",
    "checked_columns",
    "checked_time_bound",
    "kept",
]
