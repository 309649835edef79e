"""Every Spark line ``pyproject.toml`` declares, checked in a venv of its own (``venvs``).

Per line: the wheel, installed as a user installs it, runs the README's quickstart (Spark
finds the format by itself); the Spark-facing tests (the connector, Spark end to end, streams,
as-of joins, SQL lookups, the README's blocks) pass there; and the README's features pass
through Spark Connect (``tests/connect/cases_connect.py``). The whole suite runs
on the interpreter that runs it. A line that cannot be installed fails, saying what to install.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lines.venvs import LINES, REPO, Built, SparkLine, build_wheel, installed
from tests.quickstart_output import check_quickstart_output

#: The Spark-facing tests each fallback line runs (the suite's own line runs them all):
#: the connector, Spark end to end (streams, as-of joins, SQL lookups, upserts), the README's
#: Python and SQL. The scripts in ``examples/`` use the same calls and run on the newest line
#: (each starts a Spark of its own: a minute and a half a line); on every line the quickstart
#: runs from the installed wheel.
SPARK_FACING = (
    "tests/datasource",
    "tests/spark",
    "tests/test_readme_python.py",
    "tests/test_readme_sql.py",
)
#: Test modules of an API some lines lack, and the probe of it (run on the line): a line
#: without it does not run them (the capability table in the README says so).
NEEDS = {
    # Spark's filter classes and pushFilters (4.1, SPARK-51271).
    "tests/datasource/test_pushdown.py": "datasource.spark_features.FILTER_PUSHDOWN.available",
    # It drives Spark's own pushdown worker as a per-scan Spark would, in the framing of its
    # entry ``_main`` (4.2 on; 4.1's ``main`` frames its input differently).
    "tests/datasource/test_pushdown_planner.py": "importlib.util.find_spec('pyspark.sql.worker"
    ".data_source_pushdown_filters') is not None and hasattr(importlib.import_module("
    "'pyspark.sql.worker.data_source_pushdown_filters'), '_main')",
}
#: Spark-facing tests the fallback lines leave to the whole suite: what they check does not
#: depend on the Spark line (separate executor processes; a worker killed mid-commit; option
#: checks), and they cost minutes (or a Spark job per case).
HEAVY = (
    "tests/spark/test_cluster.py",
    "tests/spark/test_upsert.py::test_an_application_killed_after_a_batch_committed_restarts_exactly_once",
    # Option checks made before Spark runs anything (``datasource.erase``): the erasure itself
    # runs on every line.
    "tests/spark/test_erase.py::test_an_erasure_from_spark_refuses_bad_input_by_name",
    "tests/spark/test_erase.py::test_a_read_refuses_the_erase_options",
    # Python writes against Spark writes of the same rows, every kind: the Python path takes no
    # Spark, and the Spark writes it is compared with run on every line in the other tests.
    "tests/spark/test_python_writes_spark.py",
)
#: The lines whose Spark-facing tests run here: those on which the connector takes a fallback
#: (``datasource.spark_features``). The others take the code paths of the Spark the whole
#: suite runs on (``test_the_other_lines_take_the_suite_s_code_paths``) and run the quickstart
#: and the Connect cases.
FALLBACK_LINES = tuple(line for line in LINES if line.pyspark in ("4.0.5", "4.1.4"))
TIMEOUT = 1800


@pytest.fixture(scope="session")
def built() -> Built:
    return build_wheel()


def _env(python: Path, *, checkout: bool) -> dict[str, str]:
    """A line's environment: its python for Spark's workers; the checkout on the path only for
    its tests (a user's install has only the wheel)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "STATE_STORE_"))}
    env.pop("PYTHONPATH", None)
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python))
    if checkout:
        env["PYTHONPATH"] = str(REPO)
    return env


def _tail(result: subprocess.CompletedProcess[str], chars: int = 6000) -> str:
    return (result.stdout[-chars:] + "\n" + result.stderr[-chars // 2 :]).strip()


@pytest.fixture(params=LINES, ids=lambda line: line.id)
def line(request: pytest.FixtureRequest) -> SparkLine:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def python(line: SparkLine, built: Built) -> Iterator[Path]:
    with installed(line, built) as interpreter:
        yield interpreter


def test_the_wheel_holds_the_connector_and_no_tests(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        names = archive.namelist()
    tops = {name.split("/")[0] for name in names}
    info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - info == {"pyspark_state_store.py", "stores", "catalog", "datasource"}
    assert {f"{p}/py.typed" for p in ("stores", "catalog", "datasource")} <= set(names)
    assert "datasource/spark_features.py" in names
    assert not [n for n in names if "/tests/" in n or n.startswith(("tests/", "examples/"))]
    (entry,) = info
    with zipfile.ZipFile(built.wheel) as archive:
        scripts = archive.read(f"{entry}/entry_points.txt").decode()
    assert "state-store = catalog.cli:main" in scripts


def test_the_installed_wheel_runs_the_quickstart(python: Path, line: SparkLine) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        found = subprocess.run(
            [str(python), "-c", "import pkgutil, pyspark, pyspark_state_store as m; "
             "print(pyspark.__version__, m.__file__, m.DefaultSource.__module__, "
             "'pyspark_state_store' in {i.name for i in pkgutil.iter_modules()})"],
            env=_env(python, checkout=False), cwd=cwd, capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        assert found.returncode == 0, _tail(found)
        version, module, source, listed = found.stdout.split()
        assert version == line.pyspark
        assert module.startswith(str(python.parent.parent)) and source == "datasource.source"
        assert listed == "True"  # what Spark's static registration looks for
        # The wheel's requirements hold with this line's pyspark (installed without resolving).
        check = subprocess.run(
            [str(python), "-m", "pip", "check", "--disable-pip-version-check"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert check.returncode == 0, _tail(check)
        quickstart = subprocess.run(
            [str(python), str(REPO / "examples" / "quickstart.py")],
            env=_env(python, checkout=False), cwd=cwd, capture_output=True, text=True,
            timeout=TIMEOUT, check=False,
        )  # fmt: skip
        assert quickstart.returncode == 0, _tail(quickstart)
        check_quickstart_output(quickstart.stdout)


def _pytest(python: Path, paths: list[str], cwd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q",
         *paths],
        env=_env(python, checkout=True), cwd=cwd, capture_output=True, text=True,
        timeout=TIMEOUT, check=False,
    )  # fmt: skip


def _lacking(python: Path) -> list[str]:
    """The modules of ``NEEDS`` whose API the line's Spark lacks."""
    code = "import importlib, importlib.util, datasource.spark_features\n" + "".join(
        f"print({probe})\n" for probe in NEEDS.values()
    )
    probe = subprocess.run(
        [str(python), "-c", code], env=_env(python, checkout=True), capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert probe.returncode == 0, _tail(probe)
    answers = probe.stdout.split()
    assert len(answers) == len(NEEDS), probe.stdout
    return [path for path, answer in zip(NEEDS, answers) if answer != "True"]


#: Every probe of ``datasource.spark_features``, printed as the line answers it.
PROBES = (
    "import datasource.spark_features as f\n"
    "print(sorted(n for n, v in vars(f).items() if isinstance(v, f.Feature) and v.available))"
)


def test_the_other_lines_take_the_suite_s_code_paths(built: Built) -> None:
    here = subprocess.run(
        [sys.executable, "-c", PROBES], env=_env(Path(sys.executable), checkout=True),
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for line in LINES:
        if line in FALLBACK_LINES:
            continue
        with installed(line, built) as python:
            there = subprocess.run(
                [str(python), "-c", PROBES], env=_env(python, checkout=True),
                capture_output=True, text=True, check=False,
            )  # fmt: skip
        assert there.returncode == 0, _tail(there)
        assert there.stdout == here, (
            f"{line.id} lacks or has a feature this Spark does not ({there.stdout.strip()} "
            f"against {here.strip()}): add it to FALLBACK_LINES"
        )


@pytest.mark.parametrize("fallback", FALLBACK_LINES, ids=lambda line: line.id)
def test_the_spark_facing_tests_pass_on_each_fallback_line(fallback: SparkLine, built: Built) -> None:
    with installed(fallback, built) as python, tempfile.TemporaryDirectory() as cwd:
        paths = [str(REPO / p) for p in SPARK_FACING]
        left_out = [f"--ignore={REPO / p}" for p in _lacking(python)]
        run = _pytest(python, [*paths, *left_out, *(f"--deselect={REPO / t}" for t in HEAVY)], cwd)
        assert run.returncode == 0, _tail(run)
        assert " failed" not in run.stdout and " passed" in run.stdout


def test_the_readme_features_pass_through_spark_connect(python: Path) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        run = _pytest(python, [str(REPO / "tests" / "connect" / "cases_connect.py")], cwd)
        assert run.returncode == 0, _tail(run)
        assert "6 passed" in run.stdout
