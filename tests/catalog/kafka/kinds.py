"""Helpers of the changelog tests (no fixtures, no tests): changelog records of each kind as
hypothesis draws them, the reference (our typed stores restored by
``stores.change_logging.restore``, Kafka's restore record by record) and reads to compare."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from catalog import Catalog
from catalog.kinds import Scan, kind_of
from catalog.partitioner import partitions_of
from catalog.scans import decoder
from catalog.table import Table
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.change_logging import restore
from stores.columns.headers import HEADERS_TYPE
from stores.records import ChangelogRecord

#: (kind, params) of every store variant the tests cover.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "keyvalue": ("keyvalue", {}),
    "timestamped": ("timestamped", {}),
    "timestamped_headers": ("timestamped", {"headers": True}),
    "versioned": ("versioned", {"history_retention_ms": 15, "segment_interval_ms": 5}),
    "window": ("window", {"retention_ms": 30, "window_size_ms": 5, "segment_interval_ms": 10}),
    "window_timestamped_headers": (
        "window",
        {
            "retention_ms": 30,
            "window_size_ms": 5,
            "segment_interval_ms": 10,
            "timestamped": True,
            "headers": True,
        },
    ),
    "window_headers": (
        "window",
        {"retention_ms": 30, "window_size_ms": 5, "segment_interval_ms": 10, "headers": True},
    ),
    "window_duplicates": (
        "window",
        {
            "retention_ms": 30,
            "window_size_ms": 5,
            "segment_interval_ms": 10,
            "retain_duplicates": True,
        },
    ),
    "session": ("session", {"retention_ms": 30, "segment_interval_ms": 10}),
    "session_headers": (
        "session",
        {"retention_ms": 30, "segment_interval_ms": 10, "headers": True},
    ),
}

KEYS = ["a", "b", "c", "dd"]
HEADERS = st.lists(
    st.tuples(st.sampled_from(["h", "v"]), st.none() | st.sampled_from([b"", b"x", b"yz"])),
    max_size=2,
)


@st.composite
def record(draw: Any, variant: str) -> dict[str, Any]:
    """One changelog record of ``variant`` (plain key in ``plain``, for partitioning)."""
    kind, params = VARIANTS[variant]
    plain = draw(st.sampled_from(KEYS)).encode()
    value = draw(st.none() | st.sampled_from(["1", "2", "3"]).map(str.encode))
    stamp = draw(st.integers(0, 80))
    key = plain
    if kind == "window":
        seq = draw(st.integers(0, 2)) if params.get("retain_duplicates") else 0
        key = plain + struct.pack(">qi", draw(st.integers(0, 16)) * 5, seq)
    elif kind == "session":
        start = draw(st.integers(0, 80))
        key = plain + struct.pack(">qq", start + draw(st.integers(0, 10)), start)
    return {"plain": plain, "key": key, "value": value, "timestamp": stamp,
            "headers": draw(HEADERS)}  # fmt: skip


def records_of(variant: str, max_size: int = 25) -> Any:
    """A strategy of changelog record lists of ``variant``."""
    return st.lists(record(variant), max_size=max_size)


def as_table(
    records: list[dict[str, Any]], partitions: int, topic: str = "app-s-changelog"
) -> pa.Table:
    """The records as Spark's Kafka source reads them: each in the partition Kafka's
    partitioner gives its plain key, offsets counting per partition in list order."""
    plain = pa.array([r["plain"] for r in records], pa.binary())
    parts = partitions_of(plain, partitions, "kafka").tolist() if records else []
    next_offset = [0] * partitions
    offsets = []
    for p in parts:
        offsets.append(next_offset[p])
        next_offset[p] += 1
    return pa.table(
        {
            "key": pa.array([r["key"] for r in records], pa.binary()),
            "value": pa.array([r["value"] for r in records], pa.binary()),
            "topic": pa.array([topic] * len(records), pa.string()),
            "partition": pa.array(parts, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array([r["timestamp"] for r in records], pa.int64()),
            "timestampType": pa.array([0] * len(records), pa.int32()),
            "headers": pa.array([r["headers"] for r in records], HEADERS_TYPE),
        }
    )


def new_store(root: Path, variant: str, partitions: int = 2) -> Table:
    """A fresh store of ``variant`` (string keys and values, Kafka's partitioner)."""
    kind, params = VARIANTS[variant]
    catalog = Catalog(str(root / f"wh-{uuid.uuid4().hex[:8]}"), cache_dir=str(root / "cache"))
    return catalog.create_store("s", kind, "string", "string", partitions,
                                partitioner="kafka", **params)  # fmt: skip


def scan_of(table: Table) -> Scan:
    """The read that shows a store's whole state (a versioned store's every version)."""
    return Scan(all_versions=True) if table.kind.supports_as_of else Scan()


def reference(
    tmp: Path, table: Table, records: pa.Table, batch_size: int | None = None
) -> list[dict[str, Any]]:
    """What our typed stores, one per Kafka partition, read after Kafka's restore
    (``stores.change_logging.restore``) of ``records`` (each partition's in offset order)."""
    spec, engine = table.spec, kind_of(table.spec.kind).engine
    typed = decoder(spec, table.arrow_schema())
    rows: list[dict[str, Any]] = []
    for partition in sorted(set(records.column("partition").to_pylist())):
        part = records.filter(pa.compute.equal(records.column("partition"), partition))
        part = part.sort_by("offset")
        db = RocksDBBytesStore(tmp / f"ref-{uuid.uuid4().hex}", engine.column_families(spec.params))
        store = engine.open(db, spec.params)
        try:
            restore(
                store,
                [
                    ChangelogRecord(r["key"], r["value"], r["timestamp"],
                                    [(h["key"], h["value"]) for h in r["headers"] or []])
                    for r in part.to_pylist()
                ],
                batch_size=batch_size,
            )  # fmt: skip
            for batch in engine.scan(store, scan_of(table), spec.params):
                rows += typed(batch).to_pylist()
        finally:
            db.close()
    return canonical(rows)


def read(table: Table) -> list[dict[str, Any]]:
    """The store's whole state at its latest commit, canonically ordered."""
    return canonical(table.to_arrow(scan=scan_of(table)).to_pylist())


def canonical(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows sorted by key and times, stably: duplicates of a window keep their order."""
    times = ("window_start", "session_start", "session_end", "valid_from")
    return sorted(rows, key=lambda r: (r["key"], *(r[t] for t in times if t in r)))
