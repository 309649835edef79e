"""Batch writes: tasks stage changelog files, the driver publishes them in one commit."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import (
    DataType,
    LongType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from catalog import faults
from catalog.catalog import Catalog, StoreTable
from catalog.kinds import DEFAULT_KIND, HEADERS, HEADERS_PARAM, kind_of, write_time_columns
from catalog.log.records import ChangelogFile, Txn
from catalog.log.spec import StoreSpec
from catalog.partitioner import DEFAULT_PARTITIONER
from catalog.staging import Stager
from datasource.errors import surface_errors
from datasource.intervals import IntervalColumns, check_across_tasks, interval_records
from datasource.options import StoreOptions
from datasource.reader import check_creation_options
from stores.columns.encode import binary_from, whole
from stores.columns.headers import headers_from_arrow
from stores.errors import CommitConflictError, InvalidOptionError, StoreNotFoundError
from stores.types import all_nullable, describe, same_type

#: Bytes of rows a task holds (staged, or a history-shaped write's rows) before it writes
#: them as one changelog file.
FLUSH_BYTES = 128 << 20
#: Spark's name of the ``headers`` column type.
HEADERS_SPARK = "array<struct<key:string,value:binary>>"


def _time_type(name: str, data_type: DataType) -> bool:
    """Whether a time column is BIGINT epoch ms (else TIMESTAMP).

    Raises:
        InvalidOptionError: any other type (COLUMN_TYPE_MISMATCH).
    """
    if isinstance(data_type, TimestampNTZType) or not isinstance(
        data_type, (TimestampType, LongType)
    ):
        raise InvalidOptionError(
            f"column {name!r} has type {data_type.simpleString()}; accepted: "
            "timestamp (with time zone) or bigint epoch milliseconds",
            code="COLUMN_TYPE_MISMATCH",
        )
    return isinstance(data_type, LongType)


def _replacement_spec(
    catalog: Catalog, current: StoreSpec, options: StoreOptions, columns: dict[str, DataType]
) -> StoreSpec:
    """The spec an ``overwriteSchema`` write gives an existing store: the DataFrame's key and
    value types; the kind, ``numPartitions``, ``partitioner`` and kind parameters given, else
    the store's (parameters only while the kind stays); the store's name, id and creation
    time.

    Raises:
        InvalidOptionError: a kind, type or parameter that a new store would be refused.
    """
    kind = options.kind or current.kind
    given = {k: v for k, v in options.creation_params().items() if v is not None}
    if kind == current.kind:
        params = kind_of(kind).replaced_params(current.params, given)
    else:
        params = given
    spec = catalog.new_spec(
        current.name,
        kind,
        all_nullable(columns["key"].jsonValue()),
        all_nullable(columns["value"].jsonValue()),
        options.num_partitions or current.num_partitions,
        partitioner=options.partitioner or current.partitioner,
        **params,
    )
    return replace(spec, store_id=current.store_id, created_ms=current.created_ms)


@dataclass(frozen=True)
class StagedFiles(WriterCommitMessage):  # type: ignore[misc]
    """What one task staged."""

    files: tuple[ChangelogFile, ...] = field(default_factory=tuple)


@surface_errors
class StateStoreWriter(DataSourceArrowWriter):
    """Writes a DataFrame (``key``, ``value`` and the kind's columns) into a store in one commit.

    The columns beyond key and value are the store kind's (``Layout``): its write time
    columns, the derived ones it checks (``StoreKind.check_write``), headers where the store
    keeps them; a kind that ``writes_intervals`` also takes its read schema back
    (``datasource.intervals``).

    The first write creates the store from the options and the DataFrame's types; the spec is
    made on the driver, travels to the tasks, and is published by ``commit`` in commit record 1
    together with the first files, so a failed first write leaves no store behind.

    With options ``txnAppId`` and ``txnVersion`` the write is idempotent: it is skipped if the
    store has already committed that version (or a newer one) for that application id.
    """

    def __init__(
        self,
        root: str,
        spec: StoreSpec,
        overwrite: bool,
        long_times: dict[str, bool],
        creates: bool = False,
        *,
        base_id: int = 0,
        txn: Txn | None = None,
        single_writer: bool = False,
        spec_commit: int = 1,
        replaces_spec: bool = False,
    ) -> None:
        self.write_id = uuid.uuid4().hex
        self.creates = creates  # whether this write creates the store (it did not exist)
        self.root = root
        self.spec = spec
        self.overwrite = overwrite
        self.long_times = long_times  # time column -> whether it is BIGINT ms (else TIMESTAMP)
        self.base_id = base_id  # the newest commit when planned: this write's record is newer
        #: Refuse the commit if an erasure landed after ``base_id`` (its rows may hold erased
        #: keys); a stream's micro-batches do not (``stream_writer``): each is a new write.
        self.fences_erasures = True
        self.txn = txn
        self.single_writer = single_writer
        self.spec_commit = spec_commit  # the record holding the spec this write was planned on
        self.replaces_spec = replaces_spec  # overwriteSchema: ``spec`` replaces the store's
        kind = kind_of(spec.kind)
        names = IntervalColumns.of(kind.layout(spec.params)) if kind.writes_intervals else None
        # A history-shaped write (its intervals' columns), else None.
        self.intervals = names if names is not None and names.start in long_times else None

    @classmethod
    def plan(cls, options: StoreOptions, schema: StructType, overwrite: bool) -> StateStoreWriter:
        """Validate the DataFrame's columns and the options; make the spec of a new store.

        Raises:
            InvalidOptionError: a missing or extra column, a wrong column type, a bad or
                contradicting option (codes MISSING_COLUMN, COLUMN_TYPE_MISMATCH, ...).
        """
        refused = options.reads_only()
        if refused:
            raise InvalidOptionError(
                f"option {refused[0]!r} applies to reads (spark.read, readStream) only; "
                "drop it from this write"
            )
        kafka = [o for o, v in (("applicationId", options.application_id),
                                ("kafkaStore", options.kafka_store),
                                ("kafkaPartitions", options.kafka_partitions),
                                ("keyType", options.key_type), ("valueType", options.value_type))
                 if v is not None]  # fmt: skip
        if kafka:
            raise InvalidOptionError(
                f"option {kafka[0]!r} applies to a Kafka changelog import "
                "(option('writeFrom', 'kafkaChangelog')) or export (readAs); a write of a "
                "DataFrame takes the store's types from its columns: drop the option"
            )
        if options.overwrite_schema and not overwrite:
            raise InvalidOptionError(
                "option 'overwriteSchema' replaces a store's schema together with its contents, "
                'so it needs .mode("overwrite"); this write appends: write with '
                '.mode("overwrite") or drop the option',
                code="OVERWRITE_SCHEMA_NEEDS_OVERWRITE",
            )
        catalog = Catalog(options.root, single_writer=options.single_writer)
        catalog.storage.require_atomic_commit()
        columns = {f.name: f.dataType for f in schema.fields}
        for required in ("key", "value"):
            if required not in columns:
                raise InvalidOptionError(
                    f"the DataFrame has no column {required!r}; columns: "
                    f"{', '.join(columns) or 'none'}; a write takes key, value and the store "
                    f"kind's time columns ({', '.join(write_time_columns())}, ...)",
                    code="MISSING_COLUMN",
                )
        creates = False
        replaces_spec = False
        base_id = 0
        spec_commit = 1
        existing = catalog.find(options.store)
        if existing is not None:
            spec = existing.spec
            base_id = existing.log.latest_id()
            spec_commit = existing.spec_commit
            if options.overwrite_schema:
                spec = _replacement_spec(catalog, existing.spec, options, columns)
                replaces_spec = not existing.compatible_with(spec)
                spec = spec if replaces_spec else existing.spec
            else:
                check_creation_options(options, existing)
        else:
            creates = True
            spec = catalog.new_spec(
                options.store,
                options.kind or DEFAULT_KIND,
                all_nullable(columns["key"].jsonValue()),
                all_nullable(columns["value"].jsonValue()),
                options.num_partitions or 1,
                partitioner=options.partitioner or DEFAULT_PARTITIONER,
                **{k: v for k, v in options.creation_params().items() if v is not None},
            )
        table = StoreTable(catalog, spec)
        for name, expected in (("key", spec.key_type), ("value", spec.value_type)):
            got = columns[name].jsonValue()
            if not same_type(got, expected):
                raise InvalidOptionError(
                    f"column {name!r} has type {describe(got)} but store {spec.name!r} holds "
                    f"{describe(expected)}; cast the column to {describe(expected)}, or "
                    'replace the store\'s schema and contents with .mode("overwrite")'
                    '.option("overwriteSchema", "true")',
                    code="COLUMN_TYPE_MISMATCH",
                )
        layout = table.layout
        long_times: dict[str, bool] = {}
        names = IntervalColumns.of(layout) if table.kind.writes_intervals else None
        intervals = names is not None and names.start in columns
        if names is not None and intervals:
            # The store's own read schema (or an SCD2 dimension): the start is the record
            # time; an end that no later row of the key starts at ends it with a tombstone.
            if names.time in columns:
                raise InvalidOptionError(
                    f"the DataFrame has both {names.time!r} and {names.start!r}; a {spec.kind} "
                    f"store takes one record time per row: {names.time!r}, or {names.start!r} "
                    f"(and {names.end!r})",
                    code="UNEXPECTED_COLUMN",
                )
            for name in (names.start, names.end):
                if name in columns:
                    long_times[name] = _time_type(name, columns[name])
        elif names is not None and names.end in columns:
            raise InvalidOptionError(
                f"the DataFrame has {names.end!r} but no {names.start!r}; a history-shaped write "
                f"takes key, value, {names.start} and (optionally) {names.end}",
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
            long_times[time.name] = _time_type(time.name, columns[time.name])
        for name in layout.derived:
            if name in columns:
                long_times[name] = _time_type(name, columns[name])
        accepted = {"key", "value", *long_times, *layout.derived}
        if layout.headers:
            accepted.add(HEADERS)
            if HEADERS in columns and columns[HEADERS].simpleString() != HEADERS_SPARK:
                raise InvalidOptionError(
                    f"column {HEADERS!r} has type {columns[HEADERS].simpleString()}; accepted: "
                    f"{HEADERS_SPARK}",
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
                f"the DataFrame has column(s) {', '.join(map(repr, extra))} that a {spec.kind} "
                f"store does not take; accepted: {', '.join(sorted(accepted))}{hint}",
                code="UNEXPECTED_COLUMN",
            )
        txn = None
        if options.txn_app_id is not None and options.txn_version is not None:
            txn = Txn(options.txn_app_id, options.txn_version)
        return cls(
            catalog.root,
            spec,
            overwrite,
            long_times,
            creates,
            base_id=base_id,
            txn=txn,
            single_writer=options.single_writer,
            spec_commit=spec_commit,
            replaces_spec=replaces_spec,
        )

    def _catalog(self) -> Catalog:
        return Catalog(self.root, single_writer=self.single_writer)

    def _table(self) -> StoreTable:
        return StoreTable(self._catalog(), self.spec)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFiles:
        table = self._table()
        # This task's files: "<write id>-<task>-<sequence>", applied in the order staged.
        stager = table.stager(f"{self.write_id}-{uuid.uuid4().hex[:16]}")
        staged: list[ChangelogFile] = []
        intervals = self.intervals
        buffered: list[pa.RecordBatch] = []  # a history-shaped write's rows, checked together
        size = 0
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                if intervals is not None:
                    buffered.append(batch)
                    size += batch.nbytes
                    if size >= FLUSH_BYTES:
                        self._add_intervals(stager, table, buffered, intervals)
                        staged += stager.flush()
                        buffered, size = [], 0
                    continue
                # Each batch is staged as it arrives, while Spark is still sending the next.
                self._add(stager, batch)
                if stager.nbytes >= FLUSH_BYTES:
                    staged += stager.flush()
            if buffered and intervals is not None:
                self._add_intervals(stager, table, buffered, intervals)
            staged += stager.flush()
            faults.point("stage.done")
            if table.was_aborted(self.write_id):
                raise CommitConflictError(
                    f"the write to store {self.spec.name!r} was aborted while this task ran"
                )
        except BaseException:
            table.abort(staged)  # a failed task leaves nothing behind
            raise
        return StagedFiles(tuple(staged))

    def _millis(self, data: pa.RecordBatch | pa.Table, name: str) -> pa.Array:
        """A time column as int64 epoch ms (nulls kept)."""
        column = whole(data.column(name))
        if self.long_times[name]:
            return column.cast(pa.int64())
        micros = column.cast(pa.int64())
        # Floor to ms, as Kafka truncates to millis (-1 us is -1 ms, not 0).
        floored = np.floor_divide(micros.fill_null(0).to_numpy(zero_copy_only=False), 1000)
        mask = micros.is_null().to_numpy(zero_copy_only=False) if micros.null_count else None
        return pa.array(floored, pa.int64(), mask=mask)

    def _add(self, stager: Stager, data: pa.RecordBatch) -> None:
        """Stage a batch of the DataFrame's rows (see ``Stager.add``)."""
        layout = stager.layout
        columns: dict[str, pa.Array] = {}
        for time in layout.write_times:
            columns[time.name] = self._millis(data, time.name)  # checked by ``add``
        derived = {c: self._millis(data, c) for c in layout.derived if c in data.column_names}
        if derived:
            kind_of(self.spec.kind).check_write(
                {**columns, **derived}, self.spec.params, self.spec.name
            )
        if layout.headers:
            if HEADERS in data.column_names:
                columns[HEADERS] = headers_from_arrow(data.column(HEADERS))
            else:
                columns[HEADERS] = binary_from(  # no headers: empty headersBytes
                    np.zeros(0, np.uint8), np.zeros(data.num_rows + 1, np.int64)
                )
        stager.add(data.column("key"), data.column("value"), columns)

    def _add_intervals(
        self,
        stager: Stager,
        table: StoreTable,
        batches: list[pa.RecordBatch],
        names: IntervalColumns,
    ) -> None:
        """Stage a history-shaped write's rows, checked together (``interval_records``)."""
        data = pa.Table.from_batches(batches)
        starts = self._millis(data, names.start)
        if names.end in self.long_times:
            ends = self._millis(data, names.end)
        else:
            ends = pa.nulls(len(starts), pa.int64())
        keys, values, stamps = interval_records(
            names, table.spec.key_type, whole(data.column("key")), whole(data.column("value")),
            starts, ends,
        )  # fmt: skip
        stager.add(keys, values, {names.time: stamps})

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = [f for m in messages if isinstance(m, StagedFiles) for f in m.files]
        catalog = self._catalog()
        table = StoreTable(catalog, self.spec) if self.creates else self._still_there(catalog)
        try:
            if self.intervals is not None and len(messages) > 1:
                check_across_tasks(self.intervals, table, files)
            table.commit(
                files,
                overwrite=self.overwrite,
                write_id=self.write_id,
                txn=self.txn,
                creates=self.creates,
                new_spec=self.spec if self.replaces_spec else None,
                spec_commit=None if self.creates else self.spec_commit,
                planned_at=self.base_id if self.fences_erasures and not self.creates else None,
            )
        except BaseException:
            # The record may have been published before the error: abort asks the log.
            table.abort_write(self.write_id, files, self.base_id)
            raise

    def _still_there(self, catalog: Catalog) -> StoreTable:
        """The store this write was planned against; not one dropped, or dropped and re-made."""
        try:
            table = catalog.load(self.spec.name)
        except StoreNotFoundError:
            table = None
        if table is None or table.spec.store_id != self.spec.store_id:
            raise CommitConflictError(
                f"store {self.spec.name!r} was dropped (or dropped and re-created) while this "
                "write ran; nothing was written"
            )
        return table

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # Spark also calls this after a commit whose process died after publishing the record:
        # abort_write reads the log and keeps every file a published record lists.
        files = [f for m in messages if isinstance(m, StagedFiles) for f in m.files]
        self._table().abort_write(self.write_id, files, self.base_id)
