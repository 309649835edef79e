"""Window stores (Kafka's ``RocksDBWindowStore`` and its timestamped / headers variants).

A window store keeps, per key, one value for each window start (or several, with
``retain_duplicates``), in time segments that expire whole (:mod:`stores.segments`). Byte
layouts and column families: :mod:`stores.window.format`.

Kafka's rules, as implemented here:

- Reads never return a window older than the observed stream time minus the retention plus one
  (``actualFrom = max(time_from, stream time - retention + 1)``); if ``time_to`` is below that,
  the result is empty, which also covers inverted time ranges.
- Time bounds are inclusive; a window is ``[start, start + window_size]`` (end capped at
  2**63-1).
- A put advances the stream time first; a put into an expired segment is dropped with Kafka's
  message, at INFO and counted (:mod:`stores.segments.dropped`). Segments entirely before ``stream time -
  retention`` are deleted at once.
- Without ``retain_duplicates`` the sequence number is 0 and a None value deletes the window.
  With it every put takes the next sequence number and a None value is ignored (Kafka: a
  delete is not supported for duplicates).
- A key range whose ``key_from`` sorts after ``key_to`` logs Kafka's warning and is empty.
- Iteration order is segment by segment (oldest first), then by store key bytes within a
  segment: for one key that is time order, then sequence order; backward reverses both.
- Iterators are Kafka's (:class:`stores.iterators.KeyValueIterator`: ``has_next``,
  ``peek_next_key``, ``close``). They read lazily, so they see writes made before their first
  step, and skip segments dropped meanwhile. Closing the store ends them quietly (``has_next``
  is False); using a closed iterator raises ``StoreClosedError``.
- A None key is refused everywhere with ``InvalidOptionError`` (Kafka: NullPointerException),
  except the bounds of a key range, where None is open (KIP-766).

Bulk paths (the catalog's materialization and Spark scans, no Python object per row):
``put_columns`` and ``scan_columns``, described in :mod:`stores.window.lookups`.

Where we differ from Kafka (each on purpose): the observed stream time and the last sequence
number are persisted with the data (Kafka rebuilds the first from its changelog and restarts
the second at 0).

Kafka's accident kept: a single-window ``fetch(key, time)`` on a store with duplicates reads
the row of the current sequence number (``RocksDBWindowStore.fetch``), so it answers only for
the window the last put wrote, with that put's value; every other window reads as None.

Kafka's accident kept: a key-range ``fetch`` / ``backward_fetch`` scans each segment between
Kafka's ``WindowKeySchema.lowerRange`` / ``upperRange`` (``OrderedBytes``, which assume keys of
at least one byte), so a window of a key in range whose store key sorts above the upper bound is
not returned: with ``b""`` at 0 and 1, ``fetch(None, b"\\x00", 0, 1)`` returns the window at 0
only (:mod:`stores.segments.ordered`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Generic, TypeVar, overload

from stores.bytes.protocol import BytesStore
from stores.checks import checked_bytes as _checked_key
from stores.iterators import KeyValueIterator
from stores.records import (
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Windowed,
)
from stores.segments.base import SegmentedStoreBase
from stores.segments.dropped import dropped
from stores.segments.store import (
    INVALID_KEY_RANGE_WARNING,
    SEGMENTS_META_CF,
    column_families,
)
from stores.window.arguments import _bind, _configure, _long
from stores.window.format import (
    HEADERS,
    MAX_LONG,
    MAX_SEQNUM,
    PLAIN,
    SEQNUM_KEY,
    TIMESTAMPED,
    TIMESTAMPED_HEADERS,
    WindowValueFormat,
    decode_seqnum,
    decode_window_key,
    encode_seqnum,
    encode_window_key,
    lower_range,
    lower_range_fixed_size,
    time_window_for_size,
    upper_range,
    upper_range_fixed_size,
)
from stores.window.lookups import WindowLookups

V = TypeVar("V")
_log = logging.getLogger(__name__)

#: Kafka's ``Stores.persistentWindowStore`` default: ``max(retention / 2, 60 000)``.
MIN_DEFAULT_SEGMENT_INTERVAL_MS = 60_000


def default_segment_interval_ms(retention_ms: int) -> int:
    """The segment interval Kafka's ``Stores.persistentWindowStore`` picks.

    Raises:
        InvalidOptionError: ``retention_ms`` is not an integer >= 0.
    """
    retention = _long(retention_ms, "retention_ms")
    return max(retention // 2, MIN_DEFAULT_SEGMENT_INTERVAL_MS)


S = TypeVar("S", bound="_WindowStoreBase[Any]")


class _WindowStoreBase(SegmentedStoreBase, Generic[V]):
    """The window-store operations shared by the four value formats (open, close and the
    segmented layer: :class:`stores.segments.base.SegmentedStoreBase`).

    The bulk column paths (``put_columns``, ``scan_columns``) are those of a
    :class:`stores.window.lookups.WindowLookups`.
    """

    kind: ClassVar[str] = "window"
    _format: ClassVar[WindowValueFormat]

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        retention_ms: int,
        window_size_ms: int,
        retain_duplicates: bool = False,
        segment_interval_ms: int | None = None,
        *,
        db: BytesStore | None = None,
    ) -> None:
        retention, size, dups, interval = _configure(
            retention_ms, window_size_ms, retain_duplicates, segment_interval_ms
        )
        if interval is None:
            interval = default_segment_interval_ms(retention)
        super().__init__(
            path,
            db,
            retention_ms=retention,
            segment_interval_ms=interval,
            data_cf=self._format.data_cf,
            legacy_cfs=self._format.legacy_cfs,
        )
        self._window_size = size
        self._dups = dups
        self._lookups = WindowLookups(
            self._segments,
            self._format,
            window_size_ms=size,
            retain_duplicates=dups,
            alive=self._is_open,
        )

    @classmethod
    def over(
        cls: type[S],
        db: BytesStore,
        retention_ms: int,
        window_size_ms: int,
        retain_duplicates: bool = False,
        segment_interval_ms: int | None = None,
    ) -> S:
        """Wrap an open bytes store (opened with :meth:`column_families`) whose owner commits.

        Raises:
            InvalidOptionError: an argument is out of range.
        """
        return cls(
            None, retention_ms, window_size_ms, retain_duplicates, segment_interval_ms, db=db
        )

    @classmethod
    def column_families(cls) -> tuple[str, ...]:
        """Column families the store needs: its own, the legacy formats' it reads, metadata."""
        return column_families(cls._format.data_cf, cls._format.legacy_cfs)

    # -- properties ---------------------------------------------------------------------------

    @property
    def window_size_ms(self) -> int:
        """Size of every window (``Windowed.end = start + size``)."""
        return self._window_size

    @property
    def retain_duplicates(self) -> bool:
        """Whether every put is kept, under its own sequence number."""
        return self._dups

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: bytes, value: V | None, window_start: int) -> None:
        """Put ``value`` for the window of ``key`` starting at ``window_start``.

        A None value deletes the window, or is ignored if the store retains duplicates.

        Raises:
            InvalidOptionError: ``key``, ``value`` or ``window_start`` has a wrong type or value.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key = _checked_key(key, "key")
        window_start = _long(window_start, "window_start")
        raw = None if value is None else self._format.encode(self._format.check(value))
        if raw is None and self._dups:
            return  # Kafka: delete is not supported for duplicates; the put is a no-op
        try:
            seqnum = self._next_seqnum() if self._dups else 0
            written = self._segments.put(
                encode_window_key(key, window_start, seqnum), raw, window_start
            )
        except BaseException:
            if self._db.autocommit:
                self._db.rollback()
            raise
        self._db.maybe_commit()
        if not written:
            dropped(_log, 1, bulk=False)

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
        self._lookups.put_columns(keys, values, window_starts, timestamps, headers)

    @property
    def seqnum(self) -> int:
        """The sequence number of the last put kept as a duplicate (0: none yet). Kept with the
        data, so numbering continues across opens (Kafka restarts at 0 and can overwrite)."""
        return decode_seqnum(self._db.get(SEQNUM_KEY, SEGMENTS_META_CF))

    def _next_seqnum(self) -> int:
        seqnum = (self.seqnum + 1) & MAX_SEQNUM
        self._db.put(SEQNUM_KEY, encode_seqnum(seqnum), SEGMENTS_META_CF)
        return seqnum

    # -- reads --------------------------------------------------------------------------------

    @overload
    def fetch(self, key: bytes, time: int, /) -> V | None: ...
    @overload
    def fetch(self, key: bytes, time_from: int, time_to: int, /) -> KeyValueIterator: ...
    @overload
    def fetch(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, /
    ) -> KeyValueIterator: ...
    def fetch(self, *args: Any, **kwargs: Any) -> Any:
        """Kafka's three ``fetch`` forms, told apart by their number of arguments.

        - ``fetch(key, time)``: the value of the window of ``key`` starting at ``time``, or None.
        - ``fetch(key, time_from, time_to)``: ``KeyValue(window start, value)`` of ``key``'s
          windows starting in ``[time_from, time_to]``, oldest first.
        - ``fetch(key_from, key_to, time_from, time_to)``: ``KeyValue(Windowed(key, window),
          value)`` of every key in ``[key_from, key_to]`` (None: open).

        Raises:
            InvalidOptionError: a key or time has a wrong type.
            StoreClosedError: the store is closed.
            TypeError: not 2, 3 or 4 arguments.
        """
        form, bound = _bind("fetch", args, kwargs, single_allowed=True)
        if form == "single":
            return self._fetch_single(bound["key"], bound["time"])
        if form == "key":
            return self._fetch_key(bound["key"], bound["time_from"], bound["time_to"], False)
        return self._fetch_range(
            bound["key_from"], bound["key_to"], bound["time_from"], bound["time_to"], False
        )

    @overload
    def backward_fetch(
        self, key: bytes, time_from: int, time_to: int, /
    ) -> KeyValueIterator: ...
    @overload
    def backward_fetch(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int, /
    ) -> KeyValueIterator: ...
    def backward_fetch(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """``fetch``'s iterator forms, newest window first (Kafka's ``backwardFetch``).

        Raises:
            InvalidOptionError: a key or time has a wrong type.
            StoreClosedError: the store is closed.
            TypeError: not 3 or 4 arguments.
        """
        form, bound = _bind("backward_fetch", args, kwargs, single_allowed=False)
        if form == "key":
            return self._fetch_key(bound["key"], bound["time_from"], bound["time_to"], True)
        return self._fetch_range(
            bound["key_from"], bound["key_to"], bound["time_from"], bound["time_to"], True
        )

    def fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator:
        """Every window starting in ``[time_from, time_to]``, as ``KeyValue(Windowed, value)``.

        Raises:
            InvalidOptionError: a time is not an integer.
            StoreClosedError: the store is closed.
        """
        return self._fetch_range(None, None, time_from, time_to, False)

    def backward_fetch_all(self, time_from: int, time_to: int) -> KeyValueIterator:
        """``fetch_all`` newest segment first, keys descending (Kafka's ``backwardFetchAll``).

        Raises:
            InvalidOptionError: a time is not an integer.
            StoreClosedError: the store is closed.
        """
        return self._fetch_range(None, None, time_from, time_to, True)

    def all(self) -> KeyValueIterator:
        """Every live window, as ``KeyValue(Windowed, value)``, oldest segment first.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self._all(False)

    def backward_all(self) -> KeyValueIterator:
        """``all`` in reverse order (Kafka's ``backwardAll``).

        Raises:
            StoreClosedError: the store is closed.
        """
        return self._all(True)

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
        return self._lookups.scan_columns(batch_rows, time_from, time_to)

    def _fetch_single(self, key: Any, time: Any) -> V | None:
        self._check_open()
        key = _checked_key(key, "key")
        time = _long(time, "time", minimum=-MAX_LONG - 1)
        if time < 0:
            return None
        # Kafka's RocksDBWindowStore.fetch(key, time) reads the row of the store's current
        # sequence number: with duplicates, only the window the last put wrote answers (and
        # only with that put's value); any other window reads as None.
        seqnum = self.seqnum if self._dups else 0
        raw = self._segments.get(encode_window_key(key, time, seqnum), time)
        return None if raw is None else self._decode(raw)

    def _fetch_key(
        self, key: Any, time_from: Any, time_to: Any, reverse: bool
    ) -> KeyValueIterator:
        self._check_open()
        key = _checked_key(key, "key")
        time_from = _long(time_from, "time_from", minimum=-MAX_LONG - 1)
        time_to = _long(time_to, "time_to", minimum=-MAX_LONG - 1)
        actual_from = self._segments.actual_from(time_from)
        if time_to < actual_from:
            return self._iterator(iter(()))
        rows = self._segments.range(
            lower_range_fixed_size(key, actual_from),
            upper_range_fixed_size(key, time_to),
            actual_from,
            time_to,
            reverse=reverse,
        )
        return self._iterator(self._values_of(rows, key, actual_from, time_to))

    def _values_of(
        self, rows: Iterable[tuple[bytes, bytes]], key: bytes, time_from: int, time_to: int
    ) -> Iterator[KeyValue]:
        decode = self._decode
        for raw_key, raw in rows:
            stored_key, start, _ = decode_window_key(raw_key)
            # Kafka's HasNextCondition: rows of other keys (of other lengths) share the range.
            if stored_key == key and time_from <= start <= time_to:
                yield KeyValue(start, decode(raw))

    def _fetch_range(
        self, key_from: Any, key_to: Any, time_from: Any, time_to: Any, reverse: bool
    ) -> KeyValueIterator:
        self._check_open()
        key_from = None if key_from is None else _checked_key(key_from, "key_from")
        key_to = None if key_to is None else _checked_key(key_to, "key_to")
        time_from = _long(time_from, "time_from", minimum=-MAX_LONG - 1)
        time_to = _long(time_to, "time_to", minimum=-MAX_LONG - 1)
        if key_from is not None and key_to is not None and key_from > key_to:
            _log.warning(INVALID_KEY_RANGE_WARNING)
            return self._iterator(iter(()))
        actual_from = self._segments.actual_from(time_from)
        if time_to < actual_from:
            return self._iterator(iter(()))
        rows = self._segments.range(
            None if key_from is None else lower_range(key_from),
            None if key_to is None else upper_range(key_to, time_to),
            actual_from,
            time_to,
            reverse=reverse,
        )
        return self._iterator(self._windowed(rows, key_from, key_to, actual_from, time_to))

    def _all(self, reverse: bool) -> KeyValueIterator:
        self._check_open()
        actual_from = self._segments.actual_from(0)
        rows = self._segments.all(reverse=reverse)
        return self._iterator(self._windowed(rows, None, None, actual_from, MAX_LONG))

    def _windowed(
        self,
        rows: Iterable[tuple[bytes, bytes]],
        key_from: bytes | None,
        key_to: bytes | None,
        time_from: int,
        time_to: int,
    ) -> Iterator[KeyValue]:
        decode, size = self._decode, self._window_size
        for raw_key, raw in rows:
            key, start, _ = decode_window_key(raw_key)
            if (
                (key_from is None or key >= key_from)
                and (key_to is None or key <= key_to)
                and time_from <= start <= time_to
            ):
                yield KeyValue(Windowed(key, time_window_for_size(start, size)), decode(raw))

    def _decode(self, raw: bytes) -> V:
        value: V = self._format.decode(raw)
        return value

    def _iterator(self, items: Iterator[KeyValue]) -> KeyValueIterator:
        """Kafka's iterator: it ends quietly once the store is closed (Kafka closes open
        iterators with their store, and ``hasNext`` then answers false)."""
        return KeyValueIterator(items, str(self._db.path), alive=self._is_open)

    def _is_open(self) -> bool:
        return not self.closed



class WindowStore(_WindowStoreBase[bytes]):
    """Kafka's ``WindowStore<Bytes, byte[]>``: values are bytes.

    Args:
        path: directory of the RocksDB database; created if missing, reopened with its data.
            None with ``db``.
        retention_ms: how long windows stay readable (>= ``window_size_ms``).
        window_size_ms: size of each window (>= 0).
        retain_duplicates: keep every put under its own sequence number.
        segment_interval_ms: segment width; default ``max(retention_ms // 2, 60000)``.
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path; its owner commits and closes it (see :meth:`over`).

    Raises:
        InvalidOptionError: an argument is out of range (the message names it).
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    _format = PLAIN


class TimestampedWindowStore(_WindowStoreBase[ValueAndTimestamp[bytes]]):
    """Kafka's ``TimestampedWindowStore``: values are ``ValueAndTimestamp``.

    Reads plain window values left in ``default`` with timestamp -1 and migrates them on write.
    Arguments as :class:`WindowStore`.

    Raises:
        InvalidOptionError: an argument is out of range (the message names it).
    """

    _format = TIMESTAMPED


class WindowStoreWithHeaders(_WindowStoreBase[ValueAndHeaders[bytes]]):
    """KIP-1271's plain window store with headers: values are ``ValueAndHeaders``.

    Reads plain window values left in ``default`` with empty headers and migrates them on
    write. Arguments as :class:`WindowStore`.

    Raises:
        InvalidOptionError: an argument is out of range (the message names it).
    """

    _format = HEADERS


class TimestampedWindowStoreWithHeaders(_WindowStoreBase[ValueTimestampHeaders[bytes]]):
    """KIP-1271's ``TimestampedWindowStoreWithHeaders``: values are ``ValueTimestampHeaders``.

    Reads ``keyValueWithTimestamp`` values with empty headers and plain ``default`` values with
    empty headers and timestamp -1, migrating them on write. Arguments as :class:`WindowStore`.

    Raises:
        InvalidOptionError: an argument is out of range (the message names it).
    """

    _format = TIMESTAMPED_HEADERS


__all__ = [
    "MIN_DEFAULT_SEGMENT_INTERVAL_MS",
    "TimestampedWindowStore",
    "TimestampedWindowStoreWithHeaders",
    "WindowStore",
    "WindowStoreWithHeaders",
    "default_segment_interval_ms",
]
