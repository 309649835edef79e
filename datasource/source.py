"""``DefaultSource``: the ``state_store`` format for Spark's Python data source API.

Only picklable configuration travels to executors; RocksDB and filesystems are opened inside
``read()``/``write()``. This module imports cheaply (Spark imports it on the first data-source
lookup of every session): the catalog and engines are imported where they are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
)
from pyspark.sql.types import StructType

from datasource.errors import surface_errors
from datasource.spark_features import StreamArrowWriter

if TYPE_CHECKING:
    from datasource.options import StoreOptions

FORMAT = "state_store"


@surface_errors
class DefaultSource(DataSource):
    """Kafka-Streams-style state stores as tables: ``spark.read.format("state_store")``.

    Options (case-insensitive): ``store`` (or the name given to ``load``/``save``), ``root``
    (warehouse URL, else ``$STATE_STORE_ROOT``, else ``./state-warehouse``), the read options
    of the store's kind, and, when a write creates the store, ``kind``, ``numPartitions``,
    ``partitioner`` and the kind's parameters: each kind declares its own (``catalog.kinds``; the full list is
    ``datasource.options.OPTIONS``).
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def _options(self) -> StoreOptions:
        from datasource.options import StoreOptions

        return StoreOptions.parse(self.options)

    def schema(self) -> StructType:
        from datasource.spark_types import spark_schema

        options = self._options()
        if options.read_as is not None:
            from datasource.kafka import CHANGELOG_SPARK_SCHEMA

            return CHANGELOG_SPARK_SCHEMA
        if options.kafka_state_dir is not None:
            from catalog.catalog import Catalog, StoreTable
            from datasource.kafka import state_dir_spec

            return spark_schema(StoreTable(Catalog(options.root), state_dir_spec(options)[1]))
        if options.list_what is not None:
            from datasource.history import STORES_SPARK_SCHEMA

            return STORES_SPARK_SCHEMA
        if options.read_history:
            from datasource.history import HISTORY_SCHEMA

            return HISTORY_SCHEMA
        if options.read_change_feed:
            from datasource.history import change_feed_table

            if options.starting_version is None and options.starting_timestamp_ms is None:
                from datasource.reader import load_table

                # A stream from the latest commit on (a batch read says what it lacks later).
                return spark_schema(load_table(options), changes=True)
            return spark_schema(change_feed_table(options)[0], changes=True)
        from datasource.reader import pinned_table

        return spark_schema(pinned_table(options)[0])

    def reader(self, schema: StructType) -> DataSourceReader:
        from datasource.pushdown import pushdown_wanted
        from datasource.reader import PushdownStateStoreReader, StateStoreReader

        options = self._options()
        if options.erase or options.erase_reason is not None:
            from stores.errors import InvalidOptionError

            raise InvalidOptionError(
                "options 'erase' and 'eraseReason' apply to a write of the keys to erase "
                "(df.write...option('erase', 'true')); drop them from this read"
            )
        if options.ignore_deletes is not None:
            from stores.errors import InvalidOptionError

            raise InvalidOptionError(
                "option 'ignoreDeletes' applies to a plain stream (spark.readStream without "
                "readChangeFeed); a batch read shows the store as a commit left it: drop the option"
            )
        if options.read_as is not None:
            from datasource.kafka import KafkaChangelogReader

            return KafkaChangelogReader.plan(options)
        if options.kafka_state_dir is not None:
            from datasource.kafka import KafkaStateDirReader

            return KafkaStateDirReader.plan(options)
        if options.list_what is not None:
            from datasource.history import StoresReader

            return StoresReader(options.root)
        if options.read_history:
            from datasource.history import HistoryReader
            from datasource.reader import load_table

            load_table(options)  # a missing store fails here, saying how the root was chosen
            return HistoryReader(options.root, options.store)
        if options.read_change_feed:
            from datasource.history import ChangeFeedReader

            return ChangeFeedReader.plan(options)
        if pushdown_wanted(depth=4):  # 3, plus the frame of ``surfaced``
            return PushdownStateStoreReader.plan(options)
        return StateStoreReader.plan(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        from datasource.writer import StateStoreWriter

        options = self._options()
        if options.erase:
            from datasource.erase import EraseWriter

            return EraseWriter.plan(options, schema, overwrite)
        if options.write_from is not None:
            from datasource.kafka import KafkaChangelogWriter

            return KafkaChangelogWriter.plan(options, schema, overwrite)
        return StateStoreWriter.plan(options, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        # The options are parsed by the reader's first hook, not here: Spark 4.3's streaming
        # runner buries an error raised while the reader is built (``datasource.stream_reader``).
        from datasource.stream_reader import StoreStreamReader

        return StoreStreamReader(self.options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> StreamArrowWriter:
        from datasource.options import StoreOptions
        from datasource.stream_writer import StateStoreStreamWriter

        options = StoreOptions.parse(self.options, streaming=True)
        if options.erase:
            from stores.errors import InvalidOptionError

            raise InvalidOptionError(
                "option 'erase' applies to batch writes: erase a stream's keys with "
                "foreachBatch(lambda df, _: df.write.format('state_store').option('erase', "
                "'true')...save())"
            )
        if options.write_from is not None or options.read_as is not None:
            from stores.errors import InvalidOptionError

            raise InvalidOptionError(
                "options 'writeFrom' and 'readAs' apply to batch reads and writes; stream "
                "changelog records into a store with foreachBatch(lambda df, _: df.write"
                ".format('state_store').option('writeFrom', 'kafkaChangelog')...save()): the "
                "store keeps each partition's last offset, so a replayed micro-batch changes "
                "nothing"
            )
        return StateStoreStreamWriter.plan(options, schema, overwrite)

    def __repr__(self) -> str:
        return f"DefaultSource(options={dict(self.options)!r})"


__all__ = ["FORMAT", "DefaultSource"]
