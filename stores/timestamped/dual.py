"""What both timestamped key-value stores share (:mod:`stores.timestamped.store`): opening over
a path or an open bytes store, the open-time choice between upgrade and regular mode, and Kafka's
``DualColumnFamilyAccessor``: reads that fall back to the older format's column family, writes
that clear it, and iterators that merge both (the new format winning on equal keys).

A store subclasses :class:`DualFormatStore` with its column families, its new-format column
family (``_NEW_CF``), the older format it upgrades from (``_detect_legacy``) and its value
encoding (``_encode``, ``_decode``).
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

from stores.bytes.keys import prefix_end
from stores.bytes.protocol import BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.checks import checked_bytes as _checked_key
from stores.columns.arguments import chunked
from stores.errors import InvalidOptionError, StoreClosedError
from stores.iterators import KeyValueIterator
from stores.records import KeyValue

log = logging.getLogger(__name__)

#: Kafka's ``RocksDBStore.range`` warning for an inverted key range.
_INVERTED_RANGE_WARNING = (
    "Returning empty iterator for fetch with invalid key range: from > to. This may be due to "
    "range arguments set in the wrong order, or serdes that don't preserve ordering when "
    "lexicographically comparing the serialized bytes. Note that the built-in numerical serdes "
    "do not follow this for negative numbers"
)

R = TypeVar("R")
S = TypeVar("S", bound="DualFormatStore[Any]")
#: The older format a store upgrades from: its column family, and how a value of it converts
#: to the new format.
Legacy = tuple[str, Callable[[bytes], bytes]]


class DualFormatStore(Generic[R]):
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
            self._legacy: Legacy | None = self._detect_legacy()
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

    def _detect_legacy(self) -> Legacy | None:
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


def _pairs(entries: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    for entry in entries:
        try:
            key, value = entry
        except (TypeError, ValueError):
            raise InvalidOptionError(
                f"entries must be (key, value) pairs, got {entry!r:.80}"
            ) from None
        yield key, value


__all__ = ["DualFormatStore", "Legacy"]
