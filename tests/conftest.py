"""Fixtures only: warehouses, catalogs, and the one Spark session the suite shares."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps its example database and caches in ``./.hypothesis``, a path it fixes on
# first use, which may come before any fixture runs: give it a folder outside the checkout.
set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), f"state_store_hypothesis_{os.getuid()}"))
# No deadline per example: tests assert behaviour, never time (performance lives in bench/),
# and an example's first call (imports, Arrow's kernels) ran past 200 ms on a busy machine.
settings.register_profile("state_store", deadline=None)
settings.load_profile("state_store")

REPO = Path(__file__).resolve().parent.parent
FAULTS_ENV = "STATE_STORE_FAULTS"  # catalog.faults.ENV, without importing the project here
#: The fault rule file of every Spark worker of this test run.
SPARK_FAULTS = Path(tempfile.gettempdir()) / f"state_store_spark_faults_{os.getpid()}"


def spark_environment() -> None:
    """Point Spark's Python workers at this interpreter and this checkout.

    Workers must import the project and find ``pyspark_state_store`` (Spark's static
    registration scans the workers' ``sys.path``), whatever way the project was installed.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Spark's Python workers inherit this: the crash tests arm faults in them through this
    # file (absent, faults.point is a dictionary lookup and nothing else).
    os.environ.setdefault(FAULTS_ENV, str(SPARK_FAULTS))
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


@pytest.fixture(scope="session", autouse=True)
def outside_the_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test runs in an empty working directory of its own session, never the checkout's.

    The default warehouse (``./state-warehouse``), Spark's ``spark-warehouse``, the JVM's and
    its workers' working directory (the JVM starts after this, in the shared ``spark``
    fixture) and hypothesis' example database are all relative to it: a store that the
    quickstart left in the checkout is neither read nor written by the suite.
    """
    here = Path.cwd()
    cwd = tmp_path_factory.mktemp("cwd")
    os.chdir(cwd)
    yield cwd
    os.chdir(here)


@pytest.fixture
def spark_env() -> dict[str, str]:
    """The environment for a Spark job run in a subprocess (examples, local-cluster)."""
    spark_environment()
    return dict(os.environ)


@pytest.fixture(scope="module")
def module_spark_env() -> dict[str, str]:
    """``spark_env`` for a module-scoped fixture (a Spark job that several tests share)."""
    spark_environment()
    return dict(os.environ)


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    """A fresh warehouse root (a local directory)."""
    return str(tmp_path / "warehouse")


@pytest.fixture
def catalog(warehouse: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """A catalog over a fresh warehouse, with its own cache directory."""
    from catalog import Catalog

    return Catalog(warehouse, cache_dir=str(tmp_path / "cache"))


@pytest.fixture
def spark_faults() -> Iterator[Path]:
    """The rule file the shared session's workers read (see ``catalog.faults``); cleared."""
    path = Path(os.environ.get(FAULTS_ENV, str(SPARK_FAULTS)))
    for leftover in (path, Path(f"{path}.fired")):
        leftover.unlink(missing_ok=True)
    yield path
    for leftover in (path, Path(f"{path}.fired")):
        leftover.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """The suite's one ``local[2]`` session."""
    spark_environment()
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("state_store tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
