"""``session``: Kafka's ``SessionStore[WithHeaders]``: values per key and session (start, end),
kept for ``retention`` after the session ends."""

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
from stores.query import Query, WindowRangeQuery
from stores.session.columns import session_base, session_read, session_rows
from stores.session.store import SessionStore, SessionStoreWithHeaders, default_segment_interval_ms


def _store_class(params: dict[str, Any]) -> Any:
    return SessionStoreWithHeaders if params.get("headers") else SessionStore


class SessionKind(SpanKind):
    name: ClassVar[str] = "session"
    params: ClassVar[tuple[Param, ...]] = (RETENTION, SEGMENT_INTERVAL, HEADERS_PARAM)
    snapshot_base = staticmethod(session_base)
    columns_read = staticmethod(session_read)
    columns_rows = staticmethod(session_rows)

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        retention = int(given["retention_ms"])
        return {
            "retention_ms": retention,
            "segment_interval_ms": segment_interval(given, default_segment_interval_ms(retention)),
            "headers": bool(given.get("headers")),
        }

    def layout(self, params: dict[str, Any]) -> Layout:
        return Layout(
            write_times=(TimeColumn("session_start"), TimeColumn("session_end")),
            read_times=("session_start", "session_end"),
            headers=bool(params.get("headers")),
            before_value=("session_start", "session_end"),
        )

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return _store_class(params).column_families()  # type: ignore[no-any-return]

    def open(self, db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
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


SESSION = SessionKind()
