"""A key-value store's changelog (Kafka's ``ChangeLoggingKeyValueBytesStore``): what each write
logs, and how a restore applies the records.

| operation             | changelog record (key, value, timestamp, headers)                |
|-----------------------|------------------------------------------------------------------|
| ``put(k, v)``         | ``k, v, context time, ()`` (v may be None)                       |
| ``put_if_absent(k,v)``| the same, only if ``k`` had no value                             |
| ``put_all(entries)``  | one ``put`` record per entry, in order, after the whole batch    |
| ``delete(k)``         | ``k, None, context time, ()``, whether or not ``k`` existed     |

Restore (``RocksDBStore.restoreBatch``, converter ``RecordConverters.identity``): the value
as is, None deletes; one atomic batch per restore batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from stores.key_value.store import KeyValueStore
from stores.records import ChangeLogContext, ChangelogRecord


class KeyValueChangeLogging:
    """The logged writes of a :class:`KeyValueStore` (Kafka's ``ChangeLoggingKeyValueBytesStore``):
    each writes to the store, then logs."""

    WRITES: ClassVar[tuple[str, ...]] = ("put", "put_if_absent", "put_all", "delete")

    def __init__(self, store: KeyValueStore, context: ChangeLogContext) -> None:
        self.store = store
        self.context = context

    def _log(self, key: bytes, value: bytes | None) -> None:
        self.context.log(
            bytes(key), None if value is None else bytes(value), self.context.record_timestamp, ()
        )

    def put(self, key: bytes, value: bytes | None) -> None:
        self.store.put(key, value)
        self._log(key, value)

    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None:
        previous = self.store.put_if_absent(key, value)
        if previous is None:
            self._log(key, value)
        return previous

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        entries = list(entries)
        self.store.put_all(entries)
        for key, value in entries:
            self._log(key, value)

    def delete(self, key: bytes) -> bytes | None:
        old = self.store.delete(key)
        self._log(key, None)  # Kafka logs the tombstone even for an absent key
        return old


def restore_batch(store: KeyValueStore, records: Sequence[ChangelogRecord]) -> int:
    """Apply one restore batch (keys not None); returns the number dropped (always 0)."""
    store.put_all([(r.key, r.value) for r in records if r.key is not None])
    return 0


__all__ = ["KeyValueChangeLogging", "restore_batch"]
