"""Filter pushdown: which of Spark's filters a store read takes over, and how it applies them.

| filter (Spark)                                 | on                      | effect                   |
|------------------------------------------------|-------------------------|--------------------------|
| ``EqualTo``, ``EqualNullSafe`` (non-null), ``In``  | ``key``                   | partitions pruned, rows  |
| ``GreaterThan[OrEqual]``, ``LessThan[OrEqual]``    | ``key`` (primitive types) | rows                     |
| comparisons, ``EqualTo``, ``In``, ``IsNull``, ``IsNotNull`` | time columns   | rows                     |

Equality on the key prunes the read to the partitions that can hold the keys (the store's
partitioner, crc32 or Kafka's murmur2, over the serialized key: ``catalog.partitioner``); every
taken filter is then applied to each batch with Arrow compute, exactly as SQL would (a
comparison with null selects nothing), so Spark does not evaluate it again and ``EXPLAIN``
lists it under ``PushedFilters``.
Filters on values, on nested fields and ``Not``/string filters stay with Spark.

Spark calls ``pushFilters`` only with ``spark.sql.python.filterPushdown.enabled=true``, and with
the conf off its planner refuses a reader whose class overrides ``pushFilters``
(``DATA_SOURCE_PUSHDOWN_DISABLED``). ``reader()`` is not told which planner calls it, so
``DefaultSource.reader`` looks at its caller (``called_by_pushdown_planner``): the reader that
can push down is handed only to the worker that will call ``pushFilters``.

Spark 4.3 and older keep the reader planned by a pushdown on the data source object that every
scan of one DataFrame shares: after ``df.where("key = 'a'").collect()``, ``df.count()`` reuses
the pruned reader and counts one row. Pushdown is therefore used only where Spark keeps that
state per scan (``spark_scopes_pushdown``: the releases with ``DataSourceReader.pushLimit``,
which came with the fix: SPARK-58551, apache/spark#57752, after 4.3: 4.4.0 in master's docs);
elsewhere Spark applies every filter itself and results stay right.
``tests/datasource/test_pushdown_planner.py`` runs Spark's own pushdown worker as such a release
would, per scan, so this path is exercised on 4.3 too.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from catalog.partitioner import DEFAULT_PARTITIONER, partitions_of
from datasource.spark_features import PUSHDOWN_PER_SCAN
from stores.serdes import serde_for
from stores.types import TypeJson

if TYPE_CHECKING:
    # Spark 4.1's (SPARK-51271): imported where filters arrive, so that 4.0, which has none,
    # loads this module.
    from pyspark.sql.datasource import Filter

_PUSHDOWN_WORKER = "data_source_pushdown_filters.py"


def spark_scopes_pushdown() -> bool:
    """Whether this Spark keeps a pushdown's planned reader per scan (see module doc)."""
    return PUSHDOWN_PER_SCAN.available


#: Spark's comparison filters (by class name: the classes exist from Spark 4.1 on).
_COMPARISONS = {
    "GreaterThan": "greater",
    "GreaterThanOrEqual": "greater_equal",
    "LessThan": "less",
    "LessThanOrEqual": "less_equal",
}

# Key types whose equality is byte equality of the serialized key (so the partitioner can
# prune) and whose order Arrow and Spark agree on. Not floating point: 0.0 = -0.0 in SQL, yet
# they serialize (and so partition) differently. Not structs or arrays.
_KEY_TYPES = ("string", "binary", "long", "integer", "short", "byte", "boolean")


def called_by_pushdown_planner(depth: int = 2) -> bool:
    """Whether the function ``depth`` frames up was called by Spark's pushdown worker."""
    frame = sys._getframe(depth)
    return frame.f_code.co_filename.endswith(_PUSHDOWN_WORKER)


def pushdown_wanted(depth: int = 3) -> bool:
    """Whether ``DefaultSource.reader`` should return the reader that takes filters."""
    return spark_scopes_pushdown() and called_by_pushdown_planner(depth)


@dataclass(frozen=True)
class Predicate:
    """One taken filter: ``column op values`` (``in``: any of ``values``)."""

    column: str
    op: str  # equal, in, greater, greater_equal, less, less_equal, is_null, is_valid
    values: tuple[Any, ...] = ()

    def mask(self, batch: pa.RecordBatch) -> pa.Array:
        column = batch.column(self.column)
        if self.op == "is_null":
            return pc.is_null(column)
        if self.op == "is_valid":
            return pc.is_valid(column)
        if self.op == "in":
            return pc.is_in(column, value_set=pa.array(self.values, column.type))
        return getattr(pc, self.op)(column, pa.scalar(self.values[0], column.type))


@dataclass(frozen=True)
class Pushdown:
    """What a read takes over from Spark: row predicates, and the keys equality selects."""

    predicates: tuple[Predicate, ...] = ()
    keys: tuple[Any, ...] | None = None  # None: any key

    def partitions(
        self, key_type: TypeJson, num_partitions: int, partitioner: str = DEFAULT_PARTITIONER
    ) -> list[int]:
        """The store partitions that can hold a selected row, ascending (``partitioner``:
        the store's, ``StoreSpec.partitioner``)."""
        if self.keys is None:
            return list(range(num_partitions))
        typed = pa.array(self.keys, _arrow_type(key_type))
        serialized = serde_for(key_type, column="key").encode(typed)
        return sorted(set(partitions_of(serialized, num_partitions, partitioner).tolist()))

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of ``batch`` every predicate selects."""
        if not self.predicates or not batch.num_rows:
            return batch
        mask = self.predicates[0].mask(batch)
        for predicate in self.predicates[1:]:
            mask = pc.and_kleene(mask, predicate.mask(batch))
        return batch.filter(mask)


def take_filters(
    filters: Sequence[Filter], schema: pa.Schema, key_type: TypeJson
) -> tuple[Pushdown, list[Filter]]:
    """Split Spark's filters into those the read takes over and those it leaves to Spark."""
    predicates: list[Predicate] = []
    keys: set[Any] | None = None
    left: list[Filter] = []
    for f in filters:
        predicate = _predicate(f, schema, key_type)
        if predicate is None:
            left.append(f)
            continue
        predicates.append(predicate)
        if predicate.column == "key" and predicate.op in ("equal", "in"):
            selected = set(predicate.values)
            keys = selected if keys is None else keys & selected
    if keys is not None:
        # Order the keys for a stable plan; values of one column's type compare with each other.
        ordered: tuple[Any, ...] = tuple(sorted(keys, key=_sort_key))
    return Pushdown(tuple(predicates), ordered if keys is not None else None), left


def _sort_key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


def _predicate(f: Filter, schema: pa.Schema, key_type: TypeJson) -> Predicate | None:
    from pyspark.sql.datasource import EqualNullSafe, EqualTo, In, IsNotNull, IsNull

    attribute: tuple[str, ...] = getattr(f, "attribute", ())  # Not(...) has a child instead
    if len(attribute) != 1 or attribute[0] not in schema.names:
        return None
    column = attribute[0]
    arrow_type = schema.field(column).type
    is_key = column == "key" and key_type in _KEY_TYPES
    is_time = pa.types.is_timestamp(arrow_type)
    if not (is_key or is_time):
        return None
    if isinstance(f, IsNull):
        return Predicate(column, "is_null")
    if isinstance(f, IsNotNull):
        return Predicate(column, "is_valid")
    if isinstance(f, In):
        values = tuple(f.value)
        if any(v is None for v in values) or not _convertible(values, arrow_type):
            return None
        return Predicate(column, "in", values)
    value = getattr(f, "value", None)
    if isinstance(f, (EqualTo, EqualNullSafe)):
        if value is None or not _convertible((value,), arrow_type):
            return None
        return Predicate(column, "in" if is_key else "equal", (value,))
    op = _COMPARISONS.get(type(f).__name__)
    if op is None or value is None or not _convertible((value,), arrow_type):
        return None
    return Predicate(column, op, (value,))


def _convertible(values: tuple[Any, ...], arrow_type: pa.DataType) -> bool:
    """Whether Arrow takes ``values`` as ``arrow_type`` without a guess (no naive times)."""
    if pa.types.is_timestamp(arrow_type) and any(
        not isinstance(v, dt.datetime) or v.tzinfo is None for v in values
    ):
        return False
    try:
        pa.array(values, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return False
    return True


def _arrow_type(key_type: TypeJson) -> pa.DataType:
    from stores.types import to_arrow

    return to_arrow(key_type)
