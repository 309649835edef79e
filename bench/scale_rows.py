"""The rows of the scaling benchmarks (``bench/scale.py``, ``bench/profile_tasks.py``), per kind:
16-character string keys (ascending hex of the row number, or with ``random_keys`` a hash of
it, in no order), 100-character string values, and the kind's time columns.

``spark_columns`` makes them with Spark SQL over ``spark.range``; ``rows_of`` makes the same
shape with Arrow, in this process.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

KINDS = ("keyvalue", "timestamped", "versioned", "window", "session")
BASE_MS = 1_714_564_800_000
#: The time columns each kind's write takes.
TIMES: dict[str, tuple[str, ...]] = {
    "keyvalue": (),
    "timestamped": ("timestamp",),
    "versioned": ("timestamp",),
    "window": ("window_start",),
    "session": ("session_start", "session_end"),
}


def store_options(kind: str, partitions: int) -> dict[str, str]:
    """The write options that create a store of ``kind`` for these rows (nothing expires)."""
    options = {"kind": kind, "numPartitions": str(partitions)}
    if kind == "versioned":
        options["historyRetention"] = "1 day"
    if kind in ("window", "session"):
        options["retention"] = "30 days"
    if kind == "window":
        options["windowSize"] = "1 minute"
    return options


def spark_columns(kind: str, random_keys: bool) -> list[str]:
    """SQL expressions over ``spark.range``'s ``id`` that make the rows."""
    key = "xxhash64(id)" if random_keys else "id"
    columns = [
        f"lpad(hex({key}), 16, '0') AS key",
        "concat(repeat('v', 84), lpad(cast(id AS string), 16, '0')) AS value",
    ]
    if kind in ("versioned", "timestamped"):
        columns.append(f"timestamp_millis({BASE_MS} + id) AS timestamp")
    if kind == "window":
        columns.append(f"timestamp_millis({BASE_MS} + (id % 1000) * 60000) AS window_start")
    if kind == "session":
        columns.append(f"timestamp_millis({BASE_MS} + id) AS session_start")
        columns.append(f"timestamp_millis({BASE_MS} + id + 5000) AS session_end")
    return columns


def spark_write_schema(kind: str) -> StructType:
    """The Spark schema of the rows a write takes."""
    fields = [StructField("key", StringType()), StructField("value", StringType())]
    fields += [StructField(name, TimestampType()) for name in TIMES[kind]]
    return StructType(fields)


def rows_of(kind: str, start: int, count: int, *, random_keys: bool = False) -> pa.Table:
    """Rows ``start`` to ``start + count`` as Arrow, as Spark hands them to a write task
    (times as UTC microseconds)."""
    ids = np.arange(start, start + count, dtype=np.uint64)
    if random_keys:  # splitmix64's finalizer: a bijection, in no order
        z = ids + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        ids_for_keys = z ^ (z >> np.uint64(31))
    else:
        ids_for_keys = ids
    hexes = np.char.upper(np.char.zfill(np.array([f"{i:x}" for i in ids_for_keys.tolist()]), 16))
    columns: dict[str, Any] = {
        "key": pa.array(hexes.tolist(), pa.string()),
        "value": pa.array(["v" * 84 + f"{i:016d}" for i in range(start, start + count)], pa.string()),
    }
    ms = BASE_MS + ids.astype(np.int64)
    times = {
        "timestamp": ms,
        "window_start": BASE_MS + (ids.astype(np.int64) % 1000) * 60_000,
        "session_start": ms,
        "session_end": ms + 5000,
    }
    for name in TIMES[kind]:
        columns[name] = pa.array(times[name] * 1000, pa.timestamp("us", tz="UTC"))
    return pa.table(columns)

