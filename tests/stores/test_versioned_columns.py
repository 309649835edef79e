"""A versioned store's reads computed from columns (``stores.versioned.columns``) against the
store itself: for any commits of puts, deletes and late records, the latest state, the whole
history, bounded histories and as-of reads are row for row what Kafka's algorithm in RocksDB
reads, or the computation declines (only where Kafka departs from the ideal history)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog import Catalog
from catalog.kinds import STORE_MUST_ANSWER, VERSIONED, Scan
from catalog.log.snapshots import dump
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.versioned.columns import snapshot_records, versioned_read, versioned_rows
from tests.stores.test_versioned_model import CONFIGS

KEYS = [b"a", b"b", b"c"]
Record = tuple[bytes, "bytes | None", int]
_COUNTER = itertools.count()


def _table(records: list[Record]) -> pa.Table:
    keys, values, stamps = zip(*records) if records else ((), (), ())
    return pa.table(
        {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "timestamp": pa.array(stamps, pa.int64()),
        }
    )


def _dumped_runs(
    db: RocksDBBytesStore, params: dict[str, int]
) -> dict[str, tuple[pa.Array, pa.Array]]:
    """Kafka's rows of ``db`` as a compaction dumps them, as the snapshot runs readers take."""
    snapshot = dump(db, VERSIONED.column_families(params))
    runs = {}
    for family in set(snapshot.column("cf").to_pylist()):
        rows = snapshot.filter(pc.equal(snapshot.column("cf"), family))
        runs[family] = (rows.column("key"), rows.column("value"))
    return runs


def _assert_rows_are_the_store_s(
    computed: dict[str, tuple[pa.Array, pa.Array]], db: RocksDBBytesStore, params: dict[str, int]
) -> None:
    for family in VERSIONED.column_families(params):
        keys, values = computed.get(family, (pa.array([]), pa.array([])))
        assert list(zip(keys.to_pylist(), values.to_pylist())) == list(db.items(family)), family


def _without_tombstones(commits: list[list[Record]]) -> list[list[Record]]:
    return [[(k, b"v" if v is None else v, t) for k, v, t in c] for c in commits]


def _scans(stamps: list[int]) -> list[Scan]:
    instants = sorted({0, *stamps, *(s + 1 for s in stamps), max(stamps, default=0) + 50})
    scans = [Scan(), Scan(all_versions=True)]
    scans += [Scan(as_of=t) for t in instants]
    scans += [Scan(all_versions=True, time_from=t) for t in instants[::2]]
    scans += [Scan(all_versions=True, time_to=t) for t in instants[::2]]
    scans += [Scan(all_versions=True, time_from=a, time_to=b)
              for a, b in zip(instants, instants[2:])]  # fmt: skip
    return scans


def _declines(commits: list[list[Record]], retention: int) -> bool:
    """Whether accepted records put a tombstone and another record at one time of one key."""
    stream_time, seen = -1, {}
    for commit in commits:
        ordered = sorted(commit, key=lambda r: (r[2], r[1] is not None))
        for key, value, ts in ordered:
            if ts < stream_time - retention:
                continue
            stream_time = max(stream_time, ts)
            seen.setdefault((key, ts), []).append(value)
    return any(len(v) > 1 and None in v for v in seen.values())


records = st.tuples(st.sampled_from(KEYS), st.sampled_from([None, b"", b"x", b"yy"]),
                    st.integers(0, 60))  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from(CONFIGS),
    commits=st.lists(st.lists(records, max_size=8), min_size=1, max_size=5),
)
def test_columnar_reads_equal_the_store(
    tmp_path_factory: pytest.TempPathFactory, config: tuple[int, int], commits: list[list[Record]]
) -> None:
    retention, interval = config
    params = {"history_retention_ms": retention, "segment_interval_ms": interval}
    path = tmp_path_factory.mktemp(f"v{next(_COUNTER)}")
    db = RocksDBBytesStore(str(path), VERSIONED.column_families(params))
    store = VERSIONED.open(db, params)
    tables = [_table(c) for c in commits]
    for table in tables:
        VERSIONED.apply(store, table, params)
    declines = _declines(commits, retention)
    stamps = [r[2] for c in commits for r in c]
    try:
        for scan in _scans(stamps):
            computed = versioned_read(
                tables, retention, interval, as_of=scan.as_of, all_versions=scan.all_versions,
                time_from=scan.time_from, time_to=scan.time_to,
            )  # fmt: skip
            if declines:
                assert computed is None
                return
            assert computed is not None
            expected = [row for b in VERSIONED.scan(store, scan, params) for row in b.to_pylist()]
            assert computed.to_pylist() == expected, scan
    finally:
        db.close()


def test_a_versioned_store_read_builds_no_rocksdb(catalog: Catalog, tmp_path: Path) -> None:
    spec = catalog.new_spec("prices", "versioned", "string", "long", 2, history_retention_ms=100)
    table = catalog.create(spec)
    keys = pa.array(["a", "b", "a", "c"])
    stamps = {"timestamp": pa.array([10, 10, 20, 30], pa.int64())}
    table.commit(table.stage(keys, pa.array([1, 2, 3, None], pa.int64()), stamps))
    table.commit(table.stage(pa.array(["b"]), pa.array([5], pa.int64()),
                             {"timestamp": pa.array([15], pa.int64())}))  # fmt: skip
    latest = sorted(table.to_arrow().to_pylist(), key=lambda r: r["key"])
    assert [(r["key"], r["value"]) for r in latest] == [("a", 3), ("b", 5)]
    history = table.to_arrow(versions="all").to_pylist()
    assert sorted((r["key"], r["value"]) for r in history) == [("a", 1), ("a", 3), ("b", 2),
                                                               ("b", 5)]  # fmt: skip
    as_of = table.to_arrow(as_of=12).to_pylist()
    assert sorted((r["key"], r["value"]) for r in as_of) == [("a", 1), ("b", 2)]
    # Nothing but scan files under the cache: no partition was materialized in RocksDB.
    cache = Path(tmp_path, "cache")
    assert not list(cache.rglob("CURRENT"))


def test_a_tombstone_tied_with_a_put_is_read_through_the_store(catalog: Catalog) -> None:
    spec = catalog.new_spec("ties", "versioned", "string", "long", 1, history_retention_ms=100)
    table = catalog.create(spec)
    stamps = {"timestamp": pa.array([10, 10], pa.int64())}
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2], pa.int64()), stamps))
    table.commit(table.stage(pa.array(["a"]), pa.array([None], pa.int64()),
                             {"timestamp": pa.array([10], pa.int64())}))  # fmt: skip
    # Kafka's store answers (the computation declines a tombstone tied with a put).
    assert [(r["key"], r["value"]) for r in table.to_arrow().to_pylist()] == [("b", 2)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from(CONFIGS),
    before=st.lists(st.lists(records, max_size=8), min_size=1, max_size=4),
    after=st.lists(st.lists(records, max_size=8), max_size=3),
)
def test_columnar_reads_from_a_snapshot_equal_the_store(
    tmp_path_factory: pytest.TempPathFactory,
    config: tuple[int, int],
    before: list[list[Record]],
    after: list[list[Record]],
) -> None:
    """Kafka's rows dumped by a compaction, turned back into records, then a tail applied."""
    retention, interval = config
    params = {"history_retention_ms": retention, "segment_interval_ms": interval}
    path = tmp_path_factory.mktemp(f"v{next(_COUNTER)}")
    db = RocksDBBytesStore(str(path), VERSIONED.column_families(params))
    store = VERSIONED.open(db, params)
    try:
        for table in map(_table, before):
            VERSIONED.apply(store, table, params)
        db.commit()
        runs = _dumped_runs(db, params)
        base = snapshot_records(runs)
        assert base is not None
        tail = [_table(c) for c in after]
        for table in tail:
            VERSIONED.apply(store, table, params)
        stamps = [r[2] for c in before + after for r in c]
        for scan in _scans(stamps):
            computed = versioned_read(
                tail, retention, interval, base=base, as_of=scan.as_of,
                all_versions=scan.all_versions, time_from=scan.time_from, time_to=scan.time_to,
            )  # fmt: skip
            if computed is None:
                assert _declines(before + after, retention)
                return
            expected = [row for b in VERSIONED.scan(store, scan, params) for row in b.to_pylist()]
            assert computed.to_pylist() == expected, scan
    finally:
        db.close()


# Keys that sort tellingly: empty, a prefix of another, a high byte, longer than the key sort's
# numpy words.
_ROW_KEYS = [*KEYS, b"", b"a\x00", b"\x80", b"k" * 40]
puts = st.tuples(st.sampled_from(_ROW_KEYS), st.sampled_from([b"", b"x", b"yy"]), st.integers(0, 60))


def _accepted(commits: list[list[Record]], retention: int) -> tuple[bool, bool]:
    """Of the records the store accepts (it applies a commit's rows by time, deletes first at
    one time; grace as Kafka's): whether some key's came out of time order, and whether any
    is a tombstone."""
    stream_time, last, late, tombstones = -1, {}, False, False
    for commit in commits:
        for key, value, ts in sorted(commit, key=lambda r: (r[2], r[1] is not None)):
            if ts < stream_time - retention:
                continue
            stream_time = max(stream_time, ts)
            late |= ts < last.get(key, ts)
            tombstones |= value is None
            last[key] = ts
    return late, tombstones


versions = st.tuples(
    st.sampled_from(_ROW_KEYS), st.sampled_from([None, b"", b"x", b"yy"]), st.integers(0, 60)
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from([*CONFIGS, (0, 1)]),  # (and no grace period at all)
    commits=st.lists(st.lists(versions, max_size=10), min_size=1, max_size=5),
    puts_only=st.booleans(),
)
def test_rows_from_columns_are_the_rows_kafka_s_store_writes(
    tmp_path_factory: pytest.TempPathFactory,
    config: tuple[int, int],
    commits: list[list[Record]],
    puts_only: bool,
) -> None:
    """Puts (late, duplicated, past the grace period, into expiring segments) and tombstones
    (degenerate rows, gaps, tombstone after tombstone): every column family holds, byte for
    byte, what Kafka's put algorithm writes. The rows are left to the store (None) only where
    a tombstone meets another record of its key and time, or accepted records hold a
    tombstone and some key's came out of time order."""
    retention, interval = config
    if puts_only:
        commits = _without_tombstones(commits)
    params = {"history_retention_ms": retention, "segment_interval_ms": interval}
    path = tmp_path_factory.mktemp(f"v{next(_COUNTER)}")
    db = RocksDBBytesStore(str(path), VERSIONED.column_families(params))
    try:
        store = VERSIONED.open(db, params)
        tables = [_table(c) for c in commits]
        for table in tables:
            VERSIONED.apply(store, table, params)
        db.commit()
        computed = versioned_rows(tables, retention, interval)
        late, tombstones = _accepted(commits, retention)
        left_to_store = _declines(commits, retention) or (tombstones and late)
        assert (computed is None) == left_to_store
        if computed is None:
            return
        _assert_rows_are_the_store_s(computed, db, params)
    finally:
        db.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from([*CONFIGS, (0, 1)]),
    before=st.lists(st.lists(versions, max_size=8), min_size=1, max_size=4),
    after=st.lists(st.lists(versions, max_size=8), max_size=3),
    puts_only=st.booleans(),
)
def test_rows_over_a_snapshot_are_the_rows_kafka_s_store_writes(
    tmp_path_factory: pytest.TempPathFactory,
    config: tuple[int, int],
    before: list[list[Record]],
    after: list[list[Record]],
    puts_only: bool,
) -> None:
    """Kafka's rows dumped by a compaction, then a tail (late records, the grace period,
    expiring segments): with puts only, the rows over the snapshot are computed and are,
    byte for byte, the store's after the tail; a tombstone left in the history leaves them
    to the store."""
    retention, interval = config
    if puts_only:
        before, after = _without_tombstones(before), _without_tombstones(after)
    params = {"history_retention_ms": retention, "segment_interval_ms": interval}
    path = tmp_path_factory.mktemp(f"v{next(_COUNTER)}")
    db = RocksDBBytesStore(str(path), VERSIONED.column_families(params))
    try:
        store = VERSIONED.open(db, params)
        for table in map(_table, before):
            VERSIONED.apply(store, table, params)
        db.commit()
        runs = _dumped_runs(db, params)
        tail = [_table(c) for c in after]
        for table in tail:
            VERSIONED.apply(store, table, params)
        db.commit()
        computed = VERSIONED.store_rows(runs, tail, params)
        if puts_only:
            assert computed is not STORE_MUST_ANSWER
        if computed is STORE_MUST_ANSWER:
            return
        _assert_rows_are_the_store_s(computed, db, params)
    finally:
        db.close()


def test_one_commit_with_tombstones_is_computed_from_columns(tmp_path: Path) -> None:
    """A delete as a key's first record (a degenerate row), a delete after a delete (a
    tombstone entry), and a put after a gap: one commit, so its rows are computed, and they
    are the store's."""
    params = {"history_retention_ms": 1000, "segment_interval_ms": 100}
    commit = [
        (b"a", None, 5), (b"a", b"x", 7), (b"a", None, 9), (b"a", None, 12), (b"a", b"y", 20),
        (b"a", b"z", 30), (b"b", b"p", 1), (b"b", None, 150), (b"b", b"q", 160),
    ]  # fmt: skip
    db = RocksDBBytesStore(str(tmp_path / "db"), VERSIONED.column_families(params))
    try:
        VERSIONED.apply(VERSIONED.open(db, params), _table(commit), params)
        db.commit()
        computed = versioned_rows([_table(commit)], 1000, 100)
        assert computed is not None
        keys, values = computed["default"]
        assert list(zip(keys.to_pylist(), values.to_pylist())) == list(db.items("default"))
        assert len(keys) == 4  # a's row in segment 0 and latest, b's row in segment 1 and latest
    finally:
        db.close()


# Keys written once each (a store loaded in one go): the latest read in write order takes no
# sort at all (``_latest_written_once``). Late records, tombstones and retentions still apply.
_ONCE_KEYS = [b"", b"a", b"ab", b"b", b"\xff", b"k" * 20, b"k" * 21, b"z1", b"z2", b"zz"]
_once_records = st.lists(
    st.tuples(st.sampled_from(_ONCE_KEYS), st.sampled_from([None, b"", b"x"]), st.integers(0, 60)),
    unique_by=lambda r: r[0],
    min_size=2,  # (fewer rows take the general path)
    max_size=len(_ONCE_KEYS),
)


def _cut(records: list[Record], cuts: list[int]) -> list[list[Record]]:
    """``records`` cut into commits at ``cuts`` (positions, any order)."""
    bounds = [0, *sorted(c % (len(records) + 1) for c in cuts), len(records)]
    return [records[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300)
@given(
    config=st.sampled_from(CONFIGS),
    records=_once_records,
    cuts=st.lists(st.integers(0, 20), max_size=4),
    split=st.integers(0, 10),
)
def test_keys_written_once_are_read_in_write_order_without_a_sort(
    tmp_path_factory: pytest.TempPathFactory,
    config: tuple[int, int],
    records: list[Record],
    cuts: list[int],
    split: int,
) -> None:
    """The latest of each key, in the order written, is the store's latest scan (Kafka's
    RocksDBVersionedStore: grace by stream time, a tombstone deletes), whether the records come
    as commits or partly as a snapshot's state; and no key sort or history is computed."""
    from stores.versioned import columns

    retention, interval = config
    params = {"history_retention_ms": retention, "segment_interval_ms": interval}
    split %= len(records) + 1
    before, after = _cut(records[:split], cuts), _cut(records[split:], cuts[::-1])
    path = tmp_path_factory.mktemp(f"v{next(_COUNTER)}")
    db = RocksDBBytesStore(str(path), VERSIONED.column_families(params))
    store = VERSIONED.open(db, params)
    try:
        for commit in before:
            VERSIONED.apply(store, _table(commit), params)
        base = None
        if split:
            db.commit()
            base = snapshot_records(_dumped_runs(db, params))
            assert base is not None
        for commit in after:
            VERSIONED.apply(store, _table(commit), params)
        expected = [row for b in VERSIONED.scan(store, Scan(), params) for row in b.to_pylist()]
    finally:
        db.close()
    if base is not None and base.implied:
        return  # (the snapshot's implied tombstones take the general path)
    written = [*(base.records.column("key").to_pylist() if base else []),
               *(r[0] for c in after for r in c)]  # fmt: skip
    if base is None:
        after = before + after
        written = [r[0] for c in after for r in c]
    expected.sort(key=lambda row: written.index(row["key"]))

    def no_history(*args: object) -> None:
        raise AssertionError("keys written once took the general path")

    with pytest.MonkeyPatch.context() as patch:
        if len(written) >= 2:
            patch.setattr(columns, "_ideal", no_history)
        computed = versioned_read(
            [_table(c) for c in after], retention, interval, base=base, key_order=False
        )
    assert computed is not None
    assert computed.to_pylist() == expected
