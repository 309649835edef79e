"""Store kinds: the one place that decides, per kind, how a store is stacked and fed.

A kind says which parameters it takes, which RocksDB column families it needs, how it is opened
over the bytes layer, how a changelog file is applied to it, and how it is scanned into raw Arrow
batches (serialized key and value plus the kind's time columns). The rest of the catalog and the
connector only look kinds up here: adding a kind is adding an entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from stores.errors import InvalidOptionError
from stores.key_value import KeyValueStore
from stores.rocksdb_bytes import RocksDBBytesStore
from stores.versioned import VersionedKeyValueStore, default_segment_interval_ms

BATCH_ROWS = 1 << 16
_TIME = pa.int64()


@dataclass(frozen=True)
class StoreKind:
    """How one kind of store is built, fed and scanned."""

    name: str
    uses_timestamp: bool
    time_columns: tuple[str, ...]
    make_params: Callable[[dict[str, Any]], dict[str, Any]]
    column_families: Callable[[dict[str, Any]], tuple[str, ...]]
    open: Callable[[RocksDBBytesStore, dict[str, Any]], Any]
    apply: Callable[[Any, pa.Table], None]
    scan: Callable[[Any, int | None], Iterator[pa.RecordBatch]]
    supports_as_of: bool = False

    def raw_schema(self) -> pa.Schema:
        """Schema of the raw batches ``scan`` yields."""
        fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary())]
        fields += [pa.field(c, _TIME) for c in self.time_columns]
        return pa.schema(fields)


def _chunks(rows: Iterator[tuple[Any, ...]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    while True:
        chunk = list(islice(rows, BATCH_ROWS))
        if not chunk:
            return
        columns = list(zip(*chunk))
        yield pa.RecordBatch.from_arrays(
            [pa.array(col, f.type) for col, f in zip(columns, schema)], schema=schema
        )


# -- keyvalue ---------------------------------------------------------------------------------


def _kv_params(given: dict[str, Any]) -> dict[str, Any]:
    _refuse_unknown("keyvalue", given, ())
    return {}


def _kv_apply(store: KeyValueStore, table: pa.Table) -> None:
    store.put_columns(table.column("key").to_pylist(), table.column("value").to_pylist())


def _kv_scan(store: KeyValueStore, as_of: int | None) -> Iterator[pa.RecordBatch]:
    schema = KEYVALUE.raw_schema()
    for keys, values in store.scan_columns(BATCH_ROWS):
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys, pa.binary()), pa.array(values, pa.binary())], schema=schema
        )


KEYVALUE = StoreKind(
    name="keyvalue",
    uses_timestamp=False,
    time_columns=(),
    make_params=_kv_params,
    column_families=lambda params: KeyValueStore.column_families(),
    open=lambda db, params: KeyValueStore.over(db),
    apply=_kv_apply,
    scan=_kv_scan,
)


# -- versioned --------------------------------------------------------------------------------


def _versioned_params(given: dict[str, Any]) -> dict[str, Any]:
    _refuse_unknown("versioned", given, ("history_retention_ms", "segment_interval_ms"))
    retention = given.get("history_retention_ms")
    if retention is None:
        raise InvalidOptionError(
            "a versioned store needs option 'historyRetention' (e.g. '1 day' or ms), "
            "which is also its grace period"
        )
    segment = given.get("segment_interval_ms")
    if segment is None:
        segment = default_segment_interval_ms(retention)
    if segment < 1:
        raise InvalidOptionError(f"option 'segmentInterval' must be at least 1 ms, got {segment}")
    return {"history_retention_ms": int(retention), "segment_interval_ms": int(segment)}


def _versioned_open(db: RocksDBBytesStore, params: dict[str, Any]) -> VersionedKeyValueStore:
    return VersionedKeyValueStore.over(
        db, params["history_retention_ms"], params["segment_interval_ms"]
    )


def _versioned_apply(store: VersionedKeyValueStore, table: pa.Table) -> None:
    # A DataFrame has no order, so a commit's rows are applied in timestamp order (stable):
    # the result then does not depend on how Spark split the rows into tasks and files.
    order = pc.sort_indices(table.column("timestamp"))
    table = table.take(order)
    store.put_many(
        zip(
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            table.column("timestamp").to_pylist(),
        )
    )


def _versioned_scan(store: VersionedKeyValueStore, as_of: int | None) -> Iterator[pa.RecordBatch]:
    schema = VERSIONED.raw_schema()
    if as_of is not None:
        yield from _chunks(store.scan_as_of(as_of), schema)
        return
    for keys, values, stamps in store.scan_latest_columns(BATCH_ROWS):
        latest = pa.nulls(len(keys), pa.int64())
        yield pa.RecordBatch.from_arrays([keys, values, stamps, latest], schema=schema)


VERSIONED = StoreKind(
    name="versioned",
    uses_timestamp=True,
    time_columns=("valid_from", "valid_to"),
    make_params=_versioned_params,
    column_families=lambda params: VersionedKeyValueStore.column_families(),
    open=_versioned_open,
    apply=_versioned_apply,
    scan=_versioned_scan,
    supports_as_of=True,
)


KINDS: dict[str, StoreKind] = {k.name: k for k in (KEYVALUE, VERSIONED)}


def kind_of(name: str) -> StoreKind:
    """Look a kind up by name.

    Raises:
        InvalidOptionError: no such kind (names the accepted ones).
    """
    try:
        return KINDS[name]
    except KeyError:
        raise InvalidOptionError(
            f"option 'kind' is {name!r}; accepted: {' | '.join(KINDS)}"
        ) from None


#: The option name users give for each kind parameter, for messages.
OPTION_NAMES = {"history_retention_ms": "historyRetention", "segment_interval_ms": "segmentInterval"}


def _refuse_unknown(kind: str, given: dict[str, Any], accepted: tuple[str, ...]) -> None:
    extra = sorted(OPTION_NAMES.get(k, k) for k, v in given.items() if v is not None and k not in accepted)
    if extra:
        names = ", ".join(repr(OPTION_NAMES.get(k, k)) for k in accepted) or "none"
        raise InvalidOptionError(
            f"a {kind} store takes no option {', '.join(map(repr, extra))}; "
            f"its options: {names}"
        )
