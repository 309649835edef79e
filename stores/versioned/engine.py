"""The ``versioned`` kind's engine: Kafka's ``VersionedKeyValueStore`` (KIP-889, KIP-960/968),
every version of a key with its validity interval."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from stores.bytes.protocol import BytesStore
from stores.engine import (
    BATCH_ROWS,
    STORE_MUST_ANSWER,
    Layout,
    Rows,
    Runs,
    Scan,
    StoreEngine,
    StoreMustAnswer,
    TimeColumn,
    row_batches,
)
from stores.query.queries import Query, VersionedKeyQuery
from stores.versioned.columns import snapshot_records, versioned_read, versioned_rows
from stores.versioned.format import METADATA_CF
from stores.versioned.store import VersionedKeyValueStore

#: The segment id before the record key in a versioned store's RocksDB keys.
SEGMENT_PREFIX = 8


class VersionedEngine(StoreEngine):
    """Records at a time each, read as versions (``valid_from``, ``valid_to``); reads and
    cache rebuilds are computed from columns where the ideal history tells the store's rows
    (``stores.versioned.columns``)."""

    def layout(self, params: dict[str, Any]) -> Layout:
        return Layout(write_times=(TimeColumn("timestamp"),), read_times=("valid_from", "valid_to"))

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return VersionedKeyValueStore.column_families()

    def record_keys(self, family: str, keys: pa.Array, params: dict[str, Any]) -> pa.Array | None:
        if family == METADATA_CF:
            return None
        return pc.binary_slice(keys, SEGMENT_PREFIX, 2**31 - 1)  # segment id (8) + key

    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
        return VersionedKeyValueStore.over(
            db, params["history_retention_ms"], params["segment_interval_ms"]
        )

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        # Time order; at one time, deletes before puts: the tombstone that ends a history-shaped
        # row's interval is replaced by the row of the same key that starts there.
        puts = pc.is_valid(table.column("value"))
        table = table.take(
            pc.sort_indices(
                table.append_column("__put", puts),
                sort_keys=[("timestamp", "ascending"), ("__put", "ascending")],
            )
        )
        store.put_many(
            zip(
                table.column("key").to_pylist(),
                table.column("value").to_pylist(),
                table.column("timestamp").to_pylist(),
            ),
            validate=False,  # checked by StoreTable.stage; the file by its CRC-32
        )

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        schema = self.layout(params).raw_schema()
        if scan.all_versions:
            yield from row_batches(store.scan_versions(scan.time_from, scan.time_to), schema)
            return
        if scan.as_of is not None:
            yield from row_batches(store.scan_as_of(scan.as_of), schema)
            return
        for keys, values, stamps in store.scan_latest_columns(BATCH_ROWS):
            latest = pa.nulls(len(keys), pa.int64())
            yield pa.RecordBatch.from_arrays([keys, values, stamps, latest], schema=schema)

    def key_query(self, key: Any, *, as_of: int | None = None, **bounds: int | None) -> Query:
        query = VersionedKeyQuery.with_key(key)
        return query if as_of is None else query.as_of(as_of)

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        base = snapshot_records(runs) if runs else None
        if runs and base is None:
            return STORE_MUST_ANSWER  # column families of another layout
        rows = versioned_rows(
            commits, params["history_retention_ms"], params["segment_interval_ms"], base
        )
        return STORE_MUST_ANSWER if rows is None else rows

    def scan_columns(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        scan: Scan,
        *,
        key_order: bool = True,
    ) -> pa.Table | StoreMustAnswer:
        base = snapshot_records(runs) if runs else None
        if runs and base is None:
            return STORE_MUST_ANSWER  # column families of another layout
        read = versioned_read(
            commits,
            params["history_retention_ms"],
            params["segment_interval_ms"],
            base=base,
            as_of=scan.as_of,
            all_versions=scan.all_versions,
            time_from=scan.time_from,
            time_to=scan.time_to,
            key_order=key_order,
        )
        return STORE_MUST_ANSWER if read is None else read


VERSIONED_ENGINE = VersionedEngine()
