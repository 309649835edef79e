"""Kafka Streams interop: a store as changelog records and back (``changelog``, ``restore``,
``records``), as a Kafka Streams state directory and back (``export_dir``, ``state_dir``,
``task_dirs``), and rewritten to another partition count (``rescale``).

Modules, each importing only those listed below it::

    routes       the four routes whole-store, for the facade (``Catalog``, ``StoreTable``)
    rescale      a store rewritten to another partition count, as Kafka would hold it
    restore      changelog records into a store, as Kafka's restore (import)
    changelog    a store as Kafka's changelog records (export); each kind's changelog
    export_dir   a store as an application's task directories
    state_dir    an application's task directories read as a store's rows
    task_dirs    the directory layout: task and segment dirs, column families, checkpoints
    records      the record shape (``RECORD_SCHEMA``) and the changelog topic's name
"""

from catalog.kafka.changelog import check_exportable, export_partition, records_from_raw
from catalog.kafka.export_dir import write_state_dir
from catalog.kafka.records import RECORD_SCHEMA, changelog_topic
from catalog.kafka.restore import ImportResult, import_changelog, kafka_offsets
from catalog.kafka.routes import export_changelog
from catalog.kafka.state_dir import TaskState, read_state_dir, state_dir_partitions

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
