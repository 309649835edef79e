"""What window and session stores share: retention, segments, and scans of time spans."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from catalog.kinds._base import BATCH_ROWS, TIME, Layout, Param, Scan, known

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
