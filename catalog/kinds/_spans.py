"""What window and session stores share: retention, segments, and scans of time spans."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pyarrow as pa

from catalog.kinds._base import BATCH_ROWS, TIME, Layout, Param, Runs, Scan, StoreKind, known
from stores.segments.columns import SegmentedBase as SpanBase

RETENTION = Param("retention_ms", "retention", "duration", required=True, example="'1 day' or ms")
SEGMENT_INTERVAL = Param("segment_interval_ms", "segmentInterval", "duration")
HEADERS_PARAM = Param("headers", "headers", "boolean")


def span_batches(store: Any, scan: Scan, layout: Layout) -> Iterator[pa.RecordBatch]:
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


class SpanKind(StoreKind):
    """A kind on Kafka's segmented store: entries per key and time span, read by start range."""

    supports_time_range: ClassVar[bool] = True
    entries_per_key: ClassVar[bool] = True
    #: ``span_columns``' decoder of this kind's snapshot rows, and its read of the changelog.
    snapshot_base: ClassVar[Callable[..., SpanBase | None]]
    columns_read: ClassVar[Callable[..., pa.Table | None]]
    #: ``span_columns``' rows of this kind's store (for a cache's SST ingest).
    columns_rows: ClassVar[Callable[..., dict[str, tuple[pa.Array, pa.Array]] | None]]

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        return span_batches(store, scan, self.layout(params))

    def scan_columns(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any], scan: Scan
    ) -> pa.Table | None:
        cls = type(self)
        base = cls.snapshot_base(runs, params, self.column_families(params)) if runs else None
        if runs and base is None:
            return None  # rows in a legacy layout: RocksDB converts them
        return cls.columns_read(commits, params, scan.time_from, scan.time_to, base)

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> dict[str, tuple[pa.Array, pa.Array]] | None:
        cls, families = type(self), self.column_families(params)
        base = cls.snapshot_base(runs, params, families) if runs else None
        if runs and base is None:
            return None  # rows in a legacy layout: the store converts them
        return cls.columns_rows(commits, params, base, families)
