"""What a read of a store returns: its options checked against the store's kind, and the raw
batches of its scans (``Layout.raw_schema``: serialized keys and values, epoch-ms times)
decoded to the typed columns of ``arrow_schema`` (the spec's key and value types, ``TIMESTAMP``
times, headers as a list of structs).

Functions over a spec and its kind, for ``catalog.table``'s reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from catalog.caches.partitions import Columnar
from catalog.kinds import HEADERS, STORE_MUST_ANSWER, Layout, Scan, StoreKind
from catalog.log.spec import StoreSpec
from stores.columns.headers import HEADERS_TYPE, headers_to_arrow
from stores.errors import InvalidOptionError
from stores.serdes import serde_for
from stores.types import to_arrow

#: The type of every time column a read returns.
TIMESTAMP = pa.timestamp("us", tz="UTC")


def arrow_schema(spec: StoreSpec, layout: Layout) -> pa.Schema:
    """The typed schema of what a read of the store returns."""
    types = {
        "key": to_arrow(spec.key_type),
        "value": to_arrow(spec.value_type),
        HEADERS: HEADERS_TYPE,
    }
    return pa.schema([pa.field(c, types.get(c, TIMESTAMP)) for c in layout.read_order()])


def check_scan(spec: StoreSpec, kind: StoreKind, scan: Scan) -> None:
    """Refuse read options the store's kind does not have.

    Raises:
        InvalidOptionError: ``asOfTimestamp`` on a store without history, or a window start
            range on a store without windows (names the option and the kinds that take it).
    """
    if scan.as_of is not None and not kind.supports_as_of:
        raise InvalidOptionError(
            f"option 'asOfTimestamp' applies to versioned stores only; store "
            f"{spec.name!r} is a {spec.kind} store"
        )
    if scan.all_versions:
        if not kind.supports_as_of:
            raise InvalidOptionError(
                f"option 'versions' = 'all' applies to versioned stores only; store "
                f"{spec.name!r} is a {spec.kind} store"
            )
        if scan.as_of is not None:
            raise InvalidOptionError(
                "options 'versions' = 'all' and 'asOfTimestamp' do not combine: the "
                "history filtered to one instant is the as-of read; bound the history with "
                "'fromTimestamp' / 'toTimestamp'"
            )
        if (
            scan.time_from is not None
            and scan.time_to is not None
            and scan.time_from > scan.time_to
        ):
            raise InvalidOptionError(
                f"option 'fromTimestamp' ({scan.time_from} ms) is after option "
                f"'toTimestamp' ({scan.time_to} ms)"
            )
        return
    if (scan.time_from is not None or scan.time_to is not None) and not kind.supports_time_range:
        raise InvalidOptionError(
            "options 'windowStartFrom' / 'windowStartTo' apply to window and session stores "
            f"only; store {spec.name!r} is a {spec.kind} store"
        )


def decoder(
    spec: StoreSpec, schema: pa.Schema, *, checked: bool = False
) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """Raw batches (``Layout.raw_schema``) to typed ones of ``schema`` (``arrow_schema``).

    ``checked``: the raw bytes are a changelog's or snapshot's, whose strings were checked as
    UTF-8 when they were staged (``Stager``), and whose files were checked against their
    CRC-32 when read: string keys and values are viewed as strings, not checked again (at
    2M rows, 30 ms of a first read's CPU).
    """
    key_serde = serde_for(spec.key_type, column="key")
    value_serde = serde_for(spec.value_type, column="value")

    def decode(serde: Any, column: pa.Array, target: pa.DataType) -> pa.Array:
        if checked and pa.types.is_string(target) and pa.types.is_binary(column.type):
            return column.view(target)
        return serde.decode(column)

    def typed(raw: pa.RecordBatch) -> pa.RecordBatch:
        columns = []
        for f in schema:
            column = raw.column(f.name)
            if f.name == "key":
                columns.append(decode(key_serde, column, f.type))
            elif f.name == "value":
                columns.append(decode(value_serde, column, f.type))
            elif f.name == HEADERS:
                columns.append(headers_to_arrow(column))
            else:
                columns.append(pc.multiply_checked(column, 1000).cast(TIMESTAMP))
        return pa.RecordBatch.from_arrays(columns, schema=schema)

    return typed


def store_scan(
    spec: StoreSpec, kind: StoreKind, scan: Scan, schema: pa.Schema
) -> Callable[[Any], Iterator[pa.RecordBatch]]:
    """A function scanning an open store into typed batches of ``schema``."""
    typed = decoder(spec, schema)
    params = spec.params

    def run(store: Any) -> Iterator[pa.RecordBatch]:
        for raw in kind.scan(store, scan, params):
            yield typed(raw)

    return run


def columnar(spec: StoreSpec, kind: StoreKind, scan: Scan, schema: pa.Schema) -> Columnar:
    """The kind's column-only ``scan``, as typed batches of ``schema`` (see
    ``PartitionCache.read``), in the order the rows were written rather than key order: a
    table read promises no order, and the gather into key order was most of a first read's
    cost (issue 27). Where RocksDB answers instead, its rows come in key order."""
    scan_columns = kind.scan_columns
    typed = decoder(spec, schema, checked=True)
    raw_schema = kind.layout(spec.params).raw_schema()
    params = spec.params

    def compute(
        runs: dict[str, tuple[pa.Array, pa.Array]], commits: list[pa.Table]
    ) -> Iterator[pa.RecordBatch] | None:
        result = scan_columns(runs, commits, params, scan, key_order=False)
        if result is STORE_MUST_ANSWER:
            return None  # the cache's Columnar contract: the store answers
        return (
            typed(batch.cast(raw_schema))
            for batch in result.select(raw_schema.names).to_batches(max_chunksize=1 << 16)
        )

    return compute
