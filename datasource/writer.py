"""Batch writes: tasks stage changelog files, the driver publishes them in one commit."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from catalog.catalog import Catalog, StoreTable
from catalog.kinds import DEFAULT_KIND, kind_of
from catalog.log.records import ChangelogFile, Txn
from catalog.log.spec import StoreSpec
from catalog.operations.write import (
    WriteColumns,
    check_columns,
    commit_write,
    require_key_value,
    stage_batches,
)
from catalog.partitioner import DEFAULT_PARTITIONER
from datasource.errors import surface_errors
from datasource.options import StoreOptions
from datasource.reader import check_creation_options
from stores.errors import CommitConflictError, InvalidOptionError, StoreNotFoundError
from stores.types import TypeJson, all_nullable


def _replacement_spec(
    catalog: Catalog, current: StoreSpec, options: StoreOptions, columns: dict[str, TypeJson]
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
        all_nullable(columns["key"]),
        all_nullable(columns["value"]),
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

    The columns are checked, staged and committed as every write's
    (``catalog.operations.write``): key, value and the store kind's columns.

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
        columns: WriteColumns,
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
        self.columns = columns  # the DataFrame's columns, checked (``check_columns``)
        self.base_id = base_id  # the newest commit when planned: this write's record is newer
        #: Refuse the commit if an erasure landed after ``base_id`` (its rows may hold erased
        #: keys); a stream's micro-batches do not (``stream_writer``): each is a new write.
        self.fences_erasures = True
        self.txn = txn
        self.single_writer = single_writer
        self.spec_commit = spec_commit  # the record holding the spec this write was planned on
        self.replaces_spec = replaces_spec  # overwriteSchema: ``spec`` replaces the store's
        # A history-shaped write (its intervals' columns), else None.
        self.intervals = columns.intervals

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
        columns = {f.name: f.dataType.jsonValue() for f in schema.fields}
        require_key_value(columns, "the DataFrame")
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
                all_nullable(columns["key"]),
                all_nullable(columns["value"]),
                options.num_partitions or 1,
                partitioner=options.partitioner or DEFAULT_PARTITIONER,
                **{k: v for k, v in options.creation_params().items() if v is not None},
            )
        checked = check_columns(
            StoreTable(catalog, spec), columns, source="the DataFrame",
            replace_schema='replace the store\'s schema and contents with .mode("overwrite")'
            '.option("overwriteSchema", "true")',
        )  # fmt: skip
        txn = None
        if options.txn_app_id is not None and options.txn_version is not None:
            txn = Txn(options.txn_app_id, options.txn_version)
        return cls(
            catalog.root,
            spec,
            overwrite,
            checked,
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
        # This task's files: "<write id>-<task>-<sequence>", applied in the order staged.
        staged = stage_batches(
            self._table(), self.columns, iterator, self.write_id, uuid.uuid4().hex[:16]
        )
        return StagedFiles(tuple(staged))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        files = [f for m in messages if isinstance(m, StagedFiles) for f in m.files]
        catalog = self._catalog()
        table = StoreTable(catalog, self.spec) if self.creates else self._still_there(catalog)
        commit_write(
            table, files, write_id=self.write_id, base_id=self.base_id,
            intervals=self.intervals, overwrite=self.overwrite, txn=self.txn,
            creates=self.creates, new_spec=self.spec if self.replaces_spec else None,
            spec_commit=self.spec_commit, fences_erasures=self.fences_erasures,
        )  # fmt: skip

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
