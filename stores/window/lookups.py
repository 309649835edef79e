"""The bulk column paths of the window stores (``put_columns``, ``scan_columns``): a
collaborator of :class:`stores.window.store._WindowStoreBase`, which checks that it is open and
hands the columns over; what the window and session paths share is
:mod:`stores.segments.lookups`.

Bulk paths (the catalog's materialization and Spark scans, no Python object per row):

- ``put_columns(keys, values, window_starts, timestamps=None, headers=None)`` has exactly the
  effect of ``put`` called row by row in order (values as bytes or None; ``timestamps`` the
  ints of a timestamped store's ``ValueAndTimestamp``; ``headers`` KIP-1271 ``headersBytes``
  of a header-aware store, stored as given), staged as one atomic batch. Expired rows are
  dropped as ``put`` drops them, with one warning per call giving their number.
- ``scan_columns(batch_rows=65536, time_from=None, time_to=None)`` yields ``(keys, values,
  window_starts, window_ends[, timestamps][, headersBytes])`` lists in the order of ``all()``
  (no time bounds) or ``fetch_all(time_from, time_to)`` (a None bound is open).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from stores.checks import MIN_LONG
from stores.errors import InvalidOptionError
from stores.segments.lookups import (
    BatchDecoder,
    SegmentedLookups,
    TimeColumn,
    checked_batch_rows,
    checked_columns,
    checked_time_bound,
    kept,
)
from stores.segments.store import PREFIX_SIZE, SEGMENTS_META_CF, SegmentedBytesStore
from stores.window.format import (
    MAX_LONG,
    MAX_SEQNUM,
    SEQNUM_KEY,
    WindowValueFormat,
    decode_seqnum,
    decode_window_key_column,
    encode_seqnum,
    window_key_suffixes,
)


class WindowLookups:
    """``put_columns`` and ``scan_columns`` of one window store, in its value format.

    Args:
        segments: the store's segmented layer.
        fmt: the store's value format.
        window_size_ms: the store's window size (a window's end is its start plus it).
        retain_duplicates: whether every put takes its own sequence number.
        alive: whether the store is still open (scans end quietly once it is not).
    """

    def __init__(
        self,
        segments: SegmentedBytesStore,
        fmt: WindowValueFormat,
        *,
        window_size_ms: int,
        retain_duplicates: bool,
        alive: Callable[[], bool],
    ) -> None:
        # The window store's logger: the bulk path warns as ``put`` does.
        self._bulk = SegmentedLookups(
            segments, alive=alive, log=logging.getLogger("stores.window.store")
        )
        self._format = fmt
        self._window_size = window_size_ms
        self._dups = retain_duplicates

    def put_columns(
        self,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        window_starts: Sequence[int],
        timestamps: Sequence[int] | None = None,
        headers: Sequence[bytes | None] | None = None,
    ) -> None:
        """The store's ``put_columns`` (:meth:`stores.window.store.WindowStore.put_columns`).

        Raises:
            InvalidOptionError: the columns differ in length, a column is given that the store
                does not take (or a required one is missing), or an item has a wrong type or
                range (nothing is written).
        """
        fmt = self._format
        if fmt.timestamped:
            if timestamps is None:
                raise InvalidOptionError(f"a {fmt.name} needs timestamps in put_columns")
        elif timestamps is not None:
            raise InvalidOptionError(
                f"a {fmt.name} keeps no timestamps: pass timestamps=None to put_columns"
            )
        times: list[TimeColumn] = [(window_starts, "window_starts", 0)]
        if timestamps is not None:
            times.append((timestamps, "timestamps", MIN_LONG))
        columns = checked_columns(
            fmt.name, keys, values, times, headers, takes_headers=fmt.headers
        )
        key_list = columns.keys
        starts, *rest = columns.times
        stamps = rest[0] if rest else None
        raws = fmt.encode_columns(columns.values, stamps, columns.headers)
        seqnums: list[int] | None = None
        meta: list[tuple[bytes, bytes]] = []
        if self._dups:
            # Kafka: a delete is not supported for duplicates; such a put is a no-op.
            keep = [i for i, raw in enumerate(raws) if raw is not None]
            if len(keep) < len(raws):
                key_list, starts, raws = kept(keep, key_list, starts, raws)
            db = self._bulk.segments.db
            first = decode_seqnum(db.get(SEQNUM_KEY, SEGMENTS_META_CF)) + 1
            seqnums = [(first + i) & MAX_SEQNUM for i in range(len(raws))]
            if seqnums:
                meta.append((SEQNUM_KEY, encode_seqnum(seqnums[-1])))
        suffixes = window_key_suffixes(starts, seqnums)
        self._bulk.put(key_list, raws, starts, suffixes, meta)

    def scan_columns(
        self,
        batch_rows: int = 1 << 16,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Iterator[tuple[list[Any], ...]]:
        """The store's ``scan_columns`` (:meth:`stores.window.store.WindowStore.scan_columns`).

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer, or a time bound is
                not an integer.
        """
        batch_rows = checked_batch_rows(batch_rows)
        low = checked_time_bound(time_from, "time_from", unit="ms")
        high = checked_time_bound(time_to, "time_to", unit="ms")
        segments = self._bulk.segments
        actual_from = segments.actual_from(0 if low is None else low)
        high = MAX_LONG if high is None else high
        if high < actual_from:
            return iter(())
        batches = segments.scan_columns(actual_from, high, batch_rows=batch_rows, prefixed=True)
        return self._bulk.scan(batches, self._decoder(actual_from, high))

    def _decoder(
        self, low: int, high: int
    ) -> BatchDecoder:
        decode, size = self._format.decode_columns, self._window_size

        def columns(store_keys: list[bytes], raws: list[bytes]) -> tuple[list[Any], ...] | None:
            keys, starts = decode_window_key_column(store_keys, PREFIX_SIZE)
            if min(starts) < low or max(starts) > high:
                # Kafka's HasNextCondition: a live segment may hold older windows.
                keep = [i for i, start in enumerate(starts) if low <= start <= high]
                if not keep:
                    return None
                keys, starts, raws = kept(keep, keys, starts, raws)
            if max(starts) <= MAX_LONG - size:
                ends = [start + size for start in starts]
            else:
                ends = [min(start + size, MAX_LONG) for start in starts]
            values, *rest = decode(raws)
            return (keys, values, starts, ends, *rest)

        return columns
