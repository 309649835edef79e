"""Timestamped key-value stores (Kafka's ``RocksDBTimestampedStore``, KIP-258, and
``RocksDBTimestampedStoreWithHeaders``, KIP-1271), with Kafka's lazy upgrade of older formats.

| store                                   | column family                       | value    |
|-----------------------------------------|-------------------------------------|----------|
| ``TimestampedKeyValueStore``            | ``keyValueWithTimestamp``           | ts v     |
| ``TimestampedKeyValueStoreWithHeaders`` | ``keyValueWithTimestampAndHeaders`` | n h ts v |

(``ts``: 8-byte big-endian timestamp; ``n``: varint size of the headers bytes ``h``; ``v``:
the value.)
Byte layouts: :mod:`stores.formats.timestamped` and :mod:`stores.formats.headers`.

Upgrade, as Kafka's ``DualColumnFamilyAccessor`` does it. When a store is opened, it looks at the
column family of the older format once: if it holds any entry the store runs in *upgrade mode*
until it is reopened, else in *regular mode* and the older column family is never read again.

* ``TimestampedKeyValueStore``: the older format is plain values in ``default``; they read with
  timestamp -1 ("unknown").
* ``TimestampedKeyValueStoreWithHeaders``: if ``keyValueWithTimestamp`` holds entries the store
  upgrades from it (empty headers in front); otherwise, if ``default`` holds entries, from plain
  values (empty headers, timestamp -1). Both at once is an inconsistent state Kafka refuses.
* Opening a store whose headers column family holds entries as a ``TimestampedKeyValueStore``
  is a downgrade, refused as in Kafka.

In upgrade mode ``get`` (and so ``put_if_absent``) of an entry found only in the older column
family writes it converted into the new one and deletes the old one, which is correct only
because the changelog already holds the same data; ``put`` and ``delete`` remove the key from
the older column family as well; iterators merge both column families (the new format wins on
equal keys) without migrating anything. A store over a read-only bytes store converts on read
and writes nothing.
"""

from __future__ import annotations

import logging
import os
import struct
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import checked_bytes as _checked_key
from stores.checks import checked_long, checked_optional_bytes
from stores.columns.arguments import check_same_length, chunked
from stores.errors import CorruptDataError, InvalidOptionError, StoreClosedError
from stores.formats.headers import (
    EMPTY_HEADERS_PREFIX,
    convert_from_plain_to_header_format,
    convert_to_header_format,
    decode_headers,
    encode_headers,
    split_headers,
    with_headers,
)
from stores.formats.timestamped import (
    TIMESTAMP_SIZE,
    TIMESTAMPED_CF,
    convert_to_timestamped,
    decode_timestamped,
    encode_timestamped,
    raw_timestamp,
)
from stores.iterators import KeyValueIterator
from stores.key_value.store import prefix_end
from stores.records import KeyValue, ValueAndTimestamp, ValueTimestampHeaders

#: The column family of KIP-1271's key-value format (``RocksDBTimestampedStoreWithHeaders``).
TIMESTAMPED_WITH_HEADERS_CF = "keyValueWithTimestampAndHeaders"

log = logging.getLogger(__name__)

#: Kafka's ``RocksDBStore.range`` warning for an inverted key range.
_INVERTED_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. This may be due to "
    "range arguments set in the wrong order, or serdes that don't preserve ordering when "
    "lexicographically comparing the serialized bytes. Note that the built-in numerical serdes "
    "do not follow this for negative numbers"
)

R = TypeVar("R")
S = TypeVar("S", bound="_DualFormatStore[Any]")
_MIN_LONG, _MAX_LONG = -(2**63), 2**63 - 1
_Legacy = tuple[str, Callable[[bytes], bytes]]


class _DualFormatStore(Generic[R]):
    """What both stores share: the open-time mode decision and Kafka's dual-CF accessor."""

    _NEW_CF: str
    _KIND: str

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, db: BytesStore | None = None
    ) -> None:
        if (path is None) == (db is None):
            raise TypeError(f"{type(self).__name__}() takes a path or db=, not both or neither")
        # A store opened from a path owns its database; one over an open db leaves it (and its
        # commits) to the db's owner.
        self._owns_db = db is None
        if db is None:
            db = RocksDBBytesStore(cast("str | os.PathLike[str]", path), self.column_families())
        self._db: BytesStore = db
        self._closed = False
        # Kafka closes a store's open iterators when the store closes; so do we.
        self._iterators: weakref.WeakSet[KeyValueIterator] = weakref.WeakSet()
        try:
            self._legacy: _Legacy | None = self._detect_legacy()
        except BaseException:
            if self._owns_db:
                db.close()
            raise

    @classmethod
    def over(cls: type[S], db: BytesStore) -> S:
        """Wrap an open bytes store (opened with :meth:`column_families`) whose owner commits.

        Every write ends in ``db.maybe_commit()``, which commits only if ``db`` autocommits.
        The upgrade mode is decided now, from what ``db`` holds (uncommitted writes included).

        Raises:
            CorruptDataError: the column families hold an inconsistent mix of formats.
        """
        return cls(db=db)

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """Column families the store opens (overridden by each store)."""
        raise NotImplementedError

    def _detect_legacy(self) -> _Legacy | None:
        raise NotImplementedError

    def _has_entries(self, cf: str) -> bool:
        return next(iter(self._db.range(cf=cf)), None) is not None

    # -- per-format hooks ---------------------------------------------------------------------

    def _encode(self, value: Any) -> bytes | None:
        raise NotImplementedError

    def _decode(self, raw: bytes) -> R:
        raise NotImplementedError

    # -- properties ---------------------------------------------------------------------------

    @property
    def wrapped(self) -> BytesStore:
        """The bytes layer underneath."""
        return self._db

    @property
    def upgrade_mode(self) -> bool:
        """Whether the store was opened in upgrade mode (older entries were present)."""
        return self._legacy is not None

    @property
    def legacy_column_family(self) -> str | None:
        """The column family upgraded from (None in regular mode)."""
        return None if self._legacy is None else self._legacy[0]

    # -- writes -------------------------------------------------------------------------------

    def put(self, key: bytes, value: R | None) -> None:
        """Store ``value`` under ``key``; None (or a record whose value is None) deletes.

        Raises:
            InvalidOptionError: ``key`` or ``value`` has a wrong type or value.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key = _checked_key(key)
        raw = self._encode(value)
        with self._db.operation():
            self._write(key, raw)

    def put_if_absent(self, key: bytes, value: R | None) -> R | None:
        """Store ``value`` only if ``key`` has none; return the value that was there.

        As in Kafka the lookup is a ``get``, so in upgrade mode an older entry is migrated.

        Raises:
            InvalidOptionError: ``key`` or ``value`` has a wrong type or value.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key = _checked_key(key)
        raw = self._encode(value)
        with self._db.operation():
            existing = self._get_raw(key, migrate=True)
            if existing is None:
                self._write(key, raw)
        return None if existing is None else self._decode(existing)

    def put_all(self, entries: Iterable[tuple[bytes, R | None]]) -> None:
        """Put every ``(key, value)`` in order, as one atomic batch (None deletes).

        Raises:
            InvalidOptionError: an entry has a wrong key or value (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        batch = [(_checked_key(key), self._encode(value)) for key, value in _pairs(entries)]
        with self._db.operation():
            for key, raw in batch:
                self._write(key, raw)

    def delete(self, key: bytes) -> R | None:
        """Delete ``key`` and return its old value (an older entry is read, not migrated).

        Raises:
            InvalidOptionError: ``key`` is not bytes.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key = _checked_key(key)
        with self._db.operation():
            existing = self._get_raw(key, migrate=False)
            self._write(key, None)
        return None if existing is None else self._decode(existing)

    def _write(self, key: bytes, raw: bytes | None) -> None:
        """Kafka's ``addToBatch``: delete from the older CF, put (or delete) in the new one."""
        if self._legacy is not None:
            self._db.delete(key, self._legacy[0])
        if raw is None:
            self._db.delete(key, self._NEW_CF)
        else:
            self._db.put(key, raw, self._NEW_CF)

    def _put_raw_columns(self, keys: list[bytes], raws: list[bytes | None]) -> None:
        if not all(type(k) is bytes for k in keys):
            raise InvalidOptionError("every key must be bytes")
        with self._db.operation():
            if self._legacy is not None:
                self._db.put_many(keys, [None] * len(keys), self._legacy[0])
            self._db.put_many(keys, raws, self._NEW_CF)

    # -- reads --------------------------------------------------------------------------------

    def get(self, key: bytes) -> R | None:
        """Return the value of ``key``, or None.

        In upgrade mode an entry found only in the older column family is migrated (written
        converted into the new one and deleted from the old one), as Kafka's ``get`` does.

        Raises:
            InvalidOptionError: ``key`` is not bytes.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        key = _checked_key(key)
        with self._db.operation():
            raw = self._get_raw(key, migrate=True)
        return None if raw is None else self._decode(raw)

    def _get_raw(self, key: bytes, *, migrate: bool) -> bytes | None:
        raw = self._db.get(key, self._NEW_CF)
        if raw is not None or self._legacy is None:
            return raw
        cf, convert = self._legacy
        old = self._db.get(key, cf)
        if old is None:
            return None
        converted = convert(old)
        if migrate and not self._db.read_only:
            self._write(key, converted)
        return converted

    def range(
        self, start: bytes | None = None, end: bytes | None = None, *, reverse: bool = False
    ) -> KeyValueIterator:
        """Iterate keys from ``start`` to ``end``, both inclusive (None is open), in byte order.

        ``reverse=True`` is Kafka's ``reverseRange``. Inverted bounds give nothing and log
        Kafka's warning.

        Raises:
            InvalidOptionError: a bound is not bytes.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        lower = None if start is None else _checked_key(start, "start")
        upper = None if end is None else _checked_key(end, "end")
        if lower is not None and upper is not None and lower > upper:
            log.warning(_INVERTED_RANGE_WARNING)
            return self._track(iter(()))
        return self._track(
            self._iterate(lower, None if upper is None else upper + b"\x00", reverse)
        )

    def reverse_range(
        self, start: bytes | None = None, end: bytes | None = None
    ) -> KeyValueIterator:
        """Kafka's ``reverseRange``: :meth:`range` from ``end`` down to ``start``.

        Raises:
            InvalidOptionError: a bound is not bytes.
            StoreClosedError: the store is closed.
        """
        return self.range(start, end, reverse=True)

    def all(self, *, reverse: bool = False) -> KeyValueIterator:
        """Iterate every entry in key byte order (``reverse`` for Kafka's ``reverseAll``).

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._track(self._iterate(None, None, reverse))

    def reverse_all(self) -> KeyValueIterator:
        """Kafka's ``reverseAll``.

        Raises:
            StoreClosedError: the store is closed.
        """
        return self.all(reverse=True)

    def prefix_scan(self, prefix: bytes) -> KeyValueIterator:
        """Iterate every key that starts with ``prefix``, in byte order.

        Raises:
            InvalidOptionError: ``prefix`` is not bytes.
            StoreClosedError: the store is closed.
        """
        self._check_open()
        prefix = _checked_key(prefix, "prefix")
        return self._track(self._iterate(prefix, prefix_end(prefix), False))

    def _track(self, entries: Iterator[KeyValue]) -> KeyValueIterator:
        iterator = KeyValueIterator(entries, str(self._db.path))
        self._iterators.add(iterator)
        return iterator

    def _iterate(
        self, lower: bytes | None, upper: bytes | None, reverse: bool
    ) -> Iterator[KeyValue]:
        decode = self._decode
        for key, raw in self._raw_range(lower, upper, reverse):
            yield KeyValue(key, decode(raw))

    def _raw_range(
        self, lower: bytes | None, upper: bytes | None, reverse: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        """``[lower, upper)`` in the new format, both column families merged."""
        new = self._db.range(lower, upper, self._NEW_CF, reverse=reverse)
        if self._legacy is None:
            return new
        cf, convert = self._legacy
        old = self._db.range(lower, upper, cf, reverse=reverse)
        return _merge(new, old, convert, reverse)

    def _scan_raw(self, batch_rows: int) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """Every entry in key order as (keys, new-format values) lists of up to ``batch_rows``.

        Checks its arguments at once (not on the first ``next``).
        """
        self._check_open()
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
            raise InvalidOptionError(f"batch_rows must be an integer >= 1, got {batch_rows!r}")
        if self._legacy is None:
            return self._db.scan_columns(cf=self._NEW_CF, batch_rows=batch_rows)
        return chunked(self._raw_range(None, None, False), batch_rows)

    def approximate_num_entries(self) -> int:
        """The number of entries: exact, counted over both column families as Kafka sums them.

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        cfs = [self._NEW_CF] if self._legacy is None else [self._legacy[0], self._NEW_CF]
        return sum(sum(1 for _ in self._db.range(cf=cf)) for cf in cfs)

    # -- lifecycle ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed or self._db.closed:
            raise StoreClosedError(f"the {self._KIND} store at {self._db.path} is closed")

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (or the bytes store underneath was closed)."""
        return self._closed or self._db.closed

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it) and its iterators."""
        self._closed = True
        for iterator in list(self._iterators):
            iterator.close()
        if self._owns_db:
            self._db.close()

    def __enter__(self: S) -> S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TimestampedKeyValueStore(_DualFormatStore[ValueAndTimestamp[bytes]]):
    """A byte key-value store whose values carry a timestamp (Kafka's
    ``TimestampedKeyValueStore`` over ``RocksDBTimestampedStore``).

    Values are ``ValueAndTimestamp[bytes]``; iterators yield ``KeyValue(key, ValueAndTimestamp)``.

    Args:
        path: directory of the RocksDB database; created if missing, upgraded lazily if it holds
            plain values (a ``KeyValueStore``'s). None with ``db``.
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path; its owner commits and closes it (see :meth:`over`).

    Raises:
        CorruptDataError: the database holds a headers-aware store (a downgrade).
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    _NEW_CF = TIMESTAMPED_CF
    _KIND = "timestamped key-value"

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """``default`` (plain values to upgrade), ``keyValueWithTimestamp`` (the data), and the
        headers column family, read only to refuse a downgrade."""
        return (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_WITH_HEADERS_CF)

    def _detect_legacy(self) -> _Legacy | None:
        if self._has_entries(TIMESTAMPED_WITH_HEADERS_CF):
            raise CorruptDataError(
                f"Store at {self._db.path} is a headers-aware store and cannot be opened as a "
                "timestamped store. Downgrade from headers-aware to timestamped store is not "
                "supported. To downgrade, delete the local state and rebuild the store as a "
                "timestamped store from its changelog."
            )
        if self._has_entries(DEFAULT_CF):
            return DEFAULT_CF, convert_to_timestamped
        return None

    def _encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, ValueAndTimestamp):
            raise InvalidOptionError(
                f"value must be a ValueAndTimestamp or None, got {type(value).__name__}"
            )
        payload = _checked_value(value.value)
        if payload is None:
            return None  # Kafka's serializer turns a null inner value into a delete
        return encode_timestamped(payload, _checked_timestamp(value.timestamp))

    def _decode(self, raw: bytes) -> ValueAndTimestamp[bytes]:
        return decode_timestamped(raw)

    def put_columns(
        self, keys: list[bytes], values: list[bytes | None], timestamps: list[int]
    ) -> None:
        """Put ``keys[i] -> ValueAndTimestamp(values[i], timestamps[i])`` in order, as one
        atomic batch (a None value deletes): the bulk-load path.

        Raises:
            InvalidOptionError: the lists differ in length, or hold a wrong key, value or
                timestamp (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        check_same_length("put_columns", (keys, values, timestamps))
        try:
            raws = [
                None if v is None else encode_timestamped(v, t)
                for v, t in zip(values, timestamps)
            ]
        except (TypeError, struct.error) as exc:
            raise InvalidOptionError(
                f"values must be bytes or None and timestamps 64-bit integers: {exc}"
            ) from None
        self._put_raw_columns(keys, raws)

    def scan_columns(
        self, batch_rows: int = 1 << 16
    ) -> Iterator[tuple[list[bytes], list[bytes], list[int]]]:
        """Every entry in key byte order, as (keys, values, timestamps) lists of up to
        ``batch_rows``, both column families merged: the full-scan path.

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer.
            StoreClosedError: the store is closed.
            CorruptDataError: a stored value is shorter than its timestamp.
        """
        return _timestamped_columns(self._scan_raw(batch_rows))


class TimestampedKeyValueStoreWithHeaders(_DualFormatStore[ValueTimestampHeaders[bytes]]):
    """A byte key-value store whose values carry a timestamp and record headers (Kafka's
    ``TimestampedKeyValueStoreWithHeaders`` over ``RocksDBTimestampedStoreWithHeaders``).

    Values are ``ValueTimestampHeaders[bytes]``.

    Args:
        path: directory of the RocksDB database; created if missing, upgraded lazily if it holds
            timestamped values (a ``TimestampedKeyValueStore``'s) or plain ones. None with
            ``db``.
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path; its owner commits and closes it (see :meth:`over`).

    Raises:
        CorruptDataError: the database holds both plain and timestamped entries.
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    _NEW_CF = TIMESTAMPED_WITH_HEADERS_CF
    _KIND = "timestamped key-value with headers"

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """``default`` and ``keyValueWithTimestamp`` (older formats to upgrade) and
        ``keyValueWithTimestampAndHeaders`` (the data)."""
        return (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_WITH_HEADERS_CF)

    def _detect_legacy(self) -> _Legacy | None:
        plain = self._has_entries(DEFAULT_CF)
        if self._has_entries(TIMESTAMPED_CF):
            if plain:
                raise CorruptDataError(
                    f"Inconsistent store state for the store at {self._db.path}. Cannot have "
                    "both plain (DEFAULT) and timestamped data simultaneously. Headers store "
                    "can upgrade from either plain or timestamped format, but not both."
                )
            return TIMESTAMPED_CF, convert_to_header_format
        if plain:
            return DEFAULT_CF, convert_from_plain_to_header_format
        return None

    def _encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, ValueTimestampHeaders):
            raise InvalidOptionError(
                f"value must be a ValueTimestampHeaders or None, got {type(value).__name__}"
            )
        payload = _checked_value(value.value)
        if payload is None:
            return None  # Kafka's serializer turns a null inner value into a delete
        headers_bytes = encode_headers(value.headers)  # refuses keys that are not UTF-8
        return with_headers(
            headers_bytes, encode_timestamped(payload, _checked_timestamp(value.timestamp))
        )

    def _decode(self, raw: bytes) -> ValueTimestampHeaders[bytes]:
        headers_bytes, payload = split_headers(raw)
        record = decode_timestamped(payload)
        return ValueTimestampHeaders(record.value, record.timestamp, decode_headers(headers_bytes))

    def put_columns(
        self,
        keys: list[bytes],
        values: list[bytes | None],
        timestamps: list[int],
        headers: list[bytes] | None = None,
    ) -> None:
        """Put ``keys[i] -> (values[i], timestamps[i], headers[i])`` in order, as one atomic
        batch (a None value deletes): the bulk-load path.

        ``headers`` are already encoded ``headersBytes`` (see :mod:`stores.formats.headers`),
        stored as given, not parsed; an empty or None item means no headers, and so does
        ``headers=None`` for every row.

        Raises:
            InvalidOptionError: the lists differ in length, or hold a wrong key, value,
                timestamp or headers (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        check_same_length(
            "put_columns", (keys, values, timestamps, *(() if headers is None else (headers,)))
        )
        try:
            if headers is None:
                raws = [
                    None if v is None else EMPTY_HEADERS_PREFIX + encode_timestamped(v, t)
                    for v, t in zip(values, timestamps)
                ]
            else:
                raws = [
                    None if v is None else _headed(h, encode_timestamped(v, t))
                    for v, t, h in zip(values, timestamps, headers)
                ]
        except (TypeError, struct.error) as exc:
            raise InvalidOptionError(
                "values must be bytes or None, timestamps 64-bit integers and headers "
                f"bytes: {exc}"
            ) from None
        self._put_raw_columns(keys, raws)

    def scan_columns(
        self, batch_rows: int = 1 << 16
    ) -> Iterator[tuple[list[bytes], list[bytes], list[int], list[bytes]]]:
        """Every entry in key byte order, as (keys, values, timestamps, headersBytes) lists of
        up to ``batch_rows``, all column families merged: the full-scan path.

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer.
            StoreClosedError: the store is closed.
            CorruptDataError: a stored value does not follow the layout.
        """
        return _headers_columns(self._scan_raw(batch_rows))




def _timestamped_columns(
    batches: Iterator[tuple[list[bytes], list[bytes]]],
) -> Iterator[tuple[list[bytes], list[bytes], list[int]]]:
    for keys, raws in batches:
        timestamps = [raw_timestamp(raw) for raw in raws]
        yield keys, [raw[TIMESTAMP_SIZE:] for raw in raws], timestamps


def _headers_columns(
    batches: Iterator[tuple[list[bytes], list[bytes]]],
) -> Iterator[tuple[list[bytes], list[bytes], list[int], list[bytes]]]:
    for keys, raws in batches:
        headers: list[bytes] = []
        payloads: list[bytes] = []
        add_headers, add_payload = headers.append, payloads.append
        for raw in raws:
            if raw[:1] == EMPTY_HEADERS_PREFIX:  # the common case: no headers, no parsing
                add_headers(b"")
                add_payload(raw[1:])
            else:
                h, p = split_headers(raw)
                add_headers(h)
                add_payload(p)
        timestamps = [raw_timestamp(p) for p in payloads]
        yield keys, [p[TIMESTAMP_SIZE:] for p in payloads], timestamps, headers


def _headed(headers_bytes: bytes | None, payload: bytes) -> bytes:
    """``with_headers``, with None or empty headers as the one-byte prefix ``00``."""
    if not headers_bytes:
        return EMPTY_HEADERS_PREFIX + payload
    return with_headers(headers_bytes, payload)


def _merge(
    new: Iterator[tuple[bytes, bytes]],
    old: Iterator[tuple[bytes, bytes]],
    convert: Callable[[bytes], bytes],
    reverse: bool,
) -> Iterator[tuple[bytes, bytes]]:
    """Merge two sorted streams (Kafka's ``RocksDBDualCFIterator``): older entries converted,
    the new format winning on an equal key."""
    sentinel = (b"", b"")
    n = next(new, sentinel)
    o = next(old, sentinel)
    n_live, o_live = n is not sentinel, o is not sentinel
    while n_live and o_live:
        if n[0] == o[0]:
            yield n
            n = next(new, sentinel)
            o = next(old, sentinel)
            n_live, o_live = n is not sentinel, o is not sentinel
        elif (o[0] < n[0]) != reverse:
            yield o[0], convert(o[1])
            o = next(old, sentinel)
            o_live = o is not sentinel
        else:
            yield n
            n = next(new, sentinel)
            n_live = n is not sentinel
    if n_live:
        yield n
        yield from new
    if o_live:
        yield o[0], convert(o[1])
        for key, raw in old:
            yield key, convert(raw)


# -- argument checks ----------------------------------------------------------------------------


def _pairs(entries: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    for entry in entries:
        try:
            key, value = entry
        except (TypeError, ValueError):
            raise InvalidOptionError(
                f"entries must be (key, value) pairs, got {entry!r:.80}"
            ) from None
        yield key, value






def _checked_value(value: Any) -> bytes | None:
    return checked_optional_bytes(value, "the record's value")


def _checked_timestamp(value: Any) -> int:
    return checked_long(value, "timestamp")


__all__ = [
    "TIMESTAMPED_WITH_HEADERS_CF",
    "KeyValueIterator",
    "TimestampedKeyValueStore",
    "TimestampedKeyValueStoreWithHeaders",
]
