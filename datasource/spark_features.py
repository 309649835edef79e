"""What this PySpark offers the connector, probed once by feature (never by version number).

The connector runs on every Spark line from 4.0 (the first with Python data sources). Where a
line lacks an API, the connector uses what it has and keeps the behaviour; where nothing can
stand in, it refuses with ``[SPARK_TOO_OLD]``, naming the option, this Spark and the release
that has the feature:

| feature                                     | since | JIRA        | on older lines                 |
|---------------------------------------------|-------|-------------|--------------------------------|
| Python data sources (``DataSource``)        | 4.0   | SPARK-44076 | refused at import              |
| ``DataSourceStreamArrowWriter``             | 4.1   | SPARK-53030 | a stream writer that is also a |
|                                             |       |             | ``DataSourceArrowWriter``: 4.0 |
|                                             |       |             | sends it Arrow batches too     |
| ``DataSourceReader.pushFilters``            | 4.1   | SPARK-51271 | Spark filters every row        |
| ``pyspark.sql.functions.arrow_udf``         | 4.1   | SPARK-53014 | ``asof_join`` by ``mapInArrow``|
| stream admission control (``ReadLimit``)    | 4.2   | SPARK-55304 | ``latestOffset()`` reads every |
|                                             |       |             | new commit; ``maxRowsPer``     |
|                                             |       |             | ``Trigger`` refused            |
| pushdown kept per scan (``pushLimit``)      | 4.4   | SPARK-58551 | Spark filters every row        |

This module imports cheaply (``pyspark_state_store`` imports it on every session's lookup).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyspark

try:
    from pyspark.sql import datasource as _spark_ds
except ImportError as missing:  # Spark 3.x: no Python data sources at all
    raise ImportError(
        f"[SPARK_TOO_OLD] state_store needs Spark 4.0 or newer (Python data sources, "
        f"SPARK-44076); this is pyspark {pyspark.__version__}: "
        "pip install 'pyspark>=4.0.5,<4.4'"
    ) from missing

if TYPE_CHECKING:
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamArrowWriter

#: This PySpark's version, for messages only.
SPARK_VERSION: str = pyspark.__version__


@dataclass(frozen=True)
class Feature:
    """One API a Spark line may lack: what it is, the release that added it, and whether this
    PySpark has it."""

    name: str
    since: str
    jira: str
    #: Asked on each use (cheap): tests stand in for another Spark by patching the API.
    probe: Callable[[], bool]

    @property
    def available(self) -> bool:
        """Whether this PySpark has the feature."""
        return self.probe()

    def require(self, what: str) -> None:
        """Refuse ``what`` (an option or call, as the user wrote it) if this Spark lacks the
        feature.

        Raises:
            InvalidOptionError: SPARK_TOO_OLD, naming ``what``, this Spark and the release
                that has the feature.
        """
        if self.available:
            return
        from stores.errors import InvalidOptionError

        raise InvalidOptionError(
            f"{what} needs {self.name}, which Spark {self.since} added ({self.jira}); this is "
            f"Spark {SPARK_VERSION}: run on pyspark>={self.since}, or drop {what}",
            code="SPARK_TOO_OLD",
        )


STREAM_ARROW_WRITER = Feature(
    "Arrow streaming writes (DataSourceStreamArrowWriter)", "4.1.0", "SPARK-53030",
    lambda: hasattr(_spark_ds, "DataSourceStreamArrowWriter"),
)  # fmt: skip
FILTER_PUSHDOWN = Feature(
    "filter pushdown into Python data sources (DataSourceReader.pushFilters)", "4.1.0",
    "SPARK-51271", lambda: hasattr(_spark_ds.DataSourceReader, "pushFilters"),
)  # fmt: skip
ADMISSION_CONTROL = Feature(
    "admission control for Python streaming sources (ReadLimit, latestOffset(start, limit))",
    "4.2.0", "SPARK-55304",
    lambda: importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None,
)  # fmt: skip
ARROW_UDF = Feature(
    "Arrow UDFs (pyspark.sql.functions.arrow_udf)", "4.1.0", "SPARK-53014",
    # Imported when asked, not on a format lookup.
    lambda: hasattr(importlib.import_module("pyspark.sql.functions"), "arrow_udf"),
)  # fmt: skip
PUSHDOWN_PER_SCAN = Feature(
    "pushdown kept per scan (DataSourceReader.pushLimit)", "4.4.0", "SPARK-58551",
    lambda: hasattr(_spark_ds.DataSourceReader, "pushLimit"),
)  # fmt: skip


def arrow_udf() -> Any | None:
    """``pyspark.sql.functions.arrow_udf`` where this Spark has it (``ARROW_UDF``), else None."""
    if not ARROW_UDF.available:
        return None
    from pyspark.sql import functions

    return functions.arrow_udf


if not TYPE_CHECKING:
    if STREAM_ARROW_WRITER.available:
        from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamArrowWriter
    else:

        class StreamArrowWriter(_spark_ds.DataSourceStreamWriter, _spark_ds.DataSourceArrowWriter):
            """Spark 4.0's stand-in for ``DataSourceStreamArrowWriter``: its write worker
            (``pyspark.sql.worker.write_into_data_source``) hands Arrow batches to any writer
            that is a ``DataSourceArrowWriter``, streaming or not, so the micro-batch path
            stays columnar; ``commit`` and ``abort`` take the batch id, as a stream writer's."""


__all__ = [
    "ADMISSION_CONTROL",
    "ARROW_UDF",
    "FILTER_PUSHDOWN",
    "PUSHDOWN_PER_SCAN",
    "SPARK_VERSION",
    "STREAM_ARROW_WRITER",
    "Feature",
    "StreamArrowWriter",
    "arrow_udf",
]
