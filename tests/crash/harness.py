"""The crash matrix's runner and its one verdict, shared by the crash tests (not a test module).

``Crash`` runs ``worker.py`` tasks against one warehouse, each in its own process, with at most
one fault rule armed. ``check_committed`` is what every case asserts afterwards: the warehouse
holds exactly the state its commit log says was committed, the next write succeeds without
repair, and a vacuum removes every leftover without changing what is read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from catalog import Catalog, faults
from catalog.log import commits as commit_log
from tests.crash.worker import rows_for

WORKER = Path(__file__).with_name("worker.py")
STORE = "s"
#: What each action does to the process that reaches the armed step.
EXIT_CODES = {"kill": -signal.SIGKILL, "interrupt": -signal.SIGINT, "error": 1}
_RECORD = re.compile(r"commits/\d{20}\.json")

Rows = list[list[Any]]
#: The state of every template store (``crash_templates``).
TEMPLATE_ROWS: Rows = [["a", 1], ["b", 2], ["c", 2]]


class Crash:
    """One warehouse, its cache directory and its fault rule file."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = str(base / "warehouse")
        self.cache = str(base / "cache")
        self.rules = base / "faults"

    def seed(self, template: Path) -> None:
        """Start from a copy of a warehouse built once (see ``crash_templates``)."""
        shutil.copytree(template, self.root)

    def arm(self, step: str, action: str = "kill") -> None:
        Path(f"{self.rules}.fired").unlink(missing_ok=True)
        self.rules.write_text(f"{step} {action}\n")

    @property
    def fired(self) -> bool:
        return Path(f"{self.rules}.fired").exists()

    def assert_fired(self, step: str) -> None:
        """A case whose fault never fired tested nothing: fail it, naming the step."""
        assert self.fired, (
            f"the fault at {step!r} never fired: no process reached faults.point({step!r}) "
            "(is the point still in the library?)"
        )
        assert not self.rules.exists()

    def start(self, op: str, **task: Any) -> subprocess.Popen[str]:
        env = {**os.environ, faults.ENV: str(self.rules)}
        payload = json.dumps({"op": op, "root": self.root, "cache": self.cache, "store": STORE,
                              **task})  # fmt: skip
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
        out, err = proc.communicate(timeout=60)
        return proc.returncode, [json.loads(line) for line in out.splitlines()], err

    def crash(self, step: str, action: str, op: str, **task: Any) -> list[dict[str, Any]]:
        """Run a task with ``step`` armed; it must die there as ``action`` says. Returns what
        it printed before dying (a writer's staged files)."""
        self.arm(step, action)
        code, lines, err = self.run(op, **task)
        self.assert_fired(step)
        assert code == EXIT_CODES[action], err[-3000:]
        if action != "kill":
            assert f"fault injected at {step}" in err, err[-3000:]
        return lines

    def ok(self, op: str, **task: Any) -> dict[str, Any]:
        """Run a task that must succeed (no fault armed); return its result."""
        self.rules.unlink(missing_ok=True)
        code, lines, err = self.run(op, **task)
        assert code == 0, err[-3000:]
        return lines[-1]

    def abort(self, write_id: str, lines: list[dict[str, Any]], after: int) -> None:
        """Abort a write from another process, as Spark does after a failed commit, with the
        files the write's task reported (none if it died before reporting)."""
        staged = lines[0]["staged"] if lines and "staged" in lines[0] else []
        self.ok("abort", write_id=write_id, files=staged, after=after)


def fresh_log(root: str) -> commit_log.CommitLog:
    """The store's log as a new process sees it (no record cached from before)."""
    commit_log._RECORDS.clear()
    log = Catalog(root).load(STORE).log
    return log


def landed(root: str, write_id: str) -> bool:
    """Whether the log holds a record of ``write_id``: the only thing that decides."""
    commit_log._RECORDS.clear()
    log = commit_log.CommitLog(Catalog(root).storage, STORE)
    return log.find_write(write_id) is not None


def read_rows(root: str, cache_dir: str) -> Rows:
    """What a fresh catalog reads (the latest state) through ``cache_dir``."""
    commit_log._RECORDS.clear()
    table = Catalog(root, cache_dir=cache_dir, compact_after_files=0).load(STORE)
    return sorted([r["key"], r["value"]] for r in table.to_arrow().to_pylist())


def merged(rows: Rows, keys: list[str], value: int) -> Rows:
    """``rows`` after a write of ``keys`` all set to ``value``."""
    state = {k: v for k, v in rows} | dict.fromkeys(keys, value)
    return sorted([k, v] for k, v in state.items())


def store_files(root: str) -> set[str]:
    """Every file under the store's directory but its commit records, relative to it."""
    store = Path(root, STORE)
    found = {str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()}
    return {f for f in found if not _RECORD.fullmatch(f)}


def check_committed(crash: Crash, kind: str, expected: Rows) -> None:
    """The verdict after a crash: exactly ``expected`` is read, through the cache the crashed
    processes used and through a new one; the log's ids run 1..N and no write id holds two
    of them; the next write needs no repair and is read back; a vacuum leaves exactly the
    files the log lists, and the same state."""
    log = fresh_log(crash.root)
    ids = log.ids()  # raises on a gap
    assert ids == list(range(1, len(ids) + 1))
    writes = [log.read(i).write_id for i in ids]
    assert len(writes) == len(set(writes)), f"a write published twice: {writes}"
    assert read_rows(crash.root, crash.cache) == expected
    assert read_rows(crash.root, str(crash.base / f"cache-{uuid.uuid4().hex}")) == expected

    commit_log._RECORDS.clear()
    catalog = Catalog(crash.root, cache_dir=crash.cache, compact_after_files=0)
    table = catalog.load(STORE)
    record = table.commit(table.stage(*rows_for(kind, ["z"], 9), write_id="next"), write_id="next")
    assert record is not None and record.id == ids[-1] + 1  # no id handed out twice
    after = merged(expected, ["z"], 9)
    assert read_rows(crash.root, crash.cache) == after

    catalog.vacuum(STORE, older_than_ms=0)
    assert read_rows(crash.root, str(crash.base / f"cache-{uuid.uuid4().hex}")) == after
    log = fresh_log(crash.root)
    listed = {f.path for i in log.ids() for f in log.read(i).files}
    # Nothing but listed files: no staged orphan, temporary file or abort marker survives,
    # and every listed file is still there.
    assert store_files(crash.root) == listed
