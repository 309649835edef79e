"""The crash matrix through the catalog API: writers, readers, compactions, drops and vacuums
killed (SIGKILL, or interrupted, or failing) at each step, each in its own process. Afterwards
a fresh process reads exactly the committed state, as the log says it is, and the next write
succeeds without repair."""

from __future__ import annotations

from pathlib import Path

import pytest

from catalog import Catalog, commit_log
from tests.crash.conftest import Crash

WRITE_STEPS = [
    ("stage.file_written", "kill"),
    ("commit.before_record", "kill"),
    ("commit.record_writing", "kill"),
    ("commit.after_record", "kill"),
    ("commit.before_record", "error"),
    ("commit.after_record", "interrupt"),
    ("commit.after_record", "error"),
]


def _log(crash: Crash, store: str = "s") -> commit_log.CommitLog:
    commit_log._RECORDS.clear()  # as a new process would
    return Catalog(crash.root, cache_dir=crash.cache + "-check").load(store).log


def _setup(crash: Crash, kind: str) -> list[list[object]]:
    params = {"history_retention_ms": 86_400_000} if kind == "versioned" else {}
    crash.ok("create", store="s", kind=kind, params=params, keys=["a", "b"], value=1, write_id="w1")
    crash.ok("append", store="s", kind=kind, keys=["b", "c"], value=2, write_id="w2")
    rows: list[list[object]] = crash.ok("read", store="s")["rows"]
    assert rows == [["a", 1], ["b", 2], ["c", 2]]
    return rows


def _with(rows: list[list[object]], keys: list[str], value: int) -> list[list[object]]:
    merged = {k: v for k, v in rows} | dict.fromkeys(keys, value)
    return sorted([k, v] for k, v in merged.items())


def _check_after(crash: Crash, kind: str, expected: list[list[object]]) -> None:
    """A fresh process reads ``expected``; ids run 1..N; the next write and a vacuum work."""
    assert crash.ok("read", store="s")["rows"] == expected
    log = _log(crash)
    assert log.ids() == list(range(1, len(log.ids()) + 1))
    catalog = Catalog(crash.root, cache_dir=crash.cache, compact_after_files=0)
    table = catalog.load("s")
    from tests.crash.worker import rows_for

    table.commit(table.stage(*rows_for(kind, ["z"], 9)))
    after = _with(expected, ["z"], 9)
    assert _rows(catalog) == after
    catalog.vacuum("s", older_than_ms=0)
    assert _rows(Catalog(crash.root, cache_dir=crash.cache + "-after")) == after
    log = _log(crash)
    listed = {f.path for i in log.ids() for f in log.read(i).files}
    store = Path(crash.root, "s")
    on_disk = {str(p.relative_to(store)) for p in store.rglob("*.arrow")}
    assert on_disk == listed  # the vacuum left no orphan behind and kept every listed file


def _rows(catalog: Catalog) -> list[list[object]]:
    return sorted([r["key"], r["value"]] for r in catalog.load("s").to_arrow().to_pylist())


@pytest.mark.parametrize("kind", ["keyvalue", "versioned"])
@pytest.mark.parametrize(("step", "action"), WRITE_STEPS, ids=[f"{s}-{a}" for s, a in WRITE_STEPS])
def test_a_writer_dies_at_any_step_and_the_log_decides(
    crash: Crash, kind: str, step: str, action: str
) -> None:
    before = _setup(crash, kind)
    base = _log(crash).latest_id()
    crash.arm(step, action)
    code, lines, _ = crash.run("append", store="s", kind=kind, keys=["c", "x"], value=7,
                               write_id="w-crash")  # fmt: skip
    assert crash.fired, f"the fault at {step} never fired"
    assert code == -9 if action == "kill" else code != 0
    landed = _log(crash).find_write("w-crash") is not None
    assert landed == (step == "commit.after_record")
    expected = _with(before, ["c", "x"], 7) if landed else before
    # Spark calls abort from another process with whatever the task reported it staged.
    staged = lines[0]["staged"] if lines and "staged" in lines[0] else []
    crash.ok("abort", store="s", write_id="w-crash", files=staged, after=base)
    _check_after(crash, kind, expected)


@pytest.mark.parametrize("step", ["stage.file_written", "commit.before_record", "commit.after_record"])
def test_a_first_write_that_dies_leaves_a_store_only_if_its_record_landed(
    crash: Crash, step: str
) -> None:
    crash.arm(step)
    code, _, _ = crash.run("create", store="s", kind="keyvalue", keys=["a"], value=1, write_id="w1")
    assert crash.fired and code == -9
    exists = Catalog(crash.root, cache_dir=crash.cache).list() == ["s"]
    assert exists == (step == "commit.after_record")
    if not exists:
        crash.ok("create", store="s", kind="keyvalue", keys=["a"], value=2, write_id="w2")
    expected = [["a", 1 if step == "commit.after_record" else 2]]
    _check_after(crash, "keyvalue", expected)


@pytest.mark.parametrize("step", ["cache.applied", "scan.writing"])
def test_a_reader_killed_while_it_builds_its_cache_leaves_a_usable_cache(
    crash: Crash, step: str
) -> None:
    before = _setup(crash, "versioned")
    for n in range(3):
        crash.ok("append", store="s", kind="versioned", keys=[f"k{n}"], value=n, write_id=f"m{n}")
    expected = _with(before, ["k0", "k1", "k2"], 0)
    expected = _with(_with(expected, ["k1"], 1), ["k2"], 2)
    import shutil

    shutil.rmtree(crash.cache, ignore_errors=True)  # a fresh machine
    crash.arm(step)
    code, _, _ = crash.run("read", store="s")
    assert crash.fired and code == -9
    assert crash.ok("read", store="s")["rows"] == expected  # the same cache directory
    _check_after(crash, "versioned", expected)


@pytest.mark.parametrize("step", ["commit.before_record", "commit.after_record"])
def test_a_compaction_killed_changes_nothing_a_reader_sees(crash: Crash, step: str) -> None:
    before = _setup(crash, "keyvalue")
    crash.arm(step)
    code, _, _ = crash.run("compact", store="s")
    assert crash.fired and code == -9
    landed = any(_log(crash).read(i).compaction for i in _log(crash).ids())
    assert landed == (step == "commit.after_record")
    import shutil

    shutil.rmtree(crash.cache, ignore_errors=True)  # a new reader starts from the snapshot
    _check_after(crash, "keyvalue", before)


def test_a_drop_killed_after_its_record_is_finished_by_the_next_drop(crash: Crash) -> None:
    _setup(crash, "keyvalue")
    crash.arm("drop.after_record")
    code, _, _ = crash.run("drop", store="s")
    assert crash.fired and code == -9
    assert Catalog(crash.root).list() == []
    crash.ok("drop", store="s")
    crash.ok("create", store="s", kind="keyvalue", keys=["n"], value=1, write_id="w-new")
    _check_after(crash, "keyvalue", [["n", 1]])


def test_a_vacuum_killed_midway_is_finished_by_the_next(crash: Crash) -> None:
    before = _setup(crash, "keyvalue")
    crash.arm("stage.file_written")
    crash.run("append", store="s", kind="keyvalue", keys=["o"], value=5, write_id="orphan")
    crash.arm("vacuum.deleting")
    code, _, _ = crash.run("vacuum", store="s")
    assert crash.fired and code == -9
    assert crash.ok("vacuum", store="s")["deleted"]  # the orphan, now
    _check_after(crash, "keyvalue", before)


def test_concurrent_writers_with_one_killed_lose_no_acknowledged_write(crash: Crash) -> None:
    before = _setup(crash, "keyvalue")
    crash.arm("commit.before_record")  # the first writer to get there dies
    writers = [
        crash.start("append", store="s", kind="keyvalue", keys=[f"p{n}"], value=n, write_id=f"p{n}")
        for n in range(4)
    ]
    acknowledged = []
    for n, proc in enumerate(writers):
        proc.communicate(timeout=120)
        if proc.returncode == 0:
            acknowledged.append(n)
    assert crash.fired and len(acknowledged) == 3
    log = _log(crash)
    published = [log.read(i).write_id for i in log.ids()]
    assert sorted(w for w in published if w.startswith("p")) == [f"p{n}" for n in acknowledged]
    expected = before
    for n in acknowledged:
        expected = _with(expected, [f"p{n}"], n)
    _check_after(crash, "keyvalue", expected)
