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

The snapshot files' layout, their writer and readers are the log's: ``catalog.log.snapshots``.

Compaction runs on demand (``Catalog.compact``, ``state-store compact``) and after a commit
that leaves a partition with more than ``COMPACT_AFTER_FILES`` changelog files to replay:
``maybe_compact``, which the commit's caller runs (``catalog.catalog.StoreTable.commit``), not
the commit itself (``catalog.table.Table.commit``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from catalog import faults
from catalog.kinds import STORE_MUST_ANSWER
from catalog.log.commits import CommitLog
from catalog.log.records import ChangelogFile, CommitRecord
from catalog.log.snapshots import dump, snapshot_table, write_snapshot

if TYPE_CHECKING:
    from catalog.table import Table

#: A commit that leaves a partition with more changelog files than this to replay (since its
#: newest snapshot or overwrite) compacts that partition.
COMPACT_AFTER_FILES = 64

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
    table: Table,
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
        # Planned at its base: an erasure since then may have erased keys its snapshots hold.
        return table.log.publish(
            "compact", files, write_id, summary=summary, base=base, planned_at=base
        )
    except BaseException:
        if table.log.find_write(write_id, base) is None:  # unlisted: nobody needs them
            for ref in files:
                storage.delete(spec.name, ref.path)
        raise


def maybe_compact(table: Table, threshold: int = COMPACT_AFTER_FILES) -> None:
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


def _state_at(table: Table, partition: int, base: int, families: tuple[str, ...]) -> pa.Table:
    """The snapshot table of ``partition`` at commit ``base``.

    Computed from columns where the kind can (``StoreKind.store_rows`` over the newest
    snapshot and the changelog after it: Kafka's rows, byte for byte, with no RocksDB built);
    else dumped from the partition's cache, brought to ``base`` by Kafka's stores.
    """
    cache = table.partition_cache(partition)
    rows = table.kind.store_rows(*cache.columns_at(base), table.spec.params)
    if rows is not STORE_MUST_ANSWER:
        return snapshot_table(rows, families)
    with cache.open_at(base) as (store, _):
        return dump(store.wrapped, families)
