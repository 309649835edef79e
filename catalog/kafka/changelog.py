"""A store as Kafka Streams changelog records, and each kind's changelog (``KIND_CHANGELOGS``).

**Export** (``export_partition``, ``records_from_raw``): a store partition's raw scan becomes
the records Kafka's change-logging store of the kind would have left in partition ``p`` of
``<application.id>-<store>-changelog`` (``RECORD_SCHEMA``), in an order Kafka's restore
accepts without dropping any. Each kind's layout is in its own folder
(``stores/<kind>/changelog.py``, ``changelog_columns``). A store partition is a Kafka
partition only under ``partitioner=kafka`` (``check_exportable``).

Records into a store are ``catalog.kafka.restore``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.kafka.export_dir import partition_rows
from catalog.kafka.records import RECORD_SCHEMA, changelog_topic, check_topic
from catalog.kinds import BATCH_ROWS, STORE_MUST_ANSWER, Runs, Scan
from catalog.log.spec import StoreSpec
from catalog.table import Table
from stores.columns.encode import whole
from stores.columns.headers import HEADERS_TYPE, headers_from_arrow, headers_to_arrow
from stores.errors import InvalidOptionError
from stores.key_value import changelog as key_value
from stores.serdes import serde_for
from stores.session import changelog as session
from stores.timestamped import changelog as timestamped
from stores.versioned import changelog as versioned
from stores.window import changelog as window


class ChangelogColumns(Protocol):
    """A kind's raw scan as changelog columns (``stores/<kind>/changelog.py``)."""

    def __call__(
        self, raw: pa.Table, params: dict[str, Any], timestamp_ms: int, *, in_time: bool = True
    ) -> pa.Table:
        """The records, in restore order (``in_time``), or in the raw scan's order."""


@dataclass(frozen=True)
class KindChangelog:
    """A kind's changelog by column (``stores/<kind>/changelog.py``): raw scan to records,
    records to a write's rows; the shortest changelog key (window and session keys carry a
    suffix); whether a record's time is a stored time that must be >= 0."""

    changelog_columns: ChangelogColumns
    store_columns: Callable[
        [pa.Table, np.ndarray, dict[str, Any]], tuple[pa.Table, np.ndarray, int]
    ]
    min_key: int = 0
    needs_time: bool = False
    #: Records from the store's RocksDB rows instead of its raw scan, for a kind whose raw
    #: scan leaves out what a restore rebuilds (a versioned store's tombstone entries), where
    #: ``rows_needed`` says a partition's state (snapshot runs, commits' tables) has some.
    of_rows: Callable[[Runs, dict[str, Any]], pa.Table] | None = None
    rows_needed: Callable[[Runs, list[pa.Table]], bool] | None = None
    #: Its restore drops a record that comes later than others of a newer time (a versioned
    #: store's grace rule): records merged from several partitions go in time order. The
    #: others take any order (a window's or session's restore first advances to the batch's
    #: latest time; a key-value one overwrites, and a key is in one partition).
    time_ordered: bool = False


#: Each kind's changelog, by kind name (``catalog.kinds``).
KIND_CHANGELOGS: dict[str, KindChangelog] = {
    "keyvalue": KindChangelog(key_value.changelog_columns, key_value.store_columns),
    "timestamped": KindChangelog(timestamped.changelog_columns, timestamped.store_columns),
    "versioned": KindChangelog(
        versioned.changelog_columns, versioned.store_columns, needs_time=True,
        of_rows=versioned.changelog_rows, rows_needed=versioned.has_tombstone_entries,
        time_ordered=True,
    ),
    "window": KindChangelog(
        window.changelog_columns, window.store_columns, min_key=window.MIN_CHANGELOG_KEY
    ),
    "session": KindChangelog(
        session.changelog_columns, session.store_columns, min_key=session.MIN_CHANGELOG_KEY
    ),
}

def kind_changelog(spec: StoreSpec) -> KindChangelog:
    """The changelog of ``spec``'s kind.

    Raises:
        InvalidOptionError: a kind without a Kafka changelog (UNSUPPORTED_KIND).
    """
    found = KIND_CHANGELOGS.get(spec.kind)
    if found is None:
        raise InvalidOptionError(
            f"store {spec.name!r} is a {spec.kind} store, which has no Kafka changelog; "
            f"accepted kinds: {', '.join(KIND_CHANGELOGS)}",
            code="UNSUPPORTED_KIND",
        )
    return found


# -- export -------------------------------------------------------------------------------------


def check_exportable(table: Table, kafka_partitions: int | None) -> None:
    """Refuse to export ``table`` as changelog partitions of an application with
    ``kafka_partitions`` partitions (None: not known), unless its partition ``p`` holds
    exactly the keys of the application's task ``x_p``.

    Raises:
        InvalidOptionError: the store's partitioner is not ``kafka``
            (PARTITIONER_MISMATCH), or its partition count differs
            (PARTITION_COUNT_MISMATCH).
    """
    spec = table.spec
    kind_changelog(spec)
    if spec.partitioner != "kafka":
        raise InvalidOptionError(
            f"store {spec.name!r} places keys with partitioner {spec.partitioner!r}, so its "
            "partitions are not the application's: create it with partitioner 'kafka' and "
            "the application's partition count (or rewrite it into such a store)",
            code="PARTITIONER_MISMATCH",
        )
    if kafka_partitions is not None and kafka_partitions != spec.num_partitions:
        raise InvalidOptionError(
            f"store {spec.name!r} has {spec.num_partitions} partition(s) but the application "
            f"has {kafka_partitions}; a store's partition p is task x_p only with the same "
            "count: rewrite it into a store with that many partitions",
            code="PARTITION_COUNT_MISMATCH",
        )


def records_from_raw(
    raw: pa.Table | None,
    spec: StoreSpec,
    topic: str,
    partition: int,
    *,
    timestamp_ms: int | None = None,
    rows: Runs | None = None,
    for_kafka: bool = True,
) -> pa.Table:
    """One partition's raw scan (``Layout.raw_schema`` of the kind; a versioned store's with
    every version) as changelog records of ``topic`` partition ``partition``
    (``RECORD_SCHEMA``), in the order the kind's restore takes them (see
    ``stores/<kind>/changelog.py``).

    Args:
        raw: the raw scan; None where ``rows`` are given and the kind reads them
            (``needs_rows``).
        timestamp_ms: the time of a key-value store's records, which keeps none (default:
            now).
        rows: the partition's RocksDB rows (ours, or a state directory's), which a kind
            whose raw scan leaves out what a restore rebuilds reads instead
            (``KindChangelog.of_rows``).
        for_kafka: the records go to Kafka; False: only this library reads them back (a
            rescale): a record with an unknown time keeps it (null), and the records come
            in the raw scan's order (the caller orders them).

    Raises:
        InvalidOptionError: a record would have a negative or unknown time, which Kafka's
            producer refuses (NEGATIVE_TIMESTAMP, naming the key and partition); a bad
            topic (INVALID_TOPIC).
    """
    check_topic(topic)
    changelog = kind_changelog(spec)
    if rows is not None and changelog.of_rows is not None:
        columns = changelog.of_rows(rows, spec.params)
    else:
        if raw is None:
            raise ValueError(f"a {spec.kind} store's records come from its raw scan: give raw")
        columns = changelog.changelog_columns(
            raw, spec.params, int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
            in_time=for_kafka,
        )  # fmt: skip
    stamps = columns.column("timestamp")
    negative = pc.or_kleene(pc.is_null(stamps), pc.less(stamps, 0))
    if for_kafka and pc.any(negative).as_py():
        at = int(np.flatnonzero(negative.to_numpy(zero_copy_only=False))[0])
        raise InvalidOptionError(
            f"store {spec.name!r} partition {partition}: the record of changelog key "
            f"{columns.column('key')[at].as_py()!r:.80} would have time "
            f"{stamps[at].as_py()} ms; Kafka's producer refuses a negative (or unknown) "
            "timestamp: rewrite those rows with a time >= 0 first",
            code="NEGATIVE_TIMESTAMP",
        )
    n = columns.num_rows
    return pa.Table.from_arrays(
        [
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            columns.column("key"),
            columns.column("value"),
            stamps,
            _record_headers(whole(columns.column("headers"))),
        ],
        schema=RECORD_SCHEMA,
    )


def needs_rows(spec: StoreSpec) -> bool:
    """Whether ``records_from_raw`` reads a partition's RocksDB rows for ``spec``'s kind."""
    return kind_changelog(spec).of_rows is not None


def _record_headers(raw: pa.Array) -> pa.Array:
    """KIP-1271 headersBytes as record headers; all empty (a store without headers): empty
    lists, with nothing to parse."""
    if raw.null_count or (len(raw) and pc.max(pc.binary_length(raw)).as_py()):
        return headers_to_arrow(raw)
    empty = pa.array([], HEADERS_TYPE.value_type)
    offsets = pa.array(np.zeros(len(raw) + 1, np.int32))
    return pa.ListArray.from_arrays(offsets, empty, type=HEADERS_TYPE)


def raw_partition(
    table: Table,
    partition: int,
    snapshot: int,
    scan: Scan,
    *,
    key_order: bool = True,
    columns: tuple[Runs, list[pa.Table]] | None = None,
) -> pa.Table:
    """Partition ``partition``'s raw scan at commit ``snapshot`` (``Layout.raw_schema``):
    computed from its changelog columns (``columns``: the partition cache's ``columns_at``,
    if read already) where the kind can (in key order, or in write order:
    ``StoreKind.scan_columns``), else the typed read encoded back to bytes."""
    schema = table.layout.raw_schema()
    if snapshot == 0:
        return schema.empty_table()
    runs, commits = columns or table.partition_cache(partition).columns_at(snapshot)
    result = table.kind.scan_columns(runs, commits, table.spec.params, scan, key_order=key_order)
    if result is not STORE_MUST_ANSWER:
        return result.select(schema.names).cast(schema)
    typed = pa.Table.from_batches(
        list(table.read_partition(partition, snapshot, scan)), schema=table.arrow_schema()
    )
    return _raw_of_typed(typed, table.spec, schema)


def _raw_of_typed(typed: pa.Table, spec: StoreSpec, schema: pa.Schema) -> pa.Table:
    """A typed read's rows back as raw columns (serialized, epoch ms, headersBytes)."""
    columns = []
    for f in schema:
        column = whole(typed.column(f.name))
        if f.name in ("key", "value"):
            type_json = spec.key_type if f.name == "key" else spec.value_type
            columns.append(serde_for(type_json, column=f.name).encode(column))
        elif f.name == "headers":
            columns.append(headers_from_arrow(column))
        else:
            columns.append(pc.divide(column.cast(pa.int64()), 1000))
    return pa.Table.from_arrays(columns, schema=schema)


def export_partition(
    table: Table,
    partition: int,
    snapshot: int,
    application_id: str,
    store_name: str | None = None,
) -> Iterator[pa.RecordBatch]:
    """Store partition ``partition`` at commit ``snapshot`` as the records of partition
    ``partition`` of ``<application_id>-<store_name>-changelog`` (``RECORD_SCHEMA``
    batches), in restore order. ``store_name``: the application's name of the store
    (default: this store's). A key-value store's records carry the time of commit
    ``snapshot``.

    Raises:
        InvalidOptionError: a store that is not partitioned as the application
            (``check_exportable``), a partition out of range, a record with a negative
            time (NEGATIVE_TIMESTAMP), a bad topic name (INVALID_TOPIC).
    """
    check_exportable(table, None)
    if not 0 <= partition < table.spec.num_partitions:
        raise InvalidOptionError(
            f"store {table.spec.name!r} has partitions 0 to {table.spec.num_partitions - 1}, "
            f"not {partition}"
        )
    topic = changelog_topic(application_id, store_name or table.spec.name)
    if snapshot == 0:
        return
    records = partition_records(table.at_commit(snapshot), partition, snapshot, topic)
    yield from records.to_batches(max_chunksize=BATCH_ROWS)


def partition_records(
    table: Table, partition: int, snapshot: int, topic: str, *, for_kafka: bool = True
) -> pa.Table:
    """Store partition ``partition`` at commit ``snapshot`` (``table`` with the spec in force
    then) as changelog records of ``topic`` partition ``partition``, in restore order: from
    its raw scan, or its RocksDB rows where the kind reads them (``needs_rows``); a key-value
    store's records carry the commit's time (a versioned store's come from its rows only
    where its state has tombstone entries: ``KindChangelog.rows_needed``). ``for_kafka``: as
    ``records_from_raw``.

    Raises:
        InvalidOptionError: as ``records_from_raw``.
    """
    spec = table.spec
    changelog = kind_changelog(spec)
    columns = None
    if changelog.rows_needed is not None and snapshot:
        columns = table.partition_cache(partition).columns_at(snapshot)
        if changelog.rows_needed(*columns):
            rows = partition_rows(table, partition, snapshot)
            return records_from_raw(None, spec, topic, partition, rows=rows, for_kafka=for_kafka)
    scan = Scan(all_versions=True) if table.kind.supports_as_of else Scan()
    raw = raw_partition(table, partition, snapshot, scan, key_order=for_kafka, columns=columns)
    stamp = table.log.read(snapshot).timestamp_ms
    return records_from_raw(
        raw, spec, topic, partition, timestamp_ms=stamp, for_kafka=for_kafka
    )


__all__ = [
    "KIND_CHANGELOGS",
    "KindChangelog",
    "check_exportable",
    "export_partition",
    "kind_changelog",
    "needs_rows",
    "partition_records",
    "raw_partition",
    "records_from_raw",
]
