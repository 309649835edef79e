"""The bulk column paths of the window stores (``put_columns``, ``scan_columns``): a mixin of
:class:`stores.window.store._WindowStoreBase`, kept apart from the per-row API. Behaviour is
documented in :mod:`stores.window.store`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import MIN_LONG, checked_long
from stores.errors import InvalidOptionError
from stores.segments import (
    PREFIX_SIZE,
    SEGMENTS_META_CF,
    SegmentedBytesStore,
    check_same_length,
    checked_bytes_column,
    checked_long_column,
    checked_optional_bytes_column,
)
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

# The window store's logger: the bulk path warns as ``put`` does.
_log = logging.getLogger("stores.window.store")

#: Kafka's warning when a put lands in an expired segment (the record is dropped).
EXPIRED_SEGMENT_WARNING = "Skipping record for expired segment."


class _WindowColumns:
    """``put_columns`` and ``scan_columns`` over the store's segmented layer, in the store's
    value format (``_format``)."""

    _format: ClassVar[WindowValueFormat]
    _db: RocksDBBytesStore
    _segments: SegmentedBytesStore
    _window_size: int
    _dups: bool

    if TYPE_CHECKING:

        @property
        def closed(self) -> bool: ...

        def _check_open(self) -> None: ...

    def put_columns(
        self,
        keys: Sequence[bytes],
        values: Sequence[bytes | None],
        window_starts: Sequence[int],
        timestamps: Sequence[int] | None = None,
        headers: Sequence[bytes | None] | None = None,
    ) -> None:
        """Put ``values[i]`` for the window of ``keys[i]`` starting at ``window_starts[i]``, for
        each ``i`` in order, as one atomic batch: the bulk-load path.

        The effect is exactly that of ``put`` called row by row (see the module docstring):
        ``values[i]`` stands for the store's value object of ``values[i]`` with
        ``timestamps[i]`` (timestamped stores; required there) and ``headers[i]`` (header-aware
        stores: KIP-1271 ``headersBytes``, stored as given; None or empty is no headers). A
        None value deletes the window, or is skipped if the store retains duplicates.

        Raises:
            InvalidOptionError: the columns differ in length, a column is given that the store
                does not take (or a required one is missing), or an item has a wrong type or
                range (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        fmt = self._format
        columns: list[Sequence[Any]] = [keys, values, window_starts]
        if fmt.timestamped:
            if timestamps is None:
                raise InvalidOptionError(f"a {fmt.name} needs timestamps in put_columns")
            columns.append(timestamps)
        elif timestamps is not None:
            raise InvalidOptionError(
                f"a {fmt.name} keeps no timestamps: pass timestamps=None to put_columns"
            )
        if headers is not None:
            if not fmt.headers:
                raise InvalidOptionError(
                    f"a {fmt.name} keeps no headers: pass headers=None to put_columns"
                )
            columns.append(headers)
        check_same_length("put_columns", columns)
        key_list = checked_bytes_column(keys, "keys")
        value_list = checked_optional_bytes_column(values, "values")
        starts = checked_long_column(window_starts, "window_starts", 0)
        stamps = (
            None if timestamps is None
            else checked_long_column(timestamps, "timestamps", MIN_LONG)
        )
        header_list = None if headers is None else checked_optional_bytes_column(headers, "headers")
        raws = fmt.encode_columns(value_list, stamps, header_list)
        seqnums: list[int] | None = None
        if self._dups:
            # Kafka: a delete is not supported for duplicates; such a put is a no-op.
            keep = [i for i, raw in enumerate(raws) if raw is not None]
            if len(keep) < len(raws):
                key_list = [key_list[i] for i in keep]
                starts = [starts[i] for i in keep]
                raws = [raws[i] for i in keep]
            first = decode_seqnum(self._db.get(SEQNUM_KEY, SEGMENTS_META_CF)) + 1
            seqnums = [(first + i) & MAX_SEQNUM for i in range(len(raws))]
        suffixes = window_key_suffixes(starts, seqnums)
        with self._db.operation():
            if seqnums:
                self._db.put(SEQNUM_KEY, encode_seqnum(seqnums[-1]), SEGMENTS_META_CF)
            dropped = self._segments.put_many(key_list, raws, starts, key_suffixes=suffixes)
        if dropped:
            _log.warning("%s (%d records)", EXPIRED_SEGMENT_WARNING, dropped)

    def scan_columns(
        self,
        batch_rows: int = 1 << 16,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Iterator[tuple[list[Any], ...]]:
        """Every live window, or those starting in ``[time_from, time_to]`` (None: open), as
        column lists of up to ``batch_rows`` rows: the full-scan path.

        Yields ``(keys, values, window_starts, window_ends)``, then ``timestamps`` for a
        timestamped store (-1 unknown), then ``headersBytes`` for a header-aware one, in the
        order of ``all()`` (or of ``fetch_all(time_from, time_to)``). Like ``all()``'s
        iterator, the scan ends quietly once the store is closed.

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
        low = 0 if time_from is None else checked_long(time_from, "time_from", MIN_LONG, unit="ms")
        high = MAX_LONG if time_to is None else checked_long(time_to, "time_to", MIN_LONG, unit="ms")
        actual_from = self._segments.actual_from(low)
        if high < actual_from:
            return iter(())
        batches = self._segments.scan_columns(
            actual_from, high, batch_rows=batch_rows, prefixed=True
        )
        return self._columns(batches, actual_from, high)

    def _columns(
        self, batches: Iterator[tuple[list[bytes], list[bytes]]], low: int, high: int
    ) -> Iterator[tuple[list[Any], ...]]:
        decode, size = self._format.decode_columns, self._window_size
        try:
            while not self.closed:
                batch = next(batches, None)
                if batch is None:
                    return
                store_keys, raws = batch
                keys, starts = decode_window_key_column(store_keys, PREFIX_SIZE)
                if min(starts) < low or max(starts) > high:
                    # Kafka's HasNextCondition: a live segment may hold older windows.
                    keep = [i for i, start in enumerate(starts) if low <= start <= high]
                    if not keep:
                        continue
                    keys = [keys[i] for i in keep]
                    starts = [starts[i] for i in keep]
                    raws = [raws[i] for i in keep]
                if max(starts) <= MAX_LONG - size:
                    ends = [start + size for start in starts]
                else:
                    ends = [min(start + size, MAX_LONG) for start in starts]
                values, *rest = decode(raws)
                yield (keys, values, starts, ends, *rest)
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()
