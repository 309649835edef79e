"""Snapshot files: one store partition's RocksDB rows at a commit, written by compaction.

A snapshot file (Arrow IPC, one per partition, ``snapshot/<partition>/<write id>.arrow``):

| column  | Arrow type | meaning                                   |
|---------|------------|-------------------------------------------|
| ``cf``    | string     | the RocksDB column family                 |
| ``key``   | binary     | the RocksDB key                           |
| ``value`` | binary     | the RocksDB value                         |

Rows are sorted by column family (in the kind's order) and then key: each family is one sorted
run, ready for SST ingest. The snapshot holds the partition's column families exactly, in
Kafka's byte layouts, with stream time and segment bookkeeping: loading it gives the very state
that replaying the log gives, for every kind. Its size and CRC-32 are in the ``compact`` record
that lists it (``catalog.log.commits``), checked before it is read.

Compaction (``catalog.operations.compaction``) writes them; the partition caches
(``catalog.caches.partitions``) and columnar reads load them.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.log import changelog as changelog_files
from catalog.log.changelog import IPC_OPTIONS, changelog_batches
from catalog.log.paths import snapshot_path
from catalog.log.records import ChangelogFile
from catalog.log.storage import Storage
from stores.columns.encode import as_binary, binary_from, binary_offsets, whole

if TYPE_CHECKING:
    from stores.bytes.protocol import BytesStore

SNAPSHOT_SCHEMA = pa.schema(
    [
        pa.field("cf", pa.string(), nullable=False),
        pa.field("key", pa.binary(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
    ]
)
#: At most this many bytes of keys and values in one record batch of a snapshot.
_PIECE_BYTES = 1 << 30


def snapshot_table(
    rows: dict[str, tuple[pa.Array, pa.Array]], families: tuple[str, ...]
) -> pa.Table:
    """Sorted ``(keys, values)`` per column family as a snapshot table, families in the
    kind's order (``families``)."""
    return pa.Table.from_batches(
        [
            _snapshot_batch(family, keys, values)
            for family in families
            if family in rows
            for keys, values in _pieces(*rows[family])
        ],
        schema=SNAPSHOT_SCHEMA,
    )


def dump(db: BytesStore, families: tuple[str, ...]) -> pa.Table:
    """The committed contents of ``families`` as a snapshot table (see module doc)."""
    batches = [
        _snapshot_batch(family, pa.array(keys, pa.binary()), pa.array(values, pa.binary()))
        for family in families
        for keys, values in db.scan_columns(cf=family)
    ]
    return pa.Table.from_batches(batches, schema=SNAPSHOT_SCHEMA)


def _snapshot_batch(family: str, keys: pa.Array, values: pa.Array) -> pa.RecordBatch:
    name = family.encode()
    offsets = np.arange(len(keys) + 1, dtype=np.int64) * len(name)
    cf = binary_from(np.frombuffer(name * len(keys), np.uint8), offsets).view(pa.string())
    return pa.record_batch([cf, as_binary(keys), as_binary(values)], schema=SNAPSHOT_SCHEMA)


def _pieces(
    keys: pa.Array | pa.ChunkedArray, values: pa.Array | pa.ChunkedArray
) -> Iterator[tuple[pa.Array, pa.Array]]:
    """``keys`` and ``values`` (binary or large binary) in slices of at most
    ``FILE_BATCH_ROWS`` rows and 1 GiB of bytes, each within a binary array's 32-bit offsets."""
    keys, values = whole(keys), whole(values)
    size = np.diff(binary_offsets(keys)) + np.diff(binary_offsets(values))
    ends = np.cumsum(size)
    start = 0
    while start < len(keys):
        limit = (int(ends[start - 1]) if start else 0) + _PIECE_BYTES
        stop = min(
            start + changelog_files.FILE_BATCH_ROWS,
            max(start + 1, int(np.searchsorted(ends, limit, side="right"))),
        )
        yield keys.slice(start, stop - start), values.slice(start, stop - start)
        start = stop


def write_snapshot(
    storage: Storage, store_dir: str, partition: int, snapshot: pa.Table, write_id: str
) -> ChangelogFile:
    """Write one partition's snapshot durably; describe it for the compact record."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, SNAPSHOT_SCHEMA, options=IPC_OPTIONS) as writer:
        writer.write_table(snapshot, max_chunksize=changelog_files.FILE_BATCH_ROWS)
    data = sink.getvalue().to_pybytes()
    rel = snapshot_path(partition, write_id)
    storage.write_bytes(data, store_dir, rel)
    return ChangelogFile(
        partition=partition, path=rel, rows=snapshot.num_rows, size=len(data),
        crc32=zlib.crc32(data),
    )  # fmt: skip


def snapshot_runs(
    storage: Storage, store_dir: str, ref: ChangelogFile
) -> Iterator[tuple[str, pa.Array, pa.Array]]:
    """A verified snapshot's sorted runs: ``(column family, keys, values)``.

    Raises:
        CorruptDataError: the file is missing or fails its size or checksum.
    """
    pieces: dict[str, list[tuple[pa.Array, pa.Array]]] = {}
    for family, keys, values in snapshot_batches(storage, store_dir, ref):
        pieces.setdefault(family, []).append((keys, values))
    for family, run in pieces.items():
        if len(run) == 1:  # one record batch: its arrays as they are, not copied
            yield family, *run[0]
        else:
            keys, values = (pa.concat_arrays(list(arrays)) for arrays in zip(*run, strict=True))
            yield family, keys, values


def snapshot_batches(
    storage: Storage, store_dir: str, ref: ChangelogFile
) -> Iterator[tuple[str, pa.Array, pa.Array]]:
    """A verified snapshot's sorted runs in pieces, a record batch at a time: ``(column
    family, keys, values)``; consecutive pieces of one family continue its run.

    Raises:
        CorruptDataError: the file is missing or fails its size or checksum.
    """
    for batch in changelog_batches(storage, store_dir, ref):
        if not batch.num_rows:
            continue
        runs = pc.run_end_encode(batch.column("cf"))
        keys, values = batch.column("key"), batch.column("value")
        start = 0
        for name, end in zip(runs.values.to_pylist(), runs.run_ends.to_pylist(), strict=True):
            yield name, keys.slice(start, end - start), values.slice(start, end - start)
            start = end


def load_snapshot(
    db: BytesStore, storage: Storage, store_dir: str, ref: ChangelogFile
) -> set[str]:
    """Load a verified snapshot into an empty ``db`` by SST ingest, one file per column
    family, encoded a batch at a time (durable at once: the caller commits its offset after).
    Returns the column families that hold rows.

    Raises:
        CorruptDataError: the file is missing or fails its size or checksum.
    """
    loaded = set()
    pieces = snapshot_batches(storage, store_dir, ref)
    for family, run in itertools.groupby(pieces, key=lambda piece: piece[0]):
        db.ingest_sorted(family, ((keys, values) for _, keys, values in run))
        loaded.add(family)
    return loaded
