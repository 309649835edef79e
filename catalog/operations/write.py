"""Writes of rows, Spark's and Python's alike: the column rules, the staging of a writer's
batches and the commit that publishes them or cleans up.

A write gives ``key``, ``value`` and the store kind's columns (``Layout``): its write time
columns (a TIMESTAMP with a time zone, or BIGINT epoch ms), the derived ones it checks
(``StoreKind.check_write``), ``headers`` where the store keeps them; a kind that
``writes_intervals`` also takes its read schema back (``catalog.operations.intervals``).
``check_columns`` applies these rules to the columns' types (Spark's JSON type names, which
``stores.types.from_arrow`` gives Arrow's); ``stage_batches`` stages one writer's Arrow
batches as they come; ``commit_write`` publishes what the writers staged in one commit and,
if that fails, deletes every file of the write that no published record lists.

``datasource.writer`` runs these for a Spark write (a task stages, the driver commits);
``catalog.operations.python_write`` for ``StoreTable.append``, ``overwrite`` and ``delete``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from catalog import faults
from catalog.kinds import HEADERS, HEADERS_PARAM, write_time_columns
from catalog.log.records import ChangelogFile, CommitRecord, Txn
from catalog.log.spec import StoreSpec
from catalog.operations.intervals import IntervalColumns, check_across_tasks, interval_records
from catalog.staging import Stager
from catalog.table import Table
from stores.columns.encode import binary_from, whole
from stores.columns.headers import headers_from_arrow
from stores.errors import CommitConflictError, InvalidOptionError, StorageUnavailableError
from stores.types import TypeJson, describe, same_type

_LOG = logging.getLogger(__name__)

#: Bytes of rows a writer holds (staged, or a history-shaped write's rows) before it writes
#: them as one changelog file.
FLUSH_BYTES = 128 << 20
#: The type of the ``headers`` column, as Spark names it.
HEADERS_TYPE = "array<struct<key:string,value:binary>>"
#: The Arrow type ``headers`` is read as before it is encoded.
HEADERS_ARROW = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


@dataclass(frozen=True)
class WriteColumns:
    """What a write's columns are, once checked against its store (``check_columns``)."""

    #: A history-shaped write's interval columns; None for one of records.
    intervals: IntervalColumns | None = None


def _time_column(name: str, type_json: TypeJson) -> None:
    """Refuse a time column that is neither a TIMESTAMP with a time zone nor BIGINT ms (a
    column of nulls only is checked row by row, as nulls)."""
    if type_json not in ("timestamp", "long", "void"):
        raise InvalidOptionError(
            f"column {name!r} has type {describe(type_json)}; accepted: "
            "timestamp (with time zone) or bigint epoch milliseconds",
            code="COLUMN_TYPE_MISMATCH",
        )


def require_key_value(columns: Mapping[str, TypeJson], source: str = "the data") -> None:
    """Refuse a write without a ``key`` or ``value`` column (MISSING_COLUMN)."""
    for required in ("key", "value"):
        if required not in columns:
            raise InvalidOptionError(
                f"{source} has no column {required!r}; columns: "
                f"{', '.join(columns) or 'none'}; a write takes key, value and the store "
                f"kind's time columns ({', '.join(write_time_columns())}, ...)",
                code="MISSING_COLUMN",
            )


def check_columns(
    table: Table, columns: Mapping[str, TypeJson], *, replace_schema: str, source: str = "the data"
) -> WriteColumns:
    """Check a write's columns (name -> Spark JSON type) against ``table``'s spec and kind.

    Args:
        replace_schema: how this writer replaces a store's schema, for a type mismatch's
            message.
        source: what the messages call the rows ("the DataFrame").

    Raises:
        InvalidOptionError: a missing column (MISSING_COLUMN), one the kind does not take
            (UNEXPECTED_COLUMN), a key, value, time or headers column of another type
            (COLUMN_TYPE_MISMATCH).
    """
    spec = table.spec
    require_key_value(columns, source)
    for name, expected in (("key", spec.key_type), ("value", spec.value_type)):
        got = columns[name]
        if not same_type(got, expected):
            raise InvalidOptionError(
                f"column {name!r} has type {describe(got)} but store {spec.name!r} holds "
                f"{describe(expected)}; cast the column to {describe(expected)}, or "
                f"{replace_schema}",
                code="COLUMN_TYPE_MISMATCH",
            )
    layout = table.layout
    times: list[str] = []
    names = IntervalColumns.of(layout) if table.kind.writes_intervals else None
    intervals = names is not None and names.start in columns
    if names is not None and intervals:
        # The store's own read schema (or an SCD2 dimension): the start is the record time;
        # an end that no later row of the key starts at ends it with a tombstone.
        if names.time in columns:
            raise InvalidOptionError(
                f"{source} has both {names.time!r} and {names.start!r}; a {spec.kind} store "
                f"takes one record time per row: {names.time!r}, or {names.start!r} (and "
                f"{names.end!r})",
                code="UNEXPECTED_COLUMN",
            )
        times += [name for name in (names.start, names.end) if name in columns]
    elif names is not None and names.end in columns:
        raise InvalidOptionError(
            f"{source} has {names.end!r} but no {names.start!r}; a history-shaped write takes "
            f"key, value, {names.start} and (optionally) {names.end}",
            code="MISSING_COLUMN",
        )
    for time in () if intervals else layout.write_times:
        if time.name not in columns:
            nulls = " (null for an unknown timestamp)" if time.unknown_if_null else ""
            raise InvalidOptionError(
                f"a write to {spec.kind} store {spec.name!r} needs a column {time.name!r} "
                f"(TIMESTAMP, or BIGINT epoch milliseconds){nulls}",
                code="MISSING_COLUMN",
            )
        times.append(time.name)
    times += [name for name in layout.derived if name in columns]
    for name in times:
        _time_column(name, columns[name])
    accepted = {"key", "value", *times, *layout.derived}
    if layout.headers:
        accepted.add(HEADERS)
        if HEADERS in columns and describe(columns[HEADERS]) != HEADERS_TYPE:
            raise InvalidOptionError(
                f"column {HEADERS!r} has type {describe(columns[HEADERS])}; accepted: "
                f"{HEADERS_TYPE}",
                code="COLUMN_TYPE_MISMATCH",
            )
    extra = [c for c in columns if c not in accepted]
    if extra:
        hint = ""
        if HEADERS in extra:
            hint = (
                f"; store {spec.name!r} keeps no headers (a new store keeps them with "
                f"option {HEADERS_PARAM.option}=true)"
            )
        raise InvalidOptionError(
            f"{source} has column(s) {', '.join(map(repr, extra))} that a {spec.kind} store "
            f"does not take; accepted: {', '.join(sorted(accepted))}{hint}",
            code="UNEXPECTED_COLUMN",
        )
    return WriteColumns(names if intervals else None)


#: Units of an Arrow timestamp per millisecond (seconds: a thousandth of one).
_PER_MS = {"s": 0, "ms": 1, "us": 1000, "ns": 1_000_000}


def epoch_millis(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A time column (a timestamp of any unit, or integer epoch ms) as int64 epoch ms, nulls
    kept; a timestamp finer than ms is floored, as Kafka truncates (-1 us is -1 ms)."""
    column = whole(column)
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), pa.int64())
    if not pa.types.is_timestamp(column.type):
        return column.cast(pa.int64())
    raw = column.cast(pa.int64())
    per_ms = _PER_MS[column.type.unit]
    if per_ms == 1:
        return raw
    values = raw.fill_null(0).to_numpy(zero_copy_only=False)
    millis = values * 1000 if per_ms == 0 else np.floor_divide(values, per_ms)
    mask = raw.is_null().to_numpy(zero_copy_only=False) if raw.null_count else None
    return pa.array(millis, pa.int64(), mask=mask)


def _stage_batch(table: Table, stager: Stager, data: pa.RecordBatch) -> None:
    """Stage a batch of records (see ``Stager.add``)."""
    layout = stager.layout
    columns: dict[str, pa.Array] = {t.name: epoch_millis(data.column(t.name))
                                    for t in layout.write_times}  # fmt: skip
    derived = {c: epoch_millis(data.column(c)) for c in layout.derived if c in data.column_names}
    if derived:
        table.kind.check_write({**columns, **derived}, table.spec.params, table.spec.name)
    if layout.headers:
        if HEADERS in data.column_names:
            columns[HEADERS] = headers_from_arrow(data.column(HEADERS))
        else:
            columns[HEADERS] = binary_from(  # no headers: empty headersBytes
                np.zeros(0, np.uint8), np.zeros(data.num_rows + 1, np.int64)
            )
    stager.add(data.column("key"), data.column("value"), columns)


def _stage_intervals(
    table: Table, stager: Stager, batches: list[pa.RecordBatch], names: IntervalColumns
) -> None:
    """Stage a history-shaped write's rows, checked together (``interval_records``)."""
    data = pa.Table.from_batches(batches)
    starts = epoch_millis(data.column(names.start))
    if names.end in data.column_names:
        ends = epoch_millis(data.column(names.end))
    else:
        ends = pa.nulls(len(starts), pa.int64())
    keys, values, stamps = interval_records(
        names, table.spec.key_type, whole(data.column("key")), whole(data.column("value")),
        starts, ends,
    )  # fmt: skip
    stager.add(keys, values, {names.time: stamps})


def cleanup(action: Callable[[], None]) -> None:
    """Run a failed write's clean-up (delete what it staged). If the storage fails that too
    (an outage), the write's own error is the one its caller raises, not this one: the files
    left behind are listed by no commit, and ``vacuum`` deletes them."""
    try:
        action()
    except StorageUnavailableError as exc:
        _LOG.info("a failed write's staged files are left for vacuum: %s", exc)


def stage_batches(
    table: Table,
    columns: WriteColumns,
    batches: Iterable[pa.RecordBatch],
    write_id: str,
    writer_id: str,
) -> list[ChangelogFile]:
    """Stage one writer's batches (of columns ``check_columns`` passed) as changelog files
    ``<write_id>-<writer_id>-<sequence>``, each batch as it comes, a file per
    ``FLUSH_BYTES``. A failure deletes what this writer staged.

    Raises:
        InvalidOptionError, SerdeError: a row the store refuses (``Stager.add``).
        CommitConflictError: the write was aborted meanwhile (``Table.abort_write``).
    """
    stager = table.stager(f"{write_id}-{writer_id}")
    staged: list[ChangelogFile] = []
    intervals = columns.intervals
    buffered: list[pa.RecordBatch] = []  # a history-shaped write's rows, checked together
    size = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if intervals is not None:
                buffered.append(batch)
                size += batch.nbytes
                if size >= FLUSH_BYTES:
                    _stage_intervals(table, stager, buffered, intervals)
                    staged += stager.flush()
                    buffered, size = [], 0
                continue
            _stage_batch(table, stager, batch)  # while the source makes the next batch
            if stager.nbytes >= FLUSH_BYTES:
                staged += stager.flush()
        if buffered and intervals is not None:
            _stage_intervals(table, stager, buffered, intervals)
        staged += stager.flush()
        faults.point("stage.done")
        if table.was_aborted(write_id):
            raise CommitConflictError(
                f"the write to store {table.spec.name!r} was aborted while it staged its rows"
            )
    except BaseException:
        cleanup(lambda: table.abort(staged))  # a failed writer leaves nothing behind
        raise
    return staged


def commit_write(
    table: Table,
    files: list[ChangelogFile],
    *,
    write_id: str,
    base_id: int,
    intervals: IntervalColumns | None = None,
    overwrite: bool = False,
    txn: Txn | None = None,
    creates: bool = False,
    new_spec: StoreSpec | None = None,
    spec_commit: int | None = None,
    fences_erasures: bool = True,
) -> CommitRecord | None:
    """Publish a write's staged ``files`` in one commit (``Table.commit``); if that fails,
    abort the write (``Table.abort_write``: its files, unless a published record lists them).

    Args:
        base_id: the newest commit when the write was planned; with ``fences_erasures``, an
            erasure after it refuses the commit (ERASED_MEANWHILE: its rows may hold erased
            keys).
        intervals: a history-shaped write's columns: its writers' intervals are checked
            against each other (``check_across_tasks``).

    Returns and raises: as ``Table.commit``; InvalidOptionError for overlapping intervals.
    """
    try:
        if intervals is not None and len({f.path for f in files}) > 1:
            check_across_tasks(intervals, table, files)
        return table.commit(
            files, overwrite=overwrite, write_id=write_id, txn=txn, creates=creates,
            new_spec=new_spec, spec_commit=None if creates else spec_commit,
            planned_at=base_id if fences_erasures and not creates else None,
        )  # fmt: skip
    except BaseException:
        # The record may have been published before the error: abort asks the log.
        cleanup(lambda: table.abort_write(write_id, files, base_id))
        raise


__all__ = [
    "FLUSH_BYTES", "HEADERS_ARROW", "HEADERS_TYPE", "WriteColumns", "check_columns", "cleanup",
    "commit_write", "epoch_millis", "require_key_value", "stage_batches",
]  # fmt: skip
