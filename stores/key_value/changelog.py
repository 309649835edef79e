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

By column (a whole partition's records at once, for ``catalog.kafka.changelog``):

- ``changelog_columns``: a store's raw scan to changelog records, one per live key, all at
  the time given (Kafka logs the processed record's time, which the store does not keep).
- ``store_columns``: changelog records in offset order to the rows of one write, as they
  are (Kafka's restore overwrites, so the last offset wins, as in a write; None deletes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from stores.columns.changelog import no_headers
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


def changelog_columns(
    raw: pa.Table, params: dict[str, Any], timestamp_ms: int, *, in_time: bool = True
) -> pa.Table:
    """A raw scan (``key``, ``value``) as changelog columns (``stores.columns.changelog``),
    ``timestamp_ms`` in every row, in scan order."""
    n = raw.num_rows
    return pa.table(
        {
            "key": raw.column("key"),
            "value": raw.column("value"),
            "timestamp": pa.array(np.full(n, timestamp_ms, np.int64)),
            "headers": no_headers(n),
        }
    )


def store_columns(
    records: pa.Table, groups: np.ndarray, params: dict[str, Any]
) -> tuple[pa.Table, np.ndarray, int]:
    """Changelog records (``stores.columns.changelog``; keys not None) in restore order to
    the rows of one write (``key``, ``value`` bytes; None deletes): all of them, in order.
    A write's rows are applied in their order, each overwriting its key (``KeyValueEngine``:
    ``put_columns``, and its columnar reads take the last row of a key), as Kafka's restore
    does: the last offset wins with nothing chosen here. ``groups`` changes nothing: a
    key-value restore has no stream time.

    Returns:
        The rows, the record each row comes from, and how many records were dropped (0).
    """
    return records.select(["key", "value"]), np.arange(records.num_rows), 0


__all__ = [
    "KeyValueChangeLogging",
    "changelog_columns",
    "restore_batch",
    "store_columns",
]
