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
  warning (:data:`EXPIRED_SEGMENT_WARNING`). Segments entirely before ``stream time -
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

- ``put_columns(keys, values, window_starts, timestamps=None, headers=None)`` has exactly the
  effect of ``put`` called row by row in order (values as bytes or None; ``timestamps`` the
  ints of a timestamped store's ``ValueAndTimestamp``; ``headers`` KIP-1271 ``headersBytes``
  of a header-aware store, stored as given), staged as one atomic batch. Expired rows are
  dropped as ``put`` drops them, with one warning per call giving their number.
- ``scan_columns(batch_rows=65536, time_from=None, time_to=None)`` yields ``(keys, values,
  window_starts, window_ends[, timestamps][, headersBytes])`` lists in the order of ``all()``
  (no time bounds) or ``fetch_all(time_from, time_to)`` (a None bound is open).

Where we differ from Kafka (each on purpose): the observed stream time and the last sequence
number are persisted with the data (Kafka rebuilds the first from its changelog and restarts
the second at 0); a single-window ``fetch(key, time)`` on a store with duplicates returns the
window's first duplicate (Kafka looks up its in-memory current sequence number, which finds
the latest put only if no other put came after it).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Generic, TypeVar, overload

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import checked_bytes as _checked_key
from stores.checks import checked_long
from stores.errors import InvalidOptionError, StoreClosedError
from stores.iterators import KeyValueIterator
from stores.records import (
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Windowed,
)
from stores.segments import SEGMENTS_META_CF, SegmentedBytesStore
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
from stores.window.lookups import EXPIRED_SEGMENT_WARNING, _WindowColumns

V = TypeVar("V")
_log = logging.getLogger(__name__)

#: Kafka's ``Stores.persistentWindowStore`` default: ``max(retention / 2, 60 000)``.
MIN_DEFAULT_SEGMENT_INTERVAL_MS = 60_000
INVALID_KEY_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. This may be due to "
    "range arguments set in the wrong order, or serdes that don't preserve ordering when "
    "lexicographically comparing the serialized bytes. Note that the built-in numerical serdes "
    "do not follow this for negative numbers"
)


def default_segment_interval_ms(retention_ms: int) -> int:
    """The segment interval Kafka's ``Stores.persistentWindowStore`` picks.

    Raises:
        InvalidOptionError: ``retention_ms`` is not an integer >= 0.
    """
    retention = _long(retention_ms, "retention_ms")
    return max(retention // 2, MIN_DEFAULT_SEGMENT_INTERVAL_MS)


def _columns(fmt: WindowValueFormat) -> tuple[str, ...]:
    names = [fmt.data_cf, *(cf for cf, _ in fmt.legacy_cfs), SEGMENTS_META_CF]
    return tuple(dict.fromkeys(names))


S = TypeVar("S", bound="_WindowStoreBase[Any]")


class _WindowStoreBase(_WindowColumns, Generic[V]):
    """The window-store operations shared by the four value formats.

    The bulk column paths (``put_columns``, ``scan_columns``) are in
    :class:`stores.window.lookups._WindowColumns`.
    """

    _format: ClassVar[WindowValueFormat]

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        retention_ms: int,
        window_size_ms: int,
        retain_duplicates: bool = False,
        segment_interval_ms: int | None = None,
        *,
        db: RocksDBBytesStore | None = None,
    ) -> None:
        retention, size, dups, interval = _configure(
            retention_ms, window_size_ms, retain_duplicates, segment_interval_ms
        )
        if (path is None) == (db is None):
            raise TypeError(f"{type(self).__name__}() takes a path or db=, not both or neither")
        # A store opened from a path owns its database; one over an open db leaves it (and its
        # commits) to the db's owner.
        self._owns_db = db is None
        if db is None:
            assert path is not None
            db = RocksDBBytesStore(path, _columns(self._format))
        self._db = db
        self._closed = False
        self._window_size = size
        self._dups = dups
        fmt = self._format
        self._segments = SegmentedBytesStore(
            db,
            retention_ms=retention,
            segment_interval_ms=interval,
            data_cf=fmt.data_cf,
            meta_cf=SEGMENTS_META_CF,
            legacy_cfs=fmt.legacy_cfs,
        )

    @classmethod
    def over(
        cls: type[S],
        db: RocksDBBytesStore,
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
        return _columns(cls._format)

    # -- properties ---------------------------------------------------------------------------

    @property
    def wrapped(self) -> RocksDBBytesStore:
        """The bytes layer underneath."""
        return self._db

    @property
    def segments(self) -> SegmentedBytesStore:
        """The segmented layer underneath (stream time, segment ids)."""
        return self._segments

    @property
    def retention_ms(self) -> int:
        """How long windows stay readable, relative to the observed stream time."""
        return self._segments.retention_ms

    @property
    def window_size_ms(self) -> int:
        """Size of every window (``Windowed.end = start + size``)."""
        return self._window_size

    @property
    def retain_duplicates(self) -> bool:
        """Whether every put is kept, under its own sequence number."""
        return self._dups

    @property
    def segment_interval_ms(self) -> int:
        """Width of a segment in ms."""
        return self._segments.segment_interval_ms

    @property
    def observed_stream_time(self) -> int:
        """The largest window start ever put (-1 before the first put).

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._segments.observed_stream_time

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
            _log.warning(EXPIRED_SEGMENT_WARNING)

    def _next_seqnum(self) -> int:
        seqnum = (decode_seqnum(self._db.get(SEQNUM_KEY, SEGMENTS_META_CF)) + 1) & MAX_SEQNUM
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

    def _fetch_single(self, key: Any, time: Any) -> V | None:
        self._check_open()
        key = _checked_key(key, "key")
        time = _long(time, "time", minimum=-MAX_LONG - 1)
        if time < 0:
            return None
        if not self._dups:
            raw = self._segments.get(encode_window_key(key, time, 0), time)
            return None if raw is None else self._decode(raw)
        # With duplicates: the window's first duplicate (lowest sequence number).
        for _, value in self._fetch_key(key, time, time, False):
            result: V = value
            return result
        return None

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

    # -- lifecycle ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise StoreClosedError(f"the window store at {self._db.path} is closed")

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (or the bytes store underneath was closed)."""
        return self._closed or self._db.closed

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it)."""
        self._closed = True
        if self._owns_db:
            self._db.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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


# -- argument checks --------------------------------------------------------------------------

_FORMS = {
    2: ("single", ("key", "time")),
    3: ("key", ("key", "time_from", "time_to")),
    4: ("range", ("key_from", "key_to", "time_from", "time_to")),
}


def _bind(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, single_allowed: bool
) -> tuple[str, dict[str, Any]]:
    count = len(args) + len(kwargs)
    if count not in _FORMS or (count == 2 and not single_allowed):
        accepted = "2, 3 or 4" if single_allowed else "3 or 4"
        raise TypeError(f"{name}() takes {accepted} arguments, got {count}")
    form, names = _FORMS[count]
    bound = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in bound:
            raise TypeError(f"{name}() got an unexpected or repeated argument {key!r}")
        bound[key] = value
    return form, bound


def _configure(
    retention_ms: Any, window_size_ms: Any, retain_duplicates: Any, segment_interval_ms: Any
) -> tuple[int, int, bool, int]:
    retention = _long(retention_ms, "retention_ms")
    size = _long(window_size_ms, "window_size_ms")
    if not isinstance(retain_duplicates, bool):
        raise InvalidOptionError(
            f"retain_duplicates must be a bool, got {type(retain_duplicates).__name__}"
        )
    if segment_interval_ms is None:
        interval = default_segment_interval_ms(retention)
    else:
        interval = _long(segment_interval_ms, "segment_interval_ms")
        if interval < 1:
            raise InvalidOptionError(
                f"segment_interval_ms cannot be zero or negative, got {interval}"
            )
    if size > retention:
        raise InvalidOptionError(
            "retention_ms must be no smaller than window_size_ms: "
            f"got window_size_ms={size}, retention_ms={retention}"
        )
    return retention, size, retain_duplicates, interval


def _long(value: Any, name: str, minimum: int = 0) -> int:
    return checked_long(value, name, minimum, unit="ms")


__all__ = [
    "EXPIRED_SEGMENT_WARNING",
    "INVALID_KEY_RANGE_WARNING",
    "TimestampedWindowStore",
    "TimestampedWindowStoreWithHeaders",
    "WindowStore",
    "WindowStoreWithHeaders",
    "default_segment_interval_ms",
]
