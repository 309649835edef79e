"""Changelog records into a store (``import_changelog``), with Kafka's restore semantics.

Records as Spark's Kafka source reads them, grouped per (topic, partition) and applied in
offset order with Kafka's restore semantics for the kind (``stores/<kind>/changelog.py``,
``store_columns``, which settles what a write's own apply order would lose), as one write of
the store: checked whole, staged, and published in one commit that also records the last
offset applied per (topic, partition) (``CommitRecord.kafka_offsets``, carried forward by
every later commit). Records at or below the offset the store holds for their partition are
skipped, so a rerun commits nothing and returns ``commit=None``; an import of the next offsets
continues. ``overwrite=True`` replaces the store's contents and its offsets.

Across Kafka partitions a store has one state: a key found in two partitions (which a
keyed changelog never has) ends as the kind's write orders the rows (they come by topic,
then partition, then offset; which one wins is not defined). Kafka keeps a stream time per
task; versioned, window and session stores drop by their partition's, which the store
partition's equals under ``partitioner=kafka`` with the application's partition count.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.kafka.changelog import KindChangelog, kind_changelog
from catalog.kafka.records import check_topic
from catalog.log.records import OffsetsUpdate, offsets_key, parse_offsets_key
from catalog.log.spec import StoreSpec
from catalog.staging import Stager
from catalog.table import Table
from stores.columns.changelog import group_bounds, no_headers
from stores.columns.encode import whole
from stores.columns.headers import HEADERS_TYPE, headers_from_arrow
from stores.errors import CorruptDataError, InvalidOptionError

#: The columns an import needs (Spark's Kafka source has them all); ``headers`` is optional.
IMPORT_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
#: The import columns of no records.
_EMPTY = (("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
          ("partition", pa.int32()), ("offset", pa.int64()), ("timestamp", pa.int64()))  # fmt: skip


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
    new_spec: StoreSpec | None = None,
    read_version: int | None = None,
    placed: bool = False,
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
        new_spec: with ``overwrite``: the store's new spec from this commit on
            (``Table.commit``), by which the rows are staged and placed (a rescale's
            partition count); its kind and parameters are the store's.
        read_version: the commit whose state the records rewrite (``Table.commit``).
        placed: each record's ``partition`` is its key's partition in the store (a rescale
            computed it with the store's partitioner): not computed again.

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
    stager = Stager(table.catalog.storage, new_spec or spec, write_id)
    partitions = None
    if placed:
        given = data.column("partition").to_numpy(zero_copy_only=False)
        partitions = given[source].astype(np.int32)
    stager.add_serialized(
        whole(rows.column("key")), whole(rows.column("value")), others,
        where=lambda row: f"the record at {_where(checked, record_of(int(source[row])))}",
        partitions=partitions,
    )  # fmt: skip
    files = stager.flush()
    update = OffsetsUpdate(
        applied, {k: v for (t, p), v in held.items() if (k := offsets_key(t, p)) in applied}
    )
    try:
        record = table.commit(files, overwrite=overwrite, write_id=write_id,
                              kafka_offsets=update, creates=creates, new_spec=new_spec,
                              read_version=read_version,
                              planned_at=None if creates else base_id)  # fmt: skip
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


__all__ = ["IMPORT_COLUMNS", "ImportResult", "import_changelog", "kafka_offsets"]
