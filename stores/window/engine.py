"""The ``window`` kind's engine: Kafka's ``[Timestamped]WindowStore[WithHeaders]``, values per
key and window start on the segmented store, optionally every put (``retain_duplicates``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from stores.bytes.protocol import BytesStore
from stores.engine import (
    HEADERS,
    STORE_MUST_ANSWER,
    Layout,
    Rows,
    Runs,
    Scan,
    StoreEngine,
    StoreMustAnswer,
    TimeColumn,
    segmented_batches,
    time_order,
)
from stores.query.queries import Query, WindowKeyQuery
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


class WindowEngine(StoreEngine):
    """Windows by start (``window_end`` derived from the size); reads of a start range and
    cache rebuilds computed from columns (``stores.window.columns``) unless a snapshot holds a
    legacy layout."""

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

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        return segmented_batches(store, scan, self.layout(params))

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

    def scan_columns(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any], scan: Scan
    ) -> pa.Table | StoreMustAnswer:
        base = window_base(runs, params, self.column_families(params)) if runs else None
        if runs and base is None:
            return STORE_MUST_ANSWER  # rows in a legacy layout: RocksDB converts them
        read = window_read(commits, params, scan.time_from, scan.time_to, base)
        return STORE_MUST_ANSWER if read is None else read

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        families = self.column_families(params)
        base = window_base(runs, params, families) if runs else None
        if runs and base is None:
            return STORE_MUST_ANSWER  # rows in a legacy layout: the store converts them
        rows = window_rows(commits, params, base, families)
        return STORE_MUST_ANSWER if rows is None else rows


WINDOW_ENGINE = WindowEngine()
