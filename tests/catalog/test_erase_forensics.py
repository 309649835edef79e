"""Gone for good (issue 38): after an erasure and a vacuum with no window, no byte of an erased
key, of its values or of its headers is left in any file under the warehouse root or the cache
directory, compressed files decoded (``tests.forensics``: LZ4 changelog and snapshot files,
RocksDB SST files and WAL, Arrow scan files), while every kept marker is still found. On
local disk for every kind, and on the S3 emulator."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.operations import compaction
from stores.formats.headers import encode_headers
from tests.catalog.kafka.test_rescale import everything
from tests.catalog.kafka.test_state_dir import VARIANTS
from tests.forensics import find_markers


def marked(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex}"


def write(table: Any, keys: list[str], time: int, markers: dict[str, set[bytes]]) -> None:
    """One commit: each key a fresh marked value (and marked headers), at ``time``."""
    kind, params = table.spec.kind, table.spec.params
    values = [marked("V") for _ in keys]
    times = pa.array([time + i for i in range(len(keys))], pa.int64())
    columns: dict[str, pa.Array] = {}
    if kind in ("timestamped", "versioned"):
        columns["timestamp"] = times
    if kind == "window":
        columns["window_start"] = pa.array([t - t % 100 for t in times.to_pylist()], pa.int64())
        if params.get("timestamped"):
            columns["timestamp"] = times
    if kind == "session":
        columns["session_start"] = times
        columns["session_end"] = pa.array([t + 50 for t in times.to_pylist()], pa.int64())
    headers = [marked("H") for _ in keys]
    if params.get("headers"):
        columns["headers"] = pa.array(
            [encode_headers([("h", h.encode())]) for h in headers], pa.binary()
        )
    for key, value, header in zip(keys, values, headers, strict=True):
        markers.setdefault(key, set()).add(value.encode())
        if params.get("headers"):
            markers[key].add(header.encode())
    table.commit(table.stage(pa.array(keys), pa.array(values), columns))


def scenario(catalog: Catalog, variant: str) -> tuple[set[bytes], set[bytes]]:
    """A store written, compacted, read (scan files, RocksDB caches), erased and read again:
    the (erased, kept) markers."""
    kind, params = VARIANTS[variant]
    table = catalog.create_store("s", kind, "string", "string", num_partitions=2,
                                 partitioner="kafka", **params)  # fmt: skip
    keys = [marked("K") for _ in range(16)]
    markers: dict[str, set[bytes]] = {k: {k.encode()} for k in keys}
    write(table, keys, 1000, markers)
    write(table, keys[::2], 2000, markers)
    compaction.compact(table)
    write(table, keys[1::3], 3000, markers)

    def read_all() -> None:
        everything(table)
        for p in range(2):  # the RocksDB caches lookups build, with their WAL and SST files
            table.partition_cache(p).catch_up(table.log.latest_id())

    read_all()
    gone = keys[:8]
    report = table.erase(gone, reason="forensics")
    assert report.found == 8
    read_all()
    erased = {m for k in gone for m in markers[k]}
    kept = {m for k in keys[8:] for m in markers[k]}
    return erased, kept


def local_dir(root: str) -> str:
    return root.removeprefix("file://").removeprefix("file:")


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_no_byte_of_an_erased_key_is_left_on_local_disk(catalog: Catalog, variant: str) -> None:
    erased, kept = scenario(catalog, variant)
    roots = [local_dir(catalog.root), str(catalog.cache_dir)]
    before = find_markers(roots, erased)
    assert any(before.values())  # the replaced files are still there: the search can see them
    catalog.vacuum("s", older_than_ms=0)
    found = find_markers(roots, erased | kept)
    assert {m for m in erased if found[m]} == set()
    assert {m for m in kept if not found[m]} == set()


@pytest.mark.parametrize("variant", ["keyvalue", "versioned", "window-headers", "session"])
def test_no_byte_of_an_erased_key_is_left_on_s3(
    s3_warehouse: str, tmp_path: Path, variant: str
) -> None:
    catalog = Catalog(s3_warehouse, cache_dir=str(tmp_path / "cache"))
    erased, kept = scenario(catalog, variant)
    catalog.vacuum("s", older_than_ms=0)
    fs, base = fsspec.core.url_to_fs(s3_warehouse)
    copy = tmp_path / "objects"
    for path in fs.find(base):
        target = copy / os.path.relpath(path, base)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(path))
    found = find_markers([str(copy), str(tmp_path / "cache")], erased | kept)
    assert {m for m in erased if found[m]} == set()
    assert {m for m in kept if not found[m]} == set()
