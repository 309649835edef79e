"""Compaction: per-partition snapshots of a store's state, published through the commit log.

Without it, a new executor replays every changelog file since the store was created. A
compaction computes each partition's state at commit ``base`` from the previous snapshot and
the changelog after it, with Arrow (``StoreKind.store_rows``: Kafka's rows, byte for byte; a
versioned store's tombstones over a snapshot, or among a key's late records, are left to its
store, whose cache is brought to ``base`` and dumped), writes it as one snapshot file, and
publishes a ``compact``
record listing them (``catalog.log.commits``). Readers then load the newest snapshot and replay
only the commits after its base; readers pinned to older commits keep replaying the log, whose
files stay until vacuumed.

Snapshot file (Arrow IPC, one per partition, ``snapshot/<partition>/<write id>.arrow``):

| column  | Arrow type | meaning                                   |
|---------|------------|-------------------------------------------|
| ``cf``    | string     | the RocksDB column family                 |
| ``key``   | binary     | the RocksDB key                           |
| ``value`` | binary     | the RocksDB value                         |

Rows are sorted by column family (in the kind's order) and then key: each family is one sorted
run, ready for SST ingest. The snapshot holds the partition's column families exactly, in
Kafka's byte layouts, with stream time and segment bookkeeping: loading it gives the very state
that replaying the log gives, for every kind. Its size and CRC-32 are in the record, checked
before it is loaded.

Compaction runs on demand (``Catalog.compact``, ``state-store compact``) and after a commit
that leaves a partition with more than ``COMPACT_AFTER_FILES`` changelog files to replay.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog import faults
from catalog.log import changelog as changelog_files
from catalog.log.changelog import IPC_OPTIONS, changelog_batches
from catalog.log.commits import CommitLog
from catalog.log.paths import snapshot_path
from catalog.log.records import ChangelogFile, CommitRecord
from catalog.log.storage import Storage
from stores.columns.encode import as_binary, binary_from, binary_offsets, whole

if TYPE_CHECKING:
    from catalog.catalog import StoreTable
    from stores.bytes.rocksdb import RocksDBBytesStore

SNAPSHOT_SCHEMA = pa.schema(
    [
        pa.field("cf", pa.string(), nullable=False),
        pa.field("key", pa.binary(), nullable=False),
        pa.field("value", pa.binary(), nullable=False),
    ]
)
#: A commit that leaves a partition with more changelog files than this to replay (since its
#: newest snapshot or overwrite) compacts that partition.
COMPACT_AFTER_FILES = 64
#: At most this many bytes of keys and values in one record batch of a snapshot.
_PIECE_BYTES = 1 << 30

_log = logging.getLogger(__name__)


def tail_files(log: CommitLog, partition: int, target: int) -> int:
    """How many changelog files a fresh cache of ``partition`` replays to reach ``target``.

    Records are read from ``target`` backwards, only down to the newest snapshot of the
    partition (or overwrite): every commit asks this, and must not read the whole log.
    """
    count = 0
    floor = 0  # commits at or below it are covered by a snapshot met on the way down
    for commit_id in range(target, 0, -1):
        if commit_id <= floor:
            break
        record = log.read(commit_id)
        if record.compaction:
            if record.base is not None and record.files_for(partition) and record.base <= target:
                floor = max(floor, record.base)
            continue
        if record.operation == "expire":
            continue
        count += len(record.files_for(partition))
        if record.overwrite:
            break
    return count


def compact(
    table: StoreTable,
    *,
    partitions: list[int] | None = None,
    min_tail_files: int = 1,
    progress: Callable[[str], None] | None = None,
) -> CommitRecord | None:
    """Snapshot the partitions of ``table`` at its latest commit and publish a ``compact``.

    Args:
        partitions: which partitions (default: all).
        min_tail_files: skip a partition with fewer changelog files to replay than this.
        progress: called with a line per partition done.

    Returns:
        The published record, or None when no partition needed a snapshot.
    """

    storage = table.catalog.storage
    spec = table.spec
    base = table.log.latest_id()
    families = table.kind.column_families(spec.params)
    write_id = f"compact-{uuid.uuid4().hex}"
    files: list[ChangelogFile] = []
    try:
        for partition in partitions if partitions is not None else range(spec.num_partitions):
            if tail_files(table.log, partition, base) < max(min_tail_files, 1):
                continue
            snapshot = _state_at(table, partition, base, families)
            files.append(write_snapshot(storage, spec.name, partition, snapshot, write_id))
            faults.point("compact.snapshot_written")  # written, not yet listed by a record
            if progress is not None:
                progress(f"partition {partition}: {snapshot.num_rows} rows at commit {base}")
        if not files:
            return None
        summary = {
            "rows": sum(f.rows for f in files),
            "files": len(files),
            "bytes": sum(f.size for f in files),
        }
        return table.log.publish("compact", files, write_id, summary=summary, base=base)
    except BaseException:
        if table.log.find_write(write_id, base) is None:  # unlisted: nobody needs them
            for ref in files:
                storage.delete(spec.name, ref.path)
        raise


def maybe_compact(table: StoreTable, threshold: int = COMPACT_AFTER_FILES) -> None:
    """Compact the partitions whose replay tail exceeds ``threshold`` files (after a commit).

    The write has committed by then: a failed compaction is logged, not raised.
    """
    if threshold <= 0:
        return
    try:
        target = table.log.latest_id()
        due = [
            p
            for p in range(table.spec.num_partitions)
            if tail_files(table.log, p, target) > threshold
        ]
        if due:
            compact(table, partitions=due)
    except Exception:  # noqa: BLE001 - an optimization after a successful commit
        _log.warning("automatic compaction of store %r failed", table.spec.name, exc_info=True)


def _state_at(table: StoreTable, partition: int, base: int, families: tuple[str, ...]) -> pa.Table:
    """The snapshot table of ``partition`` at commit ``base``.

    Computed from columns where the kind can (``StoreKind.store_rows`` over the newest
    snapshot and the changelog after it: Kafka's rows, byte for byte, with no RocksDB built);
    else dumped from the partition's cache, brought to ``base`` by Kafka's stores.
    """
    cache = table.partition_cache(partition)
    rows = table.kind.store_rows(*cache.columns_at(base), table.spec.params)
    if rows is not None:
        return pa.Table.from_batches(
            [
                _snapshot_batch(family, keys, values)
                for family in families
                if family in rows
                for keys, values in _pieces(*rows[family])
            ],
            schema=SNAPSHOT_SCHEMA,
        )
    with cache.open_at(base) as (store, _):
        return dump(store.wrapped, families)


def dump(db: RocksDBBytesStore, families: tuple[str, ...]) -> pa.Table:
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
    import zlib

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
    db: RocksDBBytesStore, storage: Storage, store_dir: str, ref: ChangelogFile
) -> set[str]:
    """Load a verified snapshot into an empty ``db`` by SST ingest, one file per column
    family, encoded a batch at a time (durable at once: the caller commits its offset after).
    Returns the column families that hold rows."""
    loaded = set()
    pieces = snapshot_batches(storage, store_dir, ref)
    for family, run in itertools.groupby(pieces, key=lambda piece: piece[0]):
        db.ingest_sorted(family, ((keys, values) for _, keys, values in run))
        loaded.add(family)
    return loaded
