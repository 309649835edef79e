"""A timestamped key-value store's changelog, with or without headers (Kafka's
``ChangeLoggingTimestampedKeyValueBytesStore`` and KIP-1271's
``ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders``).

| operation                | value      | timestamp               | headers                          |
|--------------------------|------------|-------------------------|----------------------------------|
| ``put(k, v)``, v a value | plain ``v``| ``v``'s own timestamp   | () / ``v``'s headers             |
| ``put(k, None)``         | None       | context time            | () / the context's headers       |
| ``put_if_absent``        | as ``put``, only if ``k`` had no value                                  |
| ``put_all``              | one ``put`` record per entry, in order, after the whole batch           |
| ``delete(k)``            | None       | context time            | () / the context's headers       |

(first: timestamped; second: with headers). A value whose inner value is None is a None value
(Kafka's ``ValueAndTimestampSerializer`` serializes it to null bytes).

Restore (``StateManagerUtil.converterForStore``): ``RecordConverters.rawValueToTimestampedValue``
(stored value ``BE64(record time) ‖ value``) or ``rawValueToHeadersValue`` (``varint ‖
headers ‖ BE64(record time) ‖ value``, headers = the record's): the record's timestamp
becomes the value's, its headers the value's headers; None deletes.

By column (a whole partition's records at once, for ``catalog.kafka.changelog``):

- ``changelog_columns``: a raw scan to one record per live key: the plain value, its time
  as the record's (an unknown time stays null: Kafka's producer refuses it, the caller
  reports it), its headers as the record's.
- ``store_columns``: records in offset order to one write's rows: the last record of each
  key wins, as Kafka's restore overwrites whatever the time; None deletes. A write's own
  apply orders its rows by timestamp, stably: where each partition's times never go back
  that is offset order and the rows go as they are; else only each key's last is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from stores.columns.changelog import last_rows, no_headers
from stores.records import (
    ChangeLogContext,
    ChangelogRecord,
    Headers,
    ValueAndTimestamp,
    ValueTimestampHeaders,
)
from stores.timestamped.store import (
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
)

AnyTimestampedStore = TimestampedKeyValueStore | TimestampedKeyValueStoreWithHeaders


class TimestampedChangeLogging:
    """The logged writes of a timestamped store (with or without headers): each writes to the
    store, then logs."""

    WRITES: ClassVar[tuple[str, ...]] = ("put", "put_if_absent", "put_all", "delete")

    def __init__(self, store: AnyTimestampedStore, context: ChangeLogContext) -> None:
        self.store = store
        self.context = context
        self.headers = isinstance(store, TimestampedKeyValueStoreWithHeaders)

    def _tombstone_headers(self) -> Headers:
        # ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders: the processed record's headers;
        # ChangeLoggingKeyValueBytesStore: new RecordHeaders().
        return self.context.record_headers if self.headers else ()

    def _log(self, key: bytes, value: Any) -> None:
        inner = None if value is None else value.value
        if inner is None:
            self.context.log(
                bytes(key), None, self.context.record_timestamp, self._tombstone_headers()
            )
        else:
            headers = value.headers if self.headers else ()
            self.context.log(bytes(key), bytes(inner), value.timestamp, headers)

    def put(self, key: bytes, value: Any) -> None:
        self.store.put(key, value)
        self._log(key, value)

    def put_if_absent(self, key: bytes, value: Any) -> Any:
        previous = self.store.put_if_absent(key, value)
        if previous is None:
            self._log(key, value)
        return previous

    def put_all(self, entries: Iterable[tuple[bytes, Any]]) -> None:
        entries = list(entries)
        self.store.put_all(entries)
        for key, value in entries:
            self._log(key, value)

    def delete(self, key: bytes) -> Any:
        old = self.store.delete(key)
        # Neither class overrides delete's time: the context's, not the old value's.
        self.context.log(bytes(key), None, self.context.record_timestamp, self._tombstone_headers())
        return old


def restore_batch(store: AnyTimestampedStore, records: Sequence[ChangelogRecord]) -> int:
    """Apply one restore batch (keys not None); returns the number dropped (always 0)."""
    entries: list[tuple[bytes, Any]] = []
    headers = isinstance(store, TimestampedKeyValueStoreWithHeaders)
    for r in records:
        if r.key is None:
            continue
        if r.value is None:
            entries.append((r.key, None))
        elif headers:
            entries.append((r.key, ValueTimestampHeaders(r.value, r.timestamp, r.headers)))
        else:
            entries.append((r.key, ValueAndTimestamp(r.value, r.timestamp)))
    store.put_all(entries)  # type: ignore[arg-type]
    return 0


def changelog_columns(
    raw: pa.Table, params: dict[str, Any], timestamp_ms: int, *, in_time: bool = True
) -> pa.Table:
    """A raw scan (``key``, ``value``, ``timestamp``[, ``headers``]) as changelog columns
    (``stores.columns.changelog``), in scan order; ``timestamp_ms`` is unused (each value
    has its own time)."""
    headers = raw.column("headers") if params.get("headers") else no_headers(raw.num_rows)
    return pa.table(
        {
            "key": raw.column("key"),
            "value": raw.column("value"),
            "timestamp": raw.column("timestamp"),
            "headers": headers,
        }
    )


def store_columns(
    records: pa.Table, groups: np.ndarray, params: dict[str, Any]
) -> tuple[pa.Table, np.ndarray, int]:
    """Changelog records (``stores.columns.changelog``; keys not None) in restore order to
    the rows of one write: ``key``, ``value`` (None deletes), ``timestamp`` (the record's),
    and ``headers`` (the record's) for a store with headers; those a write would apply as
    Kafka's restore does (see the module doc).

    Returns:
        The rows, the record each row comes from, and how many records were dropped (0).
    """
    names = ["key", "value", "timestamp"] + (["headers"] if params.get("headers") else [])
    times = records.column("timestamp").to_numpy(zero_copy_only=False)
    back = (times[1:] < times[:-1]) & (groups[1:] == groups[:-1])
    if not back.any():
        return records.select(names), np.arange(records.num_rows), 0
    source = np.sort(last_rows(records.column("key")))
    return records.take(pa.array(source)).select(names), source, 0


__all__ = ["TimestampedChangeLogging", "changelog_columns", "restore_batch", "store_columns"]
