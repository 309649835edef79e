"""What the window and session engines share: reads of a segmented store's scan columns, and
reads and RocksDB rows computed from a snapshot's rows and the changelog, each kind through its
own three column functions (``<kind>_base``, ``<kind>_read``, ``<kind>_rows``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from stores.engine import (
    BATCH_ROWS,
    STORE_MUST_ANSWER,
    TIME,
    Layout,
    Rows,
    Runs,
    Scan,
    StoreEngine,
    StoreMustAnswer,
    known,
)
from stores.segments.columns import SegmentedBase
from stores.segments.store import PREFIX_SIZE, SEGMENTS_META_CF


def segmented_batches(store: Any, scan: Scan, layout: Layout) -> Iterator[pa.RecordBatch]:
    """Raw batches of a window or session store's ``scan_columns``: key, value, start, end,
    then the record timestamp (timestamped windows) and headersBytes, as the layout has them."""
    schema = layout.raw_schema()
    timestamped = "timestamp" in layout.read_times
    for chunk in store.scan_columns(BATCH_ROWS, scan.time_from, scan.time_to):
        columns = [
            pa.array(chunk[0], pa.binary()),
            pa.array(chunk[1], pa.binary()),
            pa.array(chunk[2], TIME),
            pa.array(chunk[3], TIME),
        ]
        if timestamped:
            columns.append(known(chunk[4]))
        if layout.headers:
            columns.append(pa.array(chunk[-1], pa.binary()))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


class SegmentedEngine(StoreEngine):
    """An engine on Kafka's segmented store: entries per key and time span, read by start range;
    reads and cache rebuilds computed from columns unless a snapshot holds a legacy layout."""

    #: The kind's snapshot rows as a ``SegmentedBase`` (None: a legacy layout, the store
    #: converts it), its read of the changelog over that base, and its RocksDB rows (each
    #: None where the store must answer).
    columns_base: ClassVar[Callable[..., SegmentedBase | None]]
    columns_read: ClassVar[Callable[..., pa.Table | None]]
    columns_rows: ClassVar[Callable[..., Rows | None]]
    #: The bytes after the record key in a RocksDB key: a window's start and sequence
    #: number, a session's end and start.
    key_suffix: ClassVar[int]

    def record_keys(self, family: str, keys: pa.Array, params: dict[str, Any]) -> pa.Array | None:
        if family == SEGMENTS_META_CF:
            return None
        return pc.binary_slice(keys, PREFIX_SIZE, -type(self).key_suffix)

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        return segmented_batches(store, scan, self.layout(params))

    def scan_columns(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        scan: Scan,
        *,
        key_order: bool = True,
    ) -> pa.Table | StoreMustAnswer:
        cls = type(self)
        base = cls.columns_base(runs, params, self.column_families(params)) if runs else None
        if runs and base is None:
            return STORE_MUST_ANSWER
        read = cls.columns_read(commits, params, scan.time_from, scan.time_to, base, key_order)
        return STORE_MUST_ANSWER if read is None else read

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        cls, families = type(self), self.column_families(params)
        base = cls.columns_base(runs, params, families) if runs else None
        if runs and base is None:
            return STORE_MUST_ANSWER
        rows = cls.columns_rows(commits, params, base, families)
        return STORE_MUST_ANSWER if rows is None else rows
