"""Batch writes: tasks stage changelog files, the driver publishes them in one commit."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import uuid

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import LongType, StructType, TimestampNTZType, TimestampType

from catalog.catalog import Catalog, StoreTable
from catalog.commit_log import ChangelogFile
from catalog.spec import StoreSpec
from datasource.options import StoreOptions
from datasource.reader import check_creation_options
from stores.errors import CommitConflictError, InvalidOptionError, StoreNotFoundError
from stores.types import all_nullable, describe, same_type

#: Rows buffered per task before they are staged as changelog files.
FLUSH_BYTES = 128 << 20


@dataclass(frozen=True)
class StagedFiles(WriterCommitMessage):  # type: ignore[misc]
    """What one task staged."""

    files: tuple[ChangelogFile, ...] = field(default_factory=tuple)


class StateStoreWriter(DataSourceArrowWriter):
    """Writes a DataFrame (``key``, ``value``[, ``timestamp``]) into a store in one commit.

    The first write creates the store from the options and the DataFrame's types; the spec is
    made on the driver, travels to the tasks, and is persisted by ``commit`` just before the
    commit record, so a failed first write leaves no store behind.
    """

    def __init__(
        self,
        root: str,
        spec: StoreSpec,
        overwrite: bool,
        timestamp_is_long: bool,
        creates: bool = False,
    ) -> None:
        self.write_id = uuid.uuid4().hex
        self.creates = creates  # whether this write creates the store (it did not exist)
        self.root = root
        self.spec = spec
        self.overwrite = overwrite
        self.timestamp_is_long = timestamp_is_long

    @classmethod
    def plan(cls, options: StoreOptions, schema: StructType, overwrite: bool) -> StateStoreWriter:
        """Validate the DataFrame's columns and the options; make the spec of a new store.

        Raises:
            InvalidOptionError: a missing or extra column, a wrong column type, a bad or
                contradicting option (codes MISSING_COLUMN, COLUMN_TYPE_MISMATCH, ...).
        """
        if options.as_of_ms is not None:
            raise InvalidOptionError("option 'asOfTimestamp' applies to reads only")
        catalog = Catalog(options.root)
        columns = {f.name: f.dataType for f in schema.fields}
        for required in ("key", "value"):
            if required not in columns:
                raise InvalidOptionError(
                    f"the DataFrame has no column {required!r}; columns: "
                    f"{', '.join(columns) or 'none'}; a write takes key, value[, timestamp]",
                    code="MISSING_COLUMN",
                )
        creates = False
        try:
            spec = catalog.load(options.store).spec
            check_creation_options(options, StoreTable(catalog, spec))
        except StoreNotFoundError:
            creates = True
            spec = catalog.new_spec(
                options.store,
                options.kind or "keyvalue",
                all_nullable(columns["key"].jsonValue()),
                all_nullable(columns["value"].jsonValue()),
                options.num_partitions or 1,
                **{k: v for k, v in options.creation_params().items() if v is not None},
            )
        table = StoreTable(catalog, spec)
        for name, expected in (("key", spec.key_type), ("value", spec.value_type)):
            got = columns[name].jsonValue()
            if not same_type(got, expected):
                raise InvalidOptionError(
                    f"column {name!r} has type {describe(got)} but store {spec.name!r} holds "
                    f"{describe(expected)}; cast the column to {describe(expected)}",
                    code="COLUMN_TYPE_MISMATCH",
                )
        timestamp_is_long = False
        accepted = {"key", "value"}
        if table.kind.uses_timestamp:
            accepted.add("timestamp")
            ts_type = columns.get("timestamp")
            if ts_type is None:
                raise InvalidOptionError(
                    f"a write to {spec.kind} store {spec.name!r} needs a column 'timestamp' "
                    "(TIMESTAMP, or BIGINT epoch milliseconds)",
                    code="MISSING_COLUMN",
                )
            if isinstance(ts_type, TimestampNTZType) or not isinstance(
                ts_type, (TimestampType, LongType)
            ):
                raise InvalidOptionError(
                    f"column 'timestamp' has type {ts_type.simpleString()}; accepted: "
                    "timestamp (with time zone) or bigint epoch milliseconds",
                    code="COLUMN_TYPE_MISMATCH",
                )
            timestamp_is_long = isinstance(ts_type, LongType)
        extra = [c for c in columns if c not in accepted]
        if extra:
            raise InvalidOptionError(
                f"the DataFrame has column(s) {', '.join(map(repr, extra))} that a {spec.kind} "
                f"store does not take; accepted: {', '.join(sorted(accepted))}",
                code="UNEXPECTED_COLUMN",
            )
        return cls(catalog.root, spec, overwrite, timestamp_is_long, creates)

    def _table(self) -> StoreTable:
        return StoreTable(Catalog(self.root), self.spec)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFiles:
        table = self._table()
        # This task's files: "<write id>-<task>-<sequence>", applied in the order staged.
        task_id = f"{self.write_id}-{uuid.uuid4().hex[:16]}"
        staged: list[ChangelogFile] = []
        buffered: list[pa.RecordBatch] = []
        size = 0
        try:
            for batch in iterator:
                if batch.num_rows == 0:
                    continue
                self._check(batch)
                buffered.append(batch)
                size += batch.nbytes
                if size >= FLUSH_BYTES:
                    staged += self._stage(table, buffered, task_id, len(staged))
                    buffered, size = [], 0
            if buffered:
                staged += self._stage(table, buffered, task_id, len(staged))
            if table.was_aborted(self.write_id):
                raise CommitConflictError(
                    f"the write to store {self.spec.name!r} was aborted while this task ran"
                )
        except BaseException:
            table.abort(staged)  # a failed task leaves nothing behind
            raise
        return StagedFiles(tuple(staged))

    def _check(self, batch: pa.RecordBatch) -> None:
        key = batch.column("key")
        if key.null_count:
            raise InvalidOptionError(
                f"column 'key' is null in {key.null_count} row(s); every row needs a key "
                "(a null value, not a null key, deletes)",
                code="NULL_KEY",
            )
        if "timestamp" in batch.schema.names and batch.column("timestamp").null_count:
            raise InvalidOptionError(
                "column 'timestamp' is null in some rows; every row of a versioned write "
                "needs a timestamp",
                code="NULL_TIMESTAMP",
            )

    def _stage(
        self, table: StoreTable, batches: list[pa.RecordBatch], task_id: str, sequence: int
    ) -> list[ChangelogFile]:
        data = pa.Table.from_batches(batches)
        millis = None
        if table.kind.uses_timestamp:
            ts = data.column("timestamp").combine_chunks()
            if self.timestamp_is_long:
                millis = ts
            else:
                micros = ts.cast(pa.int64()).to_numpy()
                millis = pa.array(np.floor_divide(micros, 1000))
            if pc.any(pc.less(millis, 0)).as_py():
                raise InvalidOptionError(
                    "column 'timestamp' has values before 1970-01-01; record timestamps "
                    "must be >= 0 ms, as in Kafka",
                    code="INVALID_TIMESTAMP",
                )
        return table.stage(
            data.column("key").combine_chunks(),
            data.column("value").combine_chunks(),
            millis,
            task_id,
            sequence,
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = [f for m in messages if isinstance(m, StagedFiles) for f in m.files]
        catalog = Catalog(self.root)
        if self.creates:
            table = catalog.ensure(self.spec)
        else:
            table = self._still_there(catalog)
        try:
            table.commit(files, overwrite=self.overwrite)
        except BaseException:
            table.abort_write(self.write_id, files)
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
        files = [f for m in messages if isinstance(m, StagedFiles) for f in m.files]
        self._table().abort_write(self.write_id, files)
