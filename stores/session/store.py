"""Session stores: Kafka's ``RocksDBSessionStore`` and KIP-1271's header-aware session store.

A session is a key and a window ``[start, end]``; its aggregate is filed under Kafka's
``SessionKeySchema`` binary key in the segment of its *end* time, so closed sessions expire a
segment at a time (byte layouts: :mod:`stores.session.format`; segments: :mod:`stores.segments`).

Kafka's behaviour, kept here (``AbstractRocksDBSegmentedBytesStore`` with ``SessionKeySchema``):

- ``put`` advances the observed stream time to the session end; a session whose end falls in an
  expired segment is dropped; a None aggregate removes the session.
- ``remove`` also advances the observed stream time (and never drops segments).
- Every read ignores sessions whose end is before ``stream time - retention + 1`` (``actualFrom``),
  even if their segment still holds them.
- ``find_sessions`` returns the sessions with ``end >= earliest_session_end`` and
  ``start <= latest_session_start``, segment by segment (oldest first), in binary-key order within
  a segment; ``backward_*`` reverses both. A None key bound is open (KIP-763); an inverted key
  range returns nothing and logs Kafka's warning.
- ``fetch(key)`` is ``find_sessions(key, 0, MAX)``; ``fetch(key_from, key_to)`` likewise.

``SessionStoreWithHeaders`` keeps ``[varint headersSize][headers][aggregate]`` in
``sessionKeyValueWithHeaders`` and reads a plain store's ``default`` family lazily with empty
headers (Kafka's ``RocksDBMigratingSessionStoreWithHeaders``); writes move a session to the new
family. ``fetch_session`` is Kafka's ``get`` and, like it, migrates the session it reads into
the new family (unless the bytes store is read-only: a reader then converts and writes nothing);
iterators never migrate.

Iterators are :class:`stores.iterators.KeyValueIterator`; closing the store ends them quietly
(``has_next()`` False), as Kafka's segmented stores do.

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

import heapq
import itertools
import logging
import operator
import os
import weakref
from collections.abc import Generator, Iterator
from types import GeneratorType
from typing import Any, Generic, TypeVar

from stores.bytes.rocksdb import DEFAULT_CF, RocksDBBytesStore
from stores.checks import checked_bytes as _key
from stores.checks import checked_long as _long
from stores.errors import InvalidOptionError, StoreClosedError
from stores.formats.headers import headed_column, split_headers_column
from stores.iterators import KeyValueIterator
from stores.records import KeyValue, ValueAndHeaders, Window, Windowed
from stores.segments import (
    SEGMENTS_META_CF,
    Converter,
    SegmentedBytesStore,
    segment_prefix,
)
from stores.session.arguments import _bind, _count, _optional_key, _session, _windowed
from stores.session.format import (
    MAX_LONG,
    SESSION_HEADERS_CF,
    convert_plain_value,
    decode_session_key,
    decode_with_headers_value,
    encode_session_key,
    encode_with_headers_value,
    lower_bound,
    single_key_bounds,
    upper_bound,
)
from stores.session.lookups import _SessionColumns
from stores.window.lookups import EXPIRED_SEGMENT_WARNING

log = logging.getLogger(__name__)

V = TypeVar("V")
S = TypeVar("S", bound="_SessionStoreBase[Any]")

#: Kafka's ``AggregationWithHeaders``: ``value`` is Kafka's ``aggregation()``.
AggregationWithHeaders = ValueAndHeaders

_INVERTED_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. This may be due to "
    "range arguments set in the wrong order, or serdes that don't preserve ordering when "
    "lexicographically comparing the serialized bytes. Note that the built-in numerical serdes "
    "do not follow this for negative numbers"
)


def default_segment_interval_ms(retention_ms: int) -> int:
    """The segment interval of Kafka's ``Stores.persistentSessionStore``:
    ``max(retention / 2, 60 000)`` (``RocksDbSessionBytesStoreSupplier.segmentIntervalMs``).

    Raises:
        InvalidOptionError: ``retention_ms`` is not an integer >= 0.
    """
    return max(_long(retention_ms, "retention_ms", 0) // 2, 60_000)


class _SessionStoreBase(_SessionColumns, Generic[V]):
    """The session store over a :class:`SegmentedBytesStore`; subclasses fix the value layout.

    The bulk column paths (``put_columns``, ``scan_columns``) are in
    :class:`stores.session.lookups._SessionColumns`.
    """

    _DATA_CF: str = DEFAULT_CF
    _LEGACY: tuple[tuple[str, Converter], ...] = ()

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        retention_ms: int,
        segment_interval_ms: int | None = None,
        *,
        db: RocksDBBytesStore | None = None,
    ) -> None:
        retention, interval = _configure(retention_ms, segment_interval_ms)
        if (path is None) == (db is None):
            raise TypeError(f"{type(self).__name__}() takes a path or db=, not both or neither")
        # A store opened from a path owns its database; one over an open db leaves it (and its
        # commits) to the db's owner.
        self._owns_db = db is None
        if db is None:
            assert path is not None
            db = RocksDBBytesStore(path, self.column_families())
        self._db = db
        self._closed = False
        # Kafka closes a store's open iterators when the store closes; so do we (quietly).
        self._scans: weakref.WeakSet[Generator[Any, None, None]] = weakref.WeakSet()
        try:
            self._segments = SegmentedBytesStore(
                db,
                retention_ms=retention,
                segment_interval_ms=interval,
                data_cf=self._DATA_CF,
                meta_cf=SEGMENTS_META_CF,
                legacy_cfs=self._LEGACY,
            )
        except BaseException:
            if self._owns_db:
                db.close()
            raise

    @classmethod
    def over(
        cls: type[S],
        db: RocksDBBytesStore,
        retention_ms: int,
        segment_interval_ms: int | None = None,
    ) -> S:
        """Wrap an open bytes store (opened with :meth:`column_families`) whose owner commits.

        Every write ends in ``db.maybe_commit()``, which commits only if ``db`` autocommits.

        Raises:
            InvalidOptionError: a negative retention or a segment interval below 1 ms.
        """
        return cls(None, retention_ms, segment_interval_ms, db=db)

    @classmethod
    def column_families(cls) -> tuple[str, ...]:
        """Column families the store needs (pass them when opening a bytes store for ``over``):
        its own, the legacy formats' it reads lazily, and ``segmentsMetadata``."""
        return tuple(dict.fromkeys([cls._DATA_CF, *(cf for cf, _ in cls._LEGACY), SEGMENTS_META_CF]))

    # -- value layout (subclasses) -------------------------------------------------------------

    def _encode(self, value: Any) -> bytes | None:
        raise NotImplementedError

    def _decode(self, raw: bytes) -> V:
        raise NotImplementedError

    # -- properties ----------------------------------------------------------------------------

    @property
    def wrapped(self) -> RocksDBBytesStore:
        """The bytes layer underneath."""
        return self._db

    @property
    def retention_ms(self) -> int:
        """How long sessions stay readable after their end, relative to stream time."""
        return self._segments.retention_ms

    @property
    def segment_interval_ms(self) -> int:
        """Width of a segment in ms."""
        return self._segments.segment_interval_ms

    @property
    def observed_stream_time(self) -> int:
        """The largest session end ever put or removed (-1 before any).

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._segments.observed_stream_time

    # -- writes --------------------------------------------------------------------------------

    def put(self, *args: Any, **kwargs: Any) -> None:
        """``put(session_key: Windowed, value)`` or ``put(key, start, end, value)``.

        A None value removes the session (Kafka: a null aggregate is a delete). A session whose
        end lies in an expired segment is dropped; the stream time still advances to its end.

        Raises:
            InvalidOptionError: a wrong key, window, value or argument count.
            StoreClosedError: the store is closed.
        """
        if _count(args, kwargs) == 2 and "key" not in kwargs:
            session_key, value = _bind("put", args, kwargs, ("session_key", "value"))
            key, start, end = _windowed(session_key)
        else:
            key, start, end, value = _bind("put", args, kwargs, ("key", "start", "end", "value"))
            key, start, end = _session(key, start, end)
        raw = self._encode(value)
        self._check_open()
        with self._db.operation():
            written = self._segments.put(encode_session_key(key, start, end), raw, end)
        if not written:
            log.warning(EXPIRED_SEGMENT_WARNING)  # Kafka's RocksDBSessionStore logs it too

    def remove(self, *args: Any, **kwargs: Any) -> None:
        """``remove(session_key: Windowed)`` or ``remove(key, start, end)``.

        As in Kafka, removing advances the observed stream time to the session's end.

        Raises:
            InvalidOptionError: a wrong key, window or argument count.
            StoreClosedError: the store is closed.
        """
        if _count(args, kwargs) == 1:
            (session_key,) = _bind("remove", args, kwargs, ("session_key",))
            key, start, end = _windowed(session_key)
        else:
            key, start, end = _bind("remove", args, kwargs, ("key", "start", "end"))
            key, start, end = _session(key, start, end)
        self._check_open()
        with self._db.operation():
            self._segments.remove(encode_session_key(key, start, end), end)

    # -- reads ---------------------------------------------------------------------------------

    def fetch_session(self, key: bytes, start: int, end: int) -> V | None:
        """The aggregate of exactly the session ``key`` ``[start, end]``, or None.

        In upgrade mode (a header-aware store over a plain store's sessions) a session found
        only in the plain column family is migrated, as Kafka's ``get`` does, unless the bytes
        store is read-only.

        Raises:
            InvalidOptionError: a wrong key or times.
            StoreClosedError: the store is closed.
        """
        key = _key(key, "key")
        start = _long(start, "start")
        end = _long(end, "end")
        self._check_open()
        if start < 0 or end < 0:
            return None  # no stored session has a negative time
        binary = encode_session_key(key, start, end)
        raw = self._segments.get(binary, end)
        if raw is None:
            return None
        if self._segments.has_legacy_data and not self._db.read_only:
            with self._db.operation():
                self._migrate(binary, end, raw)
        return self._decode(raw)

    def _migrate(self, binary: bytes, end: int, raw: bytes) -> None:
        """Kafka's ``DualColumnFamilyAccessor.get``: a session read from a legacy family is
        written (converted) into the current one and deleted from the legacy one.

        Correct only because the changelog already holds the same session; a read-only store
        converts on read and writes nothing.
        """
        physical = segment_prefix(self._segments.segment_id(end)) + binary
        if self._db.get(physical, self._DATA_CF) is not None:
            return
        self._db.put(physical, raw, self._DATA_CF)
        for cf, _ in self._LEGACY:
            self._db.delete(physical, cf)

    def find_sessions(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """Sessions overlapping a time range, as ``KeyValue(Windowed(key, window), value)``.

        Forms (Kafka's ``findSessions`` overloads):

        - ``find_sessions(key, earliest_session_end, latest_session_start)``
        - ``find_sessions(key_from, key_to, earliest_session_end, latest_session_start)``
          (None key bounds are open)
        - ``find_sessions(earliest_session_end, latest_session_end)``: every key, sessions
          *ending* in the range (see :meth:`find_sessions_by_end`).

        Raises:
            InvalidOptionError: wrong keys, times or argument count.
            StoreClosedError: the store is closed.
        """
        count = _count(args, kwargs)
        if count == 2 and not ({"key", "key_from", "key_to"} & kwargs.keys()):
            earliest, latest = _bind(
                "find_sessions", args, kwargs, ("earliest_session_end", "latest_session_end")
            )
            return self.find_sessions_by_end(earliest, latest)
        return self._find("find_sessions", args, kwargs, forward=True)

    def backward_find_sessions(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """:meth:`find_sessions` (the key and key-range forms), newest segment first, keys
        descending.

        Raises:
            InvalidOptionError: wrong keys, times or argument count.
            StoreClosedError: the store is closed.
        """
        return self._find("backward_find_sessions", args, kwargs, forward=False)

    def fetch(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """``fetch(key)``: every session of ``key``; ``fetch(key_from, key_to)``: of every key in
        the range (None bounds open). Kafka's ``findSessions(..., 0, Long.MAX_VALUE)``.

        Raises:
            InvalidOptionError: wrong keys or argument count.
            StoreClosedError: the store is closed.
        """
        return self._fetch("fetch", args, kwargs, forward=True)

    def backward_fetch(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """:meth:`fetch` in backward order.

        Raises:
            InvalidOptionError: wrong keys or argument count.
            StoreClosedError: the store is closed.
        """
        return self._fetch("backward_fetch", args, kwargs, forward=False)

    def find_sessions_by_end(
        self, earliest_session_end: int, latest_session_end: int
    ) -> KeyValueIterator:
        """Every session, of any key, whose end is in ``[earliest, latest]`` (both inclusive).

        Kafka's ``SessionStore#findSessions(long, long)`` (used by emit-final aggregations),
        ordered as its implementations order it: by end, then key, then start. Kafka's
        key-first ``RocksDBSessionStore`` does not implement it; this store does, reading only
        the segments of the end range. Expired sessions are ignored as in every read.

        Raises:
            InvalidOptionError: a time is not an integer.
            StoreClosedError: the store is closed.
        """
        earliest = _long(earliest_session_end, "earliest_session_end")
        latest = _long(latest_session_end, "latest_session_end")
        self._check_open()
        actual = self._segments.actual_from(earliest)
        if latest < actual or latest < 0:
            return self._track(iter(()))
        interval = self._segments.segment_interval_ms
        rows = self._segments.range(None, None, max(actual, 0), latest)
        return self._track(self._by_end(rows, actual, latest, interval))

    def _by_end(
        self, rows: Iterator[tuple[bytes, bytes]], earliest: int, latest: int, interval: int
    ) -> Iterator[KeyValue]:
        decoded = (
            (decode_session_key(binary), raw) for binary, raw in rows if not self._closed
        )
        matching = (
            ((end, key, start), raw)
            for (key, start, end), raw in decoded
            if earliest <= end <= latest
        )
        # Rows come segment by segment; only within a segment must they be re-sorted by end.
        for _, group in itertools.groupby(matching, key=lambda item: item[0][0] // interval):
            for (end, key, start), raw in sorted(group, key=operator.itemgetter(0)):
                if self._closed:
                    return
                yield KeyValue(Windowed(key, Window(start, end)), self._decode(raw))

    def all(self, *, reverse: bool = False) -> KeyValueIterator:
        """Every live session in binary-key order (key, then end, then start for keys of equal
        length) across all segments: the full-scan path.

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        segments = self._segments
        actual = segments.actual_from(0)
        interval = segments.segment_interval_ms
        first = max(segments.min_live_segment_id(), 0)
        streams = [
            segments.range(None, None, sid * interval, sid * interval, reverse=reverse)
            for sid in segments.segment_ids()
            if sid >= first
        ]
        merged = heapq.merge(*streams, key=operator.itemgetter(0), reverse=reverse)
        return self._track(self._sessions(merged, None, None, actual, MAX_LONG))

    def backward_all(self) -> KeyValueIterator:
        """:meth:`all` in reverse order.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self.all(reverse=True)

    # -- read helpers --------------------------------------------------------------------------

    def _fetch(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool
    ) -> KeyValueIterator:
        if _count(args, kwargs) == 1 and "key_from" not in kwargs and "key_to" not in kwargs:
            (key,) = _bind(method, args, kwargs, ("key",))
            return self._find_key(_key(key, "key"), 0, MAX_LONG, forward)
        key_from, key_to = _bind(method, args, kwargs, ("key_from", "key_to"))
        return self._find_range(
            _optional_key(key_from, "key_from"), _optional_key(key_to, "key_to"), 0, MAX_LONG,
            forward,
        )

    def _find(
        self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, forward: bool
    ) -> KeyValueIterator:
        if _count(args, kwargs) == 3 and "key_from" not in kwargs and "key_to" not in kwargs:
            key, earliest, latest = _bind(
                method, args, kwargs, ("key", "earliest_session_end", "latest_session_start")
            )
            return self._find_key(
                _key(key, "key"),
                _long(earliest, "earliest_session_end"),
                _long(latest, "latest_session_start"),
                forward,
            )
        key_from, key_to, earliest, latest = _bind(
            method,
            args,
            kwargs,
            ("key_from", "key_to", "earliest_session_end", "latest_session_start"),
        )
        return self._find_range(
            _optional_key(key_from, "key_from"),
            _optional_key(key_to, "key_to"),
            _long(earliest, "earliest_session_end"),
            _long(latest, "latest_session_start"),
            forward,
        )

    def _find_key(
        self, key: bytes, earliest: int, latest: int, forward: bool
    ) -> KeyValueIterator:
        self._check_open()
        actual = self._segments.actual_from(earliest)
        lower, upper = single_key_bounds(key)
        rows = self._segments.range(lower, upper, actual, MAX_LONG, reverse=not forward)
        return self._track(self._sessions(rows, key, key, actual, latest))

    def _find_range(
        self,
        key_from: bytes | None,
        key_to: bytes | None,
        earliest: int,
        latest: int,
        forward: bool,
    ) -> KeyValueIterator:
        self._check_open()
        if key_from is not None and key_to is not None and key_from > key_to:
            log.warning(_INVERTED_RANGE_WARNING)
            return self._track(iter(()))
        actual = self._segments.actual_from(earliest)
        rows = self._segments.range(
            lower_bound(key_from), upper_bound(key_from, key_to), actual, MAX_LONG,
            reverse=not forward,
        )
        return self._track(self._sessions(rows, key_from, key_to, actual, latest))

    def _sessions(
        self,
        rows: Iterator[tuple[bytes, bytes]],
        key_from: bytes | None,
        key_to: bytes | None,
        earliest_end: int,
        latest_start: int,
    ) -> Iterator[KeyValue]:
        """Kafka's ``SessionKeySchema.hasNextCondition`` over raw rows, decoded.

        A closed store ends the iteration quietly, as Kafka's iterators report no next element
        once their store is closed.
        """
        for binary, raw in rows:
            if self._closed:
                return
            key, start, end = decode_session_key(binary)
            if (
                (key_from is None or key >= key_from)
                and (key_to is None or key <= key_to)
                and end >= earliest_end
                and start <= latest_start
            ):
                yield KeyValue(Windowed(key, Window(start, end)), self._decode(raw))

    def _track(self, entries: Iterator[KeyValue]) -> KeyValueIterator:
        """Wrap a scan: once the store closes, the iterator is exhausted (not an error)."""
        if isinstance(entries, GeneratorType):
            self._scans.add(entries)
        return KeyValueIterator(entries, str(self._db.path), alive=self._alive)

    def _alive(self) -> bool:
        return not self.closed

    # -- lifecycle -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed or self._db.closed:
            raise StoreClosedError(f"the session store at {self._db.path} is closed")

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (or the bytes store underneath was closed)."""
        return self._closed or self._db.closed

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it).

        Open iterators end quietly: ``has_next()`` turns False, as Kafka's segmented stores'
        iterators do once their store is closed.
        """
        self._closed = True
        # Release the RocksDB iterators of open scans before the database closes.
        for scan in list(self._scans):
            scan.close()
        if self._owns_db:
            self._db.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SessionStore(_SessionStoreBase[bytes]):
    """Kafka's ``RocksDBSessionStore``: byte aggregates of byte keys' sessions.

    Args:
        path: directory of the RocksDB database; created if missing, reopened with its data.
        retention_ms: how long a session stays readable after its end (relative to stream
            time); Kafka's ``retentionPeriod``.
        segment_interval_ms: width of a segment; defaults as ``Stores.persistentSessionStore``
            (:func:`default_segment_interval_ms`).
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path (then None); its owner commits and closes it (see :meth:`over`).

    Raises:
        InvalidOptionError: a negative retention or a segment interval below 1 ms.
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    def _encode(self, value: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, (bytearray, memoryview)):
            return bytes(value)
        raise InvalidOptionError(f"value must be bytes or None, got {type(value).__name__}")

    def _decode(self, raw: bytes) -> bytes:
        return raw


class SessionStoreWithHeaders(_SessionStoreBase[ValueAndHeaders[bytes]]):
    """KIP-1271's ``SessionStoreWithHeaders``: aggregates with their record headers.

    Values are ``ValueAndHeaders(aggregate, headers)`` (Kafka's ``AggregationWithHeaders``).
    Opening the directory of a plain :class:`SessionStore` upgrades it lazily: its sessions read
    with empty headers until rewritten.

    Args:
        path: directory of the RocksDB database; created if missing, reopened with its data.
        retention_ms: see :class:`SessionStore`.
        segment_interval_ms: see :class:`SessionStore`.
        db: see :class:`SessionStore`.

    Raises:
        InvalidOptionError: a negative retention or a segment interval below 1 ms.
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    _DATA_CF = SESSION_HEADERS_CF
    _LEGACY = ((DEFAULT_CF, convert_plain_value),)
    _HEADERS = True

    def _encode_columns(
        self, values: list[bytes | None], headers: list[bytes | None] | None
    ) -> list[bytes | None]:
        return headed_column(values, [None] * len(values) if headers is None else headers)

    def _decode_columns(self, raws: list[bytes]) -> tuple[list[bytes], ...]:
        headers, payloads = split_headers_column(raws)
        return payloads, headers

    def _encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, ValueAndHeaders):
            raise InvalidOptionError(
                f"value must be ValueAndHeaders or None, got {type(value).__name__}"
            )
        if value.value is None:
            return None  # Kafka: an aggregate serialized to null is a delete
        payload = value.value
        if not isinstance(payload, bytes):
            if not isinstance(payload, (bytearray, memoryview)):
                raise InvalidOptionError(
                    f"ValueAndHeaders.value must be bytes, got {type(payload).__name__}"
                )
            payload = bytes(payload)
        return encode_with_headers_value(payload, value.headers)

    def _decode(self, raw: bytes) -> ValueAndHeaders[bytes]:
        return decode_with_headers_value(raw)

    @property
    def upgrade_mode(self) -> bool:
        """Whether plain sessions were present when the store was opened (Kafka's upgrade mode)."""
        return self._segments.has_legacy_data


# -- argument checks ----------------------------------------------------------------------------


def _configure(retention_ms: Any, segment_interval_ms: Any) -> tuple[int, int]:
    retention = _long(retention_ms, "retention_ms", 0)
    if segment_interval_ms is None:
        return retention, default_segment_interval_ms(retention)
    interval = _long(segment_interval_ms, "segment_interval_ms", 0)
    if interval < 1:
        raise InvalidOptionError(f"segment_interval_ms must be at least 1, got {interval}")
    return retention, interval


__all__ = [
    "AggregationWithHeaders",
    "SessionStore",
    "SessionStoreWithHeaders",
    "default_segment_interval_ms",
]
