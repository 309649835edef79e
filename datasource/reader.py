"""Batch reads: one Spark partition per store partition, Arrow record batches out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from catalog.catalog import Catalog, StoreTable
from catalog.spec import StoreSpec
from datasource.options import CREATION_OPTIONS, StoreOptions
from stores.errors import InvalidOptionError


@dataclass(frozen=True)
class StorePartition(InputPartition):  # type: ignore[misc]
    """One store partition of a read."""

    value: int


class StateStoreReader(DataSourceReader):
    """Reads every partition of a store at one commit (a snapshot pinned when planned).

    Holds only picklable configuration: the warehouse root, the spec, the snapshot id and the
    as-of instant. Each task opens its partition's local cache inside ``read``.
    """

    def __init__(self, root: str, spec: StoreSpec, snapshot: int, as_of: int | None) -> None:
        self.root = root
        self.spec = spec
        self.snapshot = snapshot
        self.as_of = as_of

    @classmethod
    def plan(cls, options: StoreOptions) -> StateStoreReader:
        """Validate the options against the store and pin the snapshot to read.

        Raises:
            StoreNotFoundError: the store does not exist.
            InvalidOptionError: ``asOfTimestamp`` on a store without history, or a creation
                option that contradicts the store.
        """
        catalog = Catalog(options.root)
        table = catalog.load(options.store)
        check_creation_options(options, table)
        table.check_as_of(options.as_of_ms)
        return cls(catalog.root, table.spec, table.log.latest_id(), options.as_of_ms)

    def partitions(self) -> Sequence[InputPartition]:
        return [StorePartition(p) for p in range(self.spec.num_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = StoreTable(Catalog(self.root), self.spec)
        yield from table.read_partition(partition.value, self.snapshot, self.as_of)


def check_creation_options(options: StoreOptions, table: StoreTable) -> None:
    """Refuse creation options that contradict an existing store (matching ones are fine).

    Raises:
        InvalidOptionError: names the option, the given value and the store's.
    """
    spec = table.spec
    existing = {
        "kind": spec.kind,
        "numPartitions": spec.num_partitions,
        "historyRetention": spec.params.get("history_retention_ms"),
        "segmentInterval": spec.params.get("segment_interval_ms"),
    }
    given = {
        "kind": options.kind,
        "numPartitions": options.num_partitions,
        "historyRetention": options.history_retention_ms,
        "segmentInterval": options.segment_interval_ms,
    }
    for name in CREATION_OPTIONS:
        if given[name] is not None and given[name] != existing[name]:
            raise InvalidOptionError(
                f"option {name!r} is {given[name]!r} but store {spec.name!r} exists with "
                f"{name} = {existing[name]!r}; creation options only shape a new store: "
                "drop the option, or write to a new store"
            )
