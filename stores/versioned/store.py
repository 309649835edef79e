"""The versioned key-value store (Kafka's ``RocksDBVersionedStore``, KIP-889/960/968).

Every key keeps its versions: the latest one in the latest-value store, older ones in segments
filed by their ``validTo`` timestamp, so that history past the retention is dropped one whole
segment at a time. The byte layouts are in :mod:`stores.versioned.format`; the put algorithm,
Kafka's step for step, in :mod:`stores.versioned.put`; the package doc lists the rest.

History retention doubles as the grace period: a write older than the observed stream time minus
the retention is dropped. The observed stream time is persisted with the data it describes (see
:mod:`stores.versioned.client`).

A single-key as-of read (``get(key, as_of)``) gives Kafka's answer from fewer reads: usually one,
the row of ``as_of``'s own segment, searched in place (``format.find_in_row``) rather
than decoded; see the comment in ``get`` for why that is the answer Kafka's reads give. Many
lookups at once (``as_of_columns``, the as-of join's) read each key's latest value and rows
once, and answer a key's instants together by one binary search over its versions.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, cast

import pyarrow as pa

from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import checked_bytes as _checked_key
from stores.checks import checked_long, checked_optional_bytes
from stores.errors import CorruptDataError, InvalidOptionError, StoreClosedError
from stores.protocols import VersionedRecord
from stores.versioned.client import VersionedStoreClient
from stores.versioned.format import (
    LATEST_PREFIX,
    LATEST_SEGMENT_ID,
    METADATA_CF,
    ROW_ENDS_BEFORE,
    ROW_STARTS_AFTER,
    TIMESTAMP_SIZE,
    SegmentValue,
    decode_latest_columns,
    encode_latest,
    find_in_row,
    latest_record,
    latest_timestamp,
    segment_prefix,
    versioned_record,
)
from stores.versioned.history import VersionedHistory
from stores.versioned.lookups import VersionedLookups
from stores.versioned.put import (
    NOT_PUT,
    Rows,
    do_put,
    prefetch_latest,
)
from stores.versioned.scans import scan_as_of, scan_versions

_MAX_LONG = 2**63 - 1
_LONG = struct.Struct(">q")
_pack_long = _LONG.pack
_unpack_long = _LONG.unpack_from


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


class VersionedKeyValueStore:
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
        self._client = VersionedStoreClient(db, self._retention, self._interval)
        self._lookups = VersionedLookups(self._client)

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
        return self._client.stream_time()

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
        client = self._client
        with client.writing():
            stream_time = client.stream_time()
            if timestamp < stream_time - self._retention:
                return NOT_PUT
            new_time = max(stream_time, timestamp)
            result = do_put(client, Rows(self._db), stream_time, new_time, key, value, timestamp)
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
        client = self._client
        with client.writing():
            stream_time = client.stream_time()
            if timestamp < stream_time - self._retention:
                return None
            existing = self.get(key, timestamp)
            new_time = max(stream_time, timestamp)
            do_put(client, Rows(self._db), stream_time, new_time, key, None, timestamp)
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
        client = self._client
        with client.writing():
            stream_time = start_time = client.stream_time()
            rows = Rows(self._db)
            prefetch_latest(client, rows, batch)
            retention = self._retention
            latest = rows.cache[LATEST_SEGMENT_ID]
            for key, value, timestamp in batch:
                if timestamp < stream_time - retention:
                    continue
                previous, stream_time = stream_time, max(stream_time, timestamp)
                if value is not None and not client.segments and latest.get(key, b"") is None:
                    # A first version of a key while no segment holds any row (a first load):
                    # do_put would find nothing to expire or search and make it the latest.
                    rows.put(LATEST_SEGMENT_ID, key, encode_latest(value, timestamp))
                    continue
                do_put(client, rows, previous, stream_time, key, value, timestamp)
            self._save_stream_time(start_time, stream_time)

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
        # Kafka's get(key, asOf) (as stores.versioned.scans resolves it), from fewer reads;
        # the per-lookup path, so its small steps are written out here. Why the fewer reads
        # give Kafka's answer: a row is filed in the segment of its newest version's validTo
        # (next_timestamp), and a key's versions never overlap, so its rows are ordered (a row
        # in a newer segment starts at or after the end of every row in an older one) and the
        # latest value starts at or after the end of them all. So the row in as_of's own
        # segment, read first, settles most lookups alone: if it spans as_of, its version is the
        # answer (the latest value starts later); if it starts after as_of, so does everything
        # newer (None). Only if it is absent or ends at or before as_of are the latest value and
        # then the segments from the latest value's down read, newest first, as Kafka reads them.
        # tests/stores/test_versioned_asof.py checks this against Kafka's order of reads.
        if self._closed:
            self._check_open()  # (a closed bytes layer refuses the reads below)
        db = self._db
        if type(key) is not bytes:
            key = _checked_key(key)
        get = db.get
        if as_of is None:
            latest = get(LATEST_PREFIX + key)
            return None if latest is None else latest_record(latest)
        if type(as_of) is not int or not 0 <= as_of <= _MAX_LONG:
            as_of = _checked_timestamp(as_of, "as_of")
        client = self._client
        stream_time = client.stream_time()
        segments = client.segments
        interval = self._interval
        if as_of < stream_time - self._retention:
            low = high = 0  # past the retention only the latest version answers (Kafka's rule)
        else:
            own = as_of // interval  # timestamps are >= 0: Java's division (segment_id)
            live = client.min_live(stream_time)
            low = bisect_left(segments, max(live, own))
            high = len(segments)
            if low < high and segments[low] == own:
                raw = get(_pack_long(own) + key)
                if raw is not None:
                    found = find_in_row(raw, as_of)
                    if type(found) is tuple:
                        valid_from, valid_to, value = found
                        if value is None:
                            return None
                        return versioned_record(value, valid_from, valid_to)
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
                return versioned_record(latest[TIMESTAMP_SIZE:], latest_ts, None)
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
                return None if value is None else versioned_record(value, valid_from, valid_to)
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
        stream_time = self._client.stream_time()
        out: list[VersionedRecord] = []
        raw = self._db.get(LATEST_PREFIX + key)
        if raw is not None and (to_ts is None or latest_timestamp(raw) <= to_ts):
            out.append(latest_record(raw))
        if to_ts is None or to_ts >= stream_time - self._retention:
            # Rows are filed by validTo, so a version valid after from_ts sits in a segment
            # at or after from_ts's. (Kafka instead searches the segments up to to_ts's, which
            # misses versions that started before to_ts but ended in a later segment.)
            lowest = -(2**63) if from_ts is None else self._client.segment_id(from_ts)
            for sid in self._client.live_segments(lowest, stream_time):
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
        return scan_versions(self._client, from_ts, to_ts, self._client.stream_time())

    def scan_as_of(self, as_of: int) -> Iterator[tuple[bytes, bytes, int, int | None]]:
        """Yield ``(key, value, valid_from, valid_to)`` of every key with a value at ``as_of``.

        Each row is what ``get(key, as_of=as_of)`` returns; keys come in byte order.

        Raises:
            InvalidOptionError: ``as_of`` is not an integer >= 0.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        as_of = _checked_timestamp(as_of, "as_of")
        return self._scan_as_of(as_of, self._client.stream_time())

    def _scan_as_of(
        self, as_of: int, stream_time: int
    ) -> Iterator[tuple[bytes, bytes, int, int | None]]:
        if as_of < stream_time - self._retention:
            for key, value, ts in self.scan_latest():
                if ts <= as_of:
                    yield key, value, ts, None
            return
        yield from scan_as_of(self._client, as_of, stream_time)

    # -- many lookups at once ------------------------------------------------------------------

    def get_many(
        self, keys: Sequence[bytes], as_ofs: Sequence[int]
    ) -> list[VersionedRecord | None]:
        """``[get(keys[i], as_ofs[i]) for i ...]``, from fewer reads: see :meth:`as_of_columns`.

        Raises:
            InvalidOptionError: a key or instant has a wrong type or value, or the sequences
                differ in length.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._lookups.get_many(keys, as_ofs)

    def as_of_columns(self, keys: pa.Array, as_ofs: pa.Array) -> pa.RecordBatch:
        """What ``get(keys[i], as_ofs[i])`` answers for every ``i``, as columns: the lookups of
        an as-of join (how: :meth:`stores.versioned.lookups.VersionedLookups.as_of_columns`).

        Args:
            keys: a binary array of serialized keys.
            as_ofs: an integer array of instants (epoch ms, >= 0), as long as ``keys``.

        Returns:
            A batch of ``len(keys)`` rows, in the order asked: ``value`` (binary),
            ``valid_from`` and ``valid_to`` (int64 epoch ms; ``valid_to`` null for a latest
            version); all null where ``get`` returns None, or the key or instant is null.

        Raises:
            InvalidOptionError: ``keys`` is not binary, ``as_ofs`` not integers or negative, or
                their lengths differ.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._lookups.as_of_columns(keys, as_ofs)

    def history(self, max_bytes: int | None = None) -> VersionedHistory | None:
        """Every version :meth:`get` can answer now, read once and held in memory as columns:
        many later lookups answered with no read (``VersionedHistory.find``); it does not
        follow later writes. None if the rows it reads exceed ``max_bytes``.

        Raises:
            StoreClosedError: the store is closed.
            CorruptDataError: a row does not follow Kafka's layout.
        """
        self._check_open()
        return VersionedHistory.read(self._client, max_bytes)

    # -- stream time ---------------------------------------------------------------------------

    def _save_stream_time(self, previous: int, current: int) -> None:
        # Every write ends here: one seam (tests fail a write at its last step through it).
        self._client.save_stream_time(previous, current)

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


__all__ = ["VersionedKeyValueStore", "default_segment_interval_ms"]
