"""Keys erased everywhere (``StoreTable.erase``, issue 38): every commit reads as if the keys
had never been written, in one ``erase`` commit with an audit record; only the files that
held a key are rewritten; caches built before it are not read again; a vacuum deletes the old
files; concurrent writes either commit after it or are refused with a code."""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from catalog import Catalog
from catalog.catalog import StoreTable
from catalog.cli import main as cli
from catalog.kafka.tombstones import erase_tombstones
from catalog.log.records import CommitRecord
from catalog.operations import compaction
from catalog.partitioner import partitions_of
from stores.errors import CommitConflictError, InvalidOptionError
from tests.catalog.kafka.test_rescale import everything
from tests.catalog.kafka.test_state_dir import VARIANTS, build

ERASED = ["k1", "k2", "k3"]


def reference(catalog: Catalog, variant: str, monkeypatch: pytest.MonkeyPatch) -> StoreTable:
    """``build``'s store written without the rows of ``ERASED``: what an erasure must read
    as, at every commit."""
    stage = StoreTable.stage

    def without(self: StoreTable, keys: pa.Array, values: pa.Array, columns: Any = None,
                **kw: Any) -> Any:  # fmt: skip
        keep = pc.invert(pc.is_in(keys, value_set=pa.array(ERASED)))
        kept = {k: v.filter(keep) for k, v in (columns or {}).items()}
        return stage(self, keys.filter(keep), values.filter(keep), kept, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(StoreTable, "stage", without)
        return build(catalog, variant)


def warehouse_dir(catalog: Catalog) -> str:
    """The local folder of a ``file:`` warehouse."""
    return catalog.root.removeprefix("file://").removeprefix("file:")


def files_under(root: str) -> set[str]:
    return {str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file()}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_commit_reads_as_if_the_erased_keys_were_never_written(
    tmp_path: Path, variant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole history, each commit's read (every version of a versioned store), equals a
    store that never had the keys: a window's or session's expiry included, which follows
    stream time as the records left give it."""
    table = build(Catalog(str(tmp_path / "a"), cache_dir=str(tmp_path / "cache")), variant)
    never = reference(Catalog(str(tmp_path / "b"), cache_dir=str(tmp_path / "cache")), variant,
                      monkeypatch)  # fmt: skip
    last = table.log.latest_id()
    assert everything(table, last) != everything(never, last)  # (the keys were there)
    report = table.erase([*ERASED, "never-written"], reason="test")
    assert report.commit == last + 1 and report.keys == 4 and report.found == 3
    again = Catalog(str(tmp_path / "a"), cache_dir=str(tmp_path / "other")).load("s")
    for version in range(1, last + 1):
        assert everything(table, version) == everything(never, version), version
        assert everything(again, version) == everything(never, version), version
    assert everything(again) == everything(never, last)
    changes = again.catalog.changes("s", 2).to_pylist()  # change feeds over the range
    assert changes and not {r["key"] for r in changes} & set(ERASED)


def test_only_the_files_holding_a_key_are_rewritten_and_the_rest_stay_as_they_are(
    catalog: Catalog,
) -> None:
    table = catalog.create_store("s", "keyvalue", "string", "long", num_partitions=2)
    for n in range(4):
        keys = [f"c{n}-{i}" for i in range(10)]
        table.commit(table.stage(pa.array(keys), pa.array(range(10), pa.int64())))
    before = {i: table.log.read(i).files for i in table.log.ids()}
    report = table.erase(["c2-3"], reason="test")
    assert report.commits == [4] and report.rows == 1 and len(report.files) == 1
    fresh = Catalog(catalog.root, cache_dir=catalog.cache_dir).load("s").log
    for i, files in before.items():  # the other commits list their files as before
        assert (fresh.read(i).files == files) == (i != 4)
    assert fresh.read_raw(4).files == before[4]  # records are never changed
    record = fresh.read(report.commit)
    assert record.operation == "erase" and record.files == ()
    assert {r.path for r in record.replaced} == set(report.files)


def test_a_compacted_store_erases_from_its_snapshots(catalog: Catalog) -> None:
    """Snapshot rows are RocksDB rows: the kind finds the record key in each (behind a
    versioned store's segment id), and leaves the bookkeeping rows alone."""
    table = build(catalog, "versioned")
    compaction.compact(table)
    snapshot = table.log.latest_id()
    before = everything(table)
    table.commit(table.stage(pa.array(["k1", "k9"]), pa.array([1, 2], pa.int64()),
                             {"timestamp": pa.array([6000, 6000], pa.int64())}))  # fmt: skip
    report = table.erase(ERASED, reason="test")
    assert snapshot in report.commits
    assert any(path.startswith("snapshot/") for path in report.files)
    assert everything(table, snapshot) == [r for r in before if r["key"] not in ERASED]
    assert not {r["key"] for r in everything(table)} & set(ERASED)
    fresh = Catalog(catalog.root, cache_dir=catalog.cache_dir + "-new").load("s")
    assert everything(fresh) == everything(table)


def test_the_audit_record_keeps_a_keyed_hash_of_each_key_never_the_key(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = build(catalog, "keyvalue")
    report = table.erase(ERASED, reason="GDPR request 7")
    record = table.log.read(report.commit)
    secret = table.spec.store_id.encode()
    expected = sorted("hmac-sha256:" + hmac.new(secret, k.encode(), hashlib.sha256).hexdigest()
                      for k in ERASED)  # fmt: skip
    assert record.summary["key_hashes"] == expected and record.summary["keys"] == 3
    assert record.summary["reason"] == "GDPR request 7"
    assert record.summary["hash_keyed_by"] == "store id"
    assert record.summary["commits_changed"] == report.commits
    raw = catalog.storage.read_bytes("s", "commits", f"{report.commit:020d}.json")
    assert b'"k1"' not in raw and b"k2" not in raw
    history = catalog.history("s").to_pylist()[0]
    assert history["operation"] == "erase"
    shown = dict(history["operation_parameters"])
    assert shown["reason"] == "GDPR request 7" and shown["keys"] == "3"
    monkeypatch.setenv("STATE_STORE_AUDIT_KEY", "secret")
    keyed = table.erase(["k5"], reason="again")
    assert keyed.key_hashes == [
        "hmac-sha256:" + hmac.new(b"secret", b"k5", hashlib.sha256).hexdigest()
    ]
    assert keyed.hash_keyed_by == "audit key"
    # An auditor finds which erasure took a key, with the key the erasure hashed with.
    assert table.erasures_of("k5") == [keyed.commit]
    assert table.erasures_of("k1", audit_key=secret) == [report.commit]
    assert table.erasures_of("k9") == [] and table.erasures_of("k1") == []


def test_bad_input_is_refused_by_name_and_writes_nothing(catalog: Catalog) -> None:
    table = catalog.create_store("s", "keyvalue", "long", "long")
    table.commit(table.stage(pa.array([1, 2], pa.int64()), pa.array([1, 2], pa.int64())))
    last, files = table.log.latest_id(), files_under(warehouse_dir(catalog))
    cases = [
        ({"keys": [1], "reason": ""}, "MISSING_OPTION"),
        ({"keys": [1, None], "reason": "r"}, "INVALID_KEYS"),
        ({"keys": ["x"], "reason": "r"}, "INVALID_KEYS"),
        ({"keys": [], "reason": "r"}, "INVALID_KEYS"),
        ({"keys": [1], "reason": "r", "tombstones": "x.parquet"}, "MISSING_OPTION"),
    ]
    for arguments, code in cases:
        with pytest.raises(InvalidOptionError, match=code):
            table.erase(**arguments)
    with pytest.raises(InvalidOptionError, match="PARTITIONER_MISMATCH"):
        table.erase([1], reason="r", application_id="app")
    assert table.log.latest_id() == last
    assert files_under(warehouse_dir(catalog)) == files


def test_a_dry_run_reports_what_the_erasure_rewrites_and_writes_nothing(catalog: Catalog) -> None:
    table = build(catalog, "window")
    files, last = files_under(warehouse_dir(catalog)), table.log.latest_id()
    planned = table.erase(ERASED, reason="test", dry_run=True)
    assert files_under(warehouse_dir(catalog)) == files and table.log.latest_id() == last
    assert planned.commit is None and planned.files and planned.rows
    done = table.erase(ERASED, reason="test")
    assert (done.files, done.commits, done.rows) == (planned.files, planned.commits, planned.rows)


def test_vacuum_deletes_the_replaced_files_once_the_erasure_is_older_than_its_window(
    catalog: Catalog,
) -> None:
    table = build(catalog, "session")
    report = table.erase(ERASED, reason="test")
    assert catalog.vacuum("s")[0].deleted == []  # a week's window: readers may still use them
    assert all(catalog.storage.exists("s", *p.split("/")) for p in report.files)
    deleted = catalog.vacuum("s", older_than_ms=0)[0].deleted
    assert sorted(deleted) == sorted(report.files)
    again = Catalog(catalog.root, cache_dir=catalog.cache_dir + "-new").load("s")
    assert everything(again) == everything(table)


def test_a_cache_built_before_the_erasure_is_deleted_not_read(catalog: Catalog) -> None:
    table = build(catalog, "timestamped")
    everything(table)  # keeps scan files
    last = table.log.latest_id()
    old = {p: table.partition_cache(p).path for p in range(2)}
    for p in range(2):
        table.partition_cache(p).catch_up(last)  # a RocksDB, as lookups build
    assert all(os.path.isdir(path) for path in old.values())
    report = table.erase(ERASED, reason="test")
    new = {p: table.partition_cache(p).path for p in range(2)}
    for p in range(2):
        assert new[p] == old[p] + f".e{report.commit}"
        assert not os.path.exists(old[p]) and not os.path.exists(old[p] + ".scans")
    assert not {r["key"] for r in everything(table, report.commit - 1)} & set(ERASED)


def test_an_append_landing_during_the_erasure_is_read_and_erased_too(catalog: Catalog) -> None:
    table = build(catalog, "keyvalue")

    def append(step: str) -> None:
        if step == "commit" and table.log.latest_id() == 5:  # once, before its publish
            table.commit(table.stage(pa.array(["k1", "new"]), pa.array([1, 2], pa.int64())))

    report = table.erase(ERASED, reason="test", progress=append)
    assert report.commit == 7 and 6 in report.commits
    keys = {r["key"] for r in everything(table)}
    assert "new" in keys and not keys & set(ERASED)


def test_a_write_planned_before_an_erasure_is_refused_after_it(catalog: Catalog) -> None:
    table = build(catalog, "keyvalue")
    planned = table.log.latest_id()
    files = table.stage(pa.array(["k1"]), pa.array([1], pa.int64()))
    table.erase(ERASED, reason="test")
    with pytest.raises(CommitConflictError, match="ERASED_MEANWHILE"):
        table.commit(files, planned_at=planned)
    assert not {r["key"] for r in everything(table)} & set(ERASED)
    table.commit(table.stage(pa.array(["k1"]), pa.array([1], pa.int64())),
                 planned_at=table.log.latest_id())  # fmt: skip
    assert {"k1"} <= {r["key"] for r in everything(table)}  # a new write of the key stands


def test_a_compaction_begun_before_an_erasure_is_refused(catalog: Catalog) -> None:
    table = build(catalog, "keyvalue")
    base = table.log.latest_id()
    table.erase(ERASED, reason="test")
    with pytest.raises(CommitConflictError, match="ERASED_MEANWHILE"):
        table.log.publish("compact", [], "late", base=base, planned_at=base)


def test_old_releases_refuse_a_store_with_erasures(catalog: Catalog) -> None:
    table = build(catalog, "keyvalue")
    report = table.erase(ERASED, reason="test")
    table.commit(table.stage(pa.array(["x"]), pa.array([1], pa.int64())))
    for commit_id in (report.commit, report.commit + 1):
        record: CommitRecord = table.log.read_raw(commit_id)
        assert record.body()["format"] == 4 and record.erasures == (report.commit,)


@pytest.mark.parametrize("variant", ["keyvalue", "versioned", "window-duplicates", "session"])
def test_the_tombstones_are_those_kafka_s_change_logging_layer_writes(
    catalog: Catalog, variant: str
) -> None:
    """A null value per key (key-value, versioned: at the partition's stream time, after
    every version), per window with its sequence number or per session (as the store logs
    their puts: ``WindowKeySchema.toStoreKeyBinary``, ``SessionKeySchema.toBinary``), each
    in ``BuiltInPartitioner.partitionForKey``'s partition."""
    table = build(catalog, variant)
    exported = table.export_kafka_changelog("app")
    report = table.erase(ERASED, reason="test", application_id="app")
    stones = report.tombstones
    assert stones is not None and stones.num_rows
    assert set(stones.column("topic").to_pylist()) == {"app-s-changelog"}
    assert stones.column("value").null_count == stones.num_rows
    suffix = {"window-duplicates": 12, "session": 16}.get(variant, 0)
    keys = [k[: len(k) - suffix] for k in stones.column("key").to_pylist()]
    assert set(keys) <= {k.encode() for k in ERASED}
    parts = partitions_of(pa.array(keys, pa.binary()), 2, "kafka").tolist()
    assert parts == stones.column("partition").to_pylist()
    live = exported.filter(pc.is_valid(exported.column("value")))
    erased_live = [r for r in live.to_pylist() if r["key"][: len(r["key"]) - suffix]
                   in {k.encode() for k in ERASED}]  # fmt: skip
    if variant == "versioned":
        assert sorted(keys) == sorted({r["key"] for r in erased_live})
        for row in stones.to_pylist():
            in_partition = exported.filter(pc.equal(exported.column("partition"),
                                                    row["partition"]))  # fmt: skip
            assert row["timestamp"] == pc.max(in_partition.column("timestamp")).as_py()
    else:
        assert sorted(stones.column("key").to_pylist()) == sorted(r["key"] for r in erased_live)
    after = erase_tombstones(table, table.log.latest_id(), pa.array([b"k1"]), "app")
    assert after.num_rows == 0  # nothing left to erase


def test_the_command_line_erases_keys_from_a_file_and_says_what_it_did(
    catalog: Catalog, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(catalog, "keyvalue")
    keys = tmp_path / "keys.txt"
    keys.write_text("k1\nk2\n")
    root = ["--root", catalog.root, "--json"]
    assert cli([*root, "erase", "s", "--keys-from", str(keys), "--reason", "r", "--dry-run"]) == 0
    planned = capsys.readouterr().out
    assert '"dry_run": true' in planned and '"commit": null' in planned
    assert cli([*root, "erase", "s", "--keys-from", str(keys), "--reason", "r"]) == 0
    assert '"found": 2' in capsys.readouterr().out
    assert cli([*root, "erase", "s", "--keys-from", str(tmp_path / "none"), "--reason", "r"]) == 1
    assert "PATH_NOT_FOUND" in capsys.readouterr().err
    assert cli([*root, "history", "s"]) == 0
    assert '"reason": "r"' in capsys.readouterr().out


def test_a_cache_object_located_before_the_erasure_moves_on_after_it(catalog: Catalog) -> None:
    """A long-lived cache (a lookup session's) reads the newest record at each use: the
    erasure renames it away, and the old database, holding the keys, is not served."""
    from catalog.kinds import Scan

    table = build(catalog, "keyvalue")
    caches = [table.partition_cache(p) for p in range(2)]
    for cache in caches:
        cache.catch_up(table.log.latest_id())
    report = table.erase(ERASED, reason="test")
    seen = set()
    for cache in caches:
        with cache.open_at(report.commit) as (store, _):
            for batch in table.kind.scan(store, Scan(), table.spec.params):
                seen |= set(batch.column("key").to_pylist())
        assert cache.path.endswith(f".e{report.commit}")
    assert seen and not seen & {k.encode() for k in ERASED}


def test_a_vacuum_deletes_its_machines_caches_built_before_an_erasure(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Another machine's caches (another cache directory) keep the keys until that machine
    uses the store again, or vacuums it."""
    table = build(catalog, "window")
    other = Catalog(catalog.root, cache_dir=str(tmp_path / "other-machine"))
    elsewhere = other.load("s")
    for p in range(2):
        elsewhere.partition_cache(p).catch_up(table.log.latest_id())
    old = sorted(str(p) for p in (tmp_path / "other-machine").rglob("p0000*.v2"))
    assert len(old) == 2
    table.erase(ERASED, reason="test")
    assert all(os.path.isdir(path) for path in old)  # not this machine's: still there
    other.vacuum("s", older_than_ms=0)
    assert not any(os.path.exists(path) for path in old)


@pytest.mark.parametrize("variant", ["keyvalue", "window"])
def test_commits_written_with_an_earlier_spec_are_erased_with_it(
    catalog: Catalog, variant: str
) -> None:
    """A rescale replaced the spec (3 partitions instead of 2): the commits before it are
    read, and erased, with theirs."""
    table = build(catalog, variant)
    before = {v: everything(table, v) for v in table.log.ids()}
    assert table.rescale(3) is not None
    last = table.log.latest_id()
    before[last] = everything(table, last)
    table.erase(ERASED, reason="test")
    again = Catalog(catalog.root, cache_dir=catalog.cache_dir + "-new").load("s")
    for version, rows in before.items():
        assert everything(again, version) == [r for r in rows if r["key"] not in ERASED]
        assert everything(table, version) == [r for r in rows if r["key"] not in ERASED]


def test_keys_not_of_an_earlier_spec_s_key_type_are_not_looked_for_there(catalog: Catalog) -> None:
    table = catalog.create_store("s", "keyvalue", "long", "long")
    table.commit(table.stage(pa.array([1, 2], pa.int64()), pa.array([1, 2], pa.int64())))
    view = catalog.load("s")
    from catalog.operations.erase import _Rewrite

    work = _Rewrite("w", ["not a long"])
    assert work.for_spec(view, 1)[1] is None
    assert work.for_spec(view, 1)[0].spec.key_type == "long"
