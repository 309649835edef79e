"""The ``timestamped`` kind's engine: Kafka's ``TimestampedKeyValueStore[WithHeaders]``
(KIP-258, KIP-1271), the value with its record timestamp (and headers); a put overwrites,
whatever its timestamp."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from stores.bytes.protocol import BytesStore
from stores.columns.decode import ByteColumn, stored_values, value_columns
from stores.columns.encode import whole
from stores.engine import (
    BATCH_ROWS,
    HEADERS,
    STORE_MUST_ANSWER,
    TIME,
    Layout,
    Rows,
    Runs,
    Scan,
    StoreEngine,
    StoreMustAnswer,
    TimeColumn,
    known,
    last_per_key,
    time_order,
)
from stores.formats.timestamped import TIMESTAMPED_CF
from stores.query.queries import Query, TimestampedKeyQuery
from stores.timestamped.store import (
    TIMESTAMPED_WITH_HEADERS_CF,
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
)


def _store_class(params: dict[str, Any]) -> Any:
    if params.get("headers"):
        return TimestampedKeyValueStoreWithHeaders
    return TimestampedKeyValueStore


class TimestampedEngine(StoreEngine):
    """Key, value and record timestamp (``headers``: and headers); the latest state is
    computed from columns unless a snapshot holds an older format's rows."""

    def layout(self, params: dict[str, Any]) -> Layout:
        return Layout(
            write_times=(TimeColumn("timestamp", unknown_if_null=True),),
            read_times=("timestamp",),
            headers=bool(params.get("headers")),
        )

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        return _store_class(params).column_families()  # type: ignore[no-any-return]

    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
        return _store_class(params).over(db)

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        table = time_order(table, "timestamp")  # the newest record of a key wins (unknown first)
        args = [
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            table.column("timestamp").to_pylist(),
        ]
        if params.get("headers"):
            args.append(table.column(HEADERS).to_pylist())
        store.put_columns(*args)

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        layout = self.layout(params)
        schema = layout.raw_schema()
        for chunk in store.scan_columns(BATCH_ROWS):
            columns = [
                pa.array(chunk[0], pa.binary()),
                pa.array(chunk[1], pa.binary()),
                known(chunk[2]),
            ]
            if layout.headers:
                columns.append(pa.array(chunk[3], pa.binary()))
            yield pa.RecordBatch.from_arrays(columns, schema=schema)

    def key_query(self, key: Any, **bounds: int | None) -> Query:
        return TimestampedKeyQuery.with_key(key)

    def scan_columns(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        scan: Scan,
        *,
        key_order: bool = True,
    ) -> pa.Table | StoreMustAnswer:
        latest = self._latest(runs, commits, params, key_order=key_order) if scan.is_full else None
        if latest is None:
            return STORE_MUST_ANSWER
        stamps = whole(latest.column("timestamp"))
        index = latest.schema.get_field_index("timestamp")
        return latest.set_column(index, "timestamp", known(stamps))

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        latest = self._latest(runs, commits, params)
        return STORE_MUST_ANSWER if latest is None else _rows(latest, params)

    def overlay_rows(
        self, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        # Kafka's timestamped store overwrites on every put, whatever the key held: the last
        # write wins (a snapshot with rows in an older format's family is declined by the
        # cache, which ingests an overlay only over the families it writes).
        latest = self._latest({}, commits, params, tombstones=True)
        return STORE_MUST_ANSWER if latest is None else _rows(latest, params)

    def _latest(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        tombstones: bool = False,
        key_order: bool = True,
    ) -> pa.Table | None:
        """The live rows (timestamps as written: -1 unknown), sorted by key bytes (in write
        order without ``key_order``), with each deleted key's tombstone if ``tombstones``; None
        where RocksDB must convert an older format's rows."""
        layout = self.layout(params)
        names = layout.changelog_schema().names
        wide = pa.schema(
            [pa.field(n, TIME if n == "timestamp" else pa.large_binary()) for n in names]
        )
        data_cf = TIMESTAMPED_WITH_HEADERS_CF if layout.headers else TIMESTAMPED_CF
        # Rows in an older format's family (a pre-KIP-258 or pre-KIP-1271 store) are converted
        # by Kafka's accessor on read: RocksDB answers those.
        if any(len(keys) for family, (keys, _) in runs.items() if family != data_cf):
            return None
        parts = []
        if data_cf in runs:  # a snapshot's rows, in Kafka's value layout, before any commit
            keys, raws = runs[data_cf]
            columns = value_columns(ByteColumn(raws), timestamped=True, headers=layout.headers)
            columns["key"] = keys
            parts.append(pa.table([columns[n] for n in names], names=names).cast(wide))
        parts += [t.select(names).cast(wide) for t in commits]
        if not parts:
            return wide.empty_table()
        # Kafka's timestamped store overwrites on every put: in apply order (the snapshot's
        # rows, then commit by commit, each by timestamp: ``apply``), the last write wins.
        part = np.repeat(np.arange(len(parts)), [p.num_rows for p in parts])
        rows = pa.concat_tables([p for p in parts if p.num_rows] or parts[:1])
        after = [(part, False), (rows.column("timestamp"), False)]
        return last_per_key(rows, after=after, tombstones=tombstones, key_order=key_order)


def _rows(latest: pa.Table, params: dict[str, Any]) -> Rows:
    # Kafka's layouts: [timestamp][value] (KIP-258), after [varint size][headers] (KIP-1271);
    # a tombstone stays null.
    values = stored_values(
        latest.column("value"),
        stamps=latest.column("timestamp"),
        headers=latest.column(HEADERS) if params.get("headers") else None,
    )
    family = TIMESTAMPED_WITH_HEADERS_CF if params.get("headers") else TIMESTAMPED_CF
    return {family: (latest.column("key"), values)}


TIMESTAMPED_ENGINE = TimestampedEngine()
