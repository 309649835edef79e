"""The connector's options, parsed once.

Spark hands a data source a case-insensitive map of strings (lower-cased keys when they come
through SQL ``WITH (...)``). ``StoreOptions.parse`` validates all of it; nothing else reads raw
options.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from catalog.durations import parse_duration_ms, parse_instant_ms
from catalog.spec import check_store_name
from stores.errors import InvalidOptionError

#: Every option the connector accepts, in its documented spelling.
OPTIONS = (
    "store",
    "path",
    "root",
    "kind",
    "numPartitions",
    "historyRetention",
    "segmentInterval",
    "asOfTimestamp",
)
_BY_LOWER = {name.lower(): name for name in OPTIONS}
#: Options that shape a store when a write creates it.
CREATION_OPTIONS = ("kind", "numPartitions", "historyRetention", "segmentInterval")


@dataclass(frozen=True)
class StoreOptions:
    """Parsed, validated options of one read or write."""

    store: str
    root: str | None = None
    kind: str | None = None
    num_partitions: int | None = None
    history_retention_ms: int | None = None
    segment_interval_ms: int | None = None
    as_of_ms: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreOptions:
        """Parse Spark's option map.

        Raises:
            InvalidOptionError: an unknown option (naming the closest valid one), a missing
                store name, or a value that does not parse (naming the option).
        """
        given: dict[str, str] = {}
        for raw_name, value in options.items():
            name = _BY_LOWER.get(raw_name.lower())
            if name is None:
                close = difflib.get_close_matches(raw_name.lower(), list(_BY_LOWER), n=1)
                hint = f"; did you mean {_BY_LOWER[close[0]]!r}?" if close else ""
                raise InvalidOptionError(
                    f"unknown option {raw_name!r}{hint} Accepted: {', '.join(OPTIONS)}",
                    code="UNKNOWN_OPTION",
                )
            given[name] = value
        store = given.get("store")
        path = given.get("path")
        if store and path and store != path:
            raise InvalidOptionError(
                f"option 'store' is {store!r} but the path given to load()/save() is "
                f"{path!r}; give the store name once"
            )
        name = store or path
        if not name:
            raise InvalidOptionError(
                "no store named: set option 'store' (.option('store', 'rates')) "
                "or pass the name to load('rates') / save('rates')"
            )
        return cls(
            store=check_store_name(name),
            root=given.get("root") or None,
            kind=given["kind"].strip().lower() if "kind" in given else None,
            num_partitions=_positive_int(given, "numPartitions"),
            history_retention_ms=_duration(given, "historyRetention"),
            segment_interval_ms=_duration(given, "segmentInterval"),
            as_of_ms=(
                parse_instant_ms(given["asOfTimestamp"], "asOfTimestamp")
                if "asOfTimestamp" in given
                else None
            ),
        )

    def creation_params(self) -> dict[str, int | None]:
        """The kind parameters given, keyed as ``StoreSpec.params``."""
        return {
            "history_retention_ms": self.history_retention_ms,
            "segment_interval_ms": self.segment_interval_ms,
        }


def _positive_int(given: dict[str, str], name: str) -> int | None:
    if name not in given:
        return None
    text = given[name].strip()
    if not text.isdigit() or int(text) < 1:
        raise InvalidOptionError(
            f"option {name!r} has value {given[name]!r}; accepted: a whole number >= 1"
        )
    return int(text)


def _duration(given: dict[str, str], name: str) -> int | None:
    return parse_duration_ms(given[name], name) if name in given else None
