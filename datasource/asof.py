"""As-of (temporal) joins of a DataFrame of events against a versioned store (KIP-889's case).

An order placed at time t is priced with the exchange rate valid at t::

    from datasource import asof_join

    priced = asof_join(orders, "rates", key="currency", timestamp="placed_at", prefix="rate_")
    # orders' columns + rate_value, rate_valid_from, rate_valid_to

Each event gets what the store's ``get(key, as_of)`` answers for its key at its time (Kafka's
semantics, history retention included): the version's ``value``, ``valid_from`` and
``valid_to`` (null for a key's current version), or nulls where no version is valid (a left
join: every event is kept, in its order within its Spark partition).

How: the store's newest commit is pinned on the driver when the join is planned. Each Spark
task (``mapInArrow``) gathers up to ``AsOfLookup.chunk_rows`` events, serializes their keys as
the store does, groups them by store partition (the store's partitioner: Spark SQL computes
crc32's where it can; Kafka's murmur2, which Spark SQL cannot compute over bytes, is computed by
the task over the serialized keys in bulk, ``catalog.partitioner.partitions_of``), opens each partition's local cache read-only at the pinned commit
(``PartitionCache.open_at``, built or caught up from the durable files if needed) and answers
the partition's events in one call (``VersionedKeyValueStore.as_of_columns``): key-ordered
lookups that read each key's rows once however many events the key has. Spark objects hold
only picklable configuration (the warehouse URL, the store's spec, the commit), so the join
runs on any cluster whose executors reach the warehouse.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.caches.partitions import PartitionCache
from catalog.catalog import Catalog, StoreTable
from catalog.log.spec import StoreSpec
from catalog.partitioner import partitions_of, spark_sql_expression
from stores.errors import InvalidOptionError
from stores.serdes import serde_for
from stores.types import describe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The columns a join adds, after its ``prefix``.
ADDED = ("value", "valid_from", "valid_to")
#: What ``VersionedKeyValueStore.as_of_columns`` answers.
_ANSWERS = pa.schema(
    [("value", pa.binary()), ("valid_from", pa.int64()), ("valid_to", pa.int64())]
)


def asof_join(
    events: DataFrame,
    store: str,
    *,
    key: str = "key",
    timestamp: str = "timestamp",
    root: str | None = None,
    prefix: str = "",
) -> DataFrame:
    """Join each event with the version of its key that the versioned ``store`` held at its
    time: ``events`` plus ``<prefix>value``, ``<prefix>valid_from``, ``<prefix>valid_to``.

    Args:
        events: the events; every column is kept.
        store: the name of a versioned store.
        key: the events' column holding the store key (of the store's key type).
        timestamp: the events' column holding the event time: ``TIMESTAMP`` (or
            ``TIMESTAMP_NTZ``, read as UTC), or ``BIGINT`` epoch milliseconds.
        root: the warehouse URL; else ``$STATE_STORE_ROOT`` as this process sees it, else
            ``./state-warehouse`` (resolved here, on the driver, and handed to the tasks).
        prefix: put before the added column names (e.g. ``"rate_"``).

    Returns:
        A DataFrame of the events and, per event, the value valid at its time (the store's
        value type), when that version started and ended (``TIMESTAMP``; ``valid_to`` null
        for a current version); nulls where no version is valid, or the event's key or time
        is null. Reads the store as of its newest commit when this is called.

    Raises:
        StoreNotFoundError: no store ``store`` under the root (names the root and the stores
            there).
        InvalidOptionError: the store is not versioned (NOT_VERSIONED); ``key`` or
            ``timestamp`` is not a column of ``events`` (MISSING_COLUMN); the key column's type
            is not the store's key type (KEY_TYPE_MISMATCH); the time column is not a
            timestamp or epoch-ms bigint (TIMESTAMP_TYPE); an added column's name is taken
            (COLUMN_EXISTS).
    """
    from pyspark.sql.types import StructField, StructType

    table = Catalog(root).load(store)
    spec = table.spec
    if not table.kind.supports_as_of:
        raise InvalidOptionError(
            f"asof_join needs a versioned store; store {store!r} is a {spec.kind} store, "
            "which keeps no history to look up by time",
            code="NOT_VERSIONED",
        )
    snapshot = table.log.latest_id()
    table = table.at_commit(snapshot)
    spec = table.spec
    names = events.columns
    for option, column in (("key", key), ("timestamp", timestamp)):
        if column not in names:
            raise InvalidOptionError(
                f"asof_join: {option}={column!r} is not a column of the events; their "
                f"columns: {', '.join(names)}",
                code="MISSING_COLUMN",
            )
    schema = events.schema
    key_type = schema[key].dataType.jsonValue()
    if key_type != spec.key_type:
        raise InvalidOptionError(
            f"asof_join: column {key!r} is {describe(key_type)} but store {store!r} has "
            f"{describe(spec.key_type)} keys; cast it (F.col({key!r}).cast("
            f"{describe(spec.key_type)!r})) if the values are the same keys",
            code="KEY_TYPE_MISMATCH",
        )
    time_type = schema[timestamp].dataType.typeName()
    if time_type not in ("timestamp", "timestamp_ntz", "long"):
        raise InvalidOptionError(
            f"asof_join: column {timestamp!r} is {schema[timestamp].dataType.simpleString()}; "
            "accepted: timestamp, timestamp_ntz or bigint (epoch milliseconds)",
            code="TIMESTAMP_TYPE",
        )
    added = (prefix + ADDED[0], prefix + ADDED[1], prefix + ADDED[2])
    taken = [name for name in added if name in names]
    if taken:
        raise InvalidOptionError(
            f"asof_join: the events already have column(s) {', '.join(map(repr, taken))}, "
            "which the join adds; give a prefix (e.g. prefix='store_')",
            code="COLUMN_EXISTS",
        )
    value_field = StructField.fromJson(
        {"name": added[0], "type": spec.value_type, "nullable": True, "metadata": {}}
    )
    out = StructType(
        [
            *schema.fields,
            value_field,
            StructField.fromJson(
                {"name": added[1], "type": "timestamp", "nullable": True, "metadata": {}}
            ),
            StructField.fromJson(
                {"name": added[2], "type": "timestamp", "nullable": True, "metadata": {}}
            ),
        ]
    )
    # Spark exchanges TIMESTAMP columns with Arrow in the session's time zone.
    zone = events.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    # The JVM computes each event's store partition where Spark SQL can (the partitioner's
    # expression): one crc32 per event fewer in Python. The column is dropped again.
    partition_column = None
    try:
        quoted = "`" + key.replace("`", "``") + "`"
        expression = spark_sql_expression(
            spec.key_type, spec.num_partitions, quoted, spec.partitioner
        )
    except InvalidOptionError:
        # Keys Spark SQL cannot serialize, or a partitioner it cannot compute (Kafka's
        # murmur2): the tasks compute it, over the keys they serialize anyway.
        expression = None
    if expression is not None:
        from pyspark.sql import functions as F

        partition_column = "__store_partition"
        while partition_column in names:
            partition_column += "_"
        events = events.withColumn(partition_column, F.expr(expression).cast("int"))
    lookup = AsOfLookup(
        table.catalog.root, spec, snapshot, key, timestamp, added, zone, partition_column
    )
    return events.mapInArrow(lookup, out)


@dataclass(frozen=True)
class AsOfLookup:
    """The per-task work of ``asof_join`` (picklable: configuration only).

    Called by Spark with one task's event batches; yields each batch with the added columns.
    """

    root: str
    spec: StoreSpec
    snapshot: int
    key: str
    timestamp: str
    added: tuple[str, str, str]
    zone: str = "UTC"
    #: The column holding each event's store partition (computed by Spark), if any: read,
    #: then left out of the output.
    partition_column: str | None = None

    #: Events looked up together: the input batches are kept until their chunk is answered,
    #: so that a key's rows are read once per chunk however many of its events it holds.
    chunk_rows: int = 1 << 18

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with _Partitions(self.root, self.spec, self.snapshot) as partitions:
            pending: list[pa.RecordBatch] = []
            rows = 0
            for batch in batches:
                pending.append(batch)
                rows += batch.num_rows
                if rows >= self.chunk_rows:
                    yield from self.join(pending, partitions)
                    pending, rows = [], 0
            if pending:
                yield from self.join(pending, partitions)

    def join(
        self, batches: list[pa.RecordBatch], partitions: _Partitions
    ) -> Iterator[pa.RecordBatch]:
        """``batches`` with the value, valid_from and valid_to of each event's key at its
        time, looked up together: by store partition, each partition's events in one call."""
        spec = self.spec
        keys_column = pa.chunked_array([b.column(self.key) for b in batches]).combine_chunks()
        times = pa.chunked_array([b.column(self.timestamp) for b in batches]).combine_chunks()
        key_bytes = serde_for(spec.key_type, column=self.key).encode(keys_column)
        as_of, wanted = _millis(times)
        if key_bytes.null_count:
            wanted &= key_bytes.is_valid().to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(wanted)  # the events that can have a version
        keys = key_bytes.take(pa.array(rows))
        stamps = pa.array(as_of[rows])
        if self.partition_column is None:
            owners = partitions_of(keys, spec.num_partitions, spec.partitioner)
        else:
            computed = pa.chunked_array([b.column(self.partition_column) for b in batches])
            owners = computed.to_numpy()[rows]
        order = np.argsort(owners, kind="stable")
        bounds = np.searchsorted(owners[order], np.arange(spec.num_partitions + 1)).tolist()
        answers = []
        for partition in range(spec.num_partitions):
            picked = pa.array(order[bounds[partition] : bounds[partition + 1]])
            if len(picked):
                answers.append(
                    partitions.lookup(partition, keys.take(picked), stamps.take(picked))
                )
        # Answer k belongs to event rows[order[k]]; the other events get nulls.
        where = np.full(len(as_of), -1, dtype=np.int64)
        where[rows[order]] = np.arange(len(rows))
        pick = pa.array(where, mask=where < 0)
        found = pa.Table.from_batches(answers, schema=_ANSWERS).combine_chunks()
        value_column = serde_for(spec.value_type, column="value").decode(
            found.column("value").chunk(0).take(pick) if found.num_rows
            else pa.nulls(len(as_of), pa.binary())
        )  # fmt: skip
        stamp_type = pa.timestamp("us", tz=self.zone)
        from_column, to_column = (
            pc.multiply(found.column(name).chunk(0).take(pick), 1_000).cast(stamp_type)
            if found.num_rows else pa.nulls(len(as_of), stamp_type)
            for name in ("valid_from", "valid_to")
        )  # fmt: skip
        offset = 0
        for batch in batches:
            size = batch.num_rows
            if self.partition_column is not None:
                batch = batch.drop_columns([self.partition_column])
            names = [*batch.schema.names, *self.added]
            yield pa.RecordBatch.from_arrays(
                [
                    *batch.columns,
                    value_column.slice(offset, size),
                    from_column.slice(offset, size),
                    to_column.slice(offset, size),
                ],
                names=names,
            )
            offset += size


class _Partitions:
    """The store partitions one task has opened, each at the pinned commit, until it ends."""

    def __init__(self, root: str, spec: StoreSpec, snapshot: int) -> None:
        self.catalog = Catalog(root)
        self.spec = spec
        self.snapshot = snapshot
        self._open: dict[int, tuple[Any, contextlib.ExitStack]] = {}

    def __enter__(self) -> _Partitions:
        return self

    def __exit__(self, *exc: object) -> None:
        for _, stack in self._open.values():
            stack.close()
        self._open.clear()

    def _cache(self, partition: int) -> PartitionCache:
        return StoreTable(self.catalog, self.spec).partition_cache(partition)

    def _store(self, partition: int) -> Any:
        if partition not in self._open:
            stack = contextlib.ExitStack()
            store, _ = stack.enter_context(self._cache(partition).open_at(self.snapshot))
            self._open[partition] = (store, stack)
        return self._open[partition][0]

    def lookup(self, partition: int, keys: pa.Array, as_ofs: pa.Array) -> pa.RecordBatch:
        """``as_of_columns`` on a partition; a cache that RocksDB reports damaged is closed,
        discarded, rebuilt from the log and asked again, once (``PartitionCache.repairing``)."""

        def release() -> None:
            opened = self._open.pop(partition, None)
            if opened is not None:
                opened[1].close()  # our shared lock first: discarding takes it exclusively

        found: pa.RecordBatch = self._cache(partition).repairing(
            lambda: self._store(partition).as_of_columns(keys, as_ofs), release=release
        )
        return found


def _millis(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Epoch milliseconds (floored) of a timestamp or epoch-ms column, and which rows can have
    a version: not null and not before 1970 (Kafka's timestamps are >= 0)."""
    if pa.types.is_timestamp(column.type):
        unit = column.type.unit
        raw = column.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
        factor = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}[unit]
        millis = raw * 1_000 if factor is None else np.floor_divide(raw, factor)
    else:
        millis = column.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
    wanted = millis >= 0
    if column.null_count:
        wanted &= column.is_valid().to_numpy(zero_copy_only=False)
    return millis, wanted


__all__ = ["ADDED", "AsOfLookup", "asof_join"]
