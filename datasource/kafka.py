"""The connector's Kafka Streams routes (``catalog.kafka`` does the work):

- ``option("readAs", "kafkaChangelog")``: a store read as the changelog records a Kafka Streams
  application restores it from (the shape Spark's Kafka sink writes, plus the record time);
- ``option("writeFrom", "kafkaChangelog")``: a DataFrame of changelog records (the shape Spark's
  Kafka source reads) written into a store with Kafka's restore semantics, remembering the last
  offset of each partition;
- ``option("kafkaStateDir", ...)``: the state directory of a stopped application served as a
  read-only table.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from catalog.catalog import Catalog, StoreTable
from catalog.kafka import check_exportable, export_partition, import_changelog, read_state_dir
from catalog.kafka.routes import state_dir_partition_count
from catalog.kafka.task_dirs import app_dir_of
from catalog.kinds import Scan, kind_of
from catalog.log.paths import CHANGELOG_DIR, TASKS_DIR
from catalog.log.spec import StoreSpec
from datasource.errors import surface_errors
from datasource.options import StoreOptions
from datasource.reader import StorePartition, check_creation_options, load_table, pinned_table
from stores.columns.headers import HEADERS_TYPE
from stores.errors import CommitConflictError, InvalidOptionError, StoreNotFoundError
from stores.serdes import serde_for
from stores.types import TypeJson, type_json_of

#: Spark's Kafka record columns, as the readAs read returns them and the writeFrom write takes
#: them (Spark's Kafka source has also ``offset``, which the write needs, and ``timestampType``).
CHANGELOG_SPARK_SCHEMA = StructType.fromJson(
    {
        "type": "struct",
        "fields": [
            {"name": "topic", "type": "string", "nullable": True, "metadata": {}},
            {"name": "partition", "type": "integer", "nullable": True, "metadata": {}},
            {"name": "key", "type": "binary", "nullable": True, "metadata": {}},
            {"name": "value", "type": "binary", "nullable": True, "metadata": {}},
            {"name": "timestamp", "type": "timestamp", "nullable": True, "metadata": {}},
            {
                "name": "headers",
                "type": {
                    "type": "array",
                    "elementType": {
                        "type": "struct",
                        "fields": [
                            {"name": "key", "type": "string", "nullable": True, "metadata": {}},
                            {"name": "value", "type": "binary", "nullable": True, "metadata": {}},
                        ],
                    },
                    "containsNull": True,
                },
                "nullable": True,
                "metadata": {},
            },
        ],
    }
)
_SPARK_TIME = pa.timestamp("us", tz="UTC")
#: Columns a changelog import needs, and what each may be.
_IMPORT_COLUMNS = {
    "key": "binary",
    "value": "binary",
    "topic": "string",
    "partition": "int",
    "offset": "bigint",
    "timestamp": "timestamp or bigint epoch ms",
}
#: Spark DDL names accepted for ``keyType``/``valueType``, as Spark's JSON type names.
def type_option(options: StoreOptions, column: str) -> TypeJson:
    """The store type of ``key``/``value`` from options ``keyType``/``valueType`` (Spark JSON
    type names: ``string``, ``long``, ``binary``..., DDL aliases, or a JSON type document);
    binary when not given: Kafka's bytes as they are.

    Raises:
        InvalidOptionError: a type no serde stores (names the option).
    """
    option = "keyType" if column == "key" else "valueType"
    text = options.key_type if column == "key" else options.value_type
    if text is None:
        return "binary"
    try:
        type_json = type_json_of(text)
    except InvalidOptionError as exc:
        raise InvalidOptionError(f"option {option!r}: {exc}") from None
    try:
        serde_for(type_json, column=column)
    except InvalidOptionError as exc:
        raise InvalidOptionError(
            f"option {option!r} is {text!r}: {exc}; accepted: a Spark type name (string, "
            "long, integer, double, binary, ...) or its JSON document"
        ) from None
    return type_json


#: The Arrow schema of ``CHANGELOG_SPARK_SCHEMA`` as Spark checks a reader's batches.
_SPARK_ARROW = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("timestamp", _SPARK_TIME),
        ("headers", pa.list_(pa.field("element", HEADERS_TYPE.value_type))),
    ]
)


def to_spark_records(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Library changelog records (epoch-ms ``timestamp``) as Spark's Kafka columns."""
    millis = batch.column("timestamp")
    micros = pc.multiply(millis.cast(pa.int64()), 1000).cast(_SPARK_TIME)
    columns = [micros if name == "timestamp" else batch.column(name) for name in _SPARK_ARROW.names]
    return pa.RecordBatch.from_arrays(
        [c.cast(f.type) for c, f in zip(columns, _SPARK_ARROW, strict=True)], schema=_SPARK_ARROW
    )


# -- readAs = kafkaChangelog --------------------------------------------------------------------


@surface_errors
class KafkaChangelogReader(DataSourceReader):
    """A store at one commit as Kafka Streams changelog records, one Spark partition per store
    partition (= the application's task partition: the store must use ``partitioner=kafka``)."""

    def __init__(
        self, root: str, spec: StoreSpec, snapshot: int, application_id: str, kafka_store: str
    ) -> None:
        self.root = root
        self.spec = spec
        self.snapshot = snapshot
        self.application_id = application_id
        self.kafka_store = kafka_store

    @classmethod
    def plan(cls, options: StoreOptions) -> KafkaChangelogReader:
        """Check the store can be the application's and pin the commit read.

        Raises:
            InvalidOptionError: no ``applicationId``; a store whose partitions are not the
                application's (``catalog.kafka.check_exportable``).
            StoreNotFoundError: no such store.
        """
        if options.application_id is None:
            raise InvalidOptionError(
                "option 'readAs' = 'kafkaChangelog' needs option 'applicationId' (the Kafka "
                "Streams application's application.id: the changelog topic is "
                "<applicationId>-<store>-changelog)",
                code="MISSING_OPTION",
            )
        table, version = pinned_table(options)
        check_exportable(table, options.kafka_partitions)
        return cls(
            table.catalog.root,
            table.spec,
            version,
            options.application_id,
            options.kafka_store or table.spec.name,
        )

    def partitions(self) -> Sequence[InputPartition]:
        return [StorePartition(p) for p in range(self.spec.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = StoreTable(Catalog(self.root), self.spec)
        for batch in export_partition(
            table, partition.value, self.snapshot, self.application_id, self.kafka_store
        ):
            if batch.num_rows:
                yield to_spark_records(batch)


# -- kafkaStateDir ------------------------------------------------------------------------------


def state_dir_spec(options: StoreOptions) -> tuple[str, StoreSpec]:
    """The application directory and the spec its store is read with: the store's kind and
    parameters from the creation options, key and value types from ``keyType``/``valueType``,
    ``partitioner=kafka`` (the application's), as many partitions as its task directories.

    Raises:
        InvalidOptionError: no ``applicationId`` or ``kind``; a bad parameter or type.
    """
    if options.application_id is None or options.kind is None:
        missing = "applicationId" if options.application_id is None else "kind"
        raise InvalidOptionError(
            f"option 'kafkaStateDir' needs option {missing!r}: the directory read is "
            "<kafkaStateDir>/<applicationId>/, and its store (option 'store', Kafka's store "
            "name) is read as option 'kind' with the kind's parameters, as the application "
            "configures them",
            code="MISSING_OPTION",
        )
    app_dir = app_dir_of(options.kafka_state_dir or "", options.application_id)
    params = {k: v for k, v in options.creation_params().items() if v is not None}
    catalog = Catalog(options.root)
    spec = catalog.new_spec(
        options.store, options.kind, type_option(options, "key"), type_option(options, "value"),
        1, partitioner="kafka", **params,
    )  # fmt: skip
    count = state_dir_partition_count(app_dir, options.store, options.kafka_partitions)
    return app_dir, replace(spec, num_partitions=count)


@surface_errors
class KafkaStateDirReader(DataSourceReader):
    """A stopped application's state directory as a read-only table (``catalog.kafka``): one
    Spark partition per task directory; nothing in it is ever opened read-write."""

    def __init__(self, app_dir: str, spec: StoreSpec, scan: Scan) -> None:
        self.app_dir = app_dir
        self.spec = spec
        self.scan = scan

    @classmethod
    def plan(cls, options: StoreOptions) -> KafkaStateDirReader:
        """Raises: as ``state_dir_spec``; a directory of a running instance."""
        app_dir, spec = state_dir_spec(options)
        return cls(app_dir, spec, options.scan())

    def partitions(self) -> Sequence[InputPartition]:
        return [StorePartition(p) for p in range(self.spec.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from catalog.scans import arrow_schema, decoder

        layout = kind_of(self.spec.kind).layout(self.spec.params)
        typed = decoder(self.spec, arrow_schema(self.spec, layout))
        for task in read_state_dir(
            self.app_dir, self.spec.name, self.spec, partitions=[partition.value], scan=self.scan
        ):
            for batch in task.raw.to_batches():
                if batch.num_rows:
                    yield typed(batch)


# -- writeFrom = kafkaChangelog -----------------------------------------------------------------


@dataclass(frozen=True)
class StagedRecords(WriterCommitMessage):  # type: ignore[misc]
    """The records one task received, kept in one Arrow file under the store's staging
    folder until the driver imports them (an abandoned file is an unlisted staged file, which
    ``vacuum`` deletes)."""

    path: str | None = None
    rows: int = 0


def check_import_schema(schema: StructType) -> None:
    """Refuse a DataFrame that is not Kafka's record shape, naming the column.

    Raises:
        InvalidOptionError: a column missing or of another type (COLUMN_TYPE_MISMATCH).
    """
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    for name, accepted in _IMPORT_COLUMNS.items():
        if name not in types:
            raise InvalidOptionError(
                f"option 'writeFrom' = 'kafkaChangelog' needs column {name!r} ({accepted}); "
                f"the DataFrame has {', '.join(types)}: read the topic with Spark's Kafka "
                "source (key, value, topic, partition, offset, timestamp, headers)",
                code="MISSING_COLUMN",
            )
        if types[name] not in accepted.replace(" epoch ms", "").split(" or "):
            raise InvalidOptionError(
                f"column {name!r} has type {types[name]}; accepted: {accepted}",
                code="COLUMN_TYPE_MISMATCH",
            )
    if "headers" in types and types["headers"] != "array<struct<key:string,value:binary>>":
        raise InvalidOptionError(
            f"column 'headers' has type {types['headers']}; accepted: "
            "array<struct<key:string,value:binary>> (Spark's Kafka source with "
            "includeHeaders=true)",
            code="COLUMN_TYPE_MISMATCH",
        )


@surface_errors
class KafkaChangelogWriter(DataSourceArrowWriter):
    """Writes Kafka changelog records into a store (``catalog.kafka.import_changelog``): the
    tasks keep what they receive, the driver applies all of it per partition in offset order
    in one commit, so how Spark split the records into tasks does not matter."""

    _COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")

    def __init__(
        self, root: str, spec: StoreSpec, overwrite: bool, creates: bool, write_id: str
    ) -> None:
        self.root = root
        self.spec = spec
        self.overwrite = overwrite
        self.creates = creates
        self.write_id = write_id

    @classmethod
    def plan(cls, options: StoreOptions, schema: StructType, overwrite: bool) -> KafkaChangelogWriter:
        """The store to import into (made from the options when it does not exist).

        Raises:
            InvalidOptionError: not Kafka's record shape; creation options that contradict
                the store, or none to create one.
        """
        check_import_schema(schema)
        catalog = Catalog(options.root)
        try:
            table = load_table(options)
            check_creation_options(options, table)
            for column, given in (("key", options.key_type), ("value", options.value_type)):
                held = getattr(table.spec, f"{column}_type")
                if given is not None and type_option(options, column) != held:
                    raise InvalidOptionError(
                        f"option '{column}Type' is {given!r} but store {table.spec.name!r} "
                        f"exists with {column} type {held!r}: drop the option, or import "
                        "into a new store"
                    )
            return cls(catalog.root, table.spec, overwrite, False, uuid.uuid4().hex)
        except StoreNotFoundError:
            if options.kind is None:
                raise
        params = {k: v for k, v in options.creation_params().items() if v is not None}
        spec = catalog.new_spec(
            options.store, options.kind, type_option(options, "key"),
            type_option(options, "value"), options.num_partitions or 1,
            partitioner=options.partitioner or "crc32", **params,
        )  # fmt: skip
        return cls(catalog.root, spec, overwrite, True, uuid.uuid4().hex)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedRecords:
        storage = Catalog(self.root).storage
        name = f"{self.write_id}-records-{uuid.uuid4().hex}.arrow"
        parts = (self.spec.name, CHANGELOG_DIR, TASKS_DIR, name)
        rows = 0
        with contextlib.ExitStack() as stack:
            writer = None
            for batch in iterator:
                batch = _import_columns(batch)
                if writer is None:  # streamed to the file: no copy of the task's rows
                    out = stack.enter_context(storage.open_output(*parts))
                    writer = stack.enter_context(pa.ipc.new_file(out, batch.schema))
                writer.write_batch(batch)
                rows += batch.num_rows
        if not rows:
            storage.delete(*parts)  # (only empty batches came, or none)
            return StagedRecords(None, 0)
        return StagedRecords("/".join(parts[1:]), rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        catalog = Catalog(self.root)
        storage = catalog.storage
        staged = [m for m in messages if isinstance(m, StagedRecords) and m.path]
        try:
            tables = []
            for message in staged:
                with storage.open_input(self.spec.name, message.path or "") as source:
                    tables.append(pa.ipc.open_file(source).read_all())
            records = _concat(tables)
            if self.creates and not catalog.exists(self.spec.name):
                import_changelog(StoreTable(catalog, self.spec), records, creates=True)
            else:
                table = catalog.load(self.spec.name)
                if table.spec.store_id != self.spec.store_id and not self.creates:
                    raise CommitConflictError(
                        f"store {self.spec.name!r} was dropped and made again while this "
                        "import ran; nothing was written: run it again"
                    )
                import_changelog(table, records, overwrite=self.overwrite)
        finally:
            self._delete(staged)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._delete([m for m in messages if isinstance(m, StagedRecords) and m.path])

    def _delete(self, staged: list[StagedRecords]) -> None:
        """Delete the write's record files: those the tasks reported, and any a failed task
        left (named by the write's id)."""
        storage = Catalog(self.root).storage
        prefix = f"{self.write_id}-records-"
        paths = {message.path or "" for message in staged}
        paths |= {
            f"{CHANGELOG_DIR}/{TASKS_DIR}/{name}"
            for name in storage.list(self.spec.name, CHANGELOG_DIR, TASKS_DIR)
            if name.startswith(prefix)
        }
        for path in sorted(paths):
            storage.delete(self.spec.name, path)


def _import_columns(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The columns an import reads, the record time as epoch ms."""
    kept = [n for n in KafkaChangelogWriter._COLUMNS if n in batch.schema.names]
    batch = batch.select(kept)
    if "timestamp" in kept and pa.types.is_timestamp(batch.schema.field("timestamp").type):
        millis = pc.divide(batch.column("timestamp").cast(pa.int64()), 1000)
        batch = batch.set_column(kept.index("timestamp"), "timestamp", millis)
    return batch


def _concat(tables: list[pa.Table]) -> pa.Table:
    """The tasks' records as one table (an empty one of the import columns if none)."""
    if not tables:
        return pa.table(
            {
                "key": pa.array([], pa.binary()),
                "value": pa.array([], pa.binary()),
                "topic": pa.array([], pa.string()),
                "partition": pa.array([], pa.int32()),
                "offset": pa.array([], pa.int64()),
                "timestamp": pa.array([], pa.int64()),
                "headers": pa.array([], HEADERS_TYPE),
            }
        )
    return pa.concat_tables(tables, promote_options="default")


__all__ = [
    "CHANGELOG_SPARK_SCHEMA",
    "KafkaChangelogReader",
    "KafkaChangelogWriter",
    "KafkaStateDirReader",
    "check_import_schema",
    "state_dir_spec",
    "to_spark_records",
    "type_option",
]
