"""``versioned``: Kafka's ``VersionedKeyValueStore`` (KIP-889, KIP-960/968): every version of a
key with its validity interval, history kept for ``historyRetention`` (the grace period too)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from catalog.kinds._base import Param, ReadParam, StoreKind, segment_interval
from stores.engine import StoreEngine
from stores.errors import InvalidOptionError
from stores.versioned.engine import VERSIONED_ENGINE
from stores.versioned.store import default_segment_interval_ms

HISTORY_RETENTION = Param(
    "history_retention_ms", "historyRetention", "duration", required=True,
    example="'1 day' or ms", note="which is also its grace period",
)  # fmt: skip
SEGMENT_INTERVAL = Param(
    "segment_interval_ms", "segmentInterval", "duration", default_from=("history_retention_ms",)
)
AS_OF = ReadParam("asOfTimestamp", "instant", picks_instant=True)
#: A write ignores the history options (as it always has): only ``asOfTimestamp`` is refused.
VERSIONS = ReadParam(
    "versions", "choice", choices=("latest", "all"), refused_by_writes=False,
    choices_note="'latest' (one row per key, the default) or 'all' (every version, versioned "
    "stores)",
)  # fmt: skip
FROM = ReadParam("fromTimestamp", "instant", refused_by_writes=False)
TO = ReadParam("toTimestamp", "instant", refused_by_writes=False)


class VersionedKind(StoreKind):
    name: ClassVar[str] = "versioned"
    params: ClassVar[tuple[Param, ...]] = (HISTORY_RETENTION, SEGMENT_INTERVAL)
    read_params: ClassVar[tuple[ReadParam, ...]] = (AS_OF, VERSIONS, FROM, TO)
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

    def check_reads(self, reads: Mapping[str, Any]) -> None:
        if reads.get(VERSIONS.option, "latest") == "latest" and (
            FROM.option in reads or TO.option in reads
        ):
            raise InvalidOptionError(
                f"options {FROM.option!r} / {TO.option!r} bound a history read: add "
                f"option {VERSIONS.option!r} = 'all' (for one instant, use {AS_OF.option!r})"
            )

    def scan_fields(self, reads: Mapping[str, Any]) -> dict[str, Any]:
        # A history read's record-time bounds are its own (``read_scan``: they take the
        # fields before any other kind's options).
        fields = {"as_of": reads[AS_OF.option]} if AS_OF.option in reads else {}
        if reads.get(VERSIONS.option) == "all":
            fields.update(
                all_versions=True, time_from=reads.get(FROM.option), time_to=reads.get(TO.option)
            )
        return fields


VERSIONED = VersionedKind()
