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

By column (a whole partition's records at once, for ``catalog.kafka.changelog``):

- ``changelog_columns``: a raw scan to one record per window (per duplicate), ascending by
  window start: key ``key ‖ BE64 start ‖ BE32 seq`` (seq 0, or with ``retain_duplicates``
  1, 2, ... per duplicate of a key and start, in the store's order), the plain value, the
  value's time (timestamped) or else the window start (the store does not keep the time of
  the record that wrote it; Kafka logs that time, which is at or after the start), the
  value's headers.
- ``store_columns``: records in offset order to one write's rows (``key`` the plain key,
  ``window_start``, ``value``, [``timestamp``], [``headers``]). Restore writes each record
  under its changelog key, so the last record of a changelog key wins. Without
  ``retain_duplicates`` a write does the same: it applies its rows in window start order,
  stably, so a key's records of one window keep their offset order and the last wins (a
  seq other than 0 never comes from Kafka's store and is taken as 0); every record is a
  row. With it, the last record of each seq is a row, in seq order (our
  store numbers a write's duplicates in the order given, so reads list them as Kafka's
  restored store does), None dropped (it deletes its seq, which only an earlier record of
  the same changelog key can hold). Records of segments expired once the partition is
  restored (stream time ends at its latest window start, None records included) are
  counted as dropped; the store's own put, its rows in window start order, drops them
  (``SegmentedBytesStore.put_many``: a segment below the first live one at the final
  stream time is gone whatever the order), except with ``retain_duplicates``, where a None
  record advances Kafka's restore's stream time but our store skips a None put without
  advancing it: there they are left out here, and so are rows that stream time hides from
  reads (a start not after the latest minus the retention), which the store's own reads
  would hide only as of its own, possibly earlier, stream time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from stores.columns.changelog import (
    last_rows,
    live_segments,
    no_headers,
    split_keys,
    suffixed_keys,
    unexpired,
)
from stores.columns.encode import whole
from stores.columns.key_sort import key_runs
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
    SEQNUM_SIZE,
    SUFFIX_SIZE,
    TIMESTAMP_SIZE,
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


#: The shortest changelog key: a window key's suffix (an empty record key).
MIN_CHANGELOG_KEY = SUFFIX_SIZE


def changelog_columns(
    raw: pa.Table, params: dict[str, Any], timestamp_ms: int, *, in_time: bool = True
) -> pa.Table:
    """A raw scan (``key``, ``value``, ``window_start``, ``window_end``[, ``timestamp``][,
    ``headers``]) as changelog columns (``stores.columns.changelog``), ascending by window
    start (see the module doc; ``timestamp_ms`` is unused); in the raw scan's order without
    ``in_time`` (records this library applies itself, in one batch: a rescale)."""
    n = raw.num_rows
    keys = whole(raw.column("key")) if n else pa.array([], pa.binary())
    starts = raw.column("window_start").to_numpy(zero_copy_only=False).astype(np.int64)
    seqs = np.zeros(n, dtype=np.int64)
    if params.get("retain_duplicates") and n:
        order, first = key_runs(keys, suffix=[(starts, TIMESTAMP_SIZE)])
        run_start = np.flatnonzero(first)[np.cumsum(first) - 1]
        seqs[order] = (np.arange(n) - run_start + 1) & MAX_SEQNUM
    times = raw.column("timestamp") if params.get("timestamped") else pa.array(starts)
    headers = raw.column("headers") if params.get("headers") else no_headers(n)
    rest = pa.table({"value": raw.column("value"), "timestamp": times, "headers": headers})
    by_start = None
    if in_time and not (starts[1:] >= starts[:-1]).all():
        by_start = np.argsort(starts, kind="stable")
        rest = rest.take(pa.array(by_start))
    binary = suffixed_keys(keys, [(starts, TIMESTAMP_SIZE), (seqs, SEQNUM_SIZE)], by_start)
    return rest.add_column(0, "key", binary)


def store_columns(
    records: pa.Table, groups: np.ndarray, params: dict[str, Any]
) -> tuple[pa.Table, np.ndarray, int]:
    """Changelog records (``stores.columns.changelog``; keys not None and at least
    ``MIN_CHANGELOG_KEY`` bytes) in restore order, of the Kafka partitions ``groups`` says,
    to the rows of one write (see the module doc).

    Returns:
        The rows, the record each row comes from, and how many records were dropped as
        expired.
    """
    keys, (starts, seqs) = split_keys(records.column("key"), (TIMESTAMP_SIZE, SEQNUM_SIZE))
    live = live_segments(starts, groups, params["retention_ms"], params["segment_interval_ms"])
    dropped = int(len(live) - live.sum())
    rows = records.append_column("window_start", pa.array(starts)).set_column(0, "key", keys)
    source = np.arange(records.num_rows)
    if params.get("retain_duplicates"):
        kept = np.flatnonzero(live & unexpired(starts, groups, params["retention_ms"]))
        suffix = [(starts[kept], 8), (seqs[kept], 4)]
        winners = kept[last_rows(keys.take(pa.array(kept)), suffix=suffix)]
        values = records.column("value").take(pa.array(winners))
        source = winners[values.is_valid().to_numpy(zero_copy_only=False)]
        rows = rows.take(pa.array(source))
    names = ["key", "value", "window_start"]
    names += (["timestamp"] if params.get("timestamped") else []) + (
        ["headers"] if params.get("headers") else []
    )
    columns = rows.select(names)
    return columns, source, dropped


__all__ = [
    "MIN_CHANGELOG_KEY",
    "WindowChangeLogging",
    "changelog_columns",
    "restore_batch",
    "store_columns",
]
