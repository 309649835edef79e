"""A window store's changelog, for the four value formats (Kafka's
``ChangeLoggingWindowBytesStore``, ``ChangeLoggingTimestampedWindowBytesStore`` and KIP-1271's
``ChangeLoggingTimestampedWindowBytesStoreWithHeaders``).

Every ``put(key, value, window_start)`` logs one record, even a put the store drops (a window
of an expired segment, or a None value with duplicates retained):

| format                  | key                                   | value   | timestamp    | headers              |
|-------------------------|---------------------------------------|---------|--------------|----------------------|
| plain                   | ``key ‖ BE64 start ‖ BE32 seq``       | value   | context time | ()                   |
| timestamped             | same                                  | plain   | value's time | ()                   |
| timestamped, headers    | same                                  | plain   | value's time | value's headers      |
| plain, headers          | same                                  | plain   | context time | value's headers      |

A None value (or a wrapper around None) logs None at the context time, with the context's
headers in the header formats. ``seq`` is 0, or with ``retain_duplicates`` the change-logging
layer's own counter, incremented (mod 2**31) on every put, None values included, starting at
0 each time the layer is opened (``ChangeLoggingWindowBytesStore.maybeUpdateSeqnumForDups``);
``RocksDBWindowStore`` counts only the puts it writes, so after a None put the two disagree
and a restored store keeps the changelog's numbers.

The plain-with-headers row is ours: Kafka 4.3 builds that store only inside the DSL, with no
change-logging class of its own; it follows ``ChangeLoggingSessionBytesStoreWithHeaders``.

Restore (``AbstractRocksDBSegmentedBytesStore.restoreAllInternal`` / ``getWriteBatches``):
the stream time first advances to the largest window start of the whole batch; then each
record whose window start lies in an expired segment (as of that time) is dropped, the rest
written under the changelog's key (seq included); None deletes. Converters: ``identity``
(plain), ``rawValueToTimestampedValue`` (timestamped), ``rawValueToHeadersValue``
(timestamped with headers); the record's time becomes a timestamped value's, its headers the
value's headers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from stores.records import (
    ChangeLogContext,
    ChangelogRecord,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
)
from stores.window.format import (
    HEADERS,
    MAX_SEQNUM,
    PLAIN,
    TIMESTAMPED,
    TIMESTAMPED_HEADERS,
    WindowValueFormat,
    decode_window_key,
    encode_window_key,
)
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

AnyWindowStore = (
    WindowStore
    | TimestampedWindowStore
    | WindowStoreWithHeaders
    | TimestampedWindowStoreWithHeaders
)


class WindowChangeLogging:
    """The logged writes of a window store of any format: each writes, then logs."""

    WRITES: ClassVar[tuple[str, ...]] = ("put",)

    def __init__(self, store: AnyWindowStore, context: ChangeLogContext) -> None:
        self.store = store
        self.context = context
        self.timestamped = isinstance(
            store, (TimestampedWindowStore, TimestampedWindowStoreWithHeaders)
        )
        self.headers = isinstance(
            store, (WindowStoreWithHeaders, TimestampedWindowStoreWithHeaders)
        )
        # Kafka's layer counts from 0 as its store does on every open; ours continues from the
        # store's number, which is kept with the data, so that changelog and store keys agree.
        self.seqnum = store.seqnum if store.retain_duplicates else 0

    def put(self, key: bytes, value: Any, window_start: int) -> None:
        self.store.put(key, value, window_start)
        if self.store.retain_duplicates:
            self.seqnum = (self.seqnum + 1) & MAX_SEQNUM  # even for a None put the store skips
        ctx = self.context
        changelog_key = encode_window_key(bytes(key), window_start, self.seqnum)
        if self.timestamped or self.headers:
            inner = None if value is None else value.value
        else:
            inner = value
        if inner is None:
            ctx.log(
                changelog_key,
                None,
                ctx.record_timestamp,
                ctx.record_headers if self.headers else (),
            )
            return
        timestamp = value.timestamp if self.timestamped else ctx.record_timestamp
        ctx.log(changelog_key, bytes(inner), timestamp, value.headers if self.headers else ())


def _restored(store: AnyWindowStore, record: ChangelogRecord) -> tuple[Any, WindowValueFormat]:
    """The store's value of ``record`` (Kafka's record converter), and the format to encode it."""
    value = record.value
    if isinstance(store, TimestampedWindowStoreWithHeaders):
        return ValueTimestampHeaders.make(
            value, record.timestamp, record.headers
        ), TIMESTAMPED_HEADERS
    if isinstance(store, TimestampedWindowStore):
        return ValueAndTimestamp.make(value, record.timestamp), TIMESTAMPED
    if isinstance(store, WindowStoreWithHeaders):
        return ValueAndHeaders.make(value, record.headers), HEADERS
    return value, PLAIN


def restore_batch(store: AnyWindowStore, records: Sequence[ChangelogRecord]) -> int:
    """Apply one restore batch (keys not None; segment from the window start); returns the
    number dropped as expired.

    Raises:
        CorruptDataError: a key is shorter than the 12-byte window suffix.
    """

    def encode(record: ChangelogRecord) -> bytes | None:
        value, fmt = _restored(store, record)
        return None if value is None else fmt.encode(value)

    rows = [(r.key, decode_window_key(r.key)[1], r) for r in records if r.key is not None]
    return store.restore_batch(rows, encode)


__all__ = ["WindowChangeLogging", "restore_batch"]
