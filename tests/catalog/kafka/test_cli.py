"""The command line's Kafka Streams commands: ``kafka-export`` writes a store as an application's
task directories, ``kafka-import`` makes a store of them (keeping the offsets found),
``kafka-offsets`` shows them with the ``startingOffsets`` a Spark read continues from, and
``kafka-rescale`` and ``kafka-move`` rewrite a store to another partition count and move it to a
new application id."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.cli import main


def test_export_import_and_offsets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(tmp_path / "w")
    table = Catalog(root).create_store(
        "views", "window", "string", "long", 2, partitioner="kafka",
        retention_ms=86_400_000, window_size_ms=60_000,
    )  # fmt: skip
    records = pa.table({
        "key": [b"ada\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", b"bob" + bytes(12)],
        "value": [(3).to_bytes(8, "big"), (4).to_bytes(8, "big")],
        "topic": ["src", "src"], "partition": pa.array([0, 0], pa.int32()),
        "offset": pa.array([0, 1], pa.int64()), "timestamp": pa.array([5, 6], pa.int64()),
    })  # fmt: skip
    table.import_kafka_changelog(records)
    state = str(tmp_path / "state")
    assert main(["--root", root, "--json", "kafka-export", "views", state, "--application-id",
                 "app", "--kafka-version", "3.9.1", "--offset", "0=7", "--offset", "1=8"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(Path(d).name for d in out["task_dirs"]) == ["0_0", "0_1"]
    assert (tmp_path / "state" / "app" / "0_0" / ".checkpoint").read_text().splitlines() == [
        "0", "1", "app-views-changelog 0 7"]  # fmt: skip

    assert main(["--root", root, "--json", "kafka-import", state, "--application-id", "app",
                 "--store", "views", "--kind", "window", "--option", "retention=1 day",
                 "--option", "windowSize=1 minute", "--key-type", "string",
                 "--value-type", "long", "--as", "views_copy"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["offsets"] == {
        "app-views-changelog-0": 7, "app-views-changelog-1": 8}  # fmt: skip
    copy = Catalog(root).load("views_copy").to_arrow()
    assert sorted(zip(copy.column("key").to_pylist(), copy.column("value").to_pylist())) == [
        ("ada", 3), ("bob", 4)]  # fmt: skip

    assert main(["--root", root, "--json", "kafka-offsets", "views_copy"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert json.loads(shown["startingOffsets"]) == {"app-views-changelog": {"0": 8, "1": 9}}

    # Bad input: named, and nothing made.
    assert main(["--root", root, "kafka-import", state, "--application-id", "app", "--store",
                 "views", "--kind", "window", "--option", "size=1"]) == 1  # fmt: skip
    assert "no store parameter" in capsys.readouterr().err
    assert main(["--root", root, "kafka-import", state, "--application-id", "app", "--store",
                 "views", "--kind", "keyvalue", "--as", "wrong"]) == 1  # fmt: skip
    assert "WRONG_STORE_KIND" in capsys.readouterr().err
    assert not Catalog(root).exists("wrong")


class Terminal(io.StringIO):
    """A stderr that says it is a terminal (the bar shows)."""

    def isatty(self) -> bool:
        return True


def test_rescale_and_move(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kafka-rescale`` (a dry run, the commit, the same count again) and ``kafka-move``
    (records to a file, the new application's task directories), with their bars on a
    terminal; refusals exit 1 naming their code and leave nothing."""
    root = str(tmp_path / "w")
    table = Catalog(root).create_store("counts", "keyvalue", "string", "long", 2,
                                       partitioner="kafka")  # fmt: skip
    keys = [f"k{i}" for i in range(40)]
    table.commit(table.stage(pa.array(keys), pa.array(range(40), pa.int64())))
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["--root", root, "kafka-rescale", "counts", "--partitions", "5", "--dry-run"]) == 0
    shown = capsys.readouterr().out
    assert "dry_run: True" in shown and "rows: 40" in shown and "moved: " in shown
    assert "rescale counts: 100%" in terminal.getvalue()
    assert Catalog(root).load("counts").spec.num_partitions == 2
    assert main(["--root", root, "--json", "kafka-rescale", "counts", "--partitions", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["rescaled"], out["from"], out["to"], out["rows"]) == (True, 2, 5, 40)
    assert main(["--root", root, "--json", "kafka-rescale", "counts", "--partitions", "5"]) == 0
    assert json.loads(capsys.readouterr().out)["rescaled"] is False
    assert main(["--root", root, "kafka-rescale", "counts", "--partitions", "0"]) == 1
    assert "INVALID_PARTITION_COUNT" in terminal.getvalue()  # (stderr)

    state = str(tmp_path / "state")
    assert main(["--root", root, "--json", "kafka-export", "counts", state, "--application-id",
                 "old", "--kafka-version", "4.3.1"]) == 0  # fmt: skip
    capsys.readouterr()
    move = ["--root", root, "kafka-move", state, "--application-id", "old", "--store", "counts",
            "--kind", "keyvalue", "--key-type", "string", "--value-type", "long",
            "--to-state-dir", state, "--to-application-id", "new", "--kafka-version", "4.3.1",
            "--partitions", "3", "--as", "moved"]  # fmt: skip
    records = str(tmp_path / "new-counts.parquet")
    terminal.seek(0)
    terminal.truncate()
    assert main([*move, "--records", records]) == 0
    shown = capsys.readouterr().out
    assert "move counts: 100%" in terminal.getvalue() and "state directory" in terminal.getvalue()
    assert "changelog_topic: new-counts-changelog" in shown
    assert sorted(p.name for p in (tmp_path / "state" / "new").iterdir() if p.name[0] != ".") == [
        "0_0", "0_1", "0_2"]  # fmt: skip
    moved = Catalog(root).load("moved")
    assert moved.spec.num_partitions == 3 and moved.to_arrow().num_rows == 40
    assert main([*move, "--records", str(tmp_path / "again.parquet"), "--as", "again"]) == 1
    assert "STORE_DIR_EXISTS" in terminal.getvalue()
    assert not Catalog(root).exists("again") and not (tmp_path / "again.parquet").exists()
