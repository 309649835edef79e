"""Streaming writes: each micro-batch is one commit, applied exactly once.

``df.writeStream.format("state_store").option("checkpointLocation", ...)`` stages a
micro-batch's rows as a batch write does (``datasource.writer``), and the driver publishes
them as one commit whose transaction is (application id, batch id): the application id is the
streaming query's id (kept in its checkpoint, so it survives restarts), or option ``txnAppId``.
When Spark replays a batch after a failure, a commit of that (id, batch) exists already and the
replay is skipped (Delta's idempotent writes, ``catalog.log.commits``). Output mode append
appends; complete replaces the store's contents each batch. Spark 4.3 gives a Python sink no
update mode (``PythonWriteBuilder`` lacks ``SupportsStreamingUpdateAsAppend``: Spark fails
the query, "does not support Update mode", before this writer runs);
``foreachBatch(upsert_into(store))`` (``datasource.upsert``) writes an update-mode query
exactly once instead.

Tasks learn the query id from Spark's task-local properties and report it with their staged
files. Each task names its files with a fresh id: an abort deletes the files its batch's tasks
reported, and ``vacuum`` those of tasks whose reports were lost.

An erasure (``catalog.operations.erase``) does not fence micro-batches: a query plans once,
when it starts, so a batch that commits after an erasure is a new write, kept as it is, keys
the erasure removed included (a batch write planned before an erasure is refused instead:
ERASED_MEANWHILE).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import StructType

from catalog.catalog import Catalog, StoreTable
from catalog.log.records import Txn
from catalog.log.spec import StoreSpec
from datasource.errors import surface_errors
from datasource.options import StoreOptions
from datasource.spark_features import StreamArrowWriter
from datasource.writer import StagedFiles, StateStoreWriter
from stores.errors import CommitConflictError, InvalidOptionError, StateStoreError

_BATCH_ID = "streaming.sql.batchId"
_QUERY_ID = "sql.streaming.queryId"


@dataclass(frozen=True)
class StagedBatch(StagedFiles):
    """What one task of a micro-batch staged, for which query, under which store spec."""

    query_id: str = ""
    spec: StoreSpec | None = None


def _write_id(query_id: str, batch_id: int) -> str:
    return f"stream-{query_id.replace('-', '')[:32]}-{batch_id}"


@surface_errors
class StateStoreStreamWriter(StreamArrowWriter):
    """A micro-batch writer over ``StateStoreWriter`` (see module doc)."""

    def __init__(self, inner: StateStoreWriter, app_id: str | None) -> None:
        self.inner = inner
        self.app_id = app_id

    @classmethod
    def plan(
        cls, options: StoreOptions, schema: StructType, overwrite: bool
    ) -> StateStoreStreamWriter:
        """Validate the stream's columns and options as a batch write's (see
        ``StateStoreWriter.plan``).

        Raises:
            InvalidOptionError: as a batch write; ``txnVersion`` given.
        """
        if options.overwrite_schema:
            raise InvalidOptionError(
                "option 'overwriteSchema' applies to batch writes only "
                "(df.write.mode(\"overwrite\")); a stream keeps its store's schema",
                code="OVERWRITE_SCHEMA_NEEDS_OVERWRITE",
            )
        inner = StateStoreWriter.plan(replace(options, txn_app_id=None), schema, overwrite)
        inner.fences_erasures = False  # planned when the query started (see the module doc)
        return cls(inner, options.txn_app_id)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedBatch:
        from pyspark import TaskContext

        context = TaskContext.get()
        query = context.getLocalProperty(_QUERY_ID) if context else None
        if query is None:
            raise StateStoreError(
                "a streaming write task did not receive its query id from Spark (task-local "
                f"property {_QUERY_ID})"
            )
        self.inner.write_id = f"stream-{uuid.uuid4().hex}"
        staged: StagedFiles = self.inner.write(iterator)
        return StagedBatch(staged.files, query, self.inner.spec)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        staged = [m for m in messages if isinstance(m, StagedBatch)]
        files = [f for m in staged for f in m.files]
        if not staged or (not files and not self.inner.overwrite):
            return  # an empty micro-batch changes nothing: no commit
        query_id = staged[0].query_id
        inner = self.inner
        inner.write_id = _write_id(query_id, batchId)
        # The tasks' spec was planned when the query started, maybe before the store existed:
        # their rows fit the store if the specs agree on everything but identity.
        here = StoreTable(Catalog(inner.root), inner.spec)
        if any(m.spec is None or not here.compatible_with(m.spec) for m in staged):
            inner.abort(list(staged))
            raise CommitConflictError(
                f"store {inner.spec.name!r} changed (dropped and re-created with another "
                f"spec) while micro-batch {batchId} ran; restart the query"
            )
        inner.txn = Txn(self.app_id or f"stream-{query_id}", batchId)
        inner.commit(list(staged))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        staged = [m for m in messages if isinstance(m, StagedBatch)]
        if not staged:
            return
        self.inner.write_id = _write_id(staged[0].query_id, batchId)
        # Spark plans this writer anew for the abort, after the commit attempt: the record, if
        # it landed, is older than what was latest then, so the whole log is asked.
        self.inner.base_id = 0
        self.inner.abort(list(staged))
