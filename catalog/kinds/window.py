"""``window``: Kafka's ``[Timestamped]WindowStore[WithHeaders]``: values per key and window
start, kept for ``retention``, optionally every put (``retainDuplicates``)."""

from __future__ import annotations

from typing import Any, ClassVar

import pyarrow as pa

from catalog.kinds._base import (
    HEADERS,
    Layout,
    Param,
    TimeColumn,
    segment_interval,
    time_order,
)
from catalog.kinds._spans import HEADERS_PARAM, RETENTION, SEGMENT_INTERVAL, SpanKind
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError
from stores.query import Query, WindowKeyQuery
from stores.window.columns import window_base, window_read, window_rows
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
    default_segment_interval_ms,
)

WINDOW_SIZE = Param(
    "window_size_ms", "windowSize", "duration", required=True, example="'5 minutes' or ms"
)
RETAIN_DUPLICATES = Param("retain_duplicates", "retainDuplicates", "boolean")
TIMESTAMPED_PARAM = Param("timestamped", "timestamped", "boolean")


def _store_class(params: dict[str, Any]) -> Any:
    if params.get("timestamped"):
        if params.get("headers"):
            return TimestampedWindowStoreWithHeaders
        return TimestampedWindowStore
    return WindowStoreWithHeaders if params.get("headers") else WindowStore


class WindowKind(SpanKind):
    name: ClassVar[str] = "window"
    params: ClassVar[tuple[Param, ...]] = (
        RETENTION, WINDOW_SIZE, RETAIN_DUPLICATES, SEGMENT_INTERVAL, TIMESTAMPED_PARAM,
        HEADERS_PARAM,
    )  # fmt: skip
    snapshot_base = staticmethod(window_base)
    columns_read = staticmethod(window_read)
    columns_rows = staticmethod(window_rows)

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

    def layout(self, params: dict[str, Any]) -> Layout:
        timestamped = bool(params.get("timestamped"))
        return Layout(
            write_times=(TimeColumn("window_start"),)
            + ((TimeColumn("timestamp", unknown_if_null=True),) if timestamped else ()),
            read_times=("window_start", "window_end") + (("timestamp",) if timestamped else ()),
            headers=bool(params.get("headers")),
            derived=("window_end",),
            before_value=("window_start", "window_end"),
        )

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return _store_class(params).column_families()  # type: ignore[no-any-return]

    def open(self, db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
        return _store_class(params).over(
            db,
            params["retention_ms"],
            params["window_size_ms"],
            params["retain_duplicates"],
            params["segment_interval_ms"],
        )

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        table = time_order(table, "window_start")
        store.put_columns(
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            table.column("window_start").to_pylist(),
            table.column("timestamp").to_pylist() if params.get("timestamped") else None,
            table.column(HEADERS).to_pylist() if params.get("headers") else None,
        )

    def key_query(
        self,
        key: Any,
        *,
        time_from: int | None = None,
        time_to: int | None = None,
        **bounds: int | None,
    ) -> Query:
        low = 0 if time_from is None else time_from
        high = 2**63 - 1 if time_to is None else time_to
        return WindowKeyQuery.with_key_and_window_start_range(key, low, high)


WINDOW = WindowKind()
