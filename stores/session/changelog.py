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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from stores.records import ChangeLogContext, ChangelogRecord, ValueAndHeaders
from stores.session.arguments import _bind, _count, _session, _windowed
from stores.session.format import PLAIN, WITH_HEADERS, decode_session_key, encode_session_key
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


__all__ = ["SessionChangeLogging", "restore_batch"]
