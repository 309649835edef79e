"""The four routes between a store and a Kafka Streams application, whole-store: what the
facade (``Catalog``, ``StoreTable``) and the command line call. A Spark task runs one
partition of each instead (``datasource.kafka``).
"""

from __future__ import annotations

import json

import pyarrow as pa

from catalog.kafka.changelog import export_partition, needs_rows, records_from_raw
from catalog.kafka.records import RECORD_SCHEMA, changelog_topic
from catalog.kafka.restore import ImportResult, import_changelog
from catalog.kafka.state_dir import TaskState, read_state_dir, state_dir_partitions
from catalog.kafka.task_dirs import application_id_of
from catalog.kinds import Scan, kind_of
from catalog.log.spec import StoreSpec
from catalog.scans import arrow_schema, decoder
from catalog.table import Table


def export_changelog(
    table: Table, application_id: str, store: str | None = None, snapshot: int | None = None
) -> pa.Table:
    """Every partition of ``table`` (at ``snapshot``, default the latest commit) as changelog
    records of ``<application_id>-<store>-changelog`` (``RECORD_SCHEMA``), partition by
    partition, each in restore order (``export_partition``).

    Raises:
        InvalidOptionError: as ``export_partition``.
    """
    snapshot = table.log.latest_id() if snapshot is None else snapshot
    batches = [
        batch
        for partition in range(table.spec.num_partitions)
        for batch in export_partition(table, partition, snapshot, application_id, store)
    ]
    return pa.Table.from_batches(batches, schema=RECORD_SCHEMA)


def starting_offsets(held: dict[tuple[str, int], int]) -> str:
    """Spark's Kafka source option ``startingOffsets`` that continues after the offsets
    ``held`` (JSON ``{"<topic>": {"<partition>": next offset}}``; ``"earliest"`` if none)."""
    if not held:
        return "earliest"
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(held.items()):
        out.setdefault(topic, {})[str(partition)] = offset + 1
    return json.dumps(out)


def read_state_dir_table(app_dir: str, store: str, spec: StoreSpec) -> pa.Table:
    """The latest state of store ``store`` in an application directory, typed as a read of a
    store of ``spec`` returns it (every partition).

    Raises:
        InvalidOptionError, CorruptDataError, StoreNotFoundError: as ``read_state_dir``.
    """
    schema = arrow_schema(spec, kind_of(spec.kind).layout(spec.params))
    typed = decoder(spec, schema)
    batches = [
        typed(batch)
        for task in read_state_dir(app_dir, store, spec, scan=Scan())
        for batch in task.raw.to_batches()
    ]
    return pa.Table.from_batches(batches, schema=schema)


def state_dir_partition_count(app_dir: str, store: str, at_least: int | None = None) -> int:
    """How many partitions a store of an application directory needs: one past its highest
    task partition, and at least ``at_least``."""
    found = state_dir_partitions(app_dir, store)
    return max(at_least or 1, max(found, default=-1) + 1)


def import_state_dir(table: Table, app_dir: str, store: str) -> ImportResult:
    """Create ``table`` (not created yet; its spec's partitioner ``kafka``) from store
    ``store`` of an application directory, in one commit that keeps the changelog offsets
    found, so that a changelog import continues from them.

    Raises:
        InvalidOptionError, CorruptDataError, StoreNotFoundError: as ``read_state_dir``;
            nothing is created then.
    """
    application_id = application_id_of(app_dir)
    topic = changelog_topic(application_id, store)
    parts, offsets = [], {}
    for task in read_state_dir(app_dir, store, table.spec, rows=needs_rows(table.spec)):
        parts.append(records_in_order(task, table.spec, topic))
        offsets.update(task.offsets)
    records = pa.concat_tables(parts) if parts else None
    return import_changelog(table, records, creates=True, offsets=offsets)


def records_in_order(task: TaskState, spec: StoreSpec, topic: str) -> pa.Table:
    """A task's state as changelog records numbered in restore order (``offset``: their
    position; a state directory's records have no offsets of their own)."""
    records = records_from_raw(
        task.raw, spec, topic, task.partition, timestamp_ms=0, rows=task.rows
    )
    return records.append_column("offset", pa.array(range(records.num_rows), pa.int64()))


__all__ = [
    "export_changelog",
    "import_state_dir",
    "read_state_dir_table",
    "records_in_order",
    "starting_offsets",
    "state_dir_partition_count",
]
