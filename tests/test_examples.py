"""Every script in examples/ runs, as a user would run it, and prints what it promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


#: Examples run by other tests: ``kafka_streams.py`` needs servers beside it
#: (tests/kafka/test_example.py: the test broker, and a real application started on what it
#: writes); ``quickstart.py`` is the README's first command, run as the README gives it, then
#: the suite from where it left its store (tests/test_working_directory.py).
ELSEWHERE = ("kafka_streams.py", "quickstart.py")


@pytest.mark.parametrize(
    "script",
    [p for p in sorted(EXAMPLES.glob("*.py")) if p.name not in ELSEWHERE],
    ids=lambda p: p.name,
)
def test_example_runs(script: Path, tmp_path: Path, spark_env: dict[str, str]) -> None:
    env = {**spark_env, "STATE_STORE_ROOT": str(tmp_path / "warehouse")}
    result = subprocess.run(
        [sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=600, check=False,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    if script.name == "streaming.py":
        out = result.stdout
        running, rest = out.split("After more views arrived:")
        later, feed = rest.split("Its change feed")
        assert "ada | 1970-01-01 00:00:00 | 2" in running and "cy" not in running
        assert "bob | 1970-01-01 00:00:00 | 2" in later and "cy | 1970-01-01 00:01:00 | 1" in later
        assert "2 | insert | cy | 1970-01-01 00:01:00 | 1" in feed
        assert "2 | delete | bob | 1970-01-01 00:00:00 | 1" in feed
    if script.name == "scd2.py":
        history, priced = result.stdout.split("Orders priced as of their time:")
        assert "chair   45.00  from 2024-05-03  (current)" in history
        assert "lamp    18.00  from 2024-05-02  to 2024-05-06" in history
        assert "o1 chair  40.0" in priced and "o2 chair  45.0" in priced
        assert "o4 lamp   18.0" in priced and "o5 lamp   no price" in priced
    if script.name == "stores_tour.py":
        out = result.stdout
        assert "[0, 5) min: count=3" in out and "[5, 10) min: count=5" in out
        assert "Sessions of 'ada': [(0, 4), (20, 21)]" in out
        assert "headers=(('trace-id', b'a1b2'),)" in out
        assert "IQv2 windows of 'home': [(0, 3), (5, 5)]" in out
        assert "fails per partition: ['UNKNOWN_QUERY_TYPE']" in out
