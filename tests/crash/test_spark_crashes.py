"""The crash matrix through Spark: a Python worker killed while staging, the driver-side commit
process killed before or after the commit record, a whole application killed mid-commit, and a
streaming query killed mid-batch and restarted. The shared session's workers read their fault
rules from ``spark_faults`` (``tests/conftest.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from catalog import Catalog
from catalog.log import commits as commit_log

pytestmark = pytest.mark.spark


def _write(spark: Any, root: str, rows: list[tuple[str, int]]) -> None:
    df = spark.createDataFrame(rows, "key string, value bigint").repartition(2)
    df.write.format("state_store").option("root", root).mode("append").save("s")


def _rows(spark: Any, root: str) -> list[tuple[str, int]]:
    commit_log._RECORDS.clear()
    df = spark.read.format("state_store").option("root", root).load("s")
    return sorted((r["key"], r["value"]) for r in df.collect())


def _ids(root: str) -> list[int]:
    commit_log._RECORDS.clear()
    return Catalog(root).load("s").log.ids()


def _files_match_the_log(root: str) -> None:
    """Nothing under the store but what its records list, and abort markers."""
    commit_log._RECORDS.clear()
    log = Catalog(root).load("s").log
    listed = {f.path for i in log.ids() for f in log.read(i).files}
    store = Path(root, "s")
    found = {str(p.relative_to(store)) for p in store.rglob("*.arrow*")}
    assert found == listed


@pytest.mark.parametrize(
    ("step", "committed"),
    [("stage.file_written", False), ("commit.before_record", False), ("commit.after_record", True)],
)
def test_a_killed_worker_or_commit_process_leaves_exactly_the_committed_state(
    spark: Any, tmp_path: Path, spark_faults: Path, step: str, committed: bool
) -> None:
    root = str(tmp_path / "warehouse")
    _write(spark, root, [("a", 1), ("b", 1)])
    spark_faults.write_text(f"{step} kill\n")
    # local[2] runs each task once (spark.task.maxFailures does not apply in local mode): a
    # killed task fails the job, and so does a killed driver-side commit process.
    with pytest.raises(Exception, match="Python worker exited unexpectedly") as failed:
        _write(spark, root, [("b", 2), ("c", 2)])
    if step == "stage.file_written":
        assert "failed 1 times" in str(failed.value)  # not retried
    assert Path(f"{spark_faults}.fired").exists(), f"the fault at {step} never fired"
    # Spark aborted the write from another Python process (its marker is there); a write
    # whose record had landed kept every file, one that had not left nothing Spark reported.
    markers = list(Path(root, "s", "aborted").iterdir())
    assert len(markers) == 1
    before, after = [("a", 1), ("b", 1)], [("a", 1), ("b", 2), ("c", 2)]
    assert _rows(spark, root) == (after if committed else before)
    assert _ids(root) == ([1, 2] if committed else [1])
    if step != "stage.file_written":  # else the job's other task may still be running
        _files_match_the_log(root)
    _write(spark, root, [("d", 3)])
    assert _rows(spark, root) == sorted([*(after if committed else before), ("d", 3)])
    assert _ids(root) == ([1, 2, 3] if committed else [1, 2])


def _session_members(session: int) -> list[int]:
    """The live processes of a session: not a zombie, and no SIGKILL pending (a killed JVM
    can take a moment to unmap its heap and exit; it is already gone in effect)."""
    members = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and os.getsid(int(entry)) == session:
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state not in ("Z", "X") and not _sigkill_pending(int(entry)):
                    members.append(int(entry))
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            continue
    return members


def _sigkill_pending(pid: int) -> bool:
    """Whether SIGKILL is pending for ``pid`` (its thread's or its process's signal set)."""
    pending = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return bool(pending & (1 << (signal.SIGKILL - 1)))


def test_a_whole_application_killed_mid_commit(
    spark: Any, tmp_path: Path, spark_env: dict[str, str]
) -> None:
    root = str(tmp_path / "warehouse")
    _write(spark, root, [("a", 1)])
    rules = tmp_path / "app-faults"
    rules.write_text("commit.after_record killgroup\n")
    app = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("spark_app.py")), root],
        env={**spark_env, "STATE_STORE_FAULTS": str(rules)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    out, err = app.communicate(timeout=300)
    assert app.returncode == -9 and "not killed" not in out, err[-3000:]
    assert Path(f"{rules}.fired").exists()
    assert not _session_members(app.pid)  # driver JVM and every Python worker went with it
    # Nobody aborted: the record landed, so the write is committed, whole.
    assert _rows(spark, root) == [("a", 1), ("app", 1), ("b", 5)]
    _write(spark, root, [("c", 3)])
    assert _rows(spark, root) == [("a", 1), ("app", 1), ("b", 5), ("c", 3)]


def _stream(spark: Any, base: Path) -> Any:
    stream = spark.readStream.schema("key string, value long").json(str(base / "in"))
    return (
        stream.writeStream.format("state_store")
        .option("root", str(base / "wh"))
        .option("store", "s")
        .option("checkpointLocation", str(base / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )


def _add(base: Path, name: str, rows: list[tuple[str, int]]) -> None:
    (base / "in").mkdir(parents=True, exist_ok=True)
    (base / "in" / name).write_text("".join(json.dumps({"key": k, "value": v}) + "\n" for k, v in rows))


@pytest.mark.parametrize("step", ["stage.done", "commit.after_record"])
def test_a_streaming_query_killed_mid_batch_restarts_exactly_once(
    spark: Any, tmp_path: Path, spark_faults: Path, step: str
) -> None:
    _add(tmp_path, "0.json", [("a", 1)])
    query = _stream(spark, tmp_path)
    query.awaitTermination()
    _add(tmp_path, "1.json", [("b", 2), ("c", 3)])
    spark_faults.write_text(f"{step} kill\n")
    query = _stream(spark, tmp_path)
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException):  # the batch's process died
        query.awaitTermination()
    assert Path(f"{spark_faults}.fired").exists()
    os.unlink(f"{spark_faults}.fired")
    query = _stream(spark, tmp_path)  # restarted from its checkpoint: batch 1 again
    query.awaitTermination()
    assert query.exception() is None
    root = str(tmp_path / "wh")
    assert _rows(spark, root) == [("a", 1), ("b", 2), ("c", 3)]
    log = Catalog(root).load("s").log
    batches = [log.read(i).txn.version for i in log.ids()]  # type: ignore[union-attr]
    assert batches == [0, 1]  # batch 1 committed once, whether or not its record had landed
