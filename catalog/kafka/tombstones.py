"""The Kafka changelog records that erase keys from an application's changelog topic.

An erasure (``catalog.operations.erase``) removes keys from the store; the application's
changelog topic still holds their records until compaction removes what a newer record of the
same Kafka key shadows. The records here are the tombstones Kafka's change-logging layer
writes for a delete (``ChangeLoggingKeyValueBytesStore.delete``: the key, a null value):

- key-value and timestamped stores: one per key, at the time of its record;
- versioned stores: one per key, at the partition's stream time (the newest record time its
  changelog holds), so that a restore applies it after every version of the key
  (``ChangeLoggingVersionedKeyValueBytesStore.delete(key, timestamp)`` logs that time);
- window and session stores: one per window (with its sequence number) or session, keyed as
  the store logs a put (``WindowKeySchema.toStoreKeyBinary``, ``SessionKeySchema.toBinary``)
  at the time of its record.

Once a compaction of the topic has run (and ``delete.retention.ms`` passed), it holds no
record of the keys; until then a restore applies the tombstones after the records they erase.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.kafka.changelog import check_exportable, partition_records
from catalog.kafka.records import RECORD_SCHEMA, changelog_topic
from catalog.kafka.rescale import data_keys
from catalog.partitioner import partitions_of
from catalog.table import Table


def erase_tombstones(
    table: Table, snapshot: int, erased: pa.Array, application_id: str, store: str | None = None
) -> pa.Table:
    """The tombstones of the serialized keys ``erased`` as the changelog of store ``store``
    (default: this one's name) of ``application_id`` holds them at commit ``snapshot``
    (``RECORD_SCHEMA``, in each partition's restore order).

    Raises:
        InvalidOptionError: a store not placed by Kafka's partitioner (PARTITIONER_MISMATCH),
            a bad application id or topic (INVALID_TOPIC).
    """
    check_exportable(table, None)
    topic = changelog_topic(application_id, store or table.spec.name)
    pinned = table.at_commit(snapshot)
    partitions = np.unique(partitions_of(erased, table.spec.num_partitions, "kafka"))
    out = []
    for partition in partitions.tolist():
        records = partition_records(pinned, partition, snapshot, topic)
        if not records.num_rows:
            continue
        hits = records.filter(pc.is_in(data_keys(records.column("key"), table.spec), erased))
        if table.kind.supports_as_of:  # versioned: one per key, at the stream time
            keys = pc.unique(hits.column("key"))
            stream_time = pc.max(records.column("timestamp")).as_py()
            hits = pa.table({"key": keys, "timestamp": pa.array([stream_time] * len(keys),
                                                                 pa.int64())})  # fmt: skip
        n = hits.num_rows
        out.append(
            pa.table(
                {
                    "topic": pa.array([topic] * n, pa.string()),
                    "partition": pa.array([partition] * n, pa.int32()),
                    "key": hits.column("key"),
                    "value": pa.nulls(n, pa.binary()),
                    "timestamp": hits.column("timestamp"),
                    "headers": pa.nulls(n, RECORD_SCHEMA.field("headers").type),
                },
                schema=RECORD_SCHEMA,
            )
        )
    return pa.concat_tables(out) if out else RECORD_SCHEMA.empty_table()


__all__ = ["erase_tombstones"]
