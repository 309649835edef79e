"""A warehouse and a store's past as tables: ``list=stores`` (``Catalog.stores_table``),
``readHistory`` (a store's commits, ``Catalog.history``) and ``readChangeFeed`` (what each
commit changed, ``catalog.operations.change_feed``)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import LongType, MapType, StringType, StructField, StructType, TimestampType

from catalog.catalog import STORES_SCHEMA, Catalog, StoreTable
from catalog.log.spec import StoreSpec
from catalog.operations.change_feed import check_one_schema, partition_changes, version_range
from datasource.errors import surface_errors
from datasource.options import StoreOptions
from stores.errors import InvalidOptionError
from stores.types import from_arrow

HISTORY_SCHEMA = StructType(
    [
        StructField("version", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("operation", StringType()),
        StructField("rows", LongType()),
        StructField("files", LongType()),
        StructField("bytes", LongType()),
        StructField("write_id", StringType()),
        StructField("txn_app_id", StringType()),
        StructField("txn_version", LongType()),
        StructField("base", LongType()),
        StructField("operation_parameters", MapType(StringType(), StringType())),
    ]
)


STORES_SPARK_SCHEMA = StructType.fromJson(
    {
        "type": "struct",
        "fields": [
            {"name": f.name, "type": from_arrow(f.type), "nullable": True, "metadata": {}}
            for f in STORES_SCHEMA
        ],
    }
)


@surface_errors
class StoresReader(DataSourceReader):
    """One partition: the warehouse's stores, read when the query runs."""

    def __init__(self, root: str | None) -> None:
        self.root = Catalog(root).root

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from Catalog(self.root).stores_table().to_batches()


def change_feed_table(options: StoreOptions) -> tuple[StoreTable, int, int]:
    """The store with the spec of the change feed's commits, and the range ``start..end``.

    Raises:
        InvalidOptionError: a bad range; a range that crosses a schema overwrite
            (SCHEMA_CHANGED: rows before and after it have different types).
    """
    from datasource.reader import load_table

    table = load_table(options)
    start, end = version_range(
        table,
        options.starting_version,
        options.ending_version,
        options.starting_timestamp_ms,
        options.ending_timestamp_ms,
    )
    return check_one_schema(table, start, end), start, end


@surface_errors
class HistoryReader(DataSourceReader):
    """One partition: the commit history, newest first, read when the query runs."""

    def __init__(self, root: str | None, store: str) -> None:
        self.root = Catalog(root).root
        self.store = store
        Catalog(self.root).load(store)  # a missing store fails at planning, with its message

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from Catalog(self.root).history(self.store).to_batches()


@surface_errors
class ChangeFeedReader(DataSourceReader):
    """The changes of commits ``start..end``, one Spark partition per store partition."""

    def __init__(self, root: str, spec: StoreSpec, start: int, end: int) -> None:
        self.root = root
        self.spec = spec
        self.start = start
        self.end = end

    @classmethod
    def plan(cls, options: StoreOptions) -> ChangeFeedReader:
        """Pin the commit range (see ``catalog.operations.change_feed.version_range``).

        Raises:
            InvalidOptionError: a bad range, or a read option that does not apply.
        """
        refused = options.instant_options()
        if refused:
            raise InvalidOptionError(
                f"option {refused[0]!r} does not apply to a change feed, which reads commits "
                "'startingVersion' to 'endingVersion'"
            )
        table, start, end = change_feed_table(options)
        return cls(table.catalog.root, table.spec, start, end)

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(p) for p in range(self.spec.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = StoreTable(Catalog(self.root), self.spec)
        yield from partition_changes(table, partition.value, self.start, self.end)
