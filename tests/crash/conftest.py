"""Fixtures only: a crash-matrix runner that executes catalog operations in separate processes
and arms one fault rule for each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from catalog import faults

WORKER = Path(__file__).with_name("worker.py")


class Crash:
    """Runs ``worker.py`` tasks against one warehouse, each in its own process."""

    def __init__(self, root: Path) -> None:
        self.root = str(root / "warehouse")
        self.cache = str(root / "cache")
        self.rules = root / "faults"

    def arm(self, step: str, action: str = "kill") -> None:
        self.rules.write_text(f"{step} {action}\n")

    @property
    def fired(self) -> bool:
        return Path(f"{self.rules}.fired").exists()

    def start(self, op: str, **task: Any) -> subprocess.Popen[str]:
        env = {**os.environ, faults.ENV: str(self.rules)}
        payload = json.dumps({"op": op, "root": self.root, "cache": self.cache, **task})
        return subprocess.Popen(
            [sys.executable, str(WORKER), payload],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, op: str, **task: Any) -> tuple[int, list[dict[str, Any]], str]:
        """Run one task; return its exit code, its JSON lines and its stderr."""
        proc = self.start(op, **task)
        out, err = proc.communicate(timeout=120)
        return proc.returncode, [json.loads(line) for line in out.splitlines()], err

    def ok(self, op: str, **task: Any) -> dict[str, Any]:
        """Run a task that must succeed (no fault armed); return its result."""
        if self.rules.exists():
            self.rules.unlink()
        code, lines, err = self.run(op, **task)
        assert code == 0, err
        return lines[-1]


@pytest.fixture
def crash(tmp_path: Path) -> Iterator[Crash]:
    yield Crash(tmp_path)
