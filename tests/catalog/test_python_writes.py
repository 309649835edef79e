"""Writes without Spark (issue 39): ``StoreTable.append``, ``overwrite`` and ``delete`` from
Arrow, pandas and polars, with a Spark write's column rules, commit and clean-up, for every
kind; reads handed on as a ``RecordBatchReader``."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from catalog.operations import python_write
from catalog.table import Table
from stores.errors import CommitConflictError, InvalidOptionError
from stores.formats.headers import encode_headers
from tests.catalog.kafka.test_rescale import everything
from tests.catalog.kafka.test_state_dir import VARIANTS

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def rows_of(variant: str, seed: int, n: int = 200) -> pa.Table:
    """``n`` rows of a write to ``variant`` (times as TIMESTAMP with a zone, headers typed),
    over 30 keys, some deletes, a key repeated with several values."""
    kind, params = VARIANTS[variant]
    rng = random.Random(seed)
    keys = [f"k{rng.randrange(30)}" for _ in range(n)]
    values = [None if rng.random() < 0.15 and kind not in ("window", "session")
              else rng.randrange(10**6) for _ in range(n)]  # fmt: skip
    times = [rng.randrange(5000) for _ in range(n)]
    cols: dict[str, Any] = {"key": pa.array(keys), "value": pa.array(values, pa.int64())}

    def stamps(ms: list[int]) -> pa.Array:
        return pa.array(ms, pa.int64()).cast(pa.timestamp("ms", tz="UTC"))

    if kind in ("timestamped", "versioned") or params.get("timestamped"):
        cols["timestamp"] = stamps(times)
    if kind == "window":
        cols["window_start"] = stamps([t - t % 100 for t in times])
    if kind == "session":
        cols["session_start"] = stamps(times)
        cols["session_end"] = stamps([t + rng.randrange(300) for t in times])
    if params.get("headers"):
        cols["headers"] = pa.array(
            [[{"key": "h", "value": str(t).encode()}] * (t % 3) for t in times], HEADERS_TYPE
        )
    return pa.table(cols)


def staged_as_before(table: Table, rows: pa.Table) -> None:
    """``rows`` written through ``Table.stage`` and ``commit``: the reference path."""
    columns = {}
    for name in rows.column_names[2:]:
        column = rows.column(name).combine_chunks()
        if name == "headers":
            columns[name] = pa.array(
                [encode_headers([(h["key"], h["value"]) for h in r]) for r in column.to_pylist()],
                pa.binary(),
            )
        else:
            columns[name] = column.cast(pa.int64())
    table.commit(table.stage(rows.column("key").combine_chunks(),
                             rows.column("value").combine_chunks(), columns))  # fmt: skip


def new_store(tmp_path: Path, name: str, variant: str) -> StoreTable:
    kind, params = VARIANTS[variant]
    catalog = Catalog(str(tmp_path / name), cache_dir=str(tmp_path / "cache"))
    return catalog.create_store("s", kind, "string", "long", 2, partitioner="kafka", **params)


def store_files(table: StoreTable) -> list[Path]:
    root = Path(table.catalog.root.removeprefix("file://").removeprefix("file:"))
    return sorted(p for p in (root / "s" / "changelog").rglob("*") if p.is_file())


FORMS = {
    "arrow": lambda t: t,
    "reader": lambda t: pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=7)),
    # (pandas' nullable integers: int64 with a null is float64 otherwise, which a store of
    # bigint refuses as Spark would)
    "pandas": lambda t: t.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get),
    "polars": lambda t: pl.from_arrow(t),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_an_append_reads_as_the_same_rows_staged_and_committed(
    tmp_path: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each form of the same rows (Arrow, a reader of small batches, pandas, polars) reads as
    the reference; the rows are cut into many runs staged by threads, and the last row of a
    key still wins."""
    monkeypatch.setattr(python_write, "RUN_BYTES", 512)  # a run per few rows
    reference = new_store(tmp_path, "reference", variant)
    for seed in (1, 2):
        staged_as_before(reference, rows_of(variant, seed))
    for form, convert in FORMS.items():
        table = new_store(tmp_path, form, variant)
        for seed in (1, 2):
            record = table.append(convert(rows_of(variant, seed)))
            assert record is not None and record.operation == "append"
        assert len({f.path for f in table.log.read(2).files}) > 2  # several runs
        assert everything(table) == everything(reference), form


def test_the_last_row_of_a_key_wins_across_runs_and_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(python_write, "RUN_BYTES", 256)
    table = new_store(tmp_path, "w", "keyvalue")
    n = 3000
    record = table.append(pa.table({"key": [f"k{i % 7}" for i in range(n)], "value": list(range(n))}))
    assert record is not None and len({f.path for f in record.files}) > 50
    assert sorted((r["key"], r["value"]) for r in table.to_arrow().to_pylist()) == sorted(
        (f"k{i % 7}", i) for i in range(n - 7, n)
    )


def test_overwrite_replaces_the_contents_and_history_keeps_the_old(tmp_path: Path) -> None:
    table = new_store(tmp_path, "w", "keyvalue")
    table.append(pa.table({"key": ["a", "b"], "value": [1, 2]}))
    record = table.overwrite(pl.DataFrame({"key": ["c"], "value": [3]}))
    assert record is not None and record.operation == "overwrite"
    assert table.to_arrow().to_pylist() == [{"key": "c", "value": 3}]
    assert sorted(r["key"] for r in everything(table, 2)) == ["a", "b"]
    table.overwrite(pa.table({"key": pa.array([], pa.string()), "value": pa.array([], pa.int64())}))
    assert table.to_arrow().num_rows == 0


def test_transaction_ids_skip_a_version_committed_already(tmp_path: Path) -> None:
    table = new_store(tmp_path, "w", "keyvalue")
    rows = pa.table({"key": ["a"], "value": [1]})
    assert table.append(rows, txn_app_id="loader", txn_version=3) is not None
    assert table.append(rows, txn_app_id="loader", txn_version=3) is None
    assert table.append(pa.table({"key": ["a"], "value": [9]}), txn_app_id="loader",
                        txn_version=2) is None  # fmt: skip
    assert table.to_arrow().to_pylist() == [{"key": "a", "value": 1}]
    assert len({f.path for c in table.log.ids() for f in table.log.read(c).files}) == len(
        [p for p in store_files(table) if p.suffix == ".arrow"]
    )  # the skipped writes left no file
    with pytest.raises(InvalidOptionError, match=r"\[MISSING_OPTION\] txn_version is given "
                                                 r"without txn_app_id"):  # fmt: skip
        table.append(rows, txn_version=4)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (pa.table({"key": ["a"]}), r"\[MISSING_COLUMN\] the data has no column 'value'"),
        (pa.table({"key": ["a"], "value": ["x"]}),
         r"\[COLUMN_TYPE_MISMATCH\] column 'value' has type string but store 's' holds bigint"),
        (pa.table({"key": ["a"], "value": [1], "timestamp": [1], "other": [1]}),
         (r"\[UNEXPECTED_COLUMN\] the data has column\(s\) 'other'.*accepted: key, timestamp, "
          r"value")),
        (pa.table({"key": ["a"], "value": [1]}),
         r"\[MISSING_COLUMN\] a write to timestamped store 's' needs a column 'timestamp'"),
        (pd.DataFrame({"key": ["a"], "value": [1], "timestamp": [dt.datetime(2024, 1, 1)]}),
         (r"\[COLUMN_TYPE_MISMATCH\] column 'timestamp' has type timestamp_ntz; accepted: "
          r"timestamp \(with time zone\) or bigint")),
        (pa.table({"key": pa.array(["a"]), "value": [1], "timestamp": pa.array([1], pa.uint8())}),
         r"\[COLUMN_TYPE_MISMATCH\] column 'timestamp' has Arrow type uint8"),
        (pa.table({"key": [None, "b"], "value": [1, 2], "timestamp": [1, 2]}), r"\[NULL_KEY\]"),
        (pa.table({"key": ["a"], "value": [1], "timestamp": [-5]}), r"\[INVALID_TIMESTAMP\]"),
        ([{"key": "a", "value": 1}], (r"\[INVALID_DATA\] the data is a list; accepted: a "
                                      r"pyarrow Table")),
    ],
)  # fmt: skip
def test_bad_data_is_refused_by_name_and_writes_nothing(
    tmp_path: Path, data: Any, match: str
) -> None:
    table = new_store(tmp_path, "w", "timestamped")
    with pytest.raises(InvalidOptionError, match=match):
        table.append(data)
    assert table.log.latest_id() == 1 and store_files(table) == []


def test_a_failure_in_a_late_run_deletes_what_every_run_staged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(python_write, "RUN_BYTES", 256)
    table = new_store(tmp_path, "w", "keyvalue")
    good = pa.table({"key": [f"k{i}" for i in range(500)], "value": list(range(500))})
    bad = pa.table({"key": pa.array([None], pa.string()), "value": [1]})
    with pytest.raises(InvalidOptionError, match=r"\[NULL_KEY\]"):
        table.append(pa.concat_tables([good, bad]))
    assert table.log.latest_id() == 1 and store_files(table) == []


def test_a_commit_that_fails_deletes_the_staged_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = new_store(tmp_path, "w", "keyvalue")

    def refused(self: Table, *args: Any, **kwargs: Any) -> None:
        raise CommitConflictError("refused here", code="STORE_CHANGED")

    monkeypatch.setattr(StoreTable, "commit", refused)
    with pytest.raises(CommitConflictError, match="STORE_CHANGED"):
        table.append(pa.table({"key": ["a"], "value": [1]}))
    assert store_files(table) == []


def test_an_erasure_after_the_write_began_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write planned before an erasure may hold the erased keys: ERASED_MEANWHILE, as a
    Spark write's (``Table.commit``'s ``planned_at``)."""
    table = new_store(tmp_path, "w", "keyvalue")
    table.append(pa.table({"key": ["a"], "value": [1]}))
    stage = python_write._stage_runs

    def erase_meanwhile(*args: Any) -> Any:
        files = stage(*args)
        Catalog(table.catalog.root).load("s").erase(["a"], reason="test")
        return files

    monkeypatch.setattr(python_write, "_stage_runs", erase_meanwhile)
    with pytest.raises(CommitConflictError, match="ERASED_MEANWHILE"):
        table.append(pa.table({"key": ["a"], "value": [2]}))
    assert table.to_arrow().num_rows == 0


def live(table: StoreTable) -> list[dict[str, Any]]:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: tuple(map(str, r.values())))


def test_delete_writes_each_kinds_tombstones(tmp_path: Path) -> None:
    """One per key where the key is the identity (at ``timestamp`` where the kind keeps a
    time: ``VersionedKeyValueStore.delete(key, timestamp)``); one per live window or session
    of the key where those are part of it (Kafka's ``WindowStore.put(key, null, start)``,
    ``SessionStore.remove(sessionKey)``)."""
    stamps = pa.array([1000, 2000, 1000], pa.int64())
    kv = new_store(tmp_path, "kv", "keyvalue")
    kv.append(pa.table({"key": ["a", "b", "c"], "value": [1, 2, 3]}))
    kv.delete(pl.Series(["a", "c", "never"]))
    assert live(kv) == [{"key": "b", "value": 2}]

    versioned = new_store(tmp_path, "v", "versioned")
    versioned.append(pa.table({"key": ["a", "a", "b"], "value": [1, 2, 3], "timestamp": stamps}))
    versioned.delete(["a"], timestamp=3000)
    assert [r["key"] for r in live(versioned)] == ["b"]
    assert [r["value"] for r in versioned.to_arrow(as_of=2500).to_pylist()
            if r["key"] == "a"] == [2]  # fmt: skip
    versioned.delete(["b"], timestamp=dt.datetime(1970, 1, 1, 0, 0, 0, 500_000, dt.timezone.utc))
    assert [r["key"] for r in live(versioned)] == ["b"]  # a tombstone older than its version
    versioned.delete(["b"], timestamp="1970-01-01T00:00:04Z")
    assert live(versioned) == [] and versioned.to_arrow(as_of=1500).num_rows == 2

    for variant, identity in (("window-headers", "window_start"), ("session", "session_start")):
        table = new_store(tmp_path, variant, variant)
        rows = {"key": ["a", "a", "b"], "value": [1, 2, 3], identity: stamps}
        if variant == "session":
            rows["session_end"] = pa.array([1500, 2500, 1000], pa.int64())
        table.append(pa.table(rows))
        record = table.delete(["a"])
        assert record is not None and record.files[0].rows + sum(
            f.rows for f in record.files[1:]
        ) == 2  # one tombstone per live window or session of "a"
        assert [r["key"] for r in live(table)] == ["b"]
        assert table.delete(["a"]) is None  # nothing live: nothing written

    with pytest.raises(InvalidOptionError, match=r"\[INVALID_KEYS\] 1 of the keys to delete "
                                                 r"are null"):  # fmt: skip
        kv.delete(["b", None])


def test_reads_hand_on_a_reader_polars_and_duckdb_take(tmp_path: Path) -> None:
    table = new_store(tmp_path, "w", "timestamped")
    table.append(pl.DataFrame({"key": ["a", "b"], "value": [1, 2], "timestamp": [5, 6]}))
    reader = table.to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    frame = pl.from_arrow(reader)
    assert sorted(frame["key"].to_list()) == ["a", "b"]
    assert frame.schema["timestamp"] == pl.Datetime("us", "UTC")
    reader = table.to_reader()  # (DuckDB finds it by its name)
    assert duckdb.sql("SELECT key, value FROM reader ORDER BY key").fetchall() == [("a", 1),
                                                                                   ("b", 2)]
    with pytest.raises(InvalidOptionError, match="versions is 'some'"):
        table.to_reader(versions="some")


def test_a_history_shaped_write_reads_back_as_given_and_overlaps_are_refused_across_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SCD2 frame (the store's own read schema) into a versioned store: each interval's
    start a put, a closed one's end a tombstone; overlapping intervals of a key in two runs
    (staged by different threads) are refused before the commit (INVALID_INTERVAL)."""
    table = new_store(tmp_path, "w", "versioned")
    utc = dt.timezone.utc
    frame = pd.DataFrame({
        "key": ["a", "a", "b"], "value": [1, 2, 3],
        "valid_from": pd.to_datetime([1000, 2000, 1500], unit="ms", utc=True),
        "valid_to": pd.to_datetime([2000, None, 3000], unit="ms", utc=True),
    })  # fmt: skip
    table.append(frame)
    got = sorted((r["key"], r["value"], r["valid_from"], r["valid_to"])
                 for r in table.to_arrow(versions="all").to_pylist())  # fmt: skip

    def at(ms: int) -> dt.datetime:
        return dt.datetime.fromtimestamp(ms / 1000, utc)

    assert got == [("a", 1, at(1000), at(2000)), ("a", 2, at(2000), None),
                   ("b", 3, at(1500), at(3000))]  # fmt: skip
    monkeypatch.setattr(python_write, "RUN_BYTES", 64)  # a run per row or two
    overlapping = pa.table({
        "key": ["c"] * 40 + ["c"], "value": list(range(41)),
        "valid_from": pa.array([i * 10 for i in range(40)] + [5], pa.int64()),
        "valid_to": pa.array([i * 10 + 10 for i in range(40)] + [8], pa.int64()),
    })  # fmt: skip
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_INTERVAL\] key 'c'"):
        table.append(overlapping)
    assert table.log.latest_id() == 2
