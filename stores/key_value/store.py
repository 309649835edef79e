"""The plain key-value store (Kafka's ``RocksDBStore``): serialized key to serialized value.

Layout: column family ``default``; RocksDB key = the serialized key, RocksDB value = the
serialized value, exactly as Kafka's ``RocksDBStore`` keeps them. Iteration is in the byte order
of the serialized keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import cast

from stores.bytes.keys import prefix_end
from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError


def _check_key(key: bytes) -> None:
    if not isinstance(key, (bytes, bytearray)):
        raise InvalidOptionError(f"key must be bytes, got {type(key).__name__}")


class KeyValueStore:
    """A byte key-value store with Kafka's ``KeyValueStore`` operations.

    Args:
        path: directory of the RocksDB database; created if missing. None with ``db``.
        db: an open bytes store to wrap instead of a path; its owner commits and closes it
            (see :meth:`over`).

    Raises:
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

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

    @classmethod
    def over(cls, db: BytesStore) -> KeyValueStore:
        """Wrap an open bytes store whose commits its owner controls."""
        return cls(db=db)

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """Column families this store keeps its data in."""
        return (DEFAULT_CF,)

    @property
    def wrapped(self) -> BytesStore:
        """The bytes layer underneath."""
        return self._db

    def put(self, key: bytes, value: bytes | None) -> None:
        """Store ``value`` under ``key``; a None value deletes, as in Kafka.

        Raises:
            InvalidOptionError: ``key`` is not bytes.
        """
        _check_key(key)
        if value is None:
            self._db.delete(bytes(key))
        else:
            self._db.put(bytes(key), bytes(value))
        self._db.maybe_commit()

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        """Store ``value`` only if ``key`` has none; return the value that was there."""
        _check_key(key)
        existing = self._db.get(bytes(key))
        if existing is None:
            self.put(key, value)
        return existing

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Put every entry in order, as one atomic batch (a None value deletes)."""
        entries = list(entries)
        for key, _ in entries:
            _check_key(key)
        self._db.put_many(
            (bytes(k) for k, _ in entries), (None if v is None else bytes(v) for _, v in entries)
        )
        self._db.maybe_commit()

    def put_columns(self, keys: list[bytes], values: list[bytes | None]) -> None:
        """Put ``keys[i] -> values[i]`` in order, as one atomic batch: the bulk-load path.

        Raises:
            InvalidOptionError: a key is not bytes.
        """
        if not all(type(k) is bytes for k in keys):
            raise InvalidOptionError("every key must be bytes")
        self._db.put_many(keys, values)
        self._db.maybe_commit()

    def scan_columns(self, batch_rows: int = 1 << 16) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """Every entry in key byte order, as (keys, values) lists: the full-scan path."""
        return self._db.scan_columns(batch_rows=batch_rows)

    def get(self, key: bytes) -> bytes | None:
        """Return the value of ``key``, or None."""
        _check_key(key)
        return self._db.get(bytes(key))

    def delete(self, key: bytes) -> bytes | None:
        """Delete ``key`` and return its old value."""
        existing = self.get(key)
        self._db.delete(bytes(key))
        self._db.maybe_commit()
        return existing

    def range(
        self, start: bytes | None = None, end: bytes | None = None, *, reverse: bool = False
    ) -> Iterator[tuple[bytes, bytes]]:
        """Iterate keys from ``start`` to ``end``, both inclusive (Kafka's ``range``).

        A None bound is open. ``reverse=True`` is Kafka's ``reverseRange``.
        """
        if start is not None and end is not None and start > end:
            return iter(())  # Kafka returns an empty iterator for inverted bounds
        upper = None if end is None else bytes(end) + b"\x00"
        return self._db.range(start, upper, reverse=reverse)

    def reverse_range(
        self, start: bytes | None = None, end: bytes | None = None
    ) -> Iterator[tuple[bytes, bytes]]:
        """Kafka's ``reverseRange``: ``range(start, end)`` from the highest key down."""
        return self.range(start, end, reverse=True)

    def reverse_all(self) -> Iterator[tuple[bytes, bytes]]:
        """Kafka's ``reverseAll``: every entry from the highest key down."""
        return self.all(reverse=True)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Iterate every key that starts with ``prefix``."""
        return self._db.range(prefix, prefix_end(prefix))

    def all(self, *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """Iterate every entry in key byte order (``reverse`` for Kafka's ``reverseAll``)."""
        if reverse:
            return self._db.range(reverse=True)
        return self._db.items()

    def approximate_num_entries(self) -> int:
        """Count the entries (exactly; small stores are the common case here)."""
        return sum(1 for _ in self._db.range())

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it)."""
        if self._owns_db:
            self._db.close()

    def __enter__(self) -> KeyValueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
