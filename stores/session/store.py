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
- A key range is scanned, segment by segment, between ``SessionKeySchema.lowerRange`` and
  ``upperRange`` (``OrderedBytes``), so a session of a key in range whose binary key sorts above
  the upper bound is not returned (Kafka's accident: it takes an end of 2**55 or more, e.g.
  ``b""`` against ``key_to`` ``b"\\x00"``; :mod:`stores.segments.ordered`).

``SessionStoreWithHeaders`` keeps ``[varint headersSize][headers][aggregate]`` in
``sessionKeyValueWithHeaders`` and reads a plain store's ``default`` family lazily with empty
headers (Kafka's ``RocksDBMigratingSessionStoreWithHeaders``); writes move a session to the new
family. ``fetch_session`` is Kafka's ``get`` and, like it, migrates the session it reads into
the new family (unless the bytes store is read-only: a reader then converts and writes nothing);
iterators never migrate.

Iterators are :class:`stores.iterators.KeyValueIterator`; closing the store ends them quietly
(``has_next()`` False), as Kafka's segmented stores do.

Bulk paths (the catalog's materialization and Spark scans, no Python object per row):
``put_columns`` and ``scan_columns``, described in :mod:`stores.session.lookups`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import operator
import os
import weakref
from collections.abc import Generator, Iterator, Sequence
from types import GeneratorType
from typing import Any, ClassVar, Generic, TypeVar

from stores.bytes.protocol import BytesStore
from stores.checks import checked_bytes as _key
from stores.checks import checked_long as _long
from stores.iterators import KeyValueIterator
from stores.records import KeyValue, ValueAndHeaders, Window, Windowed
from stores.segments.base import SegmentedStoreBase
from stores.segments.dropped import dropped
from stores.segments.store import (
    INVALID_KEY_RANGE_WARNING,
    column_families,
    segment_prefix,
)
from stores.session.arguments import (
    _bind,
    _configure,
    _count,
    _search_arguments,
    _session,
    _windowed,
)
from stores.session.format import (
    MAX_LONG,
    PLAIN,
    WITH_HEADERS,
    SessionValueFormat,
    decode_session_key,
    encode_session_key,
    lower_range,
    lower_range_fixed_size,
    upper_range,
    upper_range_fixed_size,
)
from stores.session.lookups import SessionLookups

log = logging.getLogger(__name__)

V = TypeVar("V")
S = TypeVar("S", bound="_SessionStoreBase[Any]")

#: Kafka's ``AggregationWithHeaders``: ``value`` is Kafka's ``aggregation()``.
AggregationWithHeaders = ValueAndHeaders


def default_segment_interval_ms(retention_ms: int) -> int:
    """The segment interval of Kafka's ``Stores.persistentSessionStore``:
    ``max(retention / 2, 60 000)`` (``RocksDbSessionBytesStoreSupplier.segmentIntervalMs``).

    Raises:
        InvalidOptionError: ``retention_ms`` is not an integer >= 0.
    """
    return max(_long(retention_ms, "retention_ms", 0) // 2, 60_000)


class _SessionStoreBase(SegmentedStoreBase, Generic[V]):
    """The session store over a :class:`SegmentedBytesStore` (open, close and the segmented
    layer: :class:`stores.segments.base.SegmentedStoreBase`); subclasses fix the value layout.

    The bulk column paths (``put_columns``, ``scan_columns``) are those of a
    :class:`stores.session.lookups.SessionLookups`.
    """

    kind: ClassVar[str] = "session"
    _format: ClassVar[SessionValueFormat] = PLAIN
    #: Whether expired segments are dropped on every put, even one dropped as expired (see
    #: ``SegmentedBytesStore.expire_on_every_put``).
    _expire_on_every_put: ClassVar[bool] = False

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        retention_ms: int,
        segment_interval_ms: int | None = None,
        *,
        db: BytesStore | None = None,
    ) -> None:
        retention, interval = _configure(retention_ms, segment_interval_ms)
        if interval is None:
            interval = default_segment_interval_ms(retention)
        super().__init__(
            path,
            db,
            retention_ms=retention,
            segment_interval_ms=interval,
            data_cf=self._format.data_cf,
            legacy_cfs=self._format.legacy_cfs,
            expire_on_every_put=self._expire_on_every_put,
        )
        # Kafka closes a store's open iterators when the store closes; so do we (quietly).
        self._scans: weakref.WeakSet[Generator[Any, None, None]] = weakref.WeakSet()
        self._lookups = SessionLookups(
            self._segments, self._format, store_name=type(self).__name__, alive=self._alive
        )

    @classmethod
    def over(
        cls: type[S],
        db: BytesStore,
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
        return column_families(cls._format.data_cf, cls._format.legacy_cfs)

    def _decode(self, raw: bytes) -> V:
        value: V = self._format.decode(raw)
        return value

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
        raw = self._format.encode(value)
        self._check_open()
        with self._db.operation():
            written = self._segments.put(encode_session_key(key, start, end), raw, end)
        if not written:
            dropped(log, 1, bulk=False)  # Kafka's RocksDBSessionStore logs it too

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
        self._lookups.put_columns(keys, values, starts, ends, headers)

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
        if self._db.get(physical, self._format.data_cf) is not None:
            return
        self._db.put(physical, raw, self._format.data_cf)
        for cf, _ in self._format.legacy_cfs:
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
        return self._search("find_sessions", args, kwargs, times=True, forward=True)

    def backward_find_sessions(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """:meth:`find_sessions` (the key and key-range forms), newest segment first, keys
        descending.

        Raises:
            InvalidOptionError: wrong keys, times or argument count.
            StoreClosedError: the store is closed.
        """
        return self._search(
            "backward_find_sessions", args, kwargs, times=True, forward=False
        )

    def fetch(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """``fetch(key)``: every session of ``key``; ``fetch(key_from, key_to)``: of every key in
        the range (None bounds open). Kafka's ``findSessions(..., 0, Long.MAX_VALUE)``.

        Raises:
            InvalidOptionError: wrong keys or argument count.
            StoreClosedError: the store is closed.
        """
        return self._search("fetch", args, kwargs, times=False, forward=True)

    def backward_fetch(self, *args: Any, **kwargs: Any) -> KeyValueIterator:
        """:meth:`fetch` in backward order.

        Raises:
            InvalidOptionError: wrong keys or argument count.
            StoreClosedError: the store is closed.
        """
        return self._search("backward_fetch", args, kwargs, times=False, forward=False)

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
        scan = self._lookups.scan_columns(batch_rows, time_from, time_to)
        self._scans.add(scan)
        return scan

    # -- read helpers --------------------------------------------------------------------------

    def _search(
        self,
        method: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        times: bool,
        forward: bool,
    ) -> KeyValueIterator:
        key_from, key_to, earliest, latest, single = _search_arguments(
            method, args, kwargs, times=times
        )
        if single:
            assert key_from is not None
            return self._find_key(key_from, earliest, latest, forward)
        return self._find_range(key_from, key_to, earliest, latest, forward)

    def _find_key(
        self, key: bytes, earliest: int, latest: int, forward: bool
    ) -> KeyValueIterator:
        self._check_open()
        actual = self._segments.actual_from(earliest)
        # Kafka's AbstractRocksDBSegmentedBytesStore.fetch(key, from, to): fixed-size bounds.
        rows = self._segments.range(
            lower_range_fixed_size(key, actual),
            upper_range_fixed_size(key, latest),
            actual,
            MAX_LONG,
            reverse=not forward,
        )
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
            log.warning(INVALID_KEY_RANGE_WARNING)
            return self._track(iter(()))
        actual = self._segments.actual_from(earliest)
        # Kafka's AbstractRocksDBSegmentedBytesStore.fetch(keyFrom, keyTo, from, to): the
        # SessionKeySchema bounds (OrderedBytes), which leave some sessions in range unread.
        rows = self._segments.range(
            None if key_from is None else lower_range(key_from),
            None if key_to is None else upper_range(key_to, latest),
            actual,
            MAX_LONG,
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

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it).

        Open iterators end quietly: ``has_next()`` turns False, as Kafka's segmented stores'
        iterators do once their store is closed.
        """
        self._closed = True
        # Release the RocksDB iterators of open scans before the database closes.
        for scan in list(self._scans):
            scan.close()
        super().close()


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

    _format = PLAIN


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

    _format = WITH_HEADERS
    # Kafka 4.3.1: SessionSegmentsWithHeaders cleans up on every put, a dropped one too.
    _expire_on_every_put = True

    @property
    def upgrade_mode(self) -> bool:
        """Whether plain sessions were present when the store was opened (Kafka's upgrade mode)."""
        return self._segments.has_legacy_data


__all__ = [
    "AggregationWithHeaders",
    "SessionStore",
    "SessionStoreWithHeaders",
    "default_segment_interval_ms",
]
