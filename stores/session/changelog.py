"""A session store's changelog, with or without headers (Kafka's
``ChangeLoggingSessionBytesStore`` and KIP-1271's ``ChangeLoggingSessionBytesStoreWithHeaders``).

Key: ``SessionKeySchema.toBinary`` = ``key ‖ BE64 end ‖ BE64 start``; the record time is always
the context's (a session value carries no timestamp).

| operation             | value           | headers: plain store | headers: store with headers        |
|-----------------------|-----------------|----------------------|------------------------------------|
| ``put(s, v)``         | ``v`` (plain)   | ()                   | ``v``'s headers                    |
| ``put(s, None)``      | None            | ()                   | the context's headers              |
| ``remove(s)``         | None            | ()                   | the context's headers              |

Every put and remove logs, even one whose session lies in an expired segment.

Restore (``AbstractRocksDBSegmentedBytesStore.restoreAllInternal``): as a window store's, the
segment time being the session's end (``SessionKeySchema.segmentTimestamp``): the stream time
first advances to the largest end of the batch, records of expired segments are dropped, the
rest written (None deletes). Converters: ``identity`` (plain) and
``rawValueToSessionHeadersValue`` (``varint ‖ headers ‖ aggregate``, the record's headers).

By column (a whole partition's records at once, for ``catalog.kafka.changelog``):

- ``changelog_columns``: a raw scan to one record per session, ascending by session end:
  key ``key ‖ BE64 end ‖ BE64 start``, the plain value, the session end as the record's
  time (the time of the record that last extended it, which Kafka logs), the value's
  headers.
- ``store_columns``: records in offset order to one write's rows (``key`` the plain key,
  ``value``, None deleting, ``session_start``, ``session_end``[, ``headers``]), all of them
  in order: a write applies its rows in session end order, stably, so the records of one
  changelog key (one end) keep their offset order and the last wins, as in Kafka's restore.
  Records of segments expired once the partition is restored
  (stream time ends at its latest session end) are counted as dropped and left to the
  store's own put, its rows in end order, which drops them (every record advances stream
  time there as in Kafka's restore, a None one included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from stores.columns.changelog import (
    live_segments,
    no_headers,
    split_keys,
    suffixed_keys,
)
from stores.columns.encode import whole
from stores.records import ChangeLogContext, ChangelogRecord, ValueAndHeaders
from stores.session.arguments import _bind, _count, _session, _windowed
from stores.session.format import (
    PLAIN,
    SUFFIX_SIZE,
    TIMESTAMP_SIZE,
    WITH_HEADERS,
    decode_session_key,
    encode_session_key,
)
from stores.session.store import SessionStore, SessionStoreWithHeaders

AnySessionStore = SessionStore | SessionStoreWithHeaders


class SessionChangeLogging:
    """The logged writes of a session store (with or without headers): each writes, then logs.
    Arguments as the store's ``put`` and ``remove``."""

    WRITES: ClassVar[tuple[str, ...]] = ("put", "remove")

    def __init__(self, store: AnySessionStore, context: ChangeLogContext) -> None:
        self.store = store
        self.context = context
        self.headers = isinstance(store, SessionStoreWithHeaders)

    def put(self, *args: Any, **kwargs: Any) -> None:
        self.store.put(*args, **kwargs)  # checks the arguments first
        if _count(args, kwargs) == 2 and "key" not in kwargs:
            session_key, value = _bind("put", args, kwargs, ("session_key", "value"))
            key, start, end = _windowed(session_key)
        else:
            key, start, end, value = _bind("put", args, kwargs, ("key", "start", "end", "value"))
            key, start, end = _session(key, start, end)
        inner = value.value if self.headers and value is not None else value
        ctx = self.context
        if inner is None:
            self._log_null(encode_session_key(key, start, end))
        else:
            headers = value.headers if self.headers else ()
            ctx.log(
                encode_session_key(key, start, end), bytes(inner), ctx.record_timestamp, headers
            )

    def remove(self, *args: Any, **kwargs: Any) -> None:
        self.store.remove(*args, **kwargs)
        if _count(args, kwargs) == 1:
            (session_key,) = _bind("remove", args, kwargs, ("session_key",))
            key, start, end = _windowed(session_key)
        else:
            key, start, end = _bind("remove", args, kwargs, ("key", "start", "end"))
            key, start, end = _session(key, start, end)
        self._log_null(encode_session_key(key, start, end))

    def _log_null(self, binary: bytes) -> None:
        ctx = self.context
        ctx.log(binary, None, ctx.record_timestamp, ctx.record_headers if self.headers else ())


def restore_batch(store: AnySessionStore, records: Sequence[ChangelogRecord]) -> int:
    """Apply one restore batch (keys not None; segment from the session end); returns the
    number dropped as expired.

    Raises:
        CorruptDataError: a key is shorter than the 16-byte session suffix.
    """
    headers = isinstance(store, SessionStoreWithHeaders)

    def encode(record: ChangelogRecord) -> bytes | None:
        if record.value is None:
            return None
        if headers:
            return WITH_HEADERS.encode(ValueAndHeaders(record.value, record.headers))
        return PLAIN.encode(record.value)

    rows = [(r.key, decode_session_key(r.key)[2], r) for r in records if r.key is not None]
    return store.restore_batch(rows, encode)


#: The shortest changelog key: a session key's suffix (an empty record key).
MIN_CHANGELOG_KEY = SUFFIX_SIZE


def changelog_columns(
    raw: pa.Table, params: dict[str, Any], timestamp_ms: int, *, in_time: bool = True
) -> pa.Table:
    """A raw scan (``key``, ``value``, ``session_start``, ``session_end``[, ``headers``]) as
    changelog columns (``stores.columns.changelog``), ascending by session end (see the
    module doc; ``timestamp_ms`` is unused); in the raw scan's order without ``in_time``
    (records this library applies itself, in one batch: a rescale)."""
    n = raw.num_rows
    starts = raw.column("session_start").to_numpy(zero_copy_only=False).astype(np.int64)
    ends = raw.column("session_end").to_numpy(zero_copy_only=False).astype(np.int64)
    headers = raw.column("headers") if params.get("headers") else no_headers(n)
    rest = pa.table({"value": raw.column("value"), "timestamp": pa.array(ends), "headers": headers})
    order = None
    if in_time and not (ends[1:] >= ends[:-1]).all():
        order = np.argsort(ends, kind="stable")
        rest = rest.take(pa.array(order))
    keys = whole(raw.column("key")) if n else pa.array([], pa.binary())
    binary = suffixed_keys(keys, [(ends, TIMESTAMP_SIZE), (starts, TIMESTAMP_SIZE)], order)
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
    keys, (ends, starts) = split_keys(records.column("key"), (TIMESTAMP_SIZE, TIMESTAMP_SIZE))
    live = live_segments(ends, groups, params["retention_ms"], params["segment_interval_ms"])
    source = np.arange(records.num_rows)
    columns = {
        "key": keys,
        "value": records.column("value"),
        "session_start": pa.array(starts),
        "session_end": pa.array(ends),
    }
    if params.get("headers"):
        columns["headers"] = records.column("headers")
    return pa.table(columns), source, int(len(live) - live.sum())


__all__ = [
    "MIN_CHANGELOG_KEY",
    "SessionChangeLogging",
    "changelog_columns",
    "restore_batch",
    "store_columns",
]
