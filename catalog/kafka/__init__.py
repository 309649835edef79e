"""Kafka Streams interop: a store as changelog records and back (``changelog``, ``records``),
and as a Kafka Streams state directory and back (``state_dir``, ``task_dirs``).

Modules, each importing only those listed below it::

    routes       the four routes whole-store, for the facade (``Catalog``, ``StoreTable``)
    changelog    a store as Kafka's changelog records (export), records into a store (import)
    state_dir    a store as an application's task directories, and read back
    task_dirs    the directory layout: task and segment dirs, column families, checkpoints
    records      the record shape (``RECORD_SCHEMA``) and the changelog topic's name
"""

from catalog.kafka.changelog import (
    ImportResult,
    check_exportable,
    export_partition,
    import_changelog,
    kafka_offsets,
    records_from_raw,
)
from catalog.kafka.records import RECORD_SCHEMA, changelog_topic
from catalog.kafka.routes import export_changelog
from catalog.kafka.state_dir import (
    TaskState,
    read_state_dir,
    state_dir_partitions,
    write_state_dir,
)

__all__ = [
    "RECORD_SCHEMA",
    "ImportResult",
    "TaskState",
    "changelog_topic",
    "check_exportable",
    "export_changelog",
    "export_partition",
    "import_changelog",
    "kafka_offsets",
    "read_state_dir",
    "records_from_raw",
    "state_dir_partitions",
    "write_state_dir",
]
