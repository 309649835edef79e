"""What the connector does on a Spark that lacks an API (``datasource.spark_features``), and
that a format which cannot load says why instead of vanishing (``pyspark_state_store``).

The lines themselves run in ``tests/lines``; here each older line's gap is stood in for on
this Spark, so the refusals are checked wherever the suite runs."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

import datasource.stream_reader as stream_reader
from datasource.spark_features import ADMISSION_CONTROL, Feature
from stores.errors import InvalidOptionError

REPO = Path(__file__).resolve().parents[2]


def _declared_range() -> str:
    """``pyproject.toml``'s pyspark requirement, e.g. ``>=4.0.5,<4.4``."""
    text = (REPO / "pyproject.toml").read_text()
    found = re.search(r'^\s*"pyspark(>=[^"]+)",', text, flags=re.MULTILINE)
    assert found, "no pyspark requirement in pyproject.toml's dependencies"
    return found.group(1)


def test_a_missing_feature_names_the_option_this_spark_and_the_release_with_it() -> None:
    feature = Feature("a thing (Thing)", "9.1.0", "SPARK-1", lambda: False)
    with pytest.raises(InvalidOptionError) as raised:
        feature.require("option 'maxThings'")
    message = str(raised.value)
    assert message.startswith("[SPARK_TOO_OLD] option 'maxThings' needs a thing (Thing)")
    assert "Spark 9.1.0 added (SPARK-1)" in message and f"Spark {pyspark.__version__}" in message
    Feature("x", "1.0.0", "SPARK-2", lambda: True).require("anything")  # present: no error


@pytest.mark.parametrize("option", ["maxRowsPerTrigger", "maxCommitsPerTrigger"])
def test_admission_control_options_are_refused_on_a_spark_without_it(
    option: str, catalog: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog.create_store("s", "keyvalue", "string", "long")  # type: ignore[attr-defined]
    absent = Feature(ADMISSION_CONTROL.name, ADMISSION_CONTROL.since, ADMISSION_CONTROL.jira,
                     lambda: False)  # fmt: skip
    monkeypatch.setattr(stream_reader, "ADMISSION_CONTROL", absent)
    options = {"store": "s", "root": catalog.root, option: "5"}  # type: ignore[attr-defined]
    with pytest.raises(InvalidOptionError, match=rf"\[SPARK_TOO_OLD\] option '{option}' needs "
                       r"admission control .* Spark 4\.2\.0 added \(SPARK-"):  # fmt: skip
        stream_reader.plan_stream(options)
    del options[option]
    assert stream_reader.plan_stream(options).max_rows is None  # the stream itself is planned


def test_the_refusals_name_the_declared_spark_range() -> None:
    wanted = f"pyspark{_declared_range()}"
    for path in ("pyspark_state_store.py", "datasource/spark_features.py"):
        assert f"'{wanted}'" in (REPO / path).read_text(), path


def test_a_connector_that_fails_to_import_still_registers_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pyspark_state_store

    monkeypatch.setitem(sys.modules, "datasource.source", None)  # its import now fails
    try:
        fallback = importlib.reload(pyspark_state_store).DefaultSource
        assert fallback.name() == "state_store"
        for hook in ("schema", "reader", "writer", "streamReader", "streamWriter"):
            with pytest.raises(ImportError, match=r"^\[SPARK_UNSUPPORTED\] the state_store "
                               rf"format cannot load on Spark {re.escape(pyspark.__version__)}: "
                               r"ModuleNotFoundError: .*datasource\.source"):  # fmt: skip
                getattr(fallback({}), hook)(None, False)
    finally:
        monkeypatch.undo()
        importlib.reload(pyspark_state_store)
    assert pyspark_state_store.DefaultSource.__module__ == "datasource.source"


def test_spark_shows_why_the_format_cannot_load(tmp_path: Path, spark_env: dict[str, str]) -> None:
    """Through a Spark session: not DATA_SOURCE_NOT_FOUND, but our line."""
    shadow = tmp_path / "shadow" / "datasource"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('a dependency the connector needs')\n")
    script = (
        "from pyspark.sql import SparkSession\n"
        "spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false')"
        ".getOrCreate()\n"
        "try:\n"
        "    spark.read.format('state_store').load('rates').collect()\n"
        "except Exception as error:\n"
        "    print('ERROR', str(error).replace(chr(10), ' '))\n"
    )
    env = {**spark_env, "PYTHONPATH": f"{shadow.parent}:{REPO}"}
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "DATA_SOURCE_NOT_FOUND" not in run.stdout
    assert "[SPARK_UNSUPPORTED] the state_store format cannot load on Spark" in run.stdout
    assert "a dependency the connector needs" in run.stdout


def test_a_spark_without_python_data_sources_is_refused_at_import(tmp_path: Path) -> None:
    """A pyspark 3.x (no ``pyspark.sql.datasource``) present despite the dependency range."""
    old = tmp_path / "old" / "pyspark"
    (old / "sql").mkdir(parents=True)
    (old / "__init__.py").write_text("__version__ = '3.5.3'\n")
    (old / "sql" / "__init__.py").write_text("")
    run = subprocess.run(
        [sys.executable, "-c", "import datasource"], cwd=tmp_path, capture_output=True,
        text=True, check=False, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{old.parent}:{REPO}"},
    )  # fmt: skip
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: [SPARK_TOO_OLD] state_store needs Spark 4.0 or newer (Python data "
        "sources, SPARK-44076); this is pyspark 3.5.3: pip install 'pyspark>=4.0.5,<4.4'"
    )
