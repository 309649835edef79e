"""As-of (temporal) joins of a DataFrame of events against a versioned store (KIP-889's case).

An order placed at time t is priced with the exchange rate valid at t::

    from datasource import asof_join

    priced = asof_join(orders, "rates", key="currency", timestamp="placed_at", prefix="rate_")
    # orders' columns + rate_value, rate_valid_from, rate_valid_to

Each event gets what the store's ``get(key, as_of)`` answers for its key at its time (Kafka's
semantics, history retention included): the version's ``value``, ``valid_from`` and
``valid_to`` (null for a key's current version), or nulls where no version is valid (a left
join: every event is kept, in its order within its Spark partition).

How: the store's newest commit is pinned on the driver when the join is planned, with each
store partition's row count from the commit log. An Arrow UDF of the key and time columns
(``datasource.asof_lookup``; an iterator of batches, one call per task) sends only those to
Python and only the answers back; Spark keeps the events' other columns, and each event's
place, in the JVM. Each task gathers up to ``AsOfLookup.chunk_rows`` events, serializes their
keys as the store does, groups them by store partition (the store's partitioner, crc32 or
Kafka's murmur2, over the serialized keys in bulk: ``catalog.partitioner.partitions_of``) and
answers each partition's events at once from its local cache at the pinned commit
(``PartitionCache.open_at``, built or caught up from the durable files if needed): from the
partition's history held in the Python worker's memory (``VersionedKeyValueStore.history``,
read once per worker, answered by binary search), or by key-ordered RocksDB lookups that read
each key's rows once per chunk (``VersionedKeyValueStore.as_of_columns``); ``method`` picks,
by default from the partition's rows and the events asking about it. Spark objects hold only
picklable configuration (the warehouse URL, the store's spec, the commit, the row counts), so
the join runs on any cluster whose executors reach the warehouse. Spark 4.0 has no Arrow UDF
(``datasource.spark_features``): there ``mapInArrow`` carries all the events' columns to Python
and back, with the same answers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from catalog.catalog import Catalog, StoreTable
from datasource.asof_lookup import ADDED, METHODS, AsOfLookup
from datasource.spark_features import arrow_udf
from stores.errors import InvalidOptionError
from stores.types import describe

if TYPE_CHECKING:
    from pyspark.sql import DataFrame



def asof_join(
    events: DataFrame,
    store: str,
    *,
    key: str = "key",
    timestamp: str = "timestamp",
    root: str | None = None,
    prefix: str = "",
    method: str = "auto",
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
        method: how the tasks answer (``datasource.asof_lookup``): ``"history"`` holds each
            store partition's versions in memory in every Python worker and answers by
            binary search; ``"lookups"`` looks the events' keys up in the partitions' RocksDB;
            ``"auto"`` (the default) picks per partition and chunk of events, from the
            partition's rows in the commit log and the events asking about it. The answers
            are the same.

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
            (COLUMN_EXISTS); ``method`` is not one of the above (ASOF_METHOD).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType, TimestampType

    if method not in METHODS:
        raise InvalidOptionError(
            f"asof_join: method={method!r}; accepted: {', '.join(map(repr, METHODS))}",
            code="ASOF_METHOD",
        )

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
    answers = StructType(
        [
            StructField.fromJson(
                {"name": ADDED[0], "type": spec.value_type, "nullable": True, "metadata": {}}
            ),
            StructField(ADDED[1], TimestampType()),
            StructField(ADDED[2], TimestampType()),
        ]
    )
    lookup = AsOfLookup(
        table.catalog.root, spec, snapshot, key,
        # Spark exchanges TIMESTAMP columns with Arrow in the session's time zone.
        events.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC",
        method, _partition_rows(table, snapshot) if method == "auto" else (),
    )  # fmt: skip

    make_udf = arrow_udf()
    if make_udf is None:  # Spark 4.0
        return _joined_by_batches(events, lookup, (key, timestamp), added, answers)

    # An Arrow UDF of the key and time columns (an iterator of batches: one per task): only
    # they cross to Python and only the answers come back; Spark keeps the other columns,
    # and each event's place, in the JVM.
    def as_of(columns: Iterator[tuple[pa.Array, ...]]) -> Iterator[pa.Array]:
        return lookup.columns(columns)

    found = "__asof"
    while found in names:
        found += "_"
    quoted = ("`" + name.replace("`", "``") + "`" for name in (key, timestamp))
    # (pyspark's stubs type the iterator form only with functionType=, which warns.)
    udf = make_udf(as_of, answers)
    answered = events.withColumn(found, udf(*quoted))
    return answered.withColumns(
        {name: F.col(found).getField(field) for name, field in zip(added, ADDED)}
    ).drop(found)


def _joined_by_batches(
    events: DataFrame,
    lookup: AsOfLookup,
    asked: tuple[str, str],
    added: tuple[str, str, str],
    answers: StructType,
) -> DataFrame:
    """The join on a Spark without ``arrow_udf`` (4.0): ``mapInArrow`` sends every column of
    the events to Python and back, in order, with the answers appended (the same answers;
    the other columns' round trip is the cost)."""
    from pyspark.sql.types import StructField, StructType

    names = events.columns
    key_at, time_at = names.index(asked[0]), names.index(asked[1])
    schema = StructType(
        [*events.schema.fields, *(StructField(n, f.dataType) for n, f in zip(added, answers))]
    )

    def join(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held: deque[pa.RecordBatch] = deque()

        def asked_columns() -> Iterator[tuple[pa.Array, pa.Array]]:
            for batch in batches:
                held.append(batch)  # answered in order, after its chunk
                yield batch.column(key_at), batch.column(time_at)

        for answer in lookup.columns(asked_columns()):
            batch = held.popleft()
            yield pa.RecordBatch.from_arrays(
                [*batch.columns, *answer.flatten()], names=[*batch.schema.names, *added]
            )

    return events.mapInArrow(join, schema)


def _partition_rows(table: StoreTable, snapshot: int) -> tuple[int, ...]:
    """The rows a cache of each partition applies to reach ``snapshot`` (its newest snapshot's
    and the changelog files' after it), from the commit log: the statistic ``auto`` weighs."""
    rows = []
    for partition in range(table.spec.num_partitions):
        plan = table.log.restore_plan(0, snapshot, partition)
        records = [plan.snapshot] if plan.snapshot is not None else []
        records += plan.records
        rows.append(sum(f.rows for r in records for f in r.files_for(partition)))
    return tuple(rows)


__all__ = ["ADDED", "AsOfLookup", "asof_join"]
