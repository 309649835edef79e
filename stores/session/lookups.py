"""The bulk column paths of the session stores (``put_columns``, ``scan_columns``): a
collaborator of :class:`stores.session.store._SessionStoreBase`, which checks that it is open,
hands the columns over and tracks the scans it returns; what the window and session paths
share is :mod:`stores.segments.lookups`.

Bulk paths (the catalog's materialization and Spark scans, no Python object per row):

- ``put_columns(keys, values, starts, ends, headers=None)`` has exactly the effect of
  ``put(keys[i], starts[i], ends[i], value)`` called row by row in order (values as bytes or
  None; ``headers`` KIP-1271 ``headersBytes`` of a header-aware store, stored as given), staged
  as one atomic batch.
- ``scan_columns(batch_rows=65536, time_from=None, time_to=None)`` yields ``(keys, values,
  starts, ends[, headersBytes])`` lists in ``all()`` order, optionally only the sessions whose
  *start* lies in ``[time_from, time_to]`` (None: open; the catalog's window-start filter).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from typing import Any

from stores.errors import InvalidOptionError
from stores.segments.lookups import (
    BatchDecoder,
    SegmentedLookups,
    checked_batch_rows,
    checked_columns,
    checked_time_bound,
    kept,
)
from stores.segments.store import SegmentedBytesStore
from stores.session.format import (
    MAX_LONG,
    SessionValueFormat,
    decode_session_key_column,
    session_key_suffixes,
)


class SessionLookups:
    """``put_columns`` and ``scan_columns`` of one session store, in its value format.

    Args:
        segments: the store's segmented layer.
        fmt: the store's value format.
        store_name: the store's class name (for messages).
        alive: whether the store is still open (scans end quietly once it is not).
    """

    def __init__(
        self,
        segments: SegmentedBytesStore,
        fmt: SessionValueFormat,
        *,
        store_name: str,
        alive: Callable[[], bool],
    ) -> None:
        # The session store's logger: the bulk path warns as ``put`` does.
        self._bulk = SegmentedLookups(
            segments, alive=alive, log=logging.getLogger("stores.session.store")
        )
        self._format = fmt
        self._store_name = store_name

    def put_columns(
        self,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        starts: Sequence[int],
        ends: Sequence[int],
        headers: Sequence[bytes | None] | None = None,
    ) -> None:
        """The store's ``put_columns`` (:meth:`stores.session.store.SessionStore.put_columns`).

        Raises:
            InvalidOptionError: the columns differ in length, ``headers`` is given to a store
                without headers, or an item has a wrong type or range (nothing is written).
        """
        columns = checked_columns(
            self._store_name,
            keys,
            values,
            [(starts, "starts", 0), (ends, "ends", 0)],
            headers,
            takes_headers=self._format.headers,
        )
        start_list, end_list = columns.times
        for start, end in zip(start_list, end_list):
            if end < start:
                raise InvalidOptionError(f"end ({end}) must not be before start ({start})")
        raws = self._format.encode_columns(columns.values, columns.headers)
        suffixes = session_key_suffixes(start_list, end_list)
        self._bulk.put(columns.keys, raws, end_list, suffixes)

    def scan_columns(
        self,
        batch_rows: int = 1 << 16,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Generator[tuple[list[Any], ...], None, None]:
        """The store's ``scan_columns`` (:meth:`stores.session.store.SessionStore.scan_columns`).

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer, or a time bound is
                not an integer.
        """
        batch_rows = checked_batch_rows(batch_rows)
        low = checked_time_bound(time_from, "time_from")
        high = checked_time_bound(time_to, "time_to")
        segments = self._bulk.segments
        earliest_end = segments.actual_from(0)
        # A session starting at or after ``low`` ends there too: older segments can be skipped.
        batches = segments.scan_columns(
            max(earliest_end, 0 if low is None else low), MAX_LONG,
            batch_rows=batch_rows, key_order=True,
        )  # fmt: skip
        return self._bulk.scan(batches, self._decoder(earliest_end, low, high))

    def _decoder(
        self, earliest_end: int, low: int | None, high: int | None
    ) -> BatchDecoder:
        decode = self._format.decode_columns

        def columns(binaries: list[bytes], raws: list[bytes]) -> tuple[list[Any], ...] | None:
            keys, starts, ends = decode_session_key_column(binaries)
            if (
                min(ends) < earliest_end
                or (low is not None and min(starts) < low)
                or (high is not None and max(starts) > high)
            ):
                keep = [
                    i
                    for i, (start, end) in enumerate(zip(starts, ends))
                    if end >= earliest_end
                    and (low is None or start >= low)
                    and (high is None or start <= high)
                ]
                if not keep:
                    return None
                keys, starts, ends, raws = kept(keep, keys, starts, ends, raws)
            values, *rest = decode(raws)
            return (keys, values, starts, ends, *rest)

        return columns
