"""The bulk column paths of the session stores (``put_columns``, ``scan_columns``): a mixin of
:class:`stores.session.store._SessionStoreBase`, kept apart from the per-row API. Behaviour is
documented in :mod:`stores.session.store`.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import MIN_LONG
from stores.checks import checked_long as _long
from stores.errors import InvalidOptionError
from stores.segments import (
    SegmentedBytesStore,
    check_same_length,
    checked_bytes_column,
    checked_long_column,
    checked_optional_bytes_column,
)
from stores.session.format import (
    MAX_LONG,
    decode_session_key_column,
    session_key_suffixes,
)
from stores.window.lookups import EXPIRED_SEGMENT_WARNING

_log = logging.getLogger("stores.session.store")


class _SessionColumns:
    """``put_columns`` and ``scan_columns`` over the store's segmented layer; the value layout
    of the columns is the subclass's (``_HEADERS``, ``_encode_columns``, ``_decode_columns``)."""

    _segments: SegmentedBytesStore
    _db: RocksDBBytesStore
    _scans: weakref.WeakSet[Generator[Any, None, None]]

    if TYPE_CHECKING:

        @property
        def closed(self) -> bool: ...

        def _check_open(self) -> None: ...

    # -- value layout of the columns (subclasses) ----------------------------------------------

    #: Whether values carry headers (``put_columns`` takes ``headers``, scans yield them).
    _HEADERS: bool = False

    def _encode_columns(
        self, values: list[bytes | None], headers: list[bytes | None] | None
    ) -> list[bytes | None]:
        return values

    def _decode_columns(self, raws: list[bytes]) -> tuple[list[bytes], ...]:
        return (raws,)

    # -- bulk paths ----------------------------------------------------------------------------

    def put_columns(
        self,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        starts: Sequence[int],
        ends: Sequence[int],
        headers: Sequence[bytes | None] | None = None,
    ) -> None:
        """``put(keys[i], starts[i], ends[i], value)`` for each ``i`` in order, as one atomic
        batch: the bulk-load path.

        The effect is exactly that of the row-by-row puts: stream time advancing session by
        session, sessions of expired segments dropped, a None value removing the session.
        ``headers`` (header-aware stores only) are KIP-1271 ``headersBytes``, stored as given;
        None or empty is no headers.

        Raises:
            InvalidOptionError: the columns differ in length, ``headers`` is given to a store
                without headers, or an item has a wrong type or range (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        columns: list[Sequence[Any]] = [keys, values, starts, ends]
        if headers is not None:
            if not self._HEADERS:
                raise InvalidOptionError(
                    f"a {type(self).__name__} keeps no headers: pass headers=None to put_columns"
                )
            columns.append(headers)
        check_same_length("put_columns", columns)
        key_list = checked_bytes_column(keys, "keys")
        value_list = checked_optional_bytes_column(values, "values")
        start_list = checked_long_column(starts, "starts", 0)
        end_list = checked_long_column(ends, "ends", 0)
        for start, end in zip(start_list, end_list):
            if end < start:
                raise InvalidOptionError(f"end ({end}) must not be before start ({start})")
        header_list = None if headers is None else checked_optional_bytes_column(headers, "headers")
        raws = self._encode_columns(value_list, header_list)
        suffixes = session_key_suffixes(start_list, end_list)
        with self._db.operation():
            dropped = self._segments.put_many(key_list, raws, end_list, key_suffixes=suffixes)
        if dropped:
            _log.warning("%s (%d records)", EXPIRED_SEGMENT_WARNING, dropped)

    def scan_columns(
        self,
        batch_rows: int = 1 << 16,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Iterator[tuple[list[Any], ...]]:
        """Every live session, as ``(keys, values, starts, ends[, headersBytes])`` lists of up
        to ``batch_rows`` rows in ``all()`` order: the full-scan path.

        ``time_from`` / ``time_to`` keep only the sessions whose start lies in the range (None:
        open). Like ``all()``'s iterator, the scan ends quietly once the store is closed.

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer, or a time bound is
                not an integer.
            StoreClosedError: the store is closed.
            CorruptDataError: a stored key or value does not follow the layout.
        """
        self._check_open()
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
            raise InvalidOptionError(
                f"batch_rows must be a positive integer, got {batch_rows!r}"
            )
        low = None if time_from is None else _long(time_from, "time_from", MIN_LONG)
        high = None if time_to is None else _long(time_to, "time_to", MIN_LONG)
        earliest_end = self._segments.actual_from(0)
        # A session starting at or after ``low`` ends there too: older segments can be skipped.
        batches = self._segments.scan_columns(
            max(earliest_end, 0 if low is None else low), MAX_LONG,
            batch_rows=batch_rows, key_order=True,
        )
        scan = self._columns(batches, earliest_end, low, high)
        self._scans.add(scan)
        return scan

    def _columns(
        self,
        batches: Iterator[tuple[list[bytes], list[bytes]]],
        earliest_end: int,
        low: int | None,
        high: int | None,
    ) -> Generator[tuple[list[Any], ...], None, None]:
        try:
            while not self.closed:
                batch = next(batches, None)
                if batch is None:
                    return
                binaries, raws = batch
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
                        continue
                    keys = [keys[i] for i in keep]
                    starts = [starts[i] for i in keep]
                    ends = [ends[i] for i in keep]
                    raws = [raws[i] for i in keep]
                values, *rest = self._decode_columns(raws)
                yield (keys, values, starts, ends, *rest)
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()
