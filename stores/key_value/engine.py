"""The ``keyvalue`` kind's engine: Kafka's plain ``KeyValueStore``, the last write wins."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.engine import (
    BATCH_ROWS,
    STORE_MUST_ANSWER,
    Layout,
    Rows,
    Runs,
    Scan,
    StoreEngine,
    StoreMustAnswer,
    last_per_key,
)
from stores.key_value.store import KeyValueStore
from stores.query.queries import KeyQuery, Query

_WIDE = pa.schema([pa.field("key", pa.large_binary()), pa.field("value", pa.large_binary())])


class KeyValueEngine(StoreEngine):
    """Key and value; every scan and every cache rebuild is computed from columns."""

    def layout(self, params: dict[str, Any]) -> Layout:
        return Layout()

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return KeyValueStore.column_families()

    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
        return KeyValueStore.over(db)

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        store.put_columns(table.column("key").to_pylist(), table.column("value").to_pylist())

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        schema = Layout().raw_schema()
        for keys, values in store.scan_columns(BATCH_ROWS):
            yield pa.RecordBatch.from_arrays(
                [pa.array(keys, pa.binary()), pa.array(values, pa.binary())], schema=schema
            )

    def key_query(self, key: Any, **bounds: int | None) -> Query:
        return KeyQuery.with_key(key)

    def scan_columns(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        scan: Scan,
        *,
        key_order: bool = True,
    ) -> pa.Table | StoreMustAnswer:
        if not scan.is_full:
            return STORE_MUST_ANSWER
        latest = _latest(runs, commits, key_order=key_order)
        return STORE_MUST_ANSWER if latest is None else latest

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        latest = _latest(runs, commits)
        if latest is None:
            return {}
        return {DEFAULT_CF: (latest.column("key"), latest.column("value"))}

    def overlay_rows(
        self, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        # Every put or delete replaces the key's row, whatever it was.
        last = _latest({}, commits, tombstones=True)
        if last is None:
            return {}
        return {DEFAULT_CF: (last.column("key"), last.column("value"))}


def _latest(
    runs: Runs, commits: list[pa.Table], tombstones: bool = False, key_order: bool = True
) -> pa.Table | None:
    """The last write of each key after a snapshot's ``runs`` and the ``commits`` (live rows,
    or with each deleted key's tombstone: ``tombstones``), sorted by key bytes (in write order
    without ``key_order``); None when there are no rows at all."""
    parts = []
    if "default" in runs:
        keys, values = runs["default"]
        parts.append(pa.table([keys, values], names=["key", "value"]).cast(_WIDE))
    # A commit's rows apply in order, later commits after earlier ones: the last write wins.
    parts += [t.select(["key", "value"]).cast(_WIDE) for t in commits]
    if not parts:
        return None
    return last_per_key(pa.concat_tables(parts), tombstones=tombstones, key_order=key_order)


KEY_VALUE_ENGINE = KeyValueEngine()
