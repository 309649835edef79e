"""Filter pushdown, called as Spark's planner would: pruned partitions, exact row selection,
and filters left to Spark where the store cannot take them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    Not,
    StringStartsWith,
)
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from catalog import Catalog, partition_of
from datasource import pushdown
from datasource.options import StoreOptions
from datasource.reader import PushdownStateStoreReader, StateStoreReader
from datasource.source import DefaultSource
from datasource.writer import StateStoreWriter

UTC = dt.timezone.utc
SCHEMA = StructType(
    [StructField("key", StringType()), StructField("value", DoubleType()), StructField("timestamp", LongType())]
)
KEYS = [f"k{i}" for i in range(40)]


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def rates(warehouse: str) -> str:
    """A versioned store of 40 keys over 4 partitions; k<i> has versions at i*10 and i*10+5."""
    options = StoreOptions.parse({"store": "rates", "root": warehouse, "kind": "versioned",
                                  "historyRetention": "1 day", "numPartitions": "4"})  # fmt: skip
    writer = StateStoreWriter.plan(options, SCHEMA, overwrite=False)
    rows = [(k, float(i), i * 10) for i, k in enumerate(KEYS)] + [
        (k, float(i) + 0.5, i * 10 + 5) for i, k in enumerate(KEYS)
    ]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows]), pa.array([r[2] for r in rows])],
        names=["key", "value", "timestamp"],
    )
    writer.commit([writer.write(iter([batch]))])
    return warehouse


@pytest.fixture
def kafka_rates(warehouse: str) -> str:
    """The store of ``rates``, created with Kafka's partitioner (option ``partitioner``)."""
    options = StoreOptions.parse({"store": "rates", "root": warehouse, "kind": "versioned",
                                  "historyRetention": "1 day", "numPartitions": "4",
                                  "partitioner": "kafka"})  # fmt: skip
    writer = StateStoreWriter.plan(options, SCHEMA, overwrite=False)
    rows = [(k, float(i), i * 10) for i, k in enumerate(KEYS)]
    batch = pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows]), pa.array([r[2] for r in rows])],
        names=["key", "value", "timestamp"],
    )
    writer.commit([writer.write(iter([batch]))])
    return warehouse


def _plan(root: str, filters: list) -> tuple[PushdownStateStoreReader, list]:  # type: ignore[type-arg]
    reader = PushdownStateStoreReader.plan(StoreOptions.parse({"store": "rates", "root": root}))
    left = list(reader.pushFilters(filters))
    return reader, left


def _rows(reader: StateStoreReader) -> list[tuple[object, ...]]:
    rows = [tuple(r.values()) for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    return sorted(rows)


def _ms(millis: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(millis / 1000, UTC)


def test_key_equality_prunes_partitions_and_selects_rows(rates: str) -> None:
    reader, left = _plan(rates, [IsNotNull(("key",)), EqualTo(("key",), "k7")])
    assert left == []
    assert [p.value for p in reader.partitions()] == [partition_of(b"k7", 4)]
    assert _rows(reader) == [("k7", 7.5, _ms(75), None)]


def test_in_and_equality_intersect(rates: str) -> None:
    reader, left = _plan(rates, [In(("key",), ("k1", "k2", "k3")), EqualNullSafe(("key",), "k2")])
    assert left == []
    assert _rows(reader) == [("k2", 2.5, _ms(25), None)]
    owners = {partition_of(k.encode(), 4) for k in ("k2",)}
    assert {p.value for p in reader.partitions()} == owners


def test_a_key_no_partition_holds_reads_nothing(rates: str) -> None:
    reader, _ = _plan(rates, [In(("key",), ("absent",))])
    assert len(reader.partitions()) == 1
    assert _rows(reader) == []


def test_time_and_key_ranges_select_rows_exactly(rates: str) -> None:
    reader, left = _plan(rates, [
        GreaterThanOrEqual(("valid_from",), _ms(300)),
        LessThan(("valid_from",), _ms(330)),
        GreaterThan(("key",), "k30"),
    ])  # fmt: skip
    assert left == []
    assert len(reader.partitions()) == 4  # ranges select rows, they do not prune
    assert _rows(reader) == [("k31", 31.5, _ms(315), None), ("k32", 32.5, _ms(325), None)]


def test_null_tests_on_time_columns(rates: str) -> None:
    reader, _ = _plan(rates, [IsNull(("valid_to",))])
    assert len(_rows(reader)) == 40
    reader, _ = _plan(rates, [IsNotNull(("valid_to",))])
    assert _rows(reader) == []  # a latest read holds current versions only


def test_filters_the_store_cannot_take_are_left_to_spark(rates: str) -> None:
    left_alone = [
        GreaterThan(("value",), 3.0),  # values stay with Spark
        Not(EqualTo(("key",), "k1")),
        StringStartsWith(("key",), "k1"),
        EqualTo(("valid_from",), dt.datetime(2024, 1, 1)),  # naive: no guess at its zone
        EqualTo(("key",), None),
        In(("key",), ("k1", None)),
        EqualTo(("key",), 5),  # not a string
    ]
    reader, left = _plan(rates, left_alone)
    assert left == left_alone
    assert len(_rows(reader)) == 40


def test_the_pushdown_reader_goes_only_to_the_pushdown_planner(
    rates: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = DefaultSource({"store": "rates", "root": rates})
    # Spark's pushdown worker calls reader() from a module of this file name.
    code = compile("def _main(source):\n    return source.reader(None)\n",
                   "/x/pyspark/sql/worker/data_source_pushdown_filters.py", "exec")  # fmt: skip
    scope: dict[str, object] = {}
    exec(code, scope)  # noqa: S102 - a caller frame from that file, as in Spark
    assert type(scope["_main"](source)) is StateStoreReader  # type: ignore[operator]  # 4.3
    # A Spark that keeps pushdown per scan (it has DataSourceReader.pushLimit, 5.0):
    monkeypatch.setattr(DataSourceReader, "pushLimit", lambda self, limit: False, raising=False)
    assert pushdown.spark_scopes_pushdown()
    assert type(scope["_main"](source)) is PushdownStateStoreReader  # type: ignore[operator]
    assert type(source.reader(None)) is StateStoreReader  # any other caller


def test_a_catalog_read_and_a_pushed_read_agree(rates: str) -> None:
    table = Catalog(rates).load("rates")
    everything = sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())
    reader, _ = _plan(rates, [In(("key",), tuple(KEYS))])
    assert _rows(reader) == everything


def test_key_equality_prunes_to_kafkas_partition_in_a_kafka_store(kafka_rates: str) -> None:
    assert Catalog(kafka_rates).load("rates").spec.partitioner == "kafka"
    for i, key in enumerate(KEYS):
        reader, left = _plan(kafka_rates, [EqualTo(("key",), key)])
        assert left == []
        # BuiltInPartitioner.partitionForKey of the key's UTF-8 bytes.
        assert [p.value for p in reader.partitions()] == [partition_of(key.encode(), 4, "kafka")]
        assert _rows(reader) == [(key, float(i), _ms(i * 10), None)]
    owners = {partition_of(k.encode(), 4, "kafka") for k in KEYS[:3]}
    reader, _ = _plan(kafka_rates, [In(("key",), tuple(KEYS[:3]))])
    assert {p.value for p in reader.partitions()} == owners
    assert [r[0] for r in _rows(reader)] == KEYS[:3]
