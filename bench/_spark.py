"""What the Spark benchmarks share: Spark's Python workers run this interpreter with this
checkout on their path, one ``local[2]`` session configured alike, a timer, a full read.

Import it before ``pyspark``: the environment must be set before the session starts.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])
)
sys.path.insert(0, str(REPO))

from pyspark.sql import DataFrame, SparkSession


def session(app: str, **conf: str) -> SparkSession:
    """The benchmarks' session: local[2], no UI or progress bars, UTC, 4 GB driver, quiet;
    ``conf`` adds Spark settings."""
    builder = (
        SparkSession.builder.master("local[2]").appName(app)
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "4g")
    )  # fmt: skip
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def seconds(action: Callable[[], object]) -> float:
    """Wall-clock seconds of ``action()``."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def full_read(df: DataFrame) -> None:
    """Materialize every column of every row (Spark's ``noop`` sink): nothing answered from
    metadata."""
    df.write.format("noop").mode("overwrite").save()


def register_floor(spark: SparkSession) -> None:
    """``floor_arrow``: a Python data source that writes nothing and reads ``rows`` rows in
    ``parts`` partitions from batches of 65,536 rows built once per task (the cost of Spark's
    Python source path). Option ``schema`` (DDL; default ``key string, value string``) gives a
    store's read schema: ``key`` 16 characters, ``value`` 100, ``headers`` two headers, every
    other column a TIMESTAMP."""
    import pyarrow as pa
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )

    class FloorWriter(DataSourceArrowWriter):
        def write(self, iterator):  # type: ignore[no-untyped-def]
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class FloorReader(DataSourceReader):
        def __init__(self, options, schema):  # type: ignore[no-untyped-def]
            self.rows, self.parts, self.schema = int(options["rows"]), int(options["parts"]), schema

        def partitions(self):  # type: ignore[no-untyped-def]
            return [InputPartition(i) for i in range(self.parts)]

        def read(self, partition):  # type: ignore[no-untyped-def]
            n = self.rows // self.parts
            batch = 1 << 16
            ms = pa.array(range(1_714_564_800_000, 1_714_564_800_000 + batch), pa.int64())
            header = pa.struct([("key", pa.string()), ("value", pa.binary())])
            two = [{"key": "trace", "value": b"\0" * 8}, {"key": "source", "value": None}]
            made = {
                "key": pa.array([f"{i:016x}" for i in range(batch)]),
                "value": pa.array(["v" * 100] * batch),
                "headers": pa.array([two] * batch, pa.list_(header)),  # as write_read's
            }
            stamps = ms.cast(pa.timestamp("ms")).cast(pa.timestamp("us", tz="UTC"))
            columns = [made.get(f.name, stamps) for f in self.schema.fields]
            names = [f.name for f in self.schema.fields]
            for start in range(0, n, batch):
                size = min(batch, n - start)
                yield pa.record_batch([c.slice(0, size) for c in columns], names=names)

    class Floor(DataSource):
        @classmethod
        def name(cls):  # type: ignore[no-untyped-def]
            return "floor_arrow"

        def schema(self):  # type: ignore[no-untyped-def]
            return self.options.get("schema", "key string, value string")

        def writer(self, schema, overwrite):  # type: ignore[no-untyped-def]
            return FloorWriter()

        def reader(self, schema):  # type: ignore[no-untyped-def]
            return FloorReader(self.options, schema)

    spark.dataSource.register(Floor)
