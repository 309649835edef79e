"""``window``: Kafka's ``[Timestamped]WindowStore[WithHeaders]``: values per key and window
start, kept for ``retention``, optionally every put (``retainDuplicates``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from catalog.kinds._base import HEADERS_PARAM, Param, segment_interval
from catalog.kinds._segmented import RETENTION, SEGMENT_INTERVAL, SegmentedKind
from stores.engine import StoreEngine
from stores.errors import InvalidOptionError
from stores.segments.store import SEGMENTS_META_CF, STREAM_TIME_KEY
from stores.window.engine import WINDOW_ENGINE
from stores.window.store import default_segment_interval_ms

WINDOW_SIZE = Param(
    "window_size_ms", "windowSize", "duration", required=True, example="'5 minutes' or ms"
)
RETAIN_DUPLICATES = Param("retain_duplicates", "retainDuplicates", "boolean")
TIMESTAMPED_PARAM = Param("timestamped", "timestamped", "boolean")


class WindowKind(SegmentedKind):
    name: ClassVar[str] = "window"
    params: ClassVar[tuple[Param, ...]] = (
        RETENTION, WINDOW_SIZE, RETAIN_DUPLICATES, SEGMENT_INTERVAL, TIMESTAMPED_PARAM,
        HEADERS_PARAM,
    )  # fmt: skip
    engine: ClassVar[StoreEngine] = WINDOW_ENGINE
    stream_time_row: ClassVar[tuple[str, bytes] | None] = (SEGMENTS_META_CF, STREAM_TIME_KEY)

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        retention, size = int(given["retention_ms"]), int(given["window_size_ms"])
        if size < 1:
            raise InvalidOptionError(f"option 'windowSize' must be at least 1 ms, got {size}")
        if retention < size:
            raise InvalidOptionError(
                f"option 'retention' ({retention} ms) must be at least option 'windowSize' "
                f"({size} ms), as Kafka requires"
            )
        return {
            "retention_ms": retention,
            "window_size_ms": size,
            "retain_duplicates": bool(given.get("retain_duplicates")),
            "segment_interval_ms": segment_interval(given, default_segment_interval_ms(retention)),
            "timestamped": bool(given.get("timestamped")),
            "headers": bool(given.get("headers")),
        }

    def check_write(
        self, columns: Mapping[str, pa.Array], params: dict[str, Any], store: str
    ) -> None:
        if "window_end" not in columns:
            return
        size = params["window_size_ms"]
        ends = pc.add(columns["window_start"], size)
        wrong = pc.invert(pc.fill_null(pc.equal(columns["window_end"], ends), False))
        if pc.any(wrong).as_py():
            raise InvalidOptionError(
                f"column 'window_end' must be window_start + windowSize ({size} ms) in every "
                f"row of store {store!r}; drop the column or fix it",
                code="INVALID_WINDOW",
            )


WINDOW = WindowKind()
