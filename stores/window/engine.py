"""The ``window`` kind's engine: Kafka's ``[Timestamped]WindowStore[WithHeaders]``, values per
key and window start on the segmented store, optionally every put (``retain_duplicates``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from stores.bytes.protocol import BytesStore
from stores.engine import (
    HEADERS,
    Layout,
    TimeColumn,
    time_order,
)
from stores.query.queries import Query, WindowKeyQuery
from stores.segments.engine import SegmentedEngine
from stores.window.columns import window_base, window_read, window_rows
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)


def _store_class(params: dict[str, Any]) -> Any:
    if params.get("timestamped"):
        if params.get("headers"):
            return TimestampedWindowStoreWithHeaders
        return TimestampedWindowStore
    return WindowStoreWithHeaders if params.get("headers") else WindowStore


class WindowEngine(SegmentedEngine):
    """Windows by start (``window_end`` derived from the size); reads of a start range and
    cache rebuilds computed from columns (``stores.window.columns``) unless a snapshot holds a
    legacy layout."""

    columns_base = staticmethod(window_base)
    columns_read = staticmethod(window_read)
    key_suffix = 12  # start (8) + sequence number (4)
    columns_rows = staticmethod(window_rows)

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

    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
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


WINDOW_ENGINE = WindowEngine()
