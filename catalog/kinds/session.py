"""``session``: Kafka's ``SessionStore[WithHeaders]``: values per key and session (start, end),
kept for ``retention`` after the session ends."""

from __future__ import annotations

from typing import Any, ClassVar

from catalog.kinds._base import HEADERS_PARAM, Param, segment_interval
from catalog.kinds._segmented import RETENTION, SEGMENT_INTERVAL, SegmentedKind
from stores.engine import StoreEngine
from stores.segments.store import SEGMENTS_META_CF, STREAM_TIME_KEY
from stores.session.engine import SESSION_ENGINE
from stores.session.store import default_segment_interval_ms


class SessionKind(SegmentedKind):
    name: ClassVar[str] = "session"
    params: ClassVar[tuple[Param, ...]] = (RETENTION, SEGMENT_INTERVAL, HEADERS_PARAM)
    engine: ClassVar[StoreEngine] = SESSION_ENGINE
    stream_time_row: ClassVar[tuple[str, bytes] | None] = (SEGMENTS_META_CF, STREAM_TIME_KEY)

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        retention = int(given["retention_ms"])
        return {
            "retention_ms": retention,
            "segment_interval_ms": segment_interval(given, default_segment_interval_ms(retention)),
            "headers": bool(given.get("headers")),
        }


SESSION = SessionKind()
