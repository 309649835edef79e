"""A versioned store's changelog (Kafka's ``ChangeLoggingVersionedKeyValueBytesStore``).

| operation           | changelog record (key, value, timestamp, headers)                     |
|---------------------|-----------------------------------------------------------------------|
| ``put(k, v, ts)``   | ``k, v, ts, ()``: every put, even one the store refuses (``NOT_PUT``) |
| ``delete(k, ts)``   | ``k, None, ts, ()``: every delete, even one older than the grace      |

The record time is the version's, never the context's.

Restore (``RocksDBVersionedStore.restoreBatch``, converter ``identity``): records in order; a
record older than the observed stream time minus the history retention (the grace period) is
skipped, the stream time advancing record by record; the rest are ``put(key, value,
record time)`` (None: a tombstone).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from stores.protocols import VersionedRecord
from stores.records import ChangeLogContext, ChangelogRecord
from stores.versioned.put import NOT_PUT
from stores.versioned.store import VersionedKeyValueStore


class VersionedChangeLogging:
    """The logged writes of a :class:`VersionedKeyValueStore`: each writes, then logs."""

    WRITES: ClassVar[tuple[str, ...]] = ("put", "delete")

    def __init__(self, store: VersionedKeyValueStore, context: ChangeLogContext) -> None:
        self.store = store
        self.context = context

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        valid_to = self.store.put(key, value, timestamp)
        # Logged even when NOT_PUT (ChangeLoggingVersionedKeyValueBytesStore.put): restore
        # drops it again by the same grace rule.
        self.context.log(bytes(key), None if value is None else bytes(value), timestamp, ())
        return valid_to

    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None:
        old = self.store.delete(key, timestamp)
        self.context.log(bytes(key), None, timestamp, ())
        return old


def restore_batch(store: VersionedKeyValueStore, records: Sequence[ChangelogRecord]) -> int:
    """Apply one restore batch (keys not None); returns the number skipped as too old.

    Kafka writes a batch's rows as of the stream time at the batch's end (rows that would
    expire within the batch are never written); here each record is a ``put``, which gives the
    same versions for every read.
    """
    dropped = 0
    for r in records:
        if r.key is None:
            continue
        if store.put(r.key, r.value, r.timestamp) == NOT_PUT:
            dropped += 1
    return dropped


__all__ = ["VersionedChangeLogging", "restore_batch"]
