"""``versioned``: Kafka's ``VersionedKeyValueStore`` (KIP-889, KIP-960/968): every version of a
key with its validity interval, history kept for ``historyRetention`` (the grace period too)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from catalog.kinds._base import (
    BATCH_ROWS,
    Layout,
    Param,
    Runs,
    Scan,
    StoreKind,
    TimeColumn,
    row_batches,
    segment_interval,
)
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError
from stores.query import Query, VersionedKeyQuery
from stores.versioned.columns import snapshot_records, versioned_read, versioned_rows
from stores.versioned.store import VersionedKeyValueStore, default_segment_interval_ms

HISTORY_RETENTION = Param(
    "history_retention_ms", "historyRetention", "duration", required=True,
    example="'1 day' or ms", note="which is also its grace period",
)  # fmt: skip
SEGMENT_INTERVAL = Param("segment_interval_ms", "segmentInterval", "duration")


class VersionedKind(StoreKind):
    name: ClassVar[str] = "versioned"
    writes_intervals: ClassVar[bool] = True
    params: ClassVar[tuple[Param, ...]] = (HISTORY_RETENTION, SEGMENT_INTERVAL)
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

    def layout(self, params: dict[str, Any]) -> Layout:
        return Layout(write_times=(TimeColumn("timestamp"),), read_times=("valid_from", "valid_to"))

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return VersionedKeyValueStore.column_families()

    def open(self, db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
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
    ) -> dict[str, tuple[pa.Array, pa.Array]] | None:
        base = snapshot_records(runs) if runs else None
        if runs and base is None:
            return None
        return versioned_rows(
            commits, params["history_retention_ms"], params["segment_interval_ms"], base
        )

    def scan_columns(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any], scan: Scan
    ) -> pa.Table | None:
        base = snapshot_records(runs) if runs else None
        if runs and base is None:
            return None
        return versioned_read(
            commits,
            params["history_retention_ms"],
            params["segment_interval_ms"],
            base=base,
            as_of=scan.as_of,
            all_versions=scan.all_versions,
            time_from=scan.time_from,
            time_to=scan.time_to,
        )


VERSIONED = VersionedKind()
