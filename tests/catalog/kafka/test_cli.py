"""The command line's Kafka Streams commands: ``kafka-export`` writes a store as an application's
task directories, ``kafka-import`` makes a store of them (keeping the offsets found), and
``kafka-offsets`` shows them with the ``startingOffsets`` a Spark read continues from."""

from __future__ import annotations

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
