"""A store rewritten to another partition count, as Kafka Streams would hold the same state
had its application run on that many input partitions (``rescale``).

Kafka places each key in task ``BuiltInPartitioner.partitionForKey(key, n)``; a store with
``partitioner=kafka`` places it so too, so a rescale is a re-partitioning of the store's
state by the same function with another ``n``, then the exports (``catalog.kafka.routes``,
``export_dir``) give the new layout: a task directory per new partition, changelog records of
the new partitions.

How, in one commit: every partition's state at the latest commit becomes its changelog
records (``changelog.partition_records``: the records an export gives, so windows, sessions,
headers, every version and a versioned store's tombstone entries come along), each record
goes to the new partition of its key (a window or session record's key without its
changelog suffix), each new partition's records in time order, and they are applied as
Kafka's restore of that partition's changelog would apply them (``restore.import_changelog``)
in an overwrite that also replaces the store's spec (its partition count): earlier commits
keep their spec, so time travel to them answers as before.

Kafka keeps a stream time per task, and so does each new partition: the largest time of the
records it receives (a window's start, a session's end, a version's time). Regrouping keys
can raise it, so what a new partition's restore expires (a window, session or version older
than its stream time minus the retention) is gone from the rescaled store, as it would be
from the application restored from the new changelog. The Kafka changelog offsets the store
kept from imports name partitions of the old layout: the rescale drops them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from catalog.kafka.changelog import check_exportable, kind_changelog, partition_records
from catalog.kafka.records import RECORD_SCHEMA
from catalog.kafka.restore import ImportResult, import_changelog
from catalog.log.spec import StoreSpec
from catalog.partitioner import partitions_of
from catalog.table import Table
from stores.columns.decode import ByteColumn
from stores.errors import InvalidOptionError

#: The partition counts a store accepts (``StoreSpec.check_partitions``).
MAX_PARTITIONS = 10_000
#: The topic a rescale's records name (they never leave the library; a store's own changelog
#: topic name can be longer than Kafka allows).
_TOPIC = "rescale"


def check_partition_count(num_partitions: object) -> int:
    """``num_partitions`` if a store can have that many partitions.

    Raises:
        InvalidOptionError: not an integer from 1 to 10000 (INVALID_PARTITION_COUNT).
    """
    if (
        isinstance(num_partitions, bool)
        or not isinstance(num_partitions, int)
        or not 1 <= num_partitions <= MAX_PARTITIONS
    ):
        raise InvalidOptionError(
            f"num_partitions is {num_partitions!r}; accepted: an integer from 1 to "
            f"{MAX_PARTITIONS} (the application's new input partition count)",
            code="INVALID_PARTITION_COUNT",
        )
    return num_partitions


def check_rescale(table: Table, num_partitions: object) -> StoreSpec | None:
    """The store's spec with ``num_partitions`` partitions; None if it has that many already.

    Raises:
        InvalidOptionError: a store whose partitioner is not ``kafka``
            (PARTITIONER_MISMATCH), a kind without a Kafka changelog (UNSUPPORTED_KIND), a
            count that is not an integer from 1 to 10000 (INVALID_PARTITION_COUNT).
    """
    count = check_partition_count(num_partitions)
    check_exportable(table, None)
    if count == table.spec.num_partitions:
        return None
    return replace(table.spec, num_partitions=count)


@dataclass(frozen=True)
class Regrouped:
    """A store's state as changelog records, regrouped for another partition count.

    Attributes:
        records: every new partition's records together (in time order where the kind's
            restore needs it), numbered from 0 in each (``offset``), their ``partition`` the
            new one.
        moved: how many records change partition.
        rows_by_partition: new partition -> its records.
        snapshot: the commit they were read at.
    """

    records: pa.Table
    moved: int
    rows_by_partition: dict[int, int]
    snapshot: int


def regroup(
    table: Table, num_partitions: int, progress: Callable[[str], None] | None = None
) -> Regrouped:
    """``table``'s state at its latest commit as records of ``num_partitions`` partitions
    (see the module doc); ``progress`` is told of each partition read.

    Raises:
        InvalidOptionError: as ``check_rescale``.
    """
    check_rescale(table, num_partitions)
    snapshot = table.log.latest_id()
    # Read with the spec in force (a stale ``table`` then fails its commit: SCHEMA_CHANGED).
    current = table.at_commit(snapshot)
    topic = _TOPIC
    parts = []
    for p in range(current.spec.num_partitions):
        parts.append(partition_records(current, p, snapshot, topic, for_kafka=False))
        if progress is not None:
            progress(f"partition {p}")
    records = pa.concat_tables(parts) if parts else RECORD_SCHEMA.empty_table()
    keys = data_keys(records.column("key"), current.spec)
    targets = partitions_of(keys, num_partitions, "kafka")
    moved = int((records.column("partition").to_numpy(zero_copy_only=False) != targets).sum())
    # Each new partition's records together (stable: one key's records keep their order), in
    # time order where the kind's restore needs it (a versioned store's grace rule).
    if kind_changelog(current.spec).time_ordered:
        times = records.column("timestamp").fill_null(-1).to_numpy(zero_copy_only=False)
        order = np.lexsort((times, targets))
    else:
        order = np.argsort(targets.astype(np.uint16), kind="stable")
    # Only the columns an import reads move (a take of a chunked table costs twice as much).
    kept = ["key", "value", "timestamp"] + (["headers"] if current.layout.headers else [])
    regrouped = records.select(kept).combine_chunks().take(pa.array(order))
    targets = targets[order]
    offsets = np.arange(len(order), dtype=np.int64)
    if len(order):
        starts = np.flatnonzero(np.diff(targets, prepend=targets[0] - 1))
        offsets -= np.repeat(starts, np.diff(np.append(starts, len(order))))
    n = regrouped.num_rows
    regrouped = regrouped.append_column("topic", pa.repeat(pa.scalar(topic), n))
    regrouped = regrouped.append_column("partition", pa.array(targets, pa.int32()))
    regrouped = regrouped.append_column("offset", pa.array(offsets, pa.int64()))
    counts = np.bincount(targets, minlength=num_partitions)
    return Regrouped(regrouped, moved, {q: int(n) for q, n in enumerate(counts)}, snapshot)


def rescale(
    table: Table, num_partitions: int, progress: Callable[[str], None] | None = None
) -> ImportResult | None:
    """Rewrite ``table`` (``partitioner=kafka``) to ``num_partitions`` partitions in one
    commit (see the module doc); None, and no commit, if it has that many already.
    ``progress`` is told of each partition read and of the commit.

    Returns:
        What the commit applied and dropped (``ImportResult.dropped``: records a new
        partition's restore expires).

    Raises:
        InvalidOptionError: as ``check_rescale``; nothing is written.
        CommitConflictError: another writer committed meanwhile (STORE_CHANGED); nothing
            is written.
    """
    new_spec = check_rescale(table, num_partitions)
    if new_spec is None:
        return None
    plan = regroup(table, num_partitions, progress)
    if progress is not None:
        progress("commit")
    return import_changelog(
        table, plan.records, overwrite=True, offsets={}, new_spec=new_spec,
        read_version=plan.snapshot, placed=True,
    )  # fmt: skip


def data_keys(keys: pa.ChunkedArray, spec: StoreSpec) -> pa.Array:
    """The serialized data keys of changelog keys: a window's or session's without its
    suffix (start and sequence number, end and start), which Kafka partitions by."""
    suffix = kind_changelog(spec).min_key
    joined = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if not suffix:
        return joined
    column = ByteColumn(joined)
    return column.slices(column.starts, column.lengths - suffix)


__all__ = ["Regrouped", "check_partition_count", "check_rescale", "data_keys", "regroup", "rescale"]
