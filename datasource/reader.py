"""Batch reads: one Spark partition per store partition, Arrow record batches out."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from catalog.catalog import DEFAULT_ROOT, Catalog, StoreTable
from catalog.kinds import OPTION_NAMES, Scan
from catalog.log.spec import StoreSpec
from datasource.errors import surface_errors
from datasource.options import CREATION_OPTIONS, PARAM_OF_OPTION, StoreOptions
from datasource.pushdown import Pushdown, take_filters

#: The environment variable that names the default warehouse.
ROOT_ENV = "STATE_STORE_ROOT"
from stores.errors import InvalidOptionError, StoreNotFoundError

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter  # Spark 4.1 on (datasource.spark_features)


@dataclass(frozen=True)
class StorePartition(InputPartition):  # type: ignore[misc]
    """One store partition of a read."""

    value: int


@surface_errors
class StateStoreReader(DataSourceReader):
    """Reads every partition of a store at one commit (a snapshot pinned when planned).

    Holds only picklable configuration: the warehouse root, the spec, the snapshot id and the
    as-of instant. Each task opens its partition's local cache inside ``read``.
    """

    def __init__(self, root: str, spec: StoreSpec, snapshot: int, scan: Scan) -> None:
        self.root = root
        self.spec = spec
        self.snapshot = snapshot
        self.scan = scan
        self.pushdown = Pushdown()

    @classmethod
    def plan(cls, options: StoreOptions) -> StateStoreReader:
        """Validate the options against the store and pin the snapshot to read.

        Raises:
            StoreNotFoundError: the store does not exist.
            InvalidOptionError: a read option of another kind than the store's
                (``StoreTable.check_scan``), or a creation option that contradicts the store.
        """
        table, version = pinned_table(options)
        check_creation_options(options, table)
        scan = options.scan()
        table.check_scan(scan)
        return cls(table.catalog.root, table.spec, version, scan)

    def partitions(self) -> Sequence[InputPartition]:
        spec = self.spec
        owners = self.pushdown.partitions(spec.key_type, spec.num_partitions, spec.partitioner)
        return [StorePartition(p) for p in owners]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        table = StoreTable(Catalog(self.root), self.spec)
        for batch in table.read_partition(partition.value, self.snapshot, self.scan):
            selected = self.pushdown.apply(batch)
            if selected.num_rows:
                yield selected


@surface_errors
class PushdownStateStoreReader(StateStoreReader):
    """A ``StateStoreReader`` that takes over key and time filters (``datasource.pushdown``).

    Handed only to Spark's pushdown planner: Spark refuses a reader class that overrides
    ``pushFilters`` while ``spark.sql.python.filterPushdown.enabled`` is off.
    """

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        schema = StoreTable(Catalog(self.root), self.spec).arrow_schema()
        self.pushdown, left = take_filters(filters, schema, self.spec.key_type)
        return left


def root_hint(options: StoreOptions) -> str:
    """How a read or write without option ``root`` chose its warehouse ("" with the option).

    Spark's Python workers, where the connector plans every read and write, inherit the
    environment of the session's JVM: ``$STATE_STORE_ROOT`` is fixed when the session starts.
    Setting ``os.environ`` in the notebook later moves the Python API's default, not Spark's.
    """
    if options.root is not None:
        return ""
    source = (
        f"$STATE_STORE_ROOT ({os.environ['STATE_STORE_ROOT']!r})"
        if os.environ.get(ROOT_ENV)
        else f"the default {DEFAULT_ROOT!r} (no $STATE_STORE_ROOT)"
    )
    return (
        f" (no option 'root': the warehouse is {source} as this Spark session's processes "
        "saw it when the session started; a later change of the variable does not reach "
        "Spark: give option 'root' to choose the warehouse)"
    )


def load_table(options: StoreOptions) -> StoreTable:
    """The store ``options`` name, under their root.

    Raises:
        StoreNotFoundError: no such store; the message names the root and, without option
            ``root``, how it was chosen (``root_hint``).
    """
    try:
        return Catalog(options.root).load(options.store)
    except StoreNotFoundError as exc:
        message = str(exc).removeprefix(f"[{exc.code}] ")
        raise StoreNotFoundError(message + root_hint(options)) from None


def pinned_table(options: StoreOptions) -> tuple[StoreTable, int]:
    """The store as a read sees it, and the commit it reads: the latest, or the one
    ``versionAsOf`` / ``timestampAsOf`` pin, with the spec in force at that commit (a read from
    before a schema overwrite has the schema of then).

    Raises:
        StoreNotFoundError: the store does not exist.
        InvalidOptionError: the pinned commit does not exist or has expired.
    """
    table = load_table(options)
    version = table.log.version_at(options.version_as_of, options.timestamp_as_of_ms)
    return table.at_commit(version), version


def check_creation_options(options: StoreOptions, table: StoreTable) -> None:
    """Refuse creation options that contradict an existing store (matching ones are fine).

    Raises:
        InvalidOptionError: names the option, the given value and the store's.
    """
    spec = table.spec
    for name in CREATION_OPTIONS:
        given = options.creation_value(name)
        if given is None:
            continue
        if name == "kind":
            existing: object = spec.kind
        elif name == "numPartitions":
            existing = spec.num_partitions
        elif name == "partitioner":
            existing = spec.partitioner
        elif PARAM_OF_OPTION[name] in spec.params:
            existing = spec.params[PARAM_OF_OPTION[name]]
        elif given is False:
            continue  # a boolean option given as false asks for nothing the store lacks
        else:
            accepted = [OPTION_NAMES.get(p, p) for p in spec.params] or ["none"]
            raise InvalidOptionError(
                f"option {name!r} does not apply to store {spec.name!r}, a {spec.kind} store; "
                f"its options: {', '.join(map(repr, accepted))}"
            )
        if given != existing:
            raise InvalidOptionError(
                f"option {name!r} is {_shown(name, given)} but store {spec.name!r} exists with "
                f"{name} = {_shown(name, existing)}; creation options only shape a new store: "
                "drop the option, write to a new store, or replace the store's schema and "
                "contents with .mode(\"overwrite\").option(\"overwriteSchema\", \"true\")"
            )


def _shown(option: str, value: object) -> str:
    """An option's parsed value as a user would write it (``true``, ``3600000 ms``, a quoted
    kind name)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and option not in ("numPartitions",):
        return f"{value} ms"
    return repr(value)
