"""What window and session kinds share: retention, segments, headers, and reads by start."""

from __future__ import annotations

from typing import ClassVar

from catalog.kinds._base import Param, StoreKind

RETENTION = Param("retention_ms", "retention", "duration", required=True, example="'1 day' or ms")
SEGMENT_INTERVAL = Param("segment_interval_ms", "segmentInterval", "duration")
HEADERS_PARAM = Param("headers", "headers", "boolean")


class SpanKind(StoreKind):
    """A kind on Kafka's segmented store: entries per key and time span, read by start range."""

    supports_time_range: ClassVar[bool] = True
    entries_per_key: ClassVar[bool] = True
