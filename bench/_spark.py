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
