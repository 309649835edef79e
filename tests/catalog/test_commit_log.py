"""The commit log's guarantees: checked records, a chain without gaps, confined paths, aborts that
ask the log, idempotent writes, drops that no commit outlives, and vacuum."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

from catalog import Catalog, StoreTable, faults
from catalog.log.commits import CommitLog
from catalog.log.paths import COMMITS_DIR, record_name
from catalog.log.records import Txn, seal
from stores.errors import (
    CorruptDataError,
    InvalidOptionError,
    StoreNotFoundError,
)


def _kv(catalog: Catalog, partitions: int = 2) -> StoreTable:
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=partitions)
    table.commit(table.stage(pa.array(["a", "b", "c"]), pa.array([1, 2, 3]), None))
    table.commit(table.stage(pa.array(["a"]), pa.array([10]), None))
    return table


def _record_path(warehouse: str, commit_id: int) -> Path:
    return Path(warehouse, "kv", COMMITS_DIR, record_name(commit_id))


def _fresh(catalog: Catalog, tmp_path: Path) -> Catalog:
    """Another process's view: no cached records, its own cache directory."""
    from catalog.log import commits as commit_log

    commit_log._RECORDS.clear()
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
    return Catalog(catalog.root, cache_dir=str(tmp_path / "cache"))


def _edit(path: Path, change, reseal: bool = False) -> None:  # type: ignore[no-untyped-def]
    raw = json.loads(path.read_bytes())
    raw.pop("checksum")
    change(raw)
    path.write_bytes(seal(raw) if reseal else json.dumps({**raw, "checksum": "crc32:00000000"}).encode())


def _rows(table: StoreTable) -> list[tuple[object, object]]:
    return sorted((r["key"], r["value"]) for r in table.to_arrow().to_pylist())


# -- tampering is detected ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.update(operation="overwrite"),
        lambda r: r["files"][0].update(partition=1 - r["files"][0]["partition"]),
        lambda r: r["files"][0].update(rows=99),
        lambda r: r.update(id=7),
    ],
    ids=["operation", "partition", "rows", "id"],
)
def test_an_edited_record_fails_its_checksum(catalog: Catalog, warehouse: str, tmp_path: Path, change) -> None:  # type: ignore[no-untyped-def]
    _kv(catalog)
    _edit(_record_path(warehouse, 2), change)
    with pytest.raises(CorruptDataError, match=r"\[CORRUPT_DATA\].*00000000000000000002.json fails its checksum"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


def test_an_edited_spec_fails_its_checksum(catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    _kv(catalog)
    _edit(_record_path(warehouse, 1), lambda r: r["spec"].update(num_partitions=3))
    with pytest.raises(CorruptDataError, match="fails its checksum"):
        _fresh(catalog, tmp_path).load("kv")
    _edit(_record_path(warehouse, 1), lambda r: r["spec"].update(value_type="double"))
    with pytest.raises(CorruptDataError, match="fails its checksum"):
        _fresh(catalog, tmp_path).load("kv")


def test_a_deleted_record_is_a_gap_never_skipped(catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    table = _kv(catalog)
    table.commit(table.stage(pa.array(["d"]), pa.array([4]), None))
    _record_path(warehouse, 2).unlink()
    with pytest.raises(CorruptDataError, match=r"\[COMMIT_LOG_GAP\].*missing commit\(s\) 2"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


def test_reordered_or_replaced_records_break_the_chain(catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    _kv(catalog)
    second, third = _record_path(warehouse, 2), _record_path(warehouse, 3)
    a, b = second.read_bytes(), third.read_bytes()
    second.write_bytes(b)
    third.write_bytes(a)
    with pytest.raises(CorruptDataError, match=r"holds commit \d, not \d"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()
    second.write_bytes(a)
    third.write_bytes(b)
    # A resealed record with a consistent id but another predecessor: the chain breaks.
    _edit(third, lambda r: r.update(prev="crc32:12345678"), reseal=True)
    with pytest.raises(CorruptDataError, match=r"\[COMMIT_LOG_GAP\].*does not follow record 2"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


def test_a_record_of_another_store_is_refused(catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    _kv(catalog)
    other = catalog.create_store("other", "keyvalue", "string", "long", num_partitions=2)
    other.commit(other.stage(pa.array(["x"]), pa.array([1]), None))
    shutil.copy(Path(warehouse, "other", COMMITS_DIR, record_name(2)), _record_path(warehouse, 2))
    with pytest.raises(CorruptDataError, match="belongs to store id"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


# -- paths from data stay inside their roots -----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../../x.arrow", "/etc/passwd", "changelog/00000/../../../x.arrow",
        "changelog/00001/a.arrow", "changelog/tasks/../../x.arrow", "changelog/tasks/a/b.arrow",
        "snapshot/tasks/a.arrow",
    ],
)  # fmt: skip
def test_a_record_cannot_send_a_read_outside_the_store(
    catalog: Catalog, warehouse: str, tmp_path: Path, path: str
) -> None:
    _kv(catalog, partitions=1)
    # Even a record resealed with a valid checksum is refused: paths are checked, not trusted.
    _edit(_record_path(warehouse, 2), lambda r: r["files"][0].update(path=path), reseal=True)
    with pytest.raises(CorruptDataError, match=r"\[UNSAFE_PATH\]"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


def test_a_task_file_piece_for_a_negative_partition_is_refused(
    catalog: Catalog, warehouse: str, tmp_path: Path
) -> None:
    _kv(catalog)
    _edit(_record_path(warehouse, 3), lambda r: r["files"][0].update(partition=-1), reseal=True)
    with pytest.raises(CorruptDataError, match=r"\[UNSAFE_PATH\]"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


def test_a_piece_size_from_a_record_is_checked_not_allocated(
    catalog: Catalog, warehouse: str, tmp_path: Path
) -> None:
    """A resealed record that claims a huge piece gets the file's bytes compared with it,
    not a terabyte buffer."""
    _kv(catalog, partitions=1)
    _edit(_record_path(warehouse, 3), lambda r: r["files"][0].update(size=1 << 40), reseal=True)
    with pytest.raises(CorruptDataError, match="does not match its commit record"):
        _fresh(catalog, tmp_path).load("kv").to_arrow()


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "../kv"), ("store_id", "../../tmp"), ("store_id", "/abs")],
)
def test_a_spec_cannot_name_paths_outside_the_roots(
    catalog: Catalog, warehouse: str, tmp_path: Path, field: str, value: str
) -> None:
    _kv(catalog)

    def change(raw: dict) -> None:  # type: ignore[type-arg]
        raw["spec"][field] = value
        if field == "store_id":
            raw["store_id"] = value

    _edit(_record_path(warehouse, 1), change, reseal=True)
    with pytest.raises(CorruptDataError, match=r"\[UNSAFE_PATH\]"):
        _fresh(catalog, tmp_path).load("kv")


def test_store_names_and_write_ids_from_callers_are_checked(catalog: Catalog) -> None:
    for bad in ("..", "../x", "a/b", ".hidden", ""):
        with pytest.raises(InvalidOptionError, match=r"\[INVALID_STORE_NAME\]"):
            catalog.load(bad)
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    with pytest.raises(InvalidOptionError, match="write id"):
        table.stage(pa.array(["a"]), pa.array([1]), None, write_id="../../x")


# -- aborts ask the log ------------------------------------------------------------------------


def test_abort_after_the_record_landed_keeps_the_commit(catalog: Catalog, warehouse: str, tmp_path: Path) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long", num_partitions=2)
    base = table.log.latest_id()
    files = table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None, write_id="w1")
    extra = table.stage(pa.array(["z"]), pa.array([0]), None, write_id="w1", sequence=7)  # a lost task
    table.commit(files, write_id="w1")
    # Spark calls abort in another process after the committing process died past the record.
    _fresh(catalog, tmp_path).load("kv").abort_write("w1", files + extra, base)
    assert _rows(_fresh(catalog, tmp_path).load("kv")) == [("a", 1), ("b", 2)]
    assert not Path(warehouse, "kv", extra[0].path).exists()  # unlisted files of the write go
    again = _fresh(catalog, tmp_path).load("kv")
    again.commit(again.stage(pa.array(["c"]), pa.array([3]), None))
    assert _rows(again) == [("a", 1), ("b", 2), ("c", 3)]


def test_an_interrupt_after_the_record_loses_nothing(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from datasource.options import StoreOptions
    from datasource.writer import StateStoreWriter

    schema = StructType([StructField("key", StringType()), StructField("value", LongType())])
    options = StoreOptions.parse({"store": "kv", "root": catalog.root, "numPartitions": "2"})
    monkeypatch.setenv("STATE_STORE_CACHE_DIR", str(tmp_path / "cache"))
    writer = StateStoreWriter.plan(options, schema, overwrite=False)
    batch = pa.RecordBatch.from_pydict({"key": ["a", "b"], "value": [1, 2]})
    message = writer.write(iter([batch]))
    rules = tmp_path / "faults"
    rules.write_text("commit.after_record interrupt\n")
    monkeypatch.setenv(faults.ENV, str(rules))
    with pytest.raises(KeyboardInterrupt):
        writer.commit([message])
    writer.abort([message])  # Spark's abort after the failed commit
    assert _rows(_fresh(catalog, tmp_path).load("kv")) == [("a", 1), ("b", 2)]


def test_abort_of_an_uncommitted_write_deletes_its_files(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")
    files = table.stage(pa.array(["a"]), pa.array([1]), None, write_id="w1")
    table.abort_write("w1", files, table.log.latest_id())
    assert not list(Path(warehouse).rglob("*.arrow")) and table.was_aborted("w1")


# -- idempotent writes ---------------------------------------------------------------------------


def test_a_write_already_committed_for_its_app_version_is_skipped(catalog: Catalog, warehouse: str) -> None:
    table = catalog.create_store("kv", "keyvalue", "string", "long")

    def write(value: int, txn: Txn) -> object:
        return table.commit(table.stage(pa.array(["a"]), pa.array([value]), None), txn=txn)

    assert write(1, Txn("job", 1)) is not None
    assert write(2, Txn("job", 1)) is None  # the re-run: skipped, its files deleted
    assert write(3, Txn("job", 0)) is None  # an older version too
    assert write(4, Txn("other", 1)) is not None  # app ids are independent
    assert _rows(table) == [("a", 4)]
    assert write(5, Txn("job", 2)) is not None
    assert table.log.read(table.log.latest_id()).txns == {"job": 2, "other": 1}
    listed = {f.path for i in table.log.ids() for f in table.log.read(i).files}
    assert {str(p.relative_to(Path(warehouse, "kv"))) for p in Path(warehouse, "kv").rglob("*.arrow")} == listed


def test_txn_options_come_in_pairs() -> None:
    from datasource.options import StoreOptions

    with pytest.raises(InvalidOptionError, match=r"\[MISSING_OPTION\].*'txnAppId' and 'txnVersion'"):
        StoreOptions.parse({"store": "s", "txnAppId": "a"})
    with pytest.raises(InvalidOptionError, match="'txnVersion'.*whole number"):
        StoreOptions.parse({"store": "s", "txnAppId": "a", "txnVersion": "-1"})
    parsed = StoreOptions.parse({"store": "s", "txnappid": "a", "TXNVERSION": "3"})
    assert (parsed.txn_app_id, parsed.txn_version) == ("a", 3)


# -- first writes, drops -----------------------------------------------------------------------


def test_a_first_write_that_dies_before_its_record_leaves_no_store(catalog: Catalog) -> None:
    table = StoreTable(catalog, catalog.new_spec("kv", "keyvalue", "string", "long"))
    table.stage(pa.array(["a"]), pa.array([1]), None, write_id="w1")
    assert catalog.list() == [] and not catalog.exists("kv")
    with pytest.raises(StoreNotFoundError):
        catalog.load("kv")
    record = table.commit(table.stage(pa.array(["b"]), pa.array([2]), None), creates=True)
    assert record is not None and record.id == 1 and record.operation == "create"
    assert _rows(catalog.load("kv")) == [("b", 2)]


def test_a_drop_racing_a_commit_never_acknowledges_lost_data(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _kv(catalog)
    files = table.stage(pa.array(["x"]), pa.array([9]), None)
    dropped = []

    def drop_first(step: str) -> None:
        if step == "commit.before_record" and not dropped:
            dropped.append(step)
            monkeypatch.setattr(faults, "point", lambda step: None)
            Catalog(catalog.root, cache_dir=catalog.cache_dir).drop("kv")

    monkeypatch.setattr(faults, "point", drop_first)
    with pytest.raises(StoreNotFoundError, match="dropped while this write committed"):
        table.commit(files)
    assert catalog.list() == []
    assert not [p for p in Path(catalog.root[len("file://"):]).rglob("*") if p.is_file()]


def test_a_writer_after_a_drop_record_fails(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _kv(catalog)
    rules = Path(catalog.root[len("file://"):]).parent / "faults"
    rules.write_text("drop.after_record error\n")
    monkeypatch.setenv(faults.ENV, str(rules))
    with pytest.raises(OSError):
        catalog.drop("kv")  # dies right after publishing its drop record
    with pytest.raises(StoreNotFoundError):
        table.commit(table.stage(pa.array(["x"]), pa.array([9]), None))
    assert catalog.list() == []
    catalog.drop("kv")  # finishes the drop
    assert not Path(catalog.root[len("file://"):], "kv").exists()


# -- vacuum ------------------------------------------------------------------------------------


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_vacuum_removes_old_leftovers_only(catalog: Catalog, warehouse: str) -> None:
    table = _kv(catalog)
    listed = {f.path for i in table.log.ids() for f in table.log.read(i).files}
    dead = table.stage(pa.array(["d"]), pa.array([4]), None, write_id="dead")
    table.abort_write("other", [], table.log.latest_id())  # a marker
    young = table.stage(pa.array(["y"]), pa.array([5]), None, write_id="running")
    tmp = Path(warehouse, "kv", COMMITS_DIR, "00000000000000000004.json.abc.tmp")
    tmp.write_bytes(b"half")
    for p in Path(warehouse, "kv").rglob("*"):
        if p.is_file() and "running" not in p.name:
            _age(p, 3600)
    dry = catalog.vacuum("kv", older_than_ms=600_000, dry_run=True)[0]
    expected = {dead[0].path, "aborted/other", f"{COMMITS_DIR}/{tmp.name}"}
    assert set(dry.deleted) == expected and dry.kept_young == 1 and dry.dry_run
    assert Path(warehouse, "kv", dead[0].path).exists()  # a dry run deletes nothing
    done = catalog.vacuum("kv", older_than_ms=600_000)[0]
    assert set(done.deleted) == expected
    remaining = {str(p.relative_to(Path(warehouse, "kv"))) for p in Path(warehouse, "kv").rglob("*.arrow")}
    assert remaining == listed | {young[0].path}
    assert _rows(table) == [("a", 10), ("b", 2), ("c", 3)]  # every listed file kept


def test_vacuum_clears_a_failed_first_write(catalog: Catalog, warehouse: str) -> None:
    table = StoreTable(catalog, catalog.new_spec("kv", "keyvalue", "string", "long"))
    files = table.stage(pa.array(["a"]), pa.array([1]), None, write_id="w")
    table.abort_write("w", files)
    table.stage(pa.array(["b"]), pa.array([2]), None, write_id="w2")  # never committed, never aborted
    assert catalog.vacuum("kv", older_than_ms=600_000)[0].kept_young == 2
    for p in Path(warehouse, "kv").rglob("*"):
        if p.is_file():
            _age(p, 3600)
    catalog.vacuum(older_than_ms=600_000)
    assert not Path(warehouse, "kv").exists()


def test_the_command_line_lists_describes_shows_history_and_vacuums(
    catalog: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    from catalog.cli import main

    _kv(catalog)
    assert main(["--root", catalog.root, "list"]) == 0 and capsys.readouterr().out.strip() == "kv"
    assert main(["--root", catalog.root, "--json", "history", "kv"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert [h["version"] for h in history] == [3, 2, 1] and history[-1]["operation"] == "create"
    assert main(["--root", catalog.root, "--json", "vacuum", "kv", "--dry-run", "--older-than", "1h"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["deleted_files"] == 0
    assert main(["--root", catalog.root, "describe", "nope"]) == 1
    assert "[STORE_NOT_FOUND]" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["--root", catalog.root, "frobnicate"])
    assert usage.value.code == 2


def test_creating_an_existing_store_is_refused_and_changes_nothing(catalog: Catalog) -> None:
    from stores.errors import StoreAlreadyExistsError

    table = _kv(catalog)
    with pytest.raises(StoreAlreadyExistsError):
        catalog.create_store("kv", "keyvalue", "string", "long")
    log = CommitLog(catalog.storage, "kv")
    assert log.first().store_id == table.spec.store_id and log.latest_id() == 3


def test_the_command_line_queries_keys_and_drops_with_confirmation(
    catalog: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    from catalog.cli import main

    rates = catalog.create_store("rates", "versioned", "string", "double", 2,
                                 history_retention_ms=86_400_000)  # fmt: skip
    rates.commit(rates.stage(pa.array(["EUR", "EUR"]), pa.array([1.1, 1.2]),
                             {"timestamp": pa.array([1000, 2000], pa.int64())}))  # fmt: skip
    clicks = catalog.create_store("clicks", "window", "string", "long", window_size_ms=60_000,
                                  retention_ms=86_400_000)  # fmt: skip
    clicks.commit(clicks.stage(pa.array(["home", "home"]), pa.array([3, 5]),
                               {"window_start": pa.array([0, 60_000], pa.int64())}))  # fmt: skip

    def run(*argv: str) -> tuple[int, object]:
        code = main(["--root", catalog.root, "--json", *argv])
        out = capsys.readouterr().out
        return code, json.loads(out) if out else None

    assert run("query", "rates", "EUR")[1] == {
        "store": "rates", "key": "EUR", "result": {"value": 1.2, "timestamp": 2000, "valid_to": None}
    }  # fmt: skip
    assert run("query", "rates", "EUR", "--as-of", "1970-01-01T00:00:01.5Z")[1]["result"]["value"] == 1.1  # type: ignore[index]
    assert run("query", "rates", "GBP")[1]["result"] is None  # type: ignore[index]
    assert run("query", "clicks", "home", "--to", "0")[1]["result"] == [{"key": 0, "value": 3}]  # type: ignore[index]
    assert run("drop", "clicks") == (1, None)  # asks for --yes
    assert run("drop", "clicks", "--yes")[0] == 0
    assert catalog.list() == ["rates"]


# -- the log stands alone ----------------------------------------------------------------------
