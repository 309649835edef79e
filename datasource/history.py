"""``option("readHistory", "true")``: a store's commits as a table (see ``Catalog.history``)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from catalog.catalog import Catalog

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
    ]
)


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
