"""Separate executor processes with separate local directories (local-cluster).

``cluster_job.py`` runs once, in its own process, for every test here: a local-cluster costs
three JVMs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def seen(
    tmp_path_factory: pytest.TempPathFactory, module_spark_env: dict[str, str]
) -> dict[str, Any]:
    """What ``cluster_job.py`` saw (its JSON line), on a warehouse of its own."""
    root = str(tmp_path_factory.mktemp("cluster") / "warehouse")
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("cluster_job.py")), root],
        env=module_spark_env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-5000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_store_written_by_executors_is_read_by_other_executor_processes(
    seen: dict[str, Any],
) -> None:
    assert seen["keys"] == [f"k{i:03d}" for i in range(200)]
    assert len(seen["pids"]) >= 2 and seen["driver_pid"] not in seen["pids"]
    # Two executors, two private local directories, neither the driver's: each built its own
    # partition caches from the durable files.
    assert len(seen["local_dirs"]) == 2 and seen["caches_built"]
    assert seen["driver_local_dir"] not in seen["local_dirs"]
    # Executors wrote and read a header-aware session store; the driver queried it (IQv2).
    assert seen["session_values"] == list(range(40)) and seen["session_traces_match"]
    assert seen["u3_via_iq"] == [3, 13, 23, 33]


def test_an_asof_join_runs_on_executors_of_their_own(seen: dict[str, Any]) -> None:
    # Separate executor processes with separate local directories: each builds the caches it
    # reads from the warehouse; nothing but the root comes from the driver.
    assert len(seen["join_pids"]) >= 2 and seen["driver_pid"] not in seen["join_pids"]
    # Key k{j} has value 20 t + j from t s on (t = 0..4); event i asks k{i % 25} at 0.25 i s.
    expected = []
    for i in range(100):
        j, at = i % 25, 250 * i
        expected.append([i, None if j >= 20 else float(20 * min(at // 1_000, 4) + j)])
    assert seen["join_rows"] == expected
