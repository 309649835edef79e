"""What window and session kinds share: retention, segments, headers, and reads by start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from catalog.kinds._base import Param, ReadParam, StoreKind
from stores.errors import InvalidOptionError

RETENTION = Param("retention_ms", "retention", "duration", required=True, example="'1 day' or ms")
SEGMENT_INTERVAL = Param(
    "segment_interval_ms", "segmentInterval", "duration", default_from=("retention_ms",)
)
START_FROM = ReadParam("windowStartFrom", "instant")
START_TO = ReadParam("windowStartTo", "instant")


class SegmentedKind(StoreKind):
    """A kind on Kafka's segmented store: entries per key and time span, read by start range
    (``windowStartFrom`` / ``windowStartTo``, windows' and sessions' alike)."""

    read_params: ClassVar[tuple[ReadParam, ...]] = (START_FROM, START_TO)
    supports_time_range: ClassVar[bool] = True
    entries_per_key: ClassVar[bool] = True

    def scan_fields(self, reads: Mapping[str, Any]) -> dict[str, Any]:
        low, high = reads.get(START_FROM.option), reads.get(START_TO.option)
        if low is not None and high is not None and low > high:
            raise InvalidOptionError(
                f"option {START_FROM.option!r} ({low} ms) is after option {START_TO.option!r} "
                f"({high} ms); give a range with from <= to"
            )
        return {"time_from": low, "time_to": high}
