"""The README's two commands in order: the quickstart prints what it promises and leaves
``./state-warehouse`` where it ran, and the suite run from there still passes, since no test
reads or writes the working directory (``conftest.outside_the_checkout``). (The other examples
run in ``test_examples.py``.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.quickstart_output import check_quickstart_output

REPO = Path(__file__).resolve().parent.parent


def test_tests_run_where_the_quickstart_left_its_store(
    tmp_path: Path, spark_env: dict[str, str]
) -> None:
    env = {k: v for k, v in spark_env.items() if k != "STATE_STORE_ROOT"}
    quickstart = subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart.py")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert quickstart.returncode == 0, quickstart.stderr[-5000:]
    check_quickstart_output(quickstart.stdout)
    assert (tmp_path / "state-warehouse" / "rates" / "commits" / f"{1:020d}.json").exists()
    before = sorted(p.name for p in tmp_path.iterdir())

    suite = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0",
         str(REPO / "tests" / "datasource" / "test_root.py")],
        env={**env, "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])},
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert suite.returncode == 0, suite.stdout[-5000:] + suite.stderr[-2000:]
    assert "1 passed" in suite.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written here
