"""The pushdown path a Spark with per-scan pushdown (5.0: SPARK-58551) takes, run on this Spark.

``PerScanPlanner`` stands in for the JVM side of such a release: for every scan it sends a fresh
copy of the data source to Spark's own pushdown worker (``pyspark.sql.worker.
data_source_pushdown_filters._main``, the real module, over in-memory pipes), reads back which
filters the reader took, its partitions and its read function, runs the read function on each
partition as an executor would, and applies the filters the reader left, as Spark does. Spark
5.0 is recognised by ``DataSourceReader.pushLimit``; the test gives this Spark that attribute,
so the detection, ``DefaultSource.reader``'s choice of reader, ``pushFilters``, the pruned
partitions and the pickled reader all run as they will there.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import operator
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.serializers import read_int, write_int
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    Not,
)
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType
from pyspark.sql.worker import data_source_pushdown_filters as worker

from catalog import partition_of
from datasource import pushdown
from datasource.options import StoreOptions
from datasource.source import DefaultSource
from datasource.writer import StateStoreWriter

UTC = dt.timezone.utc
KEYS = [f"k{i}" for i in range(40)]
WRITE_SCHEMA = StructType(
    [
        StructField("key", StringType()),
        StructField("value", DoubleType()),
        StructField("timestamp", LongType()),
    ]
)


class _Value:
    """What the worker's ``deserializeVariant`` returns: a value with ``toPython``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def toPython(self) -> Any:  # (Spark's name)
        return self.value


class PerScanPlanner:
    """The JVM side of a per-scan pushdown (see module doc); one ``scan`` per DataFrame scan."""

    def __init__(self, options: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
        self.options = options
        self.values: list[Any] = []
        # The JVM sends filter values as variants; the fake sends an index into ``values``.
        monkeypatch.setattr(worker, "deserializeVariant", lambda ref: _Value(self.values[ref]))

    def _filter_json(self, f: Any) -> dict[str, Any]:
        negated = isinstance(f, Not)
        inner = f.child if negated else f
        entry: dict[str, Any] = {"name": type(inner).__name__,
                                 "columnPath": list(inner.attribute), "isNegated": negated}  # fmt: skip
        if hasattr(inner, "value"):
            self.values.append(inner.value)
            entry["value"] = len(self.values) - 1
        return entry

    def scan(self, filters: list[Filter]) -> tuple[list[dict[str, Any]], list[int], list[Any]]:
        """The rows a scan with ``filters`` returns; the indices of the filters the reader
        took; the partitions it planned."""
        source = DefaultSource(dict(self.options))  # a fresh copy per scan, as 5.0 sends it
        schema = source.schema()
        out = io.BytesIO()
        worker.pickleSer._write_with_length(source, out)
        for text in (schema.json(), json.dumps([self._filter_json(f) for f in filters])):
            data = text.encode()
            write_int(len(data), out)
            out.write(data)
        write_int(1 << 16, out)  # the max Arrow batch size
        out.write(b"\x01")  # binary columns as bytes
        answer = io.BytesIO()
        worker._main(io.BytesIO(out.getvalue()), answer)
        answer.seek(0)
        read_func, _ = worker.pickleSer._read_with_length(answer)
        partitions = [worker.pickleSer._read_with_length(answer)
                      for _ in range(read_int(answer))]  # fmt: skip
        taken = [read_int(answer) for _ in range(read_int(answer))]
        rows: list[dict[str, Any]] = []
        for partition in partitions:  # an executor: the partition arrives pickled, in Arrow
            cell = pa.record_batch([pa.array([worker.pickleSer.dumps(partition)], pa.binary())],
                                   names=["partition"])  # fmt: skip
            for batch in read_func(iter([cell])):
                rows.extend(batch.to_pylist())
        left = [f for i, f in enumerate(filters) if i not in taken]
        return [r for r in rows if all(_holds(f, r) for f in left)], taken, partitions


_OPS: dict[type, Callable[[Any, Any], bool]] = {
    EqualTo: operator.eq, GreaterThan: operator.gt, GreaterThanOrEqual: operator.ge,
    LessThan: operator.lt,
}  # fmt: skip


def _holds(f: Any, row: dict[str, Any]) -> bool:
    """Spark's evaluation of a filter it kept, on one row (null compares to nothing)."""
    if isinstance(f, Not):
        return not _holds(f.child, row)
    value = row[f.attribute[0]]
    if isinstance(f, IsNotNull):
        return value is not None
    given = f.value
    if isinstance(f, In):
        return value in given
    return value is not None and _OPS[type(f)](value, given)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def rates(warehouse: str) -> dict[str, str]:
    """A versioned store of 40 keys over 4 partitions; k<i> has versions at i*10 and i*10+5
    (a read gives the latest: value i + 0.5 from i*10+5)."""
    options = {"store": "rates", "root": warehouse}
    writer = StateStoreWriter.plan(
        StoreOptions.parse({**options, "kind": "versioned", "historyRetention": "1 day",
                            "numPartitions": "4"}), WRITE_SCHEMA, overwrite=False,
    )  # fmt: skip
    rows = [(k, float(i), i * 10) for i, k in enumerate(KEYS)]
    rows += [(k, i + 0.5, i * 10 + 5) for i, k in enumerate(KEYS)]
    batch = pa.RecordBatch.from_pylist(
        [{"key": k, "value": v, "timestamp": t} for k, v, t in rows],
        schema=pa.schema(
            [("key", pa.string()), ("value", pa.float64()), ("timestamp", pa.int64())]
        ),
    )
    writer.commit([writer.write(iter([batch]))])
    return options


def _ms(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, UTC)


def _spark_5(monkeypatch: pytest.MonkeyPatch) -> None:
    """This Spark, with the API that marks per-scan pushdown."""
    monkeypatch.setattr(DataSourceReader, "pushLimit", lambda self, limit: False, raising=False)


def test_each_scan_pushes_its_own_filters_on_a_per_scan_spark(
    rates: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _spark_5(monkeypatch)
    assert pushdown.spark_scopes_pushdown()
    planner = PerScanPlanner(rates, monkeypatch)
    rows, taken, partitions = planner.scan([EqualTo(("key",), "k7")])
    assert taken == [0]  # the store applied it: Spark does not
    assert [p.value for p in partitions] == [partition_of(b"k7", 4)]
    assert [(r["key"], r["value"], r["valid_from"]) for r in rows] == [("k7", 7.5, _ms(75))]
    # The next scan of the same store, with no filter, reads every row (4.3 would reuse the
    # first scan's pruned reader here).
    rows, taken, partitions = planner.scan([])
    assert taken == [] and len(partitions) == 4
    assert sorted(r["key"] for r in rows) == sorted(KEYS)  # each key's latest version


def test_pushed_and_left_filters_give_what_spark_alone_gives(
    rates: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _spark_5(monkeypatch)
    planner = PerScanPlanner(rates, monkeypatch)
    everything, _, _ = planner.scan([])
    cases: list[tuple[list[Filter], list[int]]] = [
        ([In(("key",), ("k1", "k2", "k30"))], [0]),
        ([GreaterThanOrEqual(("key",), "k35"), LessThan(("valid_from",), _ms(380))], [0, 1]),
        ([IsNotNull(("valid_from",)), LessThan(("valid_from",), _ms(100))], [0, 1]),
        ([GreaterThan(("value",), 20.0), In(("key",), ("k21", "k3"))], [1]),  # values stay
        ([Not(EqualTo(("key",), "k1"))], []),
    ]
    for filters, pushed in cases:
        rows, taken, _ = planner.scan(filters)
        assert taken == pushed, filters
        expected = [r for r in everything if all(_holds(f, r) for f in filters)]
        assert sorted(map(_row_key, rows)) == sorted(map(_row_key, expected)), filters
        assert expected, filters  # each case selects something


def test_this_spark_without_per_scan_pushdown_pushes_nothing(
    rates: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not pushdown.spark_scopes_pushdown()  # 4.3: no pushLimit
    rows, taken, partitions = PerScanPlanner(rates, monkeypatch).scan([EqualTo(("key",), "k7")])
    assert taken == [] and len(partitions) == 4  # Spark filters; every partition read
    assert [(r["key"], r["value"]) for r in rows] == [("k7", 7.5)]


def _row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["key"], row["valid_from"])
