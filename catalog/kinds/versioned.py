"""``versioned``: Kafka's ``VersionedKeyValueStore`` (KIP-889, KIP-960/968): every version of a
key with its validity interval, history kept for ``historyRetention`` (the grace period too)."""

from __future__ import annotations

from typing import Any, ClassVar

from catalog.kinds._base import Param, StoreKind, segment_interval
from stores.engine import StoreEngine
from stores.errors import InvalidOptionError
from stores.versioned.engine import VERSIONED_ENGINE
from stores.versioned.store import default_segment_interval_ms

HISTORY_RETENTION = Param(
    "history_retention_ms", "historyRetention", "duration", required=True,
    example="'1 day' or ms", note="which is also its grace period",
)  # fmt: skip
SEGMENT_INTERVAL = Param("segment_interval_ms", "segmentInterval", "duration")


class VersionedKind(StoreKind):
    name: ClassVar[str] = "versioned"
    params: ClassVar[tuple[Param, ...]] = (HISTORY_RETENTION, SEGMENT_INTERVAL)
    engine: ClassVar[StoreEngine] = VERSIONED_ENGINE
    writes_intervals: ClassVar[bool] = True
    supports_as_of: ClassVar[bool] = True

    def refuse(self, given: dict[str, Any]) -> None:
        if given.get("headers"):
            raise InvalidOptionError(
                "option 'headers' is true but Kafka has not shipped a versioned store with "
                "headers (KIP-1271's VersionedKeyValueStoreWithHeaders is still an open pull "
                "request); headers are available for kinds 'timestamped', 'window' and 'session'"
            )

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        retention = int(given["history_retention_ms"])
        segment = segment_interval(given, default_segment_interval_ms(retention))
        return {"history_retention_ms": retention, "segment_interval_ms": segment}


VERSIONED = VersionedKind()
