"""Scan files: a partition's full scans kept as Arrow files beside its RocksDB cache.

A full scan of the latest state is what Spark reads most; RocksDB iterates it far slower than
Arrow reads a memory-mapped IPC file. The first full scan at a commit is kept as
``<cache>.scans/<commit, 20 digits><variant>.arrow`` with an XXH3-64 sidecar (``.xxh3``); later
scans check the file against it and read the file. A scan file that fails its check is deleted
and rebuilt, never served. Keeping a commit's file deletes those of older commits.

Scan files are written beside the cache first (a temporary name) and renamed into place:
``catalog.caches.partitions`` decides when a scan is kept; this module holds the files' names,
format and checks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pyarrow as pa
import xxhash

from catalog.log import durable

#: Kept scan files are not compressed: a first read writes them (page cache, no fsync) at
#: memory speed, and a later read serves their mapped buffers as they are. Measured with
#: ``bench/profile_tasks.py`` (2M rows, one task): LZ4 cost a first read 0.1-0.2 s of CPU to
#: compress and a later read twice the CPU to decompress (27 against 15 ns a row), on 2 cores
#: that Spark's own conversions already keep busy.
SCAN_OPTIONS = pa.ipc.IpcWriteOptions()
#: A kept scan file's checksum sidecar: XXH3-64 of the file, in hex. The file is a local
#: cache verified on every read, so the checksum runs at memory speed (xxHash's XXH3, ~8x
#: zlib's CRC-32 here); files kept by older versions (``.crc32``) are rebuilt.
SUM = ".xxh3"
_LEGACY_SUM = ".crc32"


def scans_folder(cache_path: str) -> str:
    """The folder of the scan files kept for the cache at ``cache_path``."""
    return cache_path + ".scans"


def scan_file(cache_path: str, target: int, variant: str = "") -> str:
    """The kept scan file of commit ``target`` (``variant`` names another whole-store scan,
    e.g. a versioned store's history: ``".all"``)."""
    return os.path.join(scans_folder(cache_path), f"{target:020d}{variant}.arrow")


@contextlib.contextmanager
def scan_writer(path: str, schema: pa.Schema) -> Iterator[pa.ipc.RecordBatchFileWriter]:
    """An Arrow file writer of scan batches at ``path`` (as scan files are written)."""
    with (
        pa.OSFile(path, "wb") as sink,
        pa.ipc.new_file(sink, schema, options=SCAN_OPTIONS) as writer,
    ):
        yield writer


def read_batches(source: pa.MemoryMappedFile) -> Iterator[pa.RecordBatch]:
    """The record batches of a mapped scan file, one at a time."""
    reader = pa.ipc.open_file(source)
    for i in range(reader.num_record_batches):
        yield reader.get_batch(i)


def file_batches(path: str) -> Iterator[pa.RecordBatch]:
    """The record batches of the scan file at ``path``, mapped while they are read."""
    with pa.memory_map(path) as source:
        yield from read_batches(source)


def open_verified(path: str) -> pa.MemoryMappedFile | None:
    """The scan file at ``path``, mapped, if it matches its checksum (checked on the very
    mapping that is then served); a file that does not is deleted, so it is rebuilt."""
    try:
        with open(path + SUM) as f:
            expected = f.read().strip()
        source = pa.memory_map(path)
    except FileNotFoundError:
        source = None
    if source is not None:
        if _checksum(source.read_buffer()) == expected:
            source.seek(0)
            return source
        source.close()
    for stale in (path, path + SUM, path + _LEGACY_SUM):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
    return None


def keep(tmp: str, path: str) -> None:
    """Publish the scan written at ``tmp`` as the kept file ``path`` (``_seal``) and delete
    the files of older commits. Concurrent first readers write the same bytes; a catch-up
    clearing the folder meanwhile only means this one is not kept."""
    with contextlib.suppress(FileNotFoundError):
        _seal(tmp, path)
        _drop_older_scans(path)


def remove_temporary(tmp: str) -> None:
    """Delete what a scan written at ``tmp`` left if it was not kept (file and sidecar)."""
    for leftover in (tmp, tmp + SUM):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)


def _checksum(data: pa.Buffer) -> str:
    return f"{xxhash.xxh3_64_intdigest(data):016x}"


def _sum_of(path: str) -> str:
    with pa.memory_map(path) as source:
        return _checksum(source.read_buffer())


def _seal(tmp: str, path: str) -> None:
    """Publish a scan file: the data, then its checksum, renamed into place in that order.

    Not fsynced: a scan file is a cache that every reader verifies against its checksum
    before serving it (``open_verified``), so one left torn or empty by a crash is deleted
    and computed again, never served. (The changelog files it is computed from are durable.)
    """
    checksum = _sum_of(tmp)
    with open(tmp + SUM, "w") as f:
        f.write(checksum)
    durable.makedirs(os.path.dirname(path))
    os.replace(tmp, path)
    os.replace(tmp + SUM, path + SUM)


def _drop_older_scans(path: str) -> None:
    """Delete the scan files of commits older than the one at ``path`` (a reader that has one
    mapped keeps reading it; a reader pinned to an older commit rebuilds its own)."""
    folder, name = os.path.split(path)
    for entry in os.listdir(folder):
        if entry.split(".")[0] < name.split(".")[0]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, entry))
