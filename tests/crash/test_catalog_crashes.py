"""The crash matrix through the catalog API: writers, aborts, readers, compactions, drops and
vacuums killed (SIGKILL), interrupted (KeyboardInterrupt) or failing (OSError) at each named
step, each in its own process. Afterwards exactly the state the commit log says was committed
is read, through the crashed processes' cache and a new one, the next write succeeds without
repair, and a vacuum leaves exactly the files the log lists (``harness.check_committed``).

Single-process fault cases (an interrupt after the record, a drop racing a commit, damaged and
misplaced records) are in ``tests/catalog/test_commit_log.py``.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from catalog import Catalog
from catalog.log import commits as commit_log
from stores.errors import StoreNotFoundError
from tests.crash.harness import (
    STORE,
    TEMPLATE_ROWS,
    Crash,
    check_committed,
    fresh_log,
    landed,
    merged,
    read_rows,
    store_files,
)
from tests.crash.worker import rows_for

Templates = dict[str, Path]
WRITE_STEPS = ["stage.file_written", "commit.before_record", "commit.record_writing",
               "commit.after_record"]  # fmt: skip
#: Every (kind, step, action) of a write: every action on a key-value store, a kill on a
#: versioned one (same protocol, another apply path). A record-writing interrupt is left out:
#: it is the error case's path, and the step is local-disk only.
WRITE_CASES = [
    *[("keyvalue", step, action) for step in WRITE_STEPS for action in ("kill", "interrupt", "error")
      if (step, action) != ("commit.record_writing", "interrupt")],
    *[("versioned", step, "kill") for step in WRITE_STEPS],
]  # fmt: skip
#: Four keys: a write spans several of the store's four partitions, all of them in the one
#: changelog file a writer stages (a piece per partition).
CRASH_KEYS = ["c", "w", "x", "y"]


def _later(crash: Crash, kind: str, count: int) -> list[list[object]]:
    """Commit ``count`` more writes (k0 = 10, k1 = 11, ...) in this process; the new state."""
    commit_log._RECORDS.clear()
    table = Catalog(crash.root, cache_dir=crash.cache, compact_after_files=0).load(STORE)
    rows = read_rows(crash.root, str(crash.base / "scratch")) if count else TEMPLATE_ROWS
    for n in range(count):
        write_id = f"later{n}"
        table.commit(table.stage(*rows_for(kind, [f"k{n}"], 10 + n), write_id=write_id),
                     write_id=write_id)  # fmt: skip
        rows = merged(rows, [f"k{n}"], 10 + n)
    return rows


@pytest.mark.parametrize(("kind", "step", "action"), WRITE_CASES)
def test_a_writer_dies_at_any_step_and_the_log_decides(
    crash: Crash, crash_templates: Templates, kind: str, step: str, action: str
) -> None:
    crash.seed(crash_templates[kind])
    lines = crash.crash(step, action, "append", kind=kind, keys=CRASH_KEYS, value=7,
                        write_id="w-crash")  # fmt: skip
    committed = landed(crash.root, "w-crash")
    assert committed == (step == "commit.after_record")
    expected = merged(TEMPLATE_ROWS, CRASH_KEYS, 7) if committed else TEMPLATE_ROWS
    if committed:
        assert len(fresh_log(crash.root).read(3).files) > 1  # a multi-file write, whole
    # Readers between the crash and the abort already see exactly the committed state.
    assert read_rows(crash.root, str(crash.base / "early")) == expected
    # Spark calls abort from another process with whatever the task reported it staged; a
    # write whose record landed keeps every file.
    crash.abort("w-crash", lines, after=2)
    check_committed(crash, kind, expected)


@pytest.mark.parametrize("step", WRITE_STEPS)
def test_a_first_write_that_dies_leaves_a_store_only_if_its_record_landed(
    crash: Crash, step: str
) -> None:
    crash.crash(step, "kill", "create", kind="keyvalue", keys=["a", "b"], value=1, write_id="w1")
    exists = Catalog(crash.root).list() == [STORE]
    assert exists == (step == "commit.after_record") == landed(crash.root, "w1")
    crash.abort("w1", [], after=0)  # Spark's abort of the first write: the log decides
    assert (Catalog(crash.root).list() == [STORE]) == exists
    if not exists:  # the next first write creates the store, nothing to repair
        crash.ok("create", kind="keyvalue", keys=["a", "b"], value=2, write_id="w2")
    expected = [["a", 1 if exists else 2], ["b", 1 if exists else 2]]
    check_committed(crash, "keyvalue", expected)


@pytest.mark.parametrize("committed", [False, True], ids=["write-failed", "record-landed"])
def test_an_abort_killed_before_it_deletes_leaves_the_committed_state(
    crash: Crash, crash_templates: Templates, committed: bool
) -> None:
    crash.seed(crash_templates["keyvalue"])
    step = "commit.after_record" if committed else "commit.before_record"
    lines = crash.crash(step, "kill", "append", kind="keyvalue", keys=CRASH_KEYS, value=7,
                        write_id="w-crash")  # fmt: skip
    staged = lines[0]["staged"]
    crash.crash("abort.before_delete", "kill", "abort", write_id="w-crash", files=staged, after=2)
    assert Path(crash.root, STORE, "aborted", "w-crash").exists()  # the marker went first
    expected = merged(TEMPLATE_ROWS, CRASH_KEYS, 7) if committed else TEMPLATE_ROWS
    check_committed(crash, "keyvalue", expected)  # its vacuum takes the files and the marker


#: (kind, step, action, warm): a reader building its cache from nothing (cold) or catching up
#: a cache made at an earlier commit (warm). Full scans are computed with Arrow and write only
#: a scan file (``scan.writing``); point lookups build RocksDB (``cache.applied``).
READ_CASES = [
    ("versioned", "cache.applied", "kill", False),
    ("versioned", "cache.applied", "kill", True),
    ("versioned", "cache.applied", "interrupt", False),
    ("versioned", "cache.applied", "error", True),
    ("keyvalue", "cache.applied", "kill", True),
    ("versioned", "scan.writing", "kill", False),
    ("versioned", "scan.writing", "kill", True),
    ("keyvalue", "scan.writing", "kill", True),
    ("keyvalue", "scan.writing", "error", False),
]


@pytest.mark.parametrize(("kind", "step", "action", "warm"), READ_CASES)
def test_a_reader_that_dies_while_building_its_cache_leaves_a_usable_cache(
    crash: Crash, crash_templates: Templates, kind: str, step: str, action: str, warm: bool
) -> None:
    crash.seed(crash_templates[kind])
    op = "lookup" if step == "cache.applied" else "read"
    keys = ["a", "b", "c", "k0", "k1", "k2"]
    if warm:
        assert crash.ok(op, keys=keys)["rows"] == TEMPLATE_ROWS  # the cache at commit 2, kept
    expected = _later(crash, kind, 3)  # three commits for the reader to apply
    crash.crash(step, action, op, keys=keys)
    assert crash.ok(op, keys=keys)["rows"] == expected  # the same cache, from another process
    assert crash.ok("read")["rows"] == expected
    check_committed(crash, kind, expected)


@pytest.mark.parametrize("compacted", [False, True], ids=["log", "snapshot+tail"])
def test_a_reader_killed_between_ingesting_and_committing_its_cache_starts_over(
    crash: Crash, crash_templates: Templates, compacted: bool
) -> None:
    """A fresh cache ingests SST files (rows computed from the log, or a snapshot and its
    tail's overlay) and then commits its offset: killed in between, it committed nothing, and
    the next reader builds it again."""
    crash.seed(crash_templates["keyvalue"])
    if compacted:
        assert crash.ok("compact")["compacted"]
    expected = _later(crash, "keyvalue", 3)
    keys = ["a", "b", "c", "k0", "k1", "k2"]
    crash.crash("cache.ingested", "kill", "lookup", keys=keys)
    assert crash.ok("lookup", keys=keys)["rows"] == expected
    check_committed(crash, "keyvalue", expected)


@pytest.mark.parametrize(
    "step", ["compact.snapshot_written", "commit.before_record", "commit.after_record"]
)
def test_a_compaction_that_dies_changes_nothing_a_reader_sees(
    crash: Crash, crash_templates: Templates, step: str
) -> None:
    crash.seed(crash_templates["keyvalue"])
    crash.crash(step, "kill", "compact")
    log = fresh_log(crash.root)
    published = any(log.read(i).compaction for i in log.ids())
    assert published == (step == "commit.after_record")
    check_committed(crash, "keyvalue", TEMPLATE_ROWS)  # new caches start from any snapshot


def test_a_writer_killed_in_its_automatic_compaction_has_committed(
    crash: Crash, crash_templates: Templates
) -> None:
    crash.seed(crash_templates["keyvalue"])
    # The commit published its record, then compacted (more than one file to replay) and
    # died having written a snapshot file: the caller never heard back, so Spark aborts.
    lines = crash.crash("compact.snapshot_written", "kill", "append", kind="keyvalue", keys=CRASH_KEYS,
                        value=7, write_id="w-crash", compact_after_files=1)  # fmt: skip
    assert landed(crash.root, "w-crash")
    crash.abort("w-crash", lines, after=2)
    check_committed(crash, "keyvalue", merged(TEMPLATE_ROWS, CRASH_KEYS, 7))


#: A drop dies before its record (nothing happened), after it (the store is gone, its files
#: not yet), or after publishing and checking it, in each of the three ways.
DROP_CASES = [
    ("commit.before_record", "kill", False),
    ("commit.after_record", "kill", True),
    ("drop.after_record", "kill", True),
    ("drop.after_record", "interrupt", True),
    ("drop.after_record", "error", True),
]


@pytest.mark.parametrize(("step", "action", "dropped"), DROP_CASES)
def test_a_drop_that_dies_is_all_or_nothing_and_the_next_drop_finishes_it(
    crash: Crash, crash_templates: Templates, step: str, action: str, dropped: bool
) -> None:
    crash.seed(crash_templates["keyvalue"])
    crash.crash(step, action, "drop")
    catalog = Catalog(crash.root)
    if not dropped:
        assert catalog.list() == [STORE]
        check_committed(crash, "keyvalue", TEMPLATE_ROWS)
        return
    assert catalog.list() == []
    with pytest.raises(StoreNotFoundError):
        catalog.load(STORE)
    files = store_files(crash.root)
    # A first write to the name meanwhile fails and, aborted as Spark does, leaves nothing.
    code, lines, err = crash.run("create", kind="keyvalue", keys=["n"], value=5, write_id="early")
    assert code == 1 and "STORE_" in err, err[-2000:]
    crash.abort("early", lines, after=0)
    assert store_files(crash.root) - files == {"aborted/early"}
    assert Catalog(crash.root).list() == []
    crash.ok("drop")  # finishes the drop: nothing of the store is left
    assert not Path(crash.root, STORE).exists()
    crash.ok("create", kind="keyvalue", keys=["n"], value=1, write_id="w-new")
    check_committed(crash, "keyvalue", [["n", 1]])


@pytest.mark.parametrize("action", ["kill", "error"])
def test_a_vacuum_that_dies_midway_deletes_only_leftovers_and_the_next_finishes(
    crash: Crash, crash_templates: Templates, action: str
) -> None:
    crash.seed(crash_templates["keyvalue"])
    # Leftovers of three kinds: staged files of a dead writer, a record's temporary file, and
    # an abort marker with files of a write aborted in another process.
    crash.crash("stage.file_written", "kill", "append", kind="keyvalue", keys=["o"], value=5,
                write_id="orphan")  # fmt: skip
    crash.crash("commit.record_writing", "kill", "append", kind="keyvalue", keys=CRASH_KEYS,
                value=6, write_id="unlinked")  # fmt: skip
    lines = crash.crash("commit.before_record", "kill", "append", kind="keyvalue", keys=["q"],
                        value=7, write_id="aborted")  # fmt: skip
    crash.crash("abort.before_delete", "kill", "abort", write_id="aborted",
                files=lines[0]["staged"], after=2)  # fmt: skip
    leftovers = store_files(crash.root)
    assert any(f.endswith(".tmp") for f in leftovers) and "aborted/aborted" in leftovers
    crash.crash("vacuum.deleting", action, "vacuum")
    assert read_rows(crash.root, str(crash.base / "between")) == TEMPLATE_ROWS
    deleted = crash.ok("vacuum")["deleted"]  # the rest, now
    assert deleted and set(deleted) <= leftovers
    check_committed(crash, "keyvalue", TEMPLATE_ROWS)


@pytest.mark.parametrize("step", ["commit.before_record", "commit.after_record", "vacuum.deleting"])
def test_a_history_expiry_that_dies_leaves_the_latest_state_readable(
    crash: Crash, crash_templates: Templates, step: str
) -> None:
    crash.seed(crash_templates["keyvalue"])
    Catalog(crash.root, cache_dir=crash.cache).compact(STORE)  # commit 3: a snapshot of 2
    expected = _later(crash, "keyvalue", 1)  # commit 4
    crash.crash(step, "kill", "vacuum", retain_history_ms=0)
    log = fresh_log(crash.root)
    expired = log.read(log.latest_id()).operation == "expire"
    assert expired == (step != "commit.before_record")
    assert log.history_start() == (2 if expired else 1)
    assert read_rows(crash.root, str(crash.base / "between")) == expected
    crash.ok("vacuum", retain_history_ms=0)  # finishes the expiry
    commit_log._RECORDS.clear()
    assert fresh_log(crash.root).history_start() == 2
    assert read_rows(crash.root, str(crash.base / "after")) == expected
    gone = {f.path for f in fresh_log(crash.root).read(1).files}
    assert gone and not gone & store_files(crash.root)  # commit 1's files went, and only them
    table = Catalog(crash.root, cache_dir=crash.cache, compact_after_files=0).load(STORE)
    table.commit(table.stage(*rows_for("keyvalue", ["z"], 9)))
    assert read_rows(crash.root, str(crash.base / "next")) == merged(expected, ["z"], 9)


def _wait_ready(writers: dict[str, subprocess.Popen[str]], barrier: Path) -> None:
    """Until every writer waits at the barrier or has died (a file handshake, with a limit)."""
    deadline = time.monotonic() + 60
    while not all(
        proc.poll() is not None or (barrier / f"ready-{name}").exists()
        for name, proc in writers.items()
    ):
        assert time.monotonic() < deadline, "the writers never reached the barrier"
        time.sleep(0.005)


@pytest.mark.parametrize("step", WRITE_STEPS)
def test_concurrent_writers_with_one_killed_lose_no_acknowledged_write(
    crash: Crash, crash_templates: Templates, step: str
) -> None:
    crash.seed(crash_templates["keyvalue"])
    barrier = crash.base / "barrier"
    barrier.mkdir()
    crash.arm(step)  # the first writer to reach the step dies there
    writers = {
        f"p{n}": crash.start("append", kind="keyvalue", keys=[f"p{n}"], value=n,
                             write_id=f"p{n}", barrier=str(barrier))
        for n in range(4)
    }  # fmt: skip
    _wait_ready(writers, barrier)
    (barrier / "go").touch()  # the survivors commit at once, racing for the same ids
    acknowledged: dict[str, int] = {}
    killed = []
    for name, proc in writers.items():
        out, err = proc.communicate(timeout=60)
        if proc.returncode == 0:
            acknowledged[name] = json.loads(out.splitlines()[-1])["committed"]
        else:
            assert proc.returncode == -9, err[-2000:]
            killed.append(name)
    crash.assert_fired(step)
    assert len(killed) == 1 and len(acknowledged) == 3
    log = fresh_log(crash.root)
    for name, commit_id in acknowledged.items():
        assert log.read(commit_id).write_id == name  # its own id, given to nobody else
    dead_landed = landed(crash.root, killed[0])
    assert dead_landed == (step == "commit.after_record")
    assert log.ids() == list(range(1, 2 + len(acknowledged) + dead_landed + 1))
    crash.abort(killed[0], [], after=2)
    expected = TEMPLATE_ROWS
    for name in [*acknowledged, *killed[:dead_landed]]:
        expected = merged(expected, [name], int(name[1:]))
    check_committed(crash, "keyvalue", expected)


@pytest.mark.parametrize(
    "step", ["erase.staged", "commit.before_record", "commit.after_record", "erase.published"]
)
def test_an_erasure_killed_at_any_step_leaves_the_store_before_or_after_it(
    crash: Crash, crash_templates: Templates, step: str
) -> None:
    """Issue 38: an erasure is one commit. Killed before its record, the store is as before
    (its staged files are leftovers a vacuum deletes); after, the key is gone from every read,
    the crashed process's cache (built before it, holding the key) included."""
    crash.seed(crash_templates["versioned"])
    assert crash.ok("lookup", keys=["a", "b", "c"])["rows"]  # a cache holding the keys
    crash.crash(step, "kill", "erase", keys=["b"])
    log = fresh_log(crash.root)
    erased = any(log.read(i).operation == "erase" for i in log.ids())
    assert erased == (step in ("commit.after_record", "erase.published"))
    expected = [r for r in TEMPLATE_ROWS if r[0] != "b"] if erased else TEMPLATE_ROWS
    assert crash.ok("lookup", keys=["a", "b", "c"])["rows"] == expected
    check_committed(crash, "versioned", expected)
