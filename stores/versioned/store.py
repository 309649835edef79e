"""The versioned key-value store (Kafka's ``RocksDBVersionedStore``, KIP-889/960/968).

Every key keeps its versions: the latest one in the latest-value store, older ones in segments
filed by their ``validTo`` timestamp, so that history past the retention is dropped one whole
segment at a time (byte layouts: :mod:`stores.versioned.format`). The put algorithm is Kafka's,
step for step, so that return values and stored bytes match Kafka's in every edge case.

History retention doubles as the grace period: a write older than the observed stream time minus
the retention is dropped. Kafka rebuilds the observed stream time by restoring its changelog;
this store persists it in the column family ``versionedStoreMetadata``, in the same atomic batch
as the data it describes, and keeps a copy in memory for as long as the bytes layer provably
holds the same value (see ``_time_known``).

A single-key as-of read (``get(key, as_of)``) gives Kafka's answer from fewer reads: usually one,
the row of ``as_of``'s own segment, searched in place (``versioned_format.find_in_row``) rather
than decoded; see the comment in ``get`` for why that is the answer Kafka's reads give. Many
lookups at once (``as_of_columns``, the as-of join's) read each key's latest value and rows
once, and answer a key's instants together by one binary search over its versions.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import operator
import os
import struct
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa

from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import checked_bytes as _checked_key
from stores.checks import checked_long, checked_optional_bytes
from stores.errors import CorruptDataError, InvalidOptionError, StoreClosedError
from stores.versioned.format import (
    LATEST_PREFIX,
    LATEST_SEGMENT_ID,
    METADATA_CF,
    NO_TIMESTAMP,
    ROW_ENDS_BEFORE,
    ROW_STARTS_AFTER,
    STREAM_TIME_KEY,
    TIMESTAMP_SIZE,
    SegmentValue,
    decode_latest_columns,
    decode_long,
    encode_latest,
    encode_long,
    find_in_row,
    latest_timestamp,
    min_timestamp,
    next_timestamp,
    segment_id,
    segment_prefix,
)
from stores.versioned.lookups import _VersionedLookups

#: Kafka's ``PUT_RETURN_CODE_NOT_PUT``: the put was older than the grace period.
NOT_PUT = -(2**63)
#: Kafka's ``PUT_RETURN_CODE_VALID_TO_UNDEFINED``: no newer version of the key exists.
VALID_TO_UNDEFINED = -1
# Kafka marks "no newer version found yet" with Long.MIN_VALUE, the same long as NOT_PUT, and
# turns it into -1 on return; so do we, including where Kafka's restore-only NOT_PUT paths
# come out as -1.
_SENTINEL = NOT_PUT
_MAX_LONG = 2**63 - 1
# Regular segment ids are >= 0, so their keys start below 0x80.
_SEGMENTS_END = b"\x80"
_LONG = struct.Struct(">q")
_pack_long = _LONG.pack
_unpack_long = _LONG.unpack_from


@dataclass(frozen=True)
class VersionedRecord:
    """One version of a key: its value, ``validFrom`` timestamp and ``validTo`` (None: latest)."""

    value: bytes
    timestamp: int
    valid_to: int | None = None


def default_segment_interval_ms(history_retention_ms: int) -> int:
    """Return the segment interval Kafka's ``Stores.persistentVersionedKeyValueStore`` picks.

    Raises:
        InvalidOptionError: ``history_retention_ms`` is not an integer >= 0.
    """
    retention = _non_negative(history_retention_ms, "history_retention_ms")
    if retention <= 60_000:
        return max(retention // 3, 2_000)
    if retention <= 300_000:
        return max(retention // 5, 20_000)
    if retention <= 3_600_000:
        return max(retention // 12, 60_000)
    return max(retention // 24, 300_000)


class _Rows:
    """The rows one operation reads and writes, cached per segment.

    The bytes layer already sees its own uncommitted writes; the cache spares repeated lookups
    (and lets ``put_many`` fetch every latest value in one call). Each segment has its own dict
    so that expiring a segment forgets its rows at once.
    """

    __slots__ = ("cache", "db")

    def __init__(self, db: BytesStore) -> None:
        self.db = db
        self.cache: dict[int, dict[bytes, bytes | None]] = {}

    def get(self, sid: int, key: bytes) -> bytes | None:
        rows = self.cache.get(sid)
        if rows is None:
            rows = self.cache[sid] = {}
        elif key in rows:
            return rows[key]
        raw = rows[key] = self.db.get(segment_prefix(sid) + key)
        return raw

    def prefetch(self, sid: int, keys: list[bytes]) -> None:
        prefix = segment_prefix(sid)
        values = self.db.multi_get([prefix + k for k in keys])
        self.cache.setdefault(sid, {}).update(zip(keys, values, strict=True))

    def put(self, sid: int, key: bytes, raw: bytes) -> None:
        self.db.put(segment_prefix(sid) + key, raw)
        self.cache.setdefault(sid, {})[key] = raw

    def delete(self, sid: int, key: bytes) -> None:
        self.db.delete(segment_prefix(sid) + key)
        self.cache.setdefault(sid, {})[key] = None

    def forget_below(self, sid: int) -> None:
        for expired in [s for s in self.cache if 0 <= s < sid]:
            del self.cache[expired]


class VersionedKeyValueStore(_VersionedLookups):
    """A byte key-value store that keeps every version of a key, with Kafka's semantics.

    Args:
        path: directory of the RocksDB database; created if missing, reopened with its data.
            None with ``db``.
        history_retention_ms: how long old versions stay queryable; also the grace period.
        segment_interval_ms: width of a segment; defaults as Kafka's
            ``Stores.persistentVersionedKeyValueStore(name, historyRetention)``.
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path; its owner commits and closes it (see :meth:`over`).

    Raises:
        InvalidOptionError: the retention is negative or the segment interval below 1 ms.
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        history_retention_ms: int,
        segment_interval_ms: int | None = None,
        *,
        db: BytesStore | None = None,
    ) -> None:
        self._retention = _non_negative(history_retention_ms, "history_retention_ms")
        if segment_interval_ms is None:
            self._interval = default_segment_interval_ms(self._retention)
        else:
            self._interval = _non_negative(segment_interval_ms, "segment_interval_ms")
            if self._interval < 1:
                raise InvalidOptionError(
                    f"segment_interval_ms must be at least 1, got {segment_interval_ms}"
                )
        if (path is None) == (db is None):
            raise TypeError(f"{type(self).__name__}() takes a path or db=, not both or neither")
        # A store opened from a path owns its database; one over an open db leaves it (and its
        # commits) to the db's owner.
        self._owns_db = db is None
        if db is None:
            db = RocksDBBytesStore(cast("str | os.PathLike[str]", path), self.column_families())
        self._db: BytesStore = db
        self._closed = False
        # The observed stream time as last read or written, and the bytes layer's state it is
        # valid for (see _time_known).
        self._time = NO_TIMESTAMP
        self._time_generation = -1
        self._time_bytes = -1
        self._live_for: int | None = None  # stream time whose first live segment is cached
        self._live_from = 0
        # Ids of the segments that may hold rows: found by a skip scan, then grown by writes.
        # Never shrunk: reads filter by liveness, so ids of expired (or rolled-back) segments
        # only cost a lookup, while a missing id would hide data.
        self._segments: list[int] = []
        start = segment_prefix(0)
        while True:
            first = next(iter(db.range(start, _SEGMENTS_END)), None)
            if first is None:
                break
            if len(first[0]) < TIMESTAMP_SIZE:
                raise CorruptDataError(f"key {first[0]!r} has no segment prefix")
            sid = decode_long(first[0][:TIMESTAMP_SIZE])
            self._segments.append(sid)
            if sid == _MAX_LONG:
                break
            start = segment_prefix(sid + 1)

    @classmethod
    def over(
        cls,
        bytes_store: BytesStore,
        history_retention_ms: int,
        segment_interval_ms: int | None = None,
    ) -> VersionedKeyValueStore:
        """Wrap an open bytes store (opened with :meth:`column_families`) whose owner commits.

        Every write still ends in ``bytes_store.maybe_commit()``, which commits only if the
        bytes store autocommits. Use one wrapper per bytes store: segment bookkeeping is per
        wrapper.

        Raises:
            InvalidOptionError: the retention is negative or the segment interval below 1 ms.
        """
        return cls(None, history_retention_ms, segment_interval_ms, db=bytes_store)

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """Column families the store needs: data in ``default``, stream time in metadata."""
        return (DEFAULT_CF, METADATA_CF)

    # -- properties ---------------------------------------------------------------------------

    @property
    def wrapped(self) -> BytesStore:
        """The bytes layer underneath."""
        return self._db

    @property
    def history_retention_ms(self) -> int:
        """History retention (and grace period) in ms."""
        return self._retention

    @property
    def segment_interval_ms(self) -> int:
        """Segment width in ms."""
        return self._interval

    @property
    def observed_stream_time(self) -> int:
        """The largest timestamp ever put (-1 before the first put).

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._stream_time()

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """Put a version of ``key`` (a None value is a tombstone) valid from ``timestamp``.

        Returns:
            The timestamp of the next newer version of ``key`` (value or tombstone), -1 if
            there is none, or ``NOT_PUT`` if ``timestamp`` is older than the grace period.

        Raises:
            InvalidOptionError: ``key``, ``value`` or ``timestamp`` has a wrong type or value.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key, value, timestamp = _checked(key, value, timestamp)
        with self._writing():
            stream_time = self._stream_time()
            if timestamp < stream_time - self._retention:
                return NOT_PUT
            new_time = max(stream_time, timestamp)
            result = self._do_put(_Rows(self._db), stream_time, new_time, key, value, timestamp)
            self._save_stream_time(stream_time, new_time)
        return result

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        """Put a tombstone for ``key`` at ``timestamp``.

        Returns:
            The version that was valid at ``timestamp`` (None if none, or if ``timestamp`` is
            older than the grace period, in which case nothing is written).

        Raises:
            InvalidOptionError: ``key`` or ``timestamp`` has a wrong type or value.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key, _, timestamp = _checked(key, None, timestamp)
        with self._writing():
            stream_time = self._stream_time()
            if timestamp < stream_time - self._retention:
                return None
            existing = self.get(key, timestamp)
            new_time = max(stream_time, timestamp)
            self._do_put(_Rows(self._db), stream_time, new_time, key, None, timestamp)
            self._save_stream_time(stream_time, new_time)
        return existing

    def put_many(
        self, records: Iterable[tuple[bytes, bytes | None, int]], *, validate: bool = True
    ) -> None:
        """Put ``(key, value, timestamp)`` records in order, as one atomic batch.

        The result is that of calling :meth:`put` for each record in turn (stream time
        advances record by record, not to the batch's end as in Kafka's restore). Every record
        is checked before any is written, unless ``validate`` is False: records read back from
        a source that checked them when they were written (the catalog's checksummed changelog
        files) are not checked twice. The latest values of all keys are read in one call, and
        into an empty store not at all.

        Raises:
            InvalidOptionError: a record has a wrong key, value or timestamp.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        if validate:
            batch = [_checked_record(record) for record in records]
        else:
            batch = list(records)
        if not batch:
            return
        with self._writing():
            stream_time = start_time = self._stream_time()
            rows = _Rows(self._db)
            self._prefetch(rows, batch)
            retention = self._retention
            latest = rows.cache[LATEST_SEGMENT_ID]
            for key, value, timestamp in batch:
                if timestamp < stream_time - retention:
                    continue
                previous, stream_time = stream_time, max(stream_time, timestamp)
                if value is not None and not self._segments and latest.get(key, b"") is None:
                    # A first version of a key while no segment holds any row (a first load):
                    # _do_put would find nothing to expire or search and make it the latest.
                    rows.put(LATEST_SEGMENT_ID, key, encode_latest(value, timestamp))
                    continue
                self._do_put(rows, previous, stream_time, key, value, timestamp)
            self._save_stream_time(start_time, stream_time)

    def _prefetch(self, rows: _Rows, batch: list[tuple[bytes, bytes | None, int]]) -> None:
        """Read every latest value of the batch in one call (most puts need nothing else)."""
        keys = list(dict.fromkeys(k for k, _, _ in batch))
        if not self._segments and next(iter(self._db.range(LATEST_PREFIX, None)), None) is None:
            # An empty store (the first load): no key has an entry, nothing to read.
            rows.cache[LATEST_SEGMENT_ID] = dict.fromkeys(keys)
        else:
            rows.prefetch(LATEST_SEGMENT_ID, keys)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        with self._db.operation():
            yield
            known = self._time_known()
        # A commit (if the bytes layer autocommits) keeps what the operation wrote: a stream
        # time that was current before it still is. A rollback (an error) leaves it stale.
        if known:
            self._remember_time(self._time)

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: bytes, as_of: int | None = None) -> VersionedRecord | None:
        """Return the latest version of ``key``, or the one valid at ``as_of`` (inclusive).

        Tombstones read as None. As in Kafka, when ``as_of`` is older than the observed stream
        time minus the history retention only the latest version can be returned (if it is
        not newer than ``as_of``), even if older versions are still stored.

        Raises:
            InvalidOptionError: ``key`` or ``as_of`` has a wrong type or value.
            StoreClosedError: the store is closed.
        """
        # Kafka's get(key, asOf) (see _resolve_as_of), from fewer reads; the per-lookup path,
        # so its small steps are written out here. Why the fewer reads give Kafka's answer: a
        # row is filed in the segment of its newest version's validTo (next_timestamp), and a
        # key's versions never overlap, so its rows are ordered (a row in a newer segment starts
        # at or after the end of every row in an older one) and the latest value starts at or
        # after the end of them all. So the row in as_of's own segment, read first, settles
        # most lookups alone: if it spans as_of, its version is the answer (the latest value
        # starts later); if it starts after as_of, so does everything newer (None). Only if it
        # is absent or ends at or before as_of are the latest value and then the segments
        # from the latest value's down read, newest first, as Kafka reads them.
        # tests/stores/test_versioned_asof.py checks this against Kafka's order of reads.
        if self._closed:
            self._check_open()  # (a closed bytes layer refuses the reads below)
        db = self._db
        if type(key) is not bytes:
            key = _checked_key(key)
        get = db.get
        if as_of is None:
            latest = get(LATEST_PREFIX + key)
            return None if latest is None else _latest_record(latest)
        if type(as_of) is not int or not 0 <= as_of <= _MAX_LONG:
            as_of = _checked_timestamp(as_of, "as_of")
        # The stream time in memory (see _time_known), checked inline.
        if self._time_generation == db.generation and self._time_bytes == db.uncommitted_bytes:
            stream_time = self._time
        else:
            stream_time = self._stream_time()
        segments = self._segments
        interval = self._interval
        if as_of < stream_time - self._retention:
            low = high = 0  # past the retention only the latest version answers (Kafka's rule)
        else:
            own = as_of // interval  # timestamps are >= 0: Java's division (segment_id)
            live = self._live_from if stream_time == self._live_for else self._min_live(stream_time)
            low = bisect_left(segments, max(live, own))
            high = len(segments)
            if low < high and segments[low] == own:
                raw = get(_pack_long(own) + key)
                if raw is not None:
                    found = find_in_row(raw, as_of)
                    if type(found) is tuple:
                        valid_from, valid_to, value = found
                        return None if value is None else _record(value, valid_from, valid_to)
                    if found == ROW_STARTS_AFTER:
                        return None
                low += 1
        latest = get(LATEST_PREFIX + key)
        if latest is not None:
            try:
                latest_ts: int = _unpack_long(latest)[0]
            except struct.error:
                raise CorruptDataError(
                    f"latest-value entry of {len(latest)} bytes has no timestamp"
                ) from None
            if latest_ts <= as_of:
                return _record(latest[TIMESTAMP_SIZE:], latest_ts, None)
            if high:
                high = bisect_right(segments, latest_ts // interval)
        while high > low:
            high -= 1
            raw = get(_pack_long(segments[high]) + key)
            if raw is None:
                continue
            found = find_in_row(raw, as_of)
            if type(found) is tuple:
                valid_from, valid_to, value = found
                return None if value is None else _record(value, valid_from, valid_to)
            if found == ROW_ENDS_BEFORE:
                return None  # this row ends before as_of, so every older row does too
        return None

    def versions(
        self,
        key: bytes,
        from_ts: int | None = None,
        to_ts: int | None = None,
        *,
        ascending: bool = False,
    ) -> list[VersionedRecord]:
        """Return every version (not tombstone) of ``key`` valid at some time in the range.

        That is every version with ``valid_from <= to_ts`` and ``valid_to > from_ts`` (None
        bounds are open), newest first unless ``ascending``. As in Kafka, if ``to_ts`` is older
        than the observed stream time minus the history retention only the latest version is
        considered.

        Raises:
            InvalidOptionError: a bound is not an integer, or ``from_ts > to_ts``.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key = _checked_key(key)
        if from_ts is not None:
            from_ts = _checked_timestamp(from_ts, "from_ts", minimum=-(2**63))
        if to_ts is not None:
            to_ts = _checked_timestamp(to_ts, "to_ts", minimum=-(2**63))
        if from_ts is not None and to_ts is not None and from_ts > to_ts:
            raise InvalidOptionError(f"from_ts ({from_ts}) must not be after to_ts ({to_ts})")
        stream_time = self._stream_time()
        out: list[VersionedRecord] = []
        raw = self._db.get(LATEST_PREFIX + key)
        if raw is not None and (to_ts is None or latest_timestamp(raw) <= to_ts):
            out.append(_latest_record(raw))
        if to_ts is None or to_ts >= stream_time - self._retention:
            # Rows are filed by validTo, so a version valid after from_ts sits in a segment
            # at or after from_ts's. (Kafka instead searches the segments up to to_ts's, which
            # misses versions that started before to_ts but ended in a later segment.)
            lowest = -(2**63) if from_ts is None else self._segment_id(from_ts)
            for sid in self._live_segments(lowest, stream_time):
                row = self._db.get(segment_prefix(sid) + key)
                if row is not None:
                    out += [
                        VersionedRecord(f.value, f.valid_from, f.valid_to)
                        for f in SegmentValue.decode(row).find_all(from_ts, to_ts)
                        if f.value is not None
                    ]
        if ascending:
            out.reverse()
        return out

    def scan_latest(self) -> Iterator[tuple[bytes, bytes, int]]:
        """Yield ``(key, value, timestamp)`` of every key whose latest version is a value.

        Keys come in byte order.

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return (
            (physical[TIMESTAMP_SIZE:], raw[TIMESTAMP_SIZE:], latest_timestamp(raw))
            for physical, raw in self._db.range(LATEST_PREFIX, None)
        )

    def scan_latest_columns(
        self, batch_rows: int = 1 << 16
    ) -> Iterator[tuple[pa.Array, pa.Array, pa.Array]]:
        """:meth:`scan_latest` as Arrow columns (keys, values, timestamps): the full-scan path.

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        for physical, raw in self._db.scan_columns(LATEST_PREFIX, None, batch_rows=batch_rows):
            yield decode_latest_columns(physical, raw)

    def scan_versions(
        self, from_ts: int | None = None, to_ts: int | None = None
    ) -> Iterator[tuple[bytes, bytes, int, int | None]]:
        """Yield ``(key, value, valid_from, valid_to)`` of every version the store holds that
        is valid at some time in ``[from_ts, to_ts]`` (None: open), as :meth:`versions` gives
        them per key (KIP-968's bounds): keys in byte order, each key's versions oldest
        first. Tombstones are not versions; a deleted key's last version ends at the
        tombstone. Older versions go when their segment expires; a key's latest never does.

        Raises:
            InvalidOptionError: a bound is not an integer, or ``from_ts > to_ts``.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        if from_ts is not None:
            from_ts = _checked_timestamp(from_ts, "from_ts", minimum=-(2**63))
        if to_ts is not None:
            to_ts = _checked_timestamp(to_ts, "to_ts", minimum=-(2**63))
        if from_ts is not None and to_ts is not None and from_ts > to_ts:
            raise InvalidOptionError(f"from_ts ({from_ts}) must not be after to_ts ({to_ts})")
        return self._scan_versions(from_ts, to_ts, self._stream_time())

    def _scan_versions(
        self, from_ts: int | None, to_ts: int | None, stream_time: int
    ) -> Iterator[tuple[bytes, bytes, int, int | None]]:
        sources = [_tagged(self._db.range(LATEST_PREFIX, None), 0)]
        if to_ts is None or to_ts >= stream_time - self._retention:
            lowest = -(2**63) if from_ts is None else self._segment_id(from_ts)
            sids = self._live_segments(lowest, stream_time)
            sources += [
                _tagged(self._db.range(segment_prefix(s), segment_prefix(s + 1)), rank + 1)
                for rank, s in enumerate(sids)
            ]
        merged = heapq.merge(*sources, key=operator.itemgetter(0))
        for key, group in itertools.groupby(merged, key=operator.itemgetter(0)):
            found: list[tuple[bytes, bytes, int, int | None]] = []
            for _, rank, raw in group:
                if rank == 0:
                    if to_ts is None or latest_timestamp(raw) <= to_ts:
                        found.append((key, raw[TIMESTAMP_SIZE:], latest_timestamp(raw), None))
                    continue
                for version in SegmentValue.decode(raw).find_all(from_ts, to_ts):
                    if version.value is not None:
                        found.append((key, version.value, version.valid_from, version.valid_to))
            found.sort(key=operator.itemgetter(2))
            yield from found

    def scan_as_of(self, as_of: int) -> Iterator[tuple[bytes, bytes, int, int | None]]:
        """Yield ``(key, value, valid_from, valid_to)`` of every key with a value at ``as_of``.

        Each row is what ``get(key, as_of=as_of)`` returns; keys come in byte order.

        Raises:
            InvalidOptionError: ``as_of`` is not an integer >= 0.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        as_of = _checked_timestamp(as_of, "as_of")
        return self._scan_as_of(as_of, self._stream_time())

    def _scan_as_of(
        self, as_of: int, stream_time: int
    ) -> Iterator[tuple[bytes, bytes, int, int | None]]:
        if as_of < stream_time - self._retention:
            for key, value, ts in self.scan_latest():
                if ts <= as_of:
                    yield key, value, ts, None
            return
        sids = self._live_segments(self._segment_id(as_of), stream_time)
        # Merge the latest-value store with every segment that can answer, by key; within a
        # key, sources arrive latest first, then segments newest first (as listed).
        sources = [_tagged(self._db.range(LATEST_PREFIX, None), 0)]
        sources += [
            _tagged(self._db.range(segment_prefix(s), segment_prefix(s + 1)), rank + 1)
            for rank, s in enumerate(sids)
        ]
        merged = heapq.merge(*sources, key=operator.itemgetter(0))
        for key, group in itertools.groupby(merged, key=operator.itemgetter(0)):
            latest: bytes | None = None
            rows: list[bytes] = []
            for _, rank, raw in group:
                if rank == 0:
                    latest = raw
                else:
                    rows.append(raw)
            record = self._resolve_as_of(latest, rows, as_of, stream_time)
            if record is not None:
                yield key, record.value, record.timestamp, record.valid_to

    def _resolve_as_of(
        self,
        latest: bytes | None,
        rows: Iterable[bytes | None],
        as_of: int,
        stream_time: int,
    ) -> VersionedRecord | None:
        """Kafka's ``get(key, asOf)`` given the latest value and the rows, newest first."""
        if latest is not None and latest_timestamp(latest) <= as_of:
            return _latest_record(latest)
        if as_of < stream_time - self._retention:
            # Past the retention only the latest version answers, for predictability.
            return None
        for raw in rows:
            if raw is None:
                continue
            found = find_in_row(raw, as_of)
            if type(found) is tuple:
                valid_from, valid_to, value = found
                return None if value is None else _record(value, valid_from, valid_to)
            if found == ROW_ENDS_BEFORE:
                return None  # this row ends before as_of, so every older row does too
        return None

    # -- Kafka's put, step for step -------------------------------------------------------------

    def _do_put(
        self,
        rows: _Rows,
        previous_time: int,
        stream_time: int,
        key: bytes,
        value: bytes | None,
        timestamp: int,
    ) -> int:
        self._expire(rows, previous_time, stream_time)
        found = _SENTINEL
        latest = rows.get(LATEST_SEGMENT_ID, key)
        if latest is not None:
            latest_ts = latest_timestamp(latest)
            if timestamp >= latest_ts:
                if timestamp > latest_ts:
                    # The latest version now ends at timestamp: file it in that segment.
                    sid = self._segment_id(timestamp)
                    if self._is_live(sid, stream_time):
                        self._append_to_row(
                            rows, sid, key, latest[TIMESTAMP_SIZE:], latest_ts, timestamp
                        )
                if value is not None:
                    rows.put(LATEST_SEGMENT_ID, key, encode_latest(value, timestamp))
                else:
                    rows.delete(LATEST_SEGMENT_ID, key)
                return VALID_TO_UNDEFINED
            found = latest_ts

        for sid in self._live_segments(self._segment_id(timestamp), stream_time):
            raw = rows.get(sid, key)
            if raw is None:
                continue
            if next_timestamp(raw) <= timestamp:
                break  # no older row can be affected; finish with what was found
            row_min = min_timestamp(raw)
            if row_min <= timestamp:
                return self._put_into_row(rows, stream_time, sid, raw, key, value, timestamp)
            if row_min < stream_time - self._retention:
                return VALID_TO_UNDEFINED  # Kafka's NOT_PUT, reported as -1 (see _SENTINEL)
            found = row_min

        found = self._finish_put(rows, stream_time, key, value, timestamp, found)
        return VALID_TO_UNDEFINED if found == _SENTINEL else found

    def _put_into_row(
        self,
        rows: _Rows,
        stream_time: int,
        sid: int,
        raw: bytes,
        key: bytes,
        value: bytes | None,
        timestamp: int,
    ) -> int:
        """Put into the row whose span holds ``timestamp``; return the new version's validTo."""
        row = SegmentValue.decode(raw)
        found = row.find(timestamp)
        own_sid = self._segment_id(timestamp)
        if found.valid_from == timestamp:
            row.update_record(timestamp, value, found.index)
        elif own_sid != sid:
            # The found version now ends at timestamp, which files it in an older segment.
            if self._is_live(own_sid, stream_time):
                self._append_to_row(rows, own_sid, key, found.value, found.valid_from, timestamp)
            row.update_record(timestamp, value, found.index)
        else:
            row.insert(timestamp, value, found.index)
        self._write_row(rows, sid, key, row)
        return found.valid_to

    def _finish_put(
        self,
        rows: _Rows,
        stream_time: int,
        key: bytes,
        value: bytes | None,
        timestamp: int,
        found: int,
    ) -> int:
        """Put a version no row spans: as latest, or next to the version found at ``found``."""
        if found == _SENTINEL:
            if value is not None:
                rows.put(LATEST_SEGMENT_ID, key, encode_latest(value, timestamp))
                return found
            # A tombstone never goes to the latest-value store (it would never expire).
            sid = self._segment_id(timestamp)
            if not self._is_live(sid, stream_time):
                return _SENTINEL
            raw = rows.get(sid, key)
            if raw is None:
                row = SegmentValue.with_record(None, timestamp, timestamp)  # degenerate
            else:
                row_next = next_timestamp(raw)
                if row_next == timestamp:
                    return found  # the row's end already marks this tombstone
                row = SegmentValue.decode(raw)
                row.insert_as_latest(row_next, timestamp, None)
            self._write_row(rows, sid, key, row)
            return found

        sid = self._segment_id(found)
        if not self._is_live(sid, stream_time):
            return _SENTINEL
        raw = rows.get(sid, key)
        if raw is None:
            row = SegmentValue.with_record(value, timestamp, found)
        else:
            row = SegmentValue.decode(raw)
            if row.next_ts <= timestamp:
                # Possible after a degenerate row left a gap before the next version.
                row.insert_as_latest(timestamp, found, value)
            else:
                row.insert_as_earliest(timestamp, value)
        self._write_row(rows, sid, key, row)
        return found

    def _append_to_row(
        self,
        rows: _Rows,
        sid: int,
        key: bytes,
        value: bytes | None,
        valid_from: int,
        valid_to: int,
    ) -> None:
        raw = rows.get(sid, key)
        if raw is None:
            row = SegmentValue.with_record(value, valid_from, valid_to)
        else:
            row = SegmentValue.decode(raw)
            row.insert_as_latest(valid_from, valid_to, value)
        self._write_row(rows, sid, key, row)

    def _write_row(self, rows: _Rows, sid: int, key: bytes, row: SegmentValue) -> None:
        rows.put(sid, key, row.encode())
        index = bisect_left(self._segments, sid)
        if index == len(self._segments) or self._segments[index] != sid:
            insort(self._segments, sid)

    # -- segments and stream time ---------------------------------------------------------------

    def _segment_id(self, timestamp: int) -> int:
        return segment_id(timestamp, self._interval)

    def _min_live(self, stream_time: int) -> int:
        # Asked several times per put with the same stream time: remember the last answer.
        if stream_time != self._live_for:
            self._live_for = stream_time
            self._live_from = segment_id(stream_time - self._retention, self._interval)
        return self._live_from

    def _is_live(self, sid: int, stream_time: int) -> bool:
        return sid >= self._min_live(stream_time)

    def _live_segments(self, lowest: int, stream_time: int) -> list[int]:
        """Known segment ids ``>= lowest`` that are live at ``stream_time``, newest first."""
        start = bisect_left(self._segments, max(lowest, self._min_live(stream_time)))
        return self._segments[start:][::-1]

    def _expire(self, rows: _Rows, previous_time: int, stream_time: int) -> None:
        """Drop the segments that expire as stream time moves from previous to current.

        Segments below the previous stream time's limit were dropped in the batch that
        recorded that time, so this depends only on stored state (and survives a rollback).
        """
        if previous_time == stream_time:
            return
        previous_limit = segment_id(previous_time - self._retention, self._interval)
        limit = self._min_live(stream_time)
        if limit > max(previous_limit, 0):
            self._db.delete_range(segment_prefix(0), segment_prefix(limit))
            rows.forget_below(limit)

    def _time_known(self) -> bool:
        """Whether the stream time in memory is the one the bytes layer holds.

        It is remembered with the bytes layer's ``generation`` and ``uncommitted_bytes``. The
        generation changes on every commit, rollback and close, and every write staged in a
        batch adds to ``uncommitted_bytes``; this store re-remembers both after each of its
        writes. So an unchanged pair means that nothing else has touched the bytes:
        not a rollback (of an error, or the owner's: ``TransactionalStore.rollback``,
        ``recover``), not a raw write of the metadata family (a catch-up clearing it, a
        changelog replay), not a commit of someone else's writes. An SST ingest bypasses the
        batch; the one ingest of this family (a cache restored from a snapshot) reopens its
        store afterwards, which starts with nothing remembered.
        """
        db = self._db
        return self._time_generation == db.generation and self._time_bytes == db.uncommitted_bytes

    def _remember_time(self, stream_time: int) -> None:
        db = self._db
        self._time = stream_time
        self._time_generation = db.generation
        self._time_bytes = db.uncommitted_bytes

    def _stream_time(self) -> int:
        # Read on every as-of lookup that the latest value does not answer, and by every write:
        # kept in memory while the bytes layer is provably unchanged (see _time_known).
        if not self._time_known():
            raw = self._db.get(STREAM_TIME_KEY, METADATA_CF)
            self._remember_time(NO_TIMESTAMP if raw is None else decode_long(raw))
        return self._time

    def _save_stream_time(self, previous: int, current: int) -> None:
        # Every write operation ends here (after its last staged write), so the time in memory
        # is remembered with the bytes it was staged in.
        if current != previous:
            self._db.put(STREAM_TIME_KEY, encode_long(current), METADATA_CF)
        self._remember_time(current)

    # -- lifecycle ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed or self._db.closed:
            raise StoreClosedError(f"the versioned store at {self._db.path} is closed")

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (or the bytes store underneath was closed)."""
        return self._closed or self._db.closed

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it)."""
        self._closed = True
        if self._owns_db:
            self._db.close()

    def __enter__(self) -> VersionedKeyValueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tagged(
    entries: Iterable[tuple[bytes, bytes]], rank: int
) -> Iterator[tuple[bytes, int, bytes]]:
    for physical, raw in entries:
        yield physical[TIMESTAMP_SIZE:], rank, raw


def _latest_record(raw: bytes) -> VersionedRecord:
    return _record(raw[TIMESTAMP_SIZE:], latest_timestamp(raw), None)


_new_record = object.__new__


def _record(value: bytes, timestamp: int, valid_to: int | None) -> VersionedRecord:
    """``VersionedRecord(value, timestamp, valid_to)`` built at half the cost: a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``; this fills the
    instance dict directly (equal, hashable and immutable the same way)."""
    record = _new_record(VersionedRecord)
    fields = record.__dict__
    fields["value"] = value
    fields["timestamp"] = timestamp
    fields["valid_to"] = valid_to
    return record


# -- argument checks ----------------------------------------------------------------------------


def _checked_record(record: Any) -> tuple[bytes, bytes | None, int]:
    try:
        key, value, timestamp = record
    except (TypeError, ValueError):
        raise InvalidOptionError(
            f"records must be (key, value, timestamp) tuples, got {record!r:.80}"
        ) from None
    return _checked(key, value, timestamp)


def _checked(key: Any, value: Any, timestamp: Any) -> tuple[bytes, bytes | None, int]:
    key = _checked_key(key)
    if value is not None and not isinstance(value, bytes):
        value = checked_optional_bytes(value)
    return key, value, _checked_timestamp(timestamp, "timestamp")


def _checked_timestamp(value: Any, name: str, minimum: int = 0) -> int:
    return checked_long(value, name, minimum)


def _non_negative(value: Any, name: str) -> int:
    return checked_long(value, name, 0, unit="ms")


__all__ = [
    "NOT_PUT",
    "VALID_TO_UNDEFINED",
    "VersionedKeyValueStore",
    "VersionedRecord",
    "default_segment_interval_ms",
]
