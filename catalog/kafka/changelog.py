"""A store as Kafka Streams changelog records, and changelog records into a store.

**Export** (``export_partition``, ``records_from_raw``): a store partition's raw scan becomes
the records Kafka's change-logging store of the kind would have left in partition ``p`` of
``<application.id>-<store>-changelog`` (``RECORD_SCHEMA``), in an order Kafka's restore
accepts without dropping any. Each kind's layout is in its own folder
(``stores/<kind>/changelog.py``, ``changelog_columns``). A store partition is a Kafka
partition only under ``partitioner=kafka`` (``check_exportable``).

**Import** (``import_changelog``): records as Spark's Kafka source reads them, grouped per
(topic, partition) and applied in offset order with Kafka's restore semantics for the kind
(``stores/<kind>/changelog.py``, ``store_columns``, which settles what a write's own apply
order would lose), as one write of the store: checked whole, staged, and published in one
commit that also records the last offset applied per (topic, partition)
(``CommitRecord.kafka_offsets``, carried forward by every later commit). Records at or below
the offset the store holds for their partition are skipped, so a rerun commits nothing and
returns ``commit=None``; an import of the next offsets continues. ``overwrite=True``
replaces the store's contents and its offsets.

Across Kafka partitions a store has one state: a key found in two partitions (which a
keyed changelog never has) ends as the kind's write orders the rows (they come by topic,
then partition, then offset; which one wins is not defined). Kafka keeps a stream time per
task; versioned, window and session stores drop by their partition's, which the store
partition's equals under ``partitioner=kafka`` with the application's partition count.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.kafka.records import RECORD_SCHEMA, changelog_topic, check_topic
from catalog.kinds import BATCH_ROWS, STORE_MUST_ANSWER, Scan
from catalog.log.records import OffsetsUpdate, offsets_key, parse_offsets_key
from catalog.log.spec import StoreSpec
from catalog.table import Table
from stores.columns.changelog import group_bounds, no_headers
from stores.columns.encode import whole
from stores.columns.headers import HEADERS_TYPE, headers_from_arrow, headers_to_arrow
from stores.errors import CorruptDataError, InvalidOptionError
from stores.key_value import changelog as key_value
from stores.serdes import serde_for
from stores.session import changelog as session
from stores.timestamped import changelog as timestamped
from stores.versioned import changelog as versioned
from stores.window import changelog as window


@dataclass(frozen=True)
class KindChangelog:
    """A kind's changelog by column (``stores/<kind>/changelog.py``): raw scan to records,
    records to a write's rows; the shortest changelog key (window and session keys carry a
    suffix); whether a record's time is a stored time that must be >= 0."""

    changelog_columns: Callable[[pa.Table, dict[str, Any], int], pa.Table]
    store_columns: Callable[
        [pa.Table, np.ndarray, dict[str, Any]], tuple[pa.Table, np.ndarray, int]
    ]
    min_key: int = 0
    needs_time: bool = False


#: Each kind's changelog, by kind name (``catalog.kinds``).
KIND_CHANGELOGS: dict[str, KindChangelog] = {
    "keyvalue": KindChangelog(key_value.changelog_columns, key_value.store_columns),
    "timestamped": KindChangelog(timestamped.changelog_columns, timestamped.store_columns),
    "versioned": KindChangelog(
        versioned.changelog_columns, versioned.store_columns, needs_time=True
    ),
    "window": KindChangelog(
        window.changelog_columns, window.store_columns, min_key=window.MIN_CHANGELOG_KEY
    ),
    "session": KindChangelog(
        session.changelog_columns, session.store_columns, min_key=session.MIN_CHANGELOG_KEY
    ),
}

#: The columns an import needs (Spark's Kafka source has them all); ``headers`` is optional.
IMPORT_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
#: The import columns of no records.
_EMPTY = (("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
          ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()))  # fmt: skip


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
    raw: pa.Table,
    spec: StoreSpec,
    topic: str,
    partition: int,
    *,
    timestamp_ms: int | None = None,
) -> pa.Table:
    """One partition's raw scan (``Layout.raw_schema`` of the kind; a versioned store's with
    every version) as changelog records of ``topic`` partition ``partition``
    (``RECORD_SCHEMA``), in the order the kind's restore takes them (see
    ``stores/<kind>/changelog.py``).

    Args:
        timestamp_ms: the time of a key-value store's records, which keeps none (default:
            now).

    Raises:
        InvalidOptionError: a record would have a negative or unknown time, which Kafka's
            producer refuses (NEGATIVE_TIMESTAMP, naming the key and partition); a bad
            topic (INVALID_TOPIC).
    """
    check_topic(topic)
    columns = kind_changelog(spec).changelog_columns(
        raw, spec.params, int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    )
    stamps = columns.column("timestamp")
    negative = pc.or_kleene(pc.is_null(stamps), pc.less(stamps, 0))
    if pc.any(negative).as_py():
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


def _record_headers(raw: pa.Array) -> pa.Array:
    """KIP-1271 headersBytes as record headers; all empty (a store without headers): empty
    lists, with nothing to parse."""
    if raw.null_count or (len(raw) and pc.max(pc.binary_length(raw)).as_py()):
        return headers_to_arrow(raw)
    empty = pa.array([], HEADERS_TYPE.value_type)
    offsets = pa.array(np.zeros(len(raw) + 1, np.int32))
    return pa.ListArray.from_arrays(offsets, empty, type=HEADERS_TYPE)


def raw_partition(table: Table, partition: int, snapshot: int, scan: Scan) -> pa.Table:
    """Partition ``partition``'s raw scan at commit ``snapshot`` (``Layout.raw_schema``):
    computed from its changelog columns where the kind can, else the typed read encoded
    back to bytes."""
    schema = table.layout.raw_schema()
    if snapshot == 0:
        return schema.empty_table()
    runs, commits = table.partition_cache(partition).columns_at(snapshot)
    result = table.kind.scan_columns(runs, commits, table.spec.params, scan)
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
    table = table.at_commit(snapshot)
    scan = Scan(all_versions=True) if table.kind.supports_as_of else Scan()
    raw = raw_partition(table, partition, snapshot, scan)
    stamp = table.log.read(snapshot).timestamp_ms
    records = records_from_raw(raw, table.spec, topic, partition, timestamp_ms=stamp)
    yield from records.to_batches(max_chunksize=BATCH_ROWS)


# -- import -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    """What ``import_changelog`` did.

    Attributes:
        commit: the commit id it published; None if it had nothing to apply.
        records: records given.
        null_keys: new records skipped for a None key (Kafka's restore skips them).
        dropped: new records the kind's restore drops (versioned: older than the grace
            period; window, session: of an expired segment), as of the import's own records.
        already_applied: records at or below the offset the store held for their partition.
        offsets: the last offset applied per (topic, partition), after the import.
    """

    commit: int | None
    records: int
    null_keys: int
    dropped: int
    already_applied: int
    offsets: dict[tuple[str, int], int]


def kafka_offsets(table: Table) -> dict[tuple[str, int], int]:
    """The offset of the last changelog record applied to ``table`` per (topic, partition),
    as of its latest commit (empty: none imported, or overwritten since).

    Raises:
        CorruptDataError: a commit record holds a malformed offsets key.
    """
    latest = table.log.latest_id()
    if not latest:
        return {}
    held = table.log.read(latest).kafka_offsets
    try:
        return {parse_offsets_key(k): v for k, v in held.items()}
    except ValueError as exc:
        raise CorruptDataError(f"store {table.spec.name!r}: commit {latest}: {exc}") from exc


@dataclass(frozen=True)
class _Records:
    """Import input sorted by (topic, partition, offset), with its partitions' bounds."""

    data: pa.Table
    offsets: np.ndarray
    groups: np.ndarray
    partitions: list[tuple[str, int, int, int]]  # topic, partition, first row, end row


def _where(records: _Records, row: int) -> str:
    topic, partition = (
        records.data.column("topic")[row].as_py(),
        records.data.column("partition")[row].as_py(),
    )
    return f"topic {topic!r} partition {partition} offset {int(records.offsets[row])}"


def _column(data: pa.Table, name: str, accepts: Callable[[pa.DataType], bool], what: str) -> Any:
    chunked = data.column(name)
    column = whole(chunked)
    if not accepts(column.type):
        raise InvalidOptionError(
            f"changelog column {name!r} is {column.type}; accepted: {what}",
            code="INVALID_COLUMN_TYPE",
        )
    return column


def _binary_like(t: pa.DataType) -> bool:
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t)
                or pa.types.is_large_string(t))  # fmt: skip


def _checked(records: pa.Table) -> _Records:
    """The import input checked, typed as needed and sorted (see ``import_changelog``)."""
    missing = [c for c in IMPORT_COLUMNS if c not in records.column_names]
    if missing:
        raise InvalidOptionError(
            f"changelog records lack column(s) {', '.join(map(repr, missing))}; an import takes "
            f"{', '.join(IMPORT_COLUMNS)} and optionally headers (Spark's Kafka source shape)",
            code="MISSING_COLUMN",
        )
    key = _column(records, "key", _binary_like, "binary").cast(pa.binary())
    value = _column(records, "value", _binary_like, "binary").cast(pa.binary())
    topic = _column(records, "topic", lambda t: pa.types.is_string(t) or
                    pa.types.is_large_string(t), "string").cast(pa.string())  # fmt: skip
    partition = _column(records, "partition", pa.types.is_integer, "an integer type")
    offset = _column(records, "offset", pa.types.is_integer, "an integer type")
    stamp = _column(records, "timestamp", lambda t: pa.types.is_integer(t) or
                    pa.types.is_timestamp(t), "int64 epoch ms or a timestamp")  # fmt: skip
    for name, column in (("topic", topic), ("partition", partition), ("offset", offset)):
        if column.null_count:
            raise InvalidOptionError(
                f"changelog column {name!r} is null in {column.null_count} record(s)",
                code="NULL_COLUMN",
            )
    if pa.types.is_timestamp(stamp.type):
        try:
            stamp = stamp.cast(pa.timestamp("ms", stamp.type.tz))
        except pa.ArrowInvalid as exc:
            raise InvalidOptionError(
                f"changelog column 'timestamp' has times finer than a millisecond ({exc}); "
                "Kafka's record times are epoch milliseconds",
                code="INVALID_COLUMN_TYPE",
            ) from exc
    stamp = stamp.cast(pa.int64()).fill_null(-1)  # Kafka's NO_TIMESTAMP
    try:
        partition = partition.cast(pa.int32())
    except pa.ArrowInvalid as exc:
        raise InvalidOptionError(
            f"changelog column 'partition' has a value beyond a Kafka partition (int32): {exc}",
            code="INVALID_PARTITION",
        ) from exc
    columns = {"key": key, "value": value, "topic": topic,
               "partition": partition, "timestamp": stamp}  # fmt: skip
    if "headers" in records.column_names:
        try:
            columns["headers"] = whole(records.column("headers")).cast(HEADERS_TYPE)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InvalidOptionError(
                f"changelog column 'headers' is {records.schema.field('headers').type}; "
                f"accepted: {HEADERS_TYPE}",
                code="INVALID_COLUMN_TYPE",
            ) from exc
    offsets = offset.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if len(offsets) and offsets.min() < 0:
        raise InvalidOptionError("changelog column 'offset' has negative offsets",
                                 code="INVALID_OFFSET")  # fmt: skip
    parts = partition.to_numpy(zero_copy_only=False).astype(np.int64)
    if len(parts) and parts.min() < 0:
        raise InvalidOptionError("changelog column 'partition' has negative partitions",
                                 code="INVALID_PARTITION")  # fmt: skip
    groups = parts
    if len(topic) and not pc.all(pc.equal(topic, topic[0])).as_py():
        # Partitions by topic name, then number; each one's records in offset order.
        codes = topic.dictionary_encode()
        names = codes.dictionary.to_pylist()
        for name in names:
            check_topic(name)
        rank = np.argsort(np.argsort(np.array(names, dtype=object)))
        topic_rank = rank[codes.indices.to_numpy(zero_copy_only=False)].astype(np.int64)
        groups = topic_rank * (int(parts.max(initial=0)) + 1) + parts
    elif len(topic):
        check_topic(topic[0].as_py())
    data = pa.table(columns)
    if not _in_order(groups, offsets):
        order = np.lexsort((offsets, groups))
        data, offsets, groups = data.take(pa.array(order)), offsets[order], groups[order]
    partitions = [
        (data.column("topic")[start].as_py(), int(parts_of), start, end)
        for start, end in group_bounds(groups)
        for parts_of in [data.column("partition")[start].as_py()]
    ]
    return _Records(data, offsets, groups, partitions)


def _in_order(groups: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether rows come grouped by ascending ``groups``, each group's in offset order."""
    steps = np.diff(groups)
    if (steps < 0).any():
        return False
    return all(
        bool((offsets[start + 1 : end] >= offsets[start : end - 1]).all())
        for start, end in group_bounds(groups)
    )


def import_changelog(
    table: Table,
    records: pa.Table | None,
    *,
    overwrite: bool = False,
    creates: bool = False,
    offsets: Mapping[tuple[str, int], int] | None = None,
) -> ImportResult:
    """Apply Kafka changelog records to ``table`` as Kafka's restore of its kind would, as
    one commit (see the module doc).

    Args:
        records: at least ``key``, ``value`` (binary), ``topic`` (string), ``partition``,
            ``offset`` (integers), ``timestamp`` (int64 epoch ms or a timestamp);
            ``headers`` (``list<struct<key, value>>``) optional; other columns ignored.
        overwrite: replace the store's contents and offsets (no record is skipped as
            applied).
        creates: ``table`` is not created yet: the import creates it, in the same commit
            (``Table.commit(creates=True)``); None ``records``: an empty store.
        offsets: the offsets the store keeps after the import, instead of the records' own
            (a state directory's records are numbered in restore order; its offsets are the
            checkpoint's).

    Returns:
        What was applied, skipped and dropped, the commit, the offsets held now.

    Raises:
        InvalidOptionError: a missing column (MISSING_COLUMN), a column of another type
            (INVALID_COLUMN_TYPE), a null topic, partition or offset (NULL_COLUMN), a bad
            topic name (INVALID_TOPIC), a window or session key shorter than its suffix or
            a versioned record with a negative time (naming the record: MALFORMED_RECORD),
            and what staging refuses (``Table.stage``); nothing is staged.
        SerdeError: a key or value the store's type cannot decode, naming topic, partition
            and offset (UNDECODABLE_KEY, UNDECODABLE_VALUE); nothing is staged.
        CommitConflictError: another import applied records of the same partitions
            meanwhile (KAFKA_OFFSETS_MOVED), or as ``Table.commit``.
    """
    spec = table.spec
    kind = kind_changelog(spec)
    if records is None:
        records = pa.table({c: pa.array([], t) for c, t in _EMPTY})
    checked = _checked(records)
    base_id = 0 if creates else table.log.latest_id()
    held = {} if overwrite or not base_id else kafka_offsets(table)
    new = np.zeros(checked.data.num_rows, dtype=bool)
    applied: dict[str, int] = {}
    for topic, partition, start, end in checked.partitions:
        held_offset = held.get((topic, partition))
        first = start
        if held_offset is not None:
            first += int(np.searchsorted(checked.offsets[start:end], held_offset, side="right"))
        if first < end:
            new[first:end] = True
            applied[offsets_key(topic, partition)] = int(checked.offsets[end - 1])
    already = int(checked.data.num_rows - new.sum())
    if offsets is not None:
        applied = {offsets_key(t, p): o for (t, p), o in offsets.items()}
    if not applied and not overwrite and not creates:
        return ImportResult(None, records.num_rows, 0, 0, already, held)
    key_column = checked.data.column("key")
    keyed = new
    if key_column.null_count:
        keyed = new & key_column.is_valid().to_numpy(zero_copy_only=False)
    n_keyed = int(keyed.sum())
    null_keys = int(new.sum()) - n_keyed
    if n_keyed == len(keyed):  # every record new and keyed (the usual import)
        rows_in, data, groups = None, checked.data, checked.groups
    else:
        rows_in = np.flatnonzero(keyed)
        data, groups = checked.data.take(pa.array(rows_in)), checked.groups[rows_in]

    def record_of(row: int) -> int:
        return row if rows_in is None else int(rows_in[row])

    _check_records(data, kind, checked, record_of)
    headers = (
        headers_from_arrow(data.column("headers"))
        if "headers" in data.column_names and table.layout.headers
        else no_headers(data.num_rows)
    )
    columns = pa.table({"key": data.column("key"), "value": data.column("value"),
                        "timestamp": data.column("timestamp"), "headers": headers})  # fmt: skip
    rows, source, dropped = kind.store_columns(columns.combine_chunks(), groups, spec.params)
    others = {c: whole(rows.column(c)) for c in rows.column_names
              if c not in ("key", "value")}  # fmt: skip
    write_id = uuid.uuid4().hex
    stager = table.stager(write_id)
    stager.add_serialized(
        whole(rows.column("key")), whole(rows.column("value")), others,
        where=lambda row: f"the record at {_where(checked, record_of(int(source[row])))}",
    )  # fmt: skip
    files = stager.flush()
    update = OffsetsUpdate(
        applied, {k: v for (t, p), v in held.items() if (k := offsets_key(t, p)) in applied}
    )
    try:
        record = table.commit(files, overwrite=overwrite, write_id=write_id,
                              kafka_offsets=update, creates=creates)  # fmt: skip
    except BaseException:
        table.abort_write(write_id, files, base_id)
        raise
    now = {} if overwrite else dict(held)
    now.update({parse_offsets_key(k): v for k, v in applied.items()})
    return ImportResult(
        None if record is None else record.id, records.num_rows, null_keys, dropped, already, now
    )


def _check_records(
    data: pa.Table, kind: KindChangelog, checked: _Records, record_of: Callable[[int], int]
) -> None:
    """Refuse keys too short for the kind's changelog key and negative times where the kind
    stores the record time (versioned), naming the first such record.

    Raises:
        InvalidOptionError: MALFORMED_RECORD.
    """
    if kind.min_key:
        short = pc.less(pc.binary_length(data.column("key")), kind.min_key)
        if pc.any(short).as_py():
            at = int(np.flatnonzero(short.to_numpy(zero_copy_only=False))[0])
            raise InvalidOptionError(
                f"the record at {_where(checked, record_of(at))} has a key of fewer than "
                f"{kind.min_key} bytes, too short for this store's changelog key (the key, "
                "then its window or session times)",
                code="MALFORMED_RECORD",
            )
    if kind.needs_time:
        negative = pc.less(data.column("timestamp"), 0)
        if pc.any(negative).as_py():
            at = int(np.flatnonzero(negative.to_numpy(zero_copy_only=False))[0])
            raise InvalidOptionError(
                f"the record at {_where(checked, record_of(at))} has time "
                f"{data.column('timestamp')[at].as_py()} ms; a versioned store's record "
                "time is its version's and must be >= 0",
                code="MALFORMED_RECORD",
            )


__all__ = [
    "IMPORT_COLUMNS",
    "KIND_CHANGELOGS",
    "ImportResult",
    "KindChangelog",
    "check_exportable",
    "export_partition",
    "import_changelog",
    "kafka_offsets",
    "kind_changelog",
    "raw_partition",
    "records_from_raw",
]
