"""Streaming ``update`` mode into a store, exactly once: ``upsert_into`` for ``foreachBatch``.

Spark 4.3 gives a Python sink no ``update`` output mode: ``V2Writes`` wants the sink's write
builder to be a ``SupportsStreamingUpdateAsAppend`` (an internal interface), and
``PythonWriteBuilder`` is only a ``WriteBuilder`` and ``SupportsTruncate``, so
``writeStream.format("state_store").outputMode("update")`` is refused before the connector
runs. ``foreachBatch`` works in every output mode, and this is the function to give it::

    (counts.writeStream.outputMode("update")
        .foreachBatch(upsert_into("counts", root="s3://bucket/warehouse"))
        .option("checkpointLocation", ...).start())

Each micro-batch is one commit of the batch writer (``datasource.writer``, with the options of
a batch write, creation options included): its rows are put into the store, which is what an
update-mode row means for every kind (a key's new value; for the kinds that keep time, a record
at its time). Its tasks stage the rows, as a ``df.write`` does, in one Spark job; the driver
commits them unless they were none: an empty micro-batch commits nothing (a ``df.write`` would
commit an empty record, and asking first whether the batch is empty would compute it twice).

The commit's transaction (``txnAppId``/``txnVersion``) is ``("stream-<query id>", batch id)``,
the id the ``state_store`` sink uses. The query id is kept in the query's checkpoint: a batch
that Spark runs again after a failure finds its transaction committed and is skipped (its
staged files deleted), and a query started from a new checkpoint (a new id, batch ids from 0
again) cannot be taken for the old one. Option ``txnAppId`` replaces the derived id; then the
user keeps one per checkpoint. ``txnVersion`` is refused: the batch id is the version.

How the function learns the query id: classic Spark runs ``foreachBatch`` on the query's stream
thread, whose local property ``sql.streaming.queryId`` (``SparkContext.getLocalProperty``) is
the id. Spark Connect (4.3) gives the function the batch and its id only (no ``SparkContext``,
no local property, no active query in the batch's session): there ``txnAppId`` must be given,
else the batch fails with ``[NO_QUERY_ID]``; nothing is guessed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import astuple, dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from catalog.log.records import ChangelogFile
from datasource.options import StoreOptions
from datasource.writer import StagedFiles, StateStoreWriter
from stores.errors import InvalidOptionError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The local property of Spark's stream thread that holds the query id.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
_WHERE = "give the store as the first argument and the warehouse as root="
#: A batch write's options that ``upsert_into`` takes otherwise, or not at all (lower-cased).
_NOT_OPTIONS = {
    "store": _WHERE,
    "path": _WHERE,
    "root": _WHERE,
    "txnversion": "each micro-batch's batch id is its transaction version; give 'txnAppId' "
    "alone (default: derived from the streaming query's id)",
}


def upsert_into(
    store: str, *, root: str | None = None, **options: str | int | bool
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function that writes each micro-batch into ``store`` as one commit,
    exactly once (see module doc).

    Args:
        store: the store's name.
        root: the warehouse URL (default: as a batch write's, ``$STATE_STORE_ROOT`` or
            ``./state-warehouse``).
        **options: a batch write's options (``kind``, ``numPartitions``, the kinds'
            parameters, ``singleWriter``, ``txnAppId``, ...), by their documented names.

    Raises:
        InvalidOptionError: an unknown option (UNKNOWN_OPTION), ``txnVersion``, an option of
            reads only, ``overwriteSchema``, ``writeFrom`` or ``readAs``; raised here, before
            the query starts, so nothing is written.
    """
    given = {name: _text(value) for name, value in options.items()}
    for name in given:
        reason = _NOT_OPTIONS.get(name.lower())
        if reason is not None:
            raise InvalidOptionError(
                f"option {name!r} is not an option of upsert_into: {reason}",
                code="UNEXPECTED_OPTION",
            )
    given["store"] = store
    if root is not None:
        given["root"] = root
    parsed = StoreOptions.parse(given, streaming=True)
    _check(parsed)
    return UpsertInto(given, parsed.txn_app_id)


def _text(value: str | int | bool) -> str:
    """An option value as Spark's ``.option`` passes it (booleans as true/false)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _check(options: StoreOptions) -> None:
    """Refuse what a micro-batch's put cannot take (the rest the writer checks per batch)."""
    refused = options.reads_only()
    if refused:
        raise InvalidOptionError(
            f"option {refused[0]!r} applies to reads (spark.read, readStream) only; "
            "drop it from upsert_into"
        )
    if options.overwrite_schema:
        raise InvalidOptionError(
            "option 'overwriteSchema' applies to batch writes with .mode(\"overwrite\"); "
            "upsert_into puts each micro-batch into the store as it is",
            code="OVERWRITE_SCHEMA_NEEDS_OVERWRITE",
        )
    if options.write_from is not None or options.read_as is not None:
        raise InvalidOptionError(
            "options 'writeFrom' and 'readAs' are not upserts: stream changelog records with "
            "foreachBatch(lambda df, _: df.write.format('state_store').option('writeFrom', "
            "'kafkaChangelog')...save()) (the store keeps each partition's last offset)",
            code="UNEXPECTED_OPTION",
        )


def query_id(batch: DataFrame) -> str:
    """The id of the streaming query whose ``foreachBatch`` is running (classic Spark).

    Raises:
        InvalidOptionError: no query id (Spark Connect, or a call outside ``foreachBatch``):
            NO_QUERY_ID, naming option ``txnAppId``.
    """
    try:
        context = batch.sparkSession.sparkContext
    except AttributeError:  # Spark Connect: PySparkAttributeError, no SparkContext there
        context = None
    found = context.getLocalProperty(QUERY_ID_PROPERTY) if context is not None else None
    if not found:
        where = "Spark Connect" if context is None else "this call (not a foreachBatch of a query)"
        raise InvalidOptionError(
            f"{where} does not give the streaming query's id (Spark's local property "
            f"{QUERY_ID_PROPERTY}), which names each micro-batch's transaction; give "
            "upsert_into(..., txnAppId='<an id of this query and checkpoint>'), and a new one "
            "whenever the query starts from a new checkpoint",
            code="NO_QUERY_ID",
        )
    return found


@dataclass(frozen=True)
class UpsertInto:
    """A ``foreachBatch`` function (see ``upsert_into``): picklable, as Spark Connect sends it."""

    #: The write's options as Spark would pass them (``store``, ``root``, ...), checked.
    options: Mapping[str, str]
    #: Option ``txnAppId``, else None (the query's id is used).
    txn_app_id: str | None = None

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` as one commit, or nothing if it is empty or was
        committed already.

        Raises:
            InvalidOptionError: NO_QUERY_ID (see ``query_id``); the batch's columns do not fit
                the store (as a batch write's): nothing is staged.
            CommitConflictError: as a batch write's commit; nothing is committed.
        """
        app_id = self.txn_app_id or f"stream-{query_id(batch)}"
        options = {**self.options, "txnAppId": app_id, "txnVersion": str(batch_id)}
        writer = StateStoreWriter.plan(StoreOptions.parse(options), batch.schema, False)
        try:
            staged = _stage(batch, writer)
        except BaseException:
            writer.abort([])  # every file of this write, reported or not
            raise
        if any(m.files for m in staged):
            writer.commit(list(staged))  # skipped if (app_id, batch_id) is committed


#: What a task reports of its staged files, a row per file (one with a null path if none):
#: plain columns, not pickles, so the driver decodes nothing but our own fields.
_REPORT_SCHEMA = pa.schema(
    [("task", pa.string()), ("partition", pa.int32()), ("path", pa.string()),
     ("rows", pa.int64()), ("size", pa.int64()), ("crc32", pa.int64()), ("offset", pa.int64())]
)  # fmt: skip
_REPORT = "task string, partition int, path string, rows long, size long, crc32 long, offset long"
_FIELDS = tuple(ChangelogFile.__dataclass_fields__)  # partition, path, rows, size, crc32, offset


def _stage(batch: DataFrame, writer: StateStoreWriter) -> list[StagedFiles]:
    """Stage the batch's rows in one Spark job (a task per partition, as ``df.write``)."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files = writer.write(batches).files
        rows = [astuple(f) for f in files] or [(None,) * len(_FIELDS)]
        columns = {"task": [uuid.uuid4().hex] * len(rows)}
        columns.update({name: [r[i] for r in rows] for i, name in enumerate(_FIELDS)})
        yield pa.RecordBatch.from_pydict(columns, schema=_REPORT_SCHEMA)

    tasks: dict[str, list[ChangelogFile]] = {}
    for row in batch.mapInArrow(task, _REPORT).collect():
        files = tasks.setdefault(row["task"], [])
        if row["path"] is not None:
            files.append(ChangelogFile(*(row[name] for name in _FIELDS)))
    return [StagedFiles(tuple(files)) for files in tasks.values()]


__all__ = ["QUERY_ID_PROPERTY", "UpsertInto", "query_id", "upsert_into"]
