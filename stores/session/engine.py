"""The ``session`` kind's engine: Kafka's ``SessionStore[WithHeaders]``, values per key and
session (start, end) on the segmented store."""

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
from stores.query.queries import Query, WindowRangeQuery
from stores.segments.engine import SegmentedEngine
from stores.session.columns import session_base, session_read, session_rows
from stores.session.store import SessionStore, SessionStoreWithHeaders


def _store_class(params: dict[str, Any]) -> Any:
    return SessionStoreWithHeaders if params.get("headers") else SessionStore


class SessionEngine(SegmentedEngine):
    """Sessions by (start, end); reads of a start range and cache rebuilds computed from
    columns unless a snapshot holds a legacy layout."""

    columns_base = staticmethod(session_base)
    columns_read = staticmethod(session_read)
    key_suffix = 16  # end (8) + start (8)
    columns_rows = staticmethod(session_rows)

    def layout(self, params: dict[str, Any]) -> Layout:
        return Layout(
            write_times=(TimeColumn("session_start"), TimeColumn("session_end")),
            read_times=("session_start", "session_end"),
            headers=bool(params.get("headers")),
            before_value=("session_start", "session_end"),
        )

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return _store_class(params).column_families()  # type: ignore[no-any-return]

    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
        return _store_class(params).over(db, params["retention_ms"], params["segment_interval_ms"])

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        table = time_order(table, "session_end")
        store.put_columns(
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            table.column("session_start").to_pylist(),
            table.column("session_end").to_pylist(),
            table.column(HEADERS).to_pylist() if params.get("headers") else None,
        )

    def key_query(self, key: Any, **bounds: int | None) -> Query:
        return WindowRangeQuery.with_key(key)  # Kafka's query of a key's sessions


SESSION_ENGINE = SessionEngine()
