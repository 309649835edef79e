"""Separate executor processes with separate local directories (local-cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.cluster


def test_store_written_by_executors_is_read_by_other_executor_processes(
    tmp_path: Path, spark_env: dict[str, str]
) -> None:
    root = str(tmp_path / "warehouse")
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("cluster_job.py")), root],
        env=spark_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["keys"] == [f"k{i:03d}" for i in range(200)]
    assert len(seen["pids"]) >= 2 and seen["driver_pid"] not in seen["pids"]
    # Two executors, two private local directories, neither the driver's: each built its own
    # partition caches from the durable files.
    assert len(seen["local_dirs"]) == 2 and seen["caches_built"]
    assert seen["driver_local_dir"] not in seen["local_dirs"]
    # Executors wrote and read a header-aware session store; the driver queried it (IQv2).
    assert seen["session_values"] == list(range(40)) and seen["session_traces_match"]
    assert seen["u3_via_iq"] == [3, 13, 23, 33]
