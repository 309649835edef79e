"""Key lookups and as-of joins from SQL alone: Python table functions that one call registers.

For SQL-only users (notebooks, SQL editors): Spark 4.3 pushes no filter into a Python source::

    from datasource.sql_lookups import register_sql
    register_sql(spark)                  # or register_sql(spark, root="s3://bucket/warehouse")

.. code-block:: sql

    SELECT * FROM state_store_get('rates', 'EUR');            -- one key, the latest
    SELECT o.*, r.value, r.valid_from, r.valid_to             -- as of each order's time
    FROM orders o, LATERAL state_store_get('rates', o.currency, o.placed_at) r;
    -- the same join, batched (faster): the table's columns plus value, valid_from, valid_to
    SELECT * FROM state_store_asof_join(TABLE(orders), 'rates', 'currency', 'placed_at');

``state_store_get(store, key [, as_of])`` returns the columns a read of the store returns,
without ``key`` (``StoreTable.to_arrow`` / ``spark.read.format("state_store")``):

| kind | rows per key | columns |
|---|---|---|
| keyvalue | one (nulls: no such key) | ``value`` |
| timestamped | one | ``value, timestamp`` (+ ``headers``) |
| versioned | one: the latest version, or with ``as_of`` the one valid then | ``value, valid_from, valid_to`` |
| window | one per window of the key (none: no window) | ``window_start, window_end, value`` (+ ``timestamp``, ``headers``) |
| session | one per session of the key | ``session_start, session_end, value`` (+ ``headers``) |

Each answer is Kafka's, as the store's Interactive Queries give it (``Catalog.query`` with
``kind.key_query``): ``get(key)``, ``get(key, as_of)`` (history retention included), a window
store's ``fetch(key, 0, Long.MAX_VALUE)``, a session store's ``fetch(key)``. A null key, or a
null ``as_of``, finds nothing. ``as_of`` is a ``TIMESTAMP``, ``TIMESTAMP_NTZ`` (read as UTC),
epoch-ms ``BIGINT``/``INT``, or an ISO-8601 string with a zone.

``state_store_asof_join(TABLE(events), store, key_column, time_column [, prefix])`` is
``asof_join`` in SQL: every row of ``events`` (a left join) plus ``<prefix>value``,
``<prefix>valid_from``, ``<prefix>valid_to``, for versioned stores. Each task gathers
``chunk_rows`` events and answers them with ``as_of_columns``, one call per store partition
(``LATERAL`` cannot batch: Spark wants each input row's answer before it hands over the next).

**Which commit.** Both pin the store's newest commit when Spark *analyzes* the query (on the
driver; not at ``register_sql``, so later commits are seen): one query reads one commit, and a
``spark.sql(...)`` DataFrame keeps it however often it runs. Tasks answer from each
executor's local partition caches opened at that commit (``PartitionCache.open_at``).

**Spark 4.3's UDTF kinds.** Regular Python UDTFs (``LATERAL``, ``analyze``); not
``useArrow=True`` (an Arrow table per ``eval``: 5x slower) nor ``@arrow_udtf`` (no ``LATERAL``,
no ``analyze``, SPARK-53286: neither a store's types nor a table's columns could be returned).
Errors (codes in each ``pin``'s ``Raises``) come while Spark analyzes the query, as our line.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult

from catalog.catalog import Catalog, StoreTable
from catalog.kinds import HEADERS
from catalog.log.spec import StoreSpec
from catalog.partitioner import partition_of, partitions_of
from datasource.asof_lookup import OpenPartitions
from datasource.errors import surfaced
from stores.errors import InvalidOptionError
from stores.query import query as store_query
from stores.records import ValueAndHeaders, ValueAndTimestamp, ValueTimestampHeaders, Windowed
from stores.serdes import serde_for
from stores.time import instant_ms
from stores.types import describe, to_arrow

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The functions ``register_sql`` registers.
GET = "state_store_get"
ASOF_JOIN = "state_store_asof_join"
#: The columns an as-of join adds, after its prefix.
ADDED = ("value", "valid_from", "valid_to")

_MAX_LONG = 2**63 - 1
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_TIME_TYPES = ("timestamp", "timestamp_ntz", "long", "integer", "string")


def register_sql(spark: SparkSession, *, root: str | None = None) -> None:
    """Register ``state_store_get`` and ``state_store_asof_join`` in ``spark`` (see the
    module doc).

    Args:
        spark: the session whose SQL may call them.
        root: the warehouse URL; else ``$STATE_STORE_ROOT`` as this process sees it, else
            ``./state-warehouse``; resolved here, on the driver, and fixed for the functions.
    """
    from pyspark.sql.functions import udtf

    resolved = Catalog(root).root

    # Defined here, not at module level, so that cloudpickle ships each class by value with
    # the root its ``analyze`` closes over (a module-level class would travel by reference).
    class StateStoreGet(_Get):
        @staticmethod
        def analyze(
            store: AnalyzeArgument, key: AnalyzeArgument, as_of: AnalyzeArgument | None = None
        ) -> Pinned:
            return _Get.pin(resolved, store, key, as_of)

    class StateStoreAsofJoin(_AsofJoin):
        @staticmethod
        def analyze(
            events: AnalyzeArgument,
            store: AnalyzeArgument,
            key: AnalyzeArgument,
            timestamp: AnalyzeArgument,
            prefix: AnalyzeArgument | None = None,
        ) -> Pinned:
            return _AsofJoin.pin(resolved, events, store, key, timestamp, prefix)

    for name, handler in ((GET, StateStoreGet), (ASOF_JOIN, StateStoreAsofJoin)):
        # A classic UserDefinedTableFunction, or Spark Connect's class of the same name.
        function = udtf(handler, useArrow=False)
        spark.udtf.register(name, function)  # type: ignore[arg-type]


# -- what analysis hands the tasks ----------------------------------------------------------


@dataclass
class Pinned(AnalyzeResult):
    """``AnalyzeResult`` plus what the tasks need: the store at the commit pinned by
    ``analyze`` (picklable configuration only)."""

    root: str = ""
    spec: StoreSpec | None = None
    snapshot: int = 0
    #: ``state_store_get``: its output columns; the as-of join: the events' key and time
    #: columns' positions.
    columns: tuple[str, ...] = ()
    key_at: int = 0
    time_at: int = 0
    #: The SQL type of the as_of argument or time column (``timestamp_ntz`` reads as UTC).
    time_type: str = ""
    window_size_ms: int = 0


def _load(root: str, function: str, store: AnalyzeArgument) -> tuple[StoreTable, int]:
    """The store named by a constant string argument, at its newest commit."""
    name = store.value
    if not store.isConstantExpression or not isinstance(name, str):
        raise InvalidOptionError(
            f"{function}: the store must be a constant string (e.g. {function}('rates', ...)),"
            f" got an argument of type {store.dataType.simpleString()} that is not a constant",
            code="STORE_ARGUMENT",
        )
    table = Catalog(root).load(name)
    snapshot = table.log.latest_id()
    return table.at_commit(snapshot), snapshot


def _check_key(function: str, table: StoreTable, key: AnalyzeArgument, what: str) -> None:
    given = key.dataType.jsonValue()
    wanted = table.spec.key_type
    if given != wanted and key.dataType.typeName() != "void":
        raise InvalidOptionError(
            f"{function}: {what} is {describe(given)} but store {table.spec.name!r} has "
            f"{describe(wanted)} keys; cast it (CAST(... AS {describe(wanted).upper()})) if "
            "the values are the same keys",
            code="KEY_TYPE_MISMATCH",
        )


def _check_time(function: str, table: StoreTable, data_type: Any, what: str) -> str:
    name = str(data_type.typeName())
    if name not in _TIME_TYPES and name != "void":
        raise InvalidOptionError(
            f"{function}: {what} is {data_type.simpleString()}; accepted: timestamp, "
            "timestamp_ntz, bigint or int (epoch milliseconds) or an ISO-8601 string with a "
            "zone",
            code="TIMESTAMP_TYPE",
        )
    return name


def _not_versioned(function: str, table: StoreTable, asked: str) -> InvalidOptionError:
    return InvalidOptionError(
        f"{function}: store {table.spec.name!r} is a {table.spec.kind} store, which keeps no "
        f"history to look up by time; {asked} needs a versioned store"
        + ("" if asked.startswith("an as-of join") else f" (call {GET}(store, key) without it)"),
        code="NOT_VERSIONED",
    )


def _millis(value: Any, time_type: str) -> int | None:
    """Epoch ms of one ``as_of`` or event time as the UDTF receives it (None: no time)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None and time_type != "timestamp_ntz":
            # TIMESTAMP arrives as the worker's local wall time (timestamp(): C's mktime).
            return round(value.timestamp() * 1_000_000) // 1000
        if value.tzinfo is None:  # TIMESTAMP_NTZ as UTC's wall time
            value = value.replace(tzinfo=dt.timezone.utc)
        delta = value - _EPOCH
        return (
            delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds
        ) // 1000
    return instant_ms(value, "as_of")


def _instant(ms: int | None) -> dt.datetime | None:
    if ms is None or ms < 0:  # Kafka's unknown timestamp (-1) reads as null
        return None
    return _EPOCH + dt.timedelta(milliseconds=ms)


# -- state_store_get --------------------------------------------------------------------------


class _Get:
    """``state_store_get(store, key [, as_of])`` (see the module doc); ``register_sql``
    subclasses it with an ``analyze`` that knows the warehouse root."""

    def __init__(self, analyze_result: Pinned) -> None:
        pinned = analyze_result
        assert pinned.spec is not None
        self.spec = spec = pinned.spec
        self.pinned = pinned
        self.columns = pinned.columns
        self.time_type = pinned.time_type
        self.window_size_ms = pinned.window_size_ms
        self.key_serde = serde_for(spec.key_type, column="key")
        self.value_serde = serde_for(spec.value_type, column="value")
        kind = StoreTable(Catalog(pinned.root), spec).kind
        self.kind = kind
        self.versioned = kind.supports_as_of
        self.entries = kind.entries_per_key
        self.nulls = (None,) * len(self.columns)
        self._opened: OpenPartitions | None = None

    @staticmethod
    @surfaced
    def pin(
        root: str,
        store: AnalyzeArgument,
        key: AnalyzeArgument,
        as_of: AnalyzeArgument | None = None,
    ) -> Pinned:
        """What ``analyze`` answers: the output schema, the store's newest commit.

        Raises:
            StoreNotFoundError: no such store under the root.
            InvalidOptionError: the store is not a constant string (STORE_ARGUMENT), the key
                is not of the store's key type (KEY_TYPE_MISMATCH), an as_of on a store
                without history (NOT_VERSIONED) or of a type that is no time
                (TIMESTAMP_TYPE).
        """
        from datasource.spark_types import spark_schema

        table, snapshot = _load(root, GET, store)
        _check_key(GET, table, key, "the key")
        time_type = ""
        if as_of is not None:
            if not table.kind.supports_as_of:
                raise _not_versioned(GET, table, "an as_of")
            time_type = _check_time(GET, table, as_of.dataType, "the as_of")
        schema = spark_schema(table)
        fields = [f for f in schema.fields if f.name != "key"]
        from pyspark.sql.types import StructType

        return Pinned(
            schema=StructType(fields),
            root=root,
            spec=table.spec,
            snapshot=snapshot,
            columns=tuple(f.name for f in fields),
            time_type=time_type,
            window_size_ms=int(table.spec.params.get("window_size_ms") or 0),
        )

    @surfaced
    def eval(self, store: str, key: Any, as_of: Any = None) -> Iterator[tuple[Any, ...]]:
        if key is None:
            if not self.entries:
                yield self.nulls
            return
        if hasattr(key, "asDict"):  # a struct key arrives as a Row
            key = key.asDict(recursive=True)
        key_bytes = self.key_serde.serialize(key)
        spec = self.spec
        partition = (
            0 if spec.num_partitions == 1
            else partition_of(key_bytes, spec.num_partitions, spec.partitioner)
        )  # fmt: skip
        if self._opened is None:
            self._opened = OpenPartitions(self.pinned.root, self.spec, self.pinned.snapshot)
        if self.entries:
            yield from self._entries(partition, key_bytes)
            return
        if self.versioned:
            at = (
                _MAX_LONG
                if as_of is None and not self.time_type
                else _millis(as_of, self.time_type)
            )
            if at is None or at < 0:
                yield self.nulls
                return
            record = self._opened.ask(partition, lambda s: s.get(key_bytes, at))
            if record is None:
                yield self.nulls
                return
            yield self._row(record.value, valid_from=record.timestamp, valid_to=record.valid_to)
            return
        found = self._opened.ask(partition, lambda s: s.get(key_bytes))
        yield self.nulls if found is None else self._record(found)

    def _entries(self, partition: int, key_bytes: bytes) -> Iterator[tuple[Any, ...]]:
        question = self.kind.key_query(key_bytes)

        def run(store: Any) -> list[Any]:
            result = store_query(store, question)
            if not result.is_success():  # (a key query of the kind's own never fails)
                raise InvalidOptionError(f"{GET}: {result.get_failure_message()}")
            with contextlib.closing(result.get_result()) as entries:
                return list(entries)

        start, end = self.columns[0], self.columns[1]
        for entry in self._opened.ask(partition, run):  # type: ignore[union-attr]
            if isinstance(entry.key, Windowed):
                bounds = {start: entry.key.window.start, end: entry.key.window.end}
            else:  # a window store's entries are keyed by their start
                bounds = {start: entry.key, end: entry.key + self.window_size_ms}
            yield self._record(entry.value, **bounds)

    def _record(self, found: Any, **times: int | None) -> tuple[Any, ...]:
        if isinstance(found, ValueTimestampHeaders):
            return self._row(found.value, timestamp=found.timestamp, headers=found.headers, **times)
        if isinstance(found, ValueAndTimestamp):
            return self._row(found.value, timestamp=found.timestamp, **times)
        if isinstance(found, ValueAndHeaders):
            return self._row(found.value, headers=found.headers, **times)
        return self._row(found, **times)

    def _row(self, value: bytes | None, headers: Any = (), **times: int | None) -> tuple[Any, ...]:
        out: list[Any] = []
        for name in self.columns:
            if name == "value":
                out.append(None if value is None else self.value_serde.deserialize(value))
            elif name == HEADERS:
                out.append([(k, v) for k, v in headers])
            else:
                out.append(_instant(times.get(name)))
        return tuple(out)

    def cleanup(self) -> None:
        if self._opened is not None:
            self._opened.close()


# -- state_store_asof_join --------------------------------------------------------------------


class _AsofJoin:
    """``state_store_asof_join(TABLE(events), store, key_column, time_column [, prefix])``
    (see the module doc); ``register_sql`` subclasses it with an ``analyze`` that knows the
    warehouse root."""

    #: Events looked up together (each task's rows, in their order).
    chunk_rows = 1 << 14

    def __init__(self, analyze_result: Pinned) -> None:
        pinned = analyze_result
        assert pinned.spec is not None
        self.pinned = pinned
        self.spec = pinned.spec
        self.key_serde = serde_for(self.spec.key_type, column="key")
        self.value_serde = serde_for(self.spec.value_type, column="value")
        self.key_type = to_arrow(self.spec.key_type)
        self._rows: list[tuple[Any, ...]] = []
        self._opened: OpenPartitions | None = None

    @staticmethod
    @surfaced
    def pin(
        root: str,
        events: AnalyzeArgument,
        store: AnalyzeArgument,
        key: AnalyzeArgument,
        timestamp: AnalyzeArgument,
        prefix: AnalyzeArgument | None = None,
    ) -> Pinned:
        """What ``analyze`` answers: the events' columns plus the added ones, the store's
        newest commit, where the key and time columns are.

        Raises:
            StoreNotFoundError: no such store under the root.
            InvalidOptionError: the first argument is not a TABLE (TABLE_ARGUMENT); the store,
                column names or prefix are not constant strings (STORE_ARGUMENT); the store
                is not versioned (NOT_VERSIONED); a named column is missing (MISSING_COLUMN),
                has another type than the store's keys (KEY_TYPE_MISMATCH) or is no time
                (TIMESTAMP_TYPE); an added column's name is taken (COLUMN_EXISTS).
        """
        from pyspark.sql.types import StructField, StructType

        if not events.isTable:
            raise InvalidOptionError(
                f"{ASOF_JOIN}: the first argument must be a table, e.g. {ASOF_JOIN}(TABLE("
                "orders), 'rates', 'currency', 'placed_at')",
                code="TABLE_ARGUMENT",
            )
        table, snapshot = _load(root, ASOF_JOIN, store)
        if not table.kind.supports_as_of:
            raise _not_versioned(ASOF_JOIN, table, "an as-of join")
        names: list[str] = []
        for what, argument in (("key column", key), ("time column", timestamp), ("prefix", prefix)):
            if argument is None:
                names.append("")
                continue
            if not argument.isConstantExpression or not isinstance(argument.value, str):
                raise InvalidOptionError(
                    f"{ASOF_JOIN}: the {what} must be a constant string, e.g. {ASOF_JOIN}("
                    "TABLE(orders), 'rates', 'currency', 'placed_at')",
                    code="STORE_ARGUMENT",
                )
            names.append(argument.value)
        key_name, time_name, added_prefix = names
        schema = events.dataType
        assert isinstance(schema, StructType)
        columns = schema.names
        for what, name in (("key column", key_name), ("time column", time_name)):
            if name not in columns:
                raise InvalidOptionError(
                    f"{ASOF_JOIN}: {what} {name!r} is not a column of the table; its columns: "
                    f"{', '.join(columns)}",
                    code="MISSING_COLUMN",
                )
        key_field = schema[key_name]
        _check_key(ASOF_JOIN, table, AnalyzeArgument(key_field.dataType, None, False, False),
                   f"column {key_name!r}")  # fmt: skip
        time_type = _check_time(
            ASOF_JOIN, table, schema[time_name].dataType, f"column {time_name!r}"
        )
        added = [added_prefix + name for name in ADDED]
        taken = [name for name in added if name in columns]
        if taken:
            raise InvalidOptionError(
                f"{ASOF_JOIN}: the table already has column(s) {', '.join(map(repr, taken))}, "
                "which the join adds; give a prefix as fifth argument (e.g. 'rate_')",
                code="COLUMN_EXISTS",
            )
        types = (table.spec.value_type, "timestamp", "timestamp")
        out = StructType(
            [
                *schema.fields,
                *(
                    StructField.fromJson({"name": n, "type": t, "nullable": True, "metadata": {}})
                    for n, t in zip(added, types)
                ),
            ]
        )
        return Pinned(
            schema=out,
            root=root,
            spec=table.spec,
            snapshot=snapshot,
            columns=tuple(columns),
            key_at=columns.index(key_name),
            time_at=columns.index(time_name),
            time_type=time_type,
        )

    @surfaced
    def eval(self, row: Any, *arguments: Any) -> Iterator[tuple[Any, ...]]:
        self._rows.append(tuple(row))
        if len(self._rows) >= self.chunk_rows:
            yield from self._flush()

    @surfaced
    def terminate(self) -> Iterator[tuple[Any, ...]]:
        yield from self._flush()

    def _flush(self) -> Iterator[tuple[Any, ...]]:
        """The gathered rows with their versions: each store partition's events in one
        ``as_of_columns`` call (key-ordered lookups that read a key's rows once)."""
        rows, self._rows = self._rows, []
        if not rows:
            return
        pinned, spec = self.pinned, self.spec
        keys = [row[pinned.key_at] for row in rows]
        if keys and hasattr(next((k for k in keys if k is not None), None), "asDict"):
            keys = [None if k is None else k.asDict(recursive=True) for k in keys]
        key_bytes = self.key_serde.encode(pa.array(keys, self.key_type))
        stamps = np.fromiter(
            (-1 if (m := _millis(row[pinned.time_at], pinned.time_type)) is None else m
             for row in rows),
            dtype=np.int64, count=len(rows),
        )  # fmt: skip
        wanted = stamps >= 0
        if key_bytes.null_count:
            wanted &= key_bytes.is_valid().to_numpy(zero_copy_only=False)
        picked = np.flatnonzero(wanted)
        asked_keys = key_bytes.take(pa.array(picked))
        asked_at = pa.array(stamps[picked])
        owners = partitions_of(asked_keys, spec.num_partitions, spec.partitioner)
        order = np.argsort(owners, kind="stable")
        bounds = np.searchsorted(owners[order], np.arange(spec.num_partitions + 1)).tolist()
        if self._opened is None:
            self._opened = OpenPartitions(pinned.root, spec, pinned.snapshot)
        answers = []
        for partition in range(spec.num_partitions):
            chosen = pa.array(order[bounds[partition] : bounds[partition + 1]])
            if len(chosen):
                some_keys, some_at = asked_keys.take(chosen), asked_at.take(chosen)
                answers.append(self._opened.lookup(partition, some_keys, some_at))
        # Answer k belongs to row picked[order[k]]; the other rows get nulls.
        where = np.full(len(rows), -1, dtype=np.int64)
        where[picked[order]] = np.arange(len(picked))
        pick = pa.array(where, mask=where < 0)
        if answers:
            found = pa.Table.from_batches(answers).combine_chunks()
            values = self.value_serde.decode(found.column(0).chunk(0).take(pick)).to_pylist()
            froms = found.column(1).chunk(0).take(pick).to_pylist()
            tos = found.column(2).chunk(0).take(pick).to_pylist()
        else:
            values = froms = tos = [None] * len(rows)
        for row, value, start, end in zip(rows, values, froms, tos):
            yield (*row, value, _instant(start), _instant(end))

    def cleanup(self) -> None:
        if self._opened is not None:
            self._opened.close()


__all__ = ["ADDED", "ASOF_JOIN", "GET", "Pinned", "register_sql"]
