"""The single-key as-of read of ``VersionedKeyValueStore``: Kafka's answers from fewer reads,
in-place row search, and the observed stream time kept in memory.

``get(key, as_of)`` reads the row of ``as_of``'s own segment first and never a segment after the
latest value's; Kafka reads every live segment from the newest down. The answers must be the
same: here they are compared with Kafka's order of reads, done literally over the raw bytes.
The stream time is kept in memory only while the bytes layer provably holds the same value;
the tests below change the bytes underneath in every way the library does (rollback, recover,
a raw write, another wrapper's commit, a failed operation) and check that reads follow.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CorruptDataError, InvalidOptionError
from stores.protocols import VersionedRecord
from stores.transactional import MemoryChangelog, TransactionalStore
from stores.versioned.format import (
    LATEST_PREFIX,
    METADATA_CF,
    ROW_ENDS_BEFORE,
    ROW_STARTS_AFTER,
    STREAM_TIME_KEY,
    SegmentValue,
    decode_long,
    find_in_row,
    row_versions,
    segment_id,
    segment_prefix,
)
from stores.versioned.store import VersionedKeyValueStore

KEYS = (b"a", b"b", b"c")
_COUNTER = itertools.count()


def kafka_get(db: RocksDBBytesStore, retention: int, interval: int, key: bytes, as_of: int) -> (
    VersionedRecord | None
):  # fmt: skip
    """``RocksDBVersionedStore.get(key, asOfTimestamp)`` step for step over the raw bytes: the
    latest value, then every live segment from the newest down, each row decoded whole."""
    raw_time = db.get(STREAM_TIME_KEY, METADATA_CF)
    stream_time = -1 if raw_time is None else decode_long(raw_time)
    latest = db.get(LATEST_PREFIX + key)
    if latest is not None and decode_long(latest[:8]) <= as_of:
        return VersionedRecord(latest[8:], decode_long(latest[:8]), None)
    if as_of < stream_time - retention:
        return None
    min_live = segment_id(stream_time - retention, interval)
    sids = sorted({decode_long(k[:8]) for k, _ in db.range(segment_prefix(0), b"\x80")})
    for sid in reversed(sids):
        if sid < max(min_live, segment_id(as_of, interval)):
            break
        raw = db.get(segment_prefix(sid) + key)
        if raw is None:
            continue
        row = SegmentValue.decode(raw)
        if row.next_ts <= as_of:
            return None
        if row.min_ts > as_of:
            continue
        found = row.find(as_of)
        return None if found.value is None else VersionedRecord(
            found.value, found.valid_from, found.valid_to
        )
    return None


OPS = st.lists(
    st.tuples(
        st.sampled_from(KEYS),
        st.one_of(st.none(), st.sampled_from([b"", b"x", b"yy", b"zzz"])),
        st.integers(-40, 8),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from([(20, 7), (0, 5), (10, 100), (30, 1), (12, 4), (50, 3)]),
    ops=OPS,
)
def test_get_gives_kafkas_answer_from_fewer_reads(
    tmp_path_factory: pytest.TempPathFactory, config: tuple[int, int], ops: list
) -> None:
    retention, interval = config
    path = tmp_path_factory.mktemp("asof") / f"s{next(_COUNTER)}"
    with VersionedKeyValueStore(path, retention, interval) as store:
        now = 0
        for key, value, offset in ops:
            ts = max(0, now + offset)
            store.put(key, value, ts)
            now = max(now, ts)
        asked = [(key, as_of) for key in KEYS for as_of in range(now + 3)]
        expected = [kafka_get(store.wrapped, retention, interval, k, t) for k, t in asked]
        assert [store.get(k, t) for k, t in asked] == expected
        # Batched, in another order (each key's instants interleaved and descending).
        shuffled = sorted(range(len(asked)), key=lambda i: (-asked[i][1], asked[i][0]))
        keys = [asked[i][0] for i in shuffled]
        stamps = [asked[i][1] for i in shuffled]
        assert store.get_many(keys, stamps) == [expected[i] for i in shuffled]
        # One instant per key: answered one by one (the other way get_many answers).
        for k, t in asked[:: max(1, len(asked) // 15)]:
            assert store.get_many([k, b"zz"], [t, t]) == [store.get(k, t), None]
        # The history held in memory (the as-of join's other method) answers the same.
        history = store.history()
        assert history is not None
        found = history.as_of_columns(pa.array(keys + [b"zz"]), pa.array(stamps + [0]))
        assert found.equals(store.as_of_columns(pa.array(keys + [b"zz"]), pa.array(stamps + [0])))


@st.composite
def rows(draw: st.DrawFn) -> SegmentValue:
    """A segment row of 1..6 versions (values or tombstones), newest first."""
    count = draw(st.integers(1, 6))
    gaps = draw(st.lists(st.integers(1, 5), min_size=count + 1, max_size=count + 1))
    stamps = list(itertools.accumulate(gaps))  # ascending; the last one is next_ts
    values = draw(
        st.lists(st.one_of(st.none(), st.binary(max_size=4)), min_size=count, max_size=count)
    )
    records = list(zip(stamps[:count], values))[::-1]
    return SegmentValue(stamps[-1], stamps[0], records)


@given(row=rows())
def test_find_in_row_reads_what_decode_and_find_read(row: SegmentValue) -> None:
    raw = row.encode()
    for timestamp in range(row.next_ts + 3):
        found = find_in_row(raw, timestamp)
        if timestamp >= row.next_ts:
            assert found == ROW_ENDS_BEFORE
        elif timestamp < row.min_ts:
            assert found == ROW_STARTS_AFTER
        else:
            expected = row.find(timestamp)
            assert found == (expected.valid_from, expected.valid_to, expected.value)


def test_get_many_answers_instants_too_far_apart_to_pack(tmp_path: Path) -> None:
    # Keys x time span beyond 2**62: the bulk merge searches key by key instead.
    far = 2**62
    with VersionedKeyValueStore(tmp_path / "v", far, 2**60) as store:
        for key, value, ts in [(b"a", b"1", 1), (b"a", b"2", far), (b"b", b"3", 5),
                               (b"b", None, far + 10), (b"c", b"4", far + 1)]:  # fmt: skip
            store.put(key, value, ts)
        asked = [(k, t) for k in (b"a", b"b", b"c") for t in (0, 3, 7, far - 1, far, far + 20)]
        keys, stamps = [k for k, _ in asked] * 2, [t for _, t in asked] * 2
        assert store.get_many(keys, stamps) == [store.get(k, t) for k, t in zip(keys, stamps)]
        assert store.get(b"a", far - 1) == VersionedRecord(b"1", 1, far)


def test_get_many_refuses_what_get_refuses(tmp_path: Path) -> None:
    with VersionedKeyValueStore(tmp_path / "v", 100, 10) as store:
        with pytest.raises(InvalidOptionError, match="2 keys but 1 as_of"):
            store.get_many([b"a", b"b"], [1])
        with pytest.raises(InvalidOptionError, match="keys must be bytes, got str"):
            store.get_many(["a"], [1])
        with pytest.raises(InvalidOptionError, match="as_of must be between 0"):
            store.get_many([b"a"], [-1])
        assert store.get_many([], []) == []


@given(row=rows())
def test_row_versions_lists_what_decode_holds_oldest_first(row: SegmentValue) -> None:
    decoded = SegmentValue.decode(row.encode())
    ends = [decoded.next_ts] + [ts for ts, _ in decoded.records[:-1]]
    expected = [(ts, end, value) for (ts, value), end in zip(decoded.records, ends)][::-1]
    assert list(zip(*row_versions(row.encode()))) == expected


def test_find_in_row_refuses_rows_whose_headers_do_not_add_up() -> None:
    raw = SegmentValue(30, 10, [(20, b"new"), (10, b"old")]).encode()
    with pytest.raises(CorruptDataError, match="no header"):
        find_in_row(raw[:20], 15)
    # The value of the version found would reach into the headers.
    with pytest.raises(CorruptDataError, match="no version at or before"):
        find_in_row(raw[:-5], 15)
    with pytest.raises(CorruptDataError, match="between its headers and its values"):
        row_versions(raw[:-2])


# -- the stream time in memory ----------------------------------------------------------------


def open_tx(path: Path, **kwargs: object) -> TransactionalStore:
    return TransactionalStore.of(path, VersionedKeyValueStore, history_retention_ms=100,
                                 segment_interval_ms=10, **kwargs)  # fmt: skip


def test_rollback_brings_back_the_committed_stream_time(tmp_path: Path) -> None:
    with open_tx(tmp_path / "v", changelog=MemoryChangelog()) as tx:
        tx.store.put(b"k", b"old", 100)
        tx.commit()
        before = tx.store
        tx.store.put(b"k", b"new", 1_000)  # uncommitted; pushes 100 out of the retention
        assert tx.store.observed_stream_time == 1_000
        assert tx.store.get(b"k", 150) is None
        tx.rollback()
        for store in (tx.store, before):  # the reopened store, and one still held
            assert store.observed_stream_time == 100
            assert store.get(b"k", 150) == VersionedRecord(b"old", 100, None)


def test_a_raw_rollback_of_the_bytes_layer_is_seen(tmp_path: Path) -> None:
    with open_tx(tmp_path / "v", changelog=MemoryChangelog()) as tx:
        store = tx.store
        store.put(b"k", b"v1", 100)
        store.put(b"k", b"v2", 150)
        tx.commit()
        store.put(b"k", b"v3", 1_000)
        assert store.get(b"k", 120) is None  # 120 is past the retention at stream time 1000
        tx.db.rollback()  # under the store, which is not reopened
        assert store.observed_stream_time == 150
        assert store.get(b"k", 120) == VersionedRecord(b"v1", 100, 150)


def test_recover_replays_the_stream_time_of_the_log(tmp_path: Path) -> None:
    changelog = MemoryChangelog()
    with open_tx(tmp_path / "v", changelog=changelog) as tx:
        tx.store.put(b"k", b"v1", 100)
        tx.commit()
        before = tx.store
        tx.store.put(b"k", b"v2", 300)  # logged at the end of the operation, not committed
        tx.db.rollback()  # the crash: the uncommitted writes are gone
        assert before.observed_stream_time == 100
        assert tx.recover() == 1
        for store in (tx.store, before):
            assert store.observed_stream_time == 300
            assert store.get(b"k", 250) == VersionedRecord(b"v1", 100, 300)


def test_a_raw_write_of_the_metadata_family_is_seen(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "v", VersionedKeyValueStore.column_families(),
                           autocommit=False)  # fmt: skip
    store = VersionedKeyValueStore.over(db, 100, 10)
    store.put(b"k", b"v1", 100)
    store.put(b"k", b"v2", 1_000)
    assert store.get(b"k", 500) is None  # past the retention
    db.clear(METADATA_CF)  # what a catch-up that resets a cache stages
    assert store.observed_stream_time == -1
    assert store.get(b"k", 500) == VersionedRecord(b"v1", 100, 1_000)
    db.close()


def test_a_commit_by_another_wrapper_is_seen(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "v", VersionedKeyValueStore.column_families())
    reader = VersionedKeyValueStore.over(db, 100, 10)
    writer = VersionedKeyValueStore.over(db, 100, 10)
    writer.put(b"k", b"v1", 100)
    assert reader.observed_stream_time == 100
    writer.put(b"k", b"v2", 1_000)  # autocommitted by the writer
    assert reader.observed_stream_time == 1_000
    assert reader.get(b"k", 500) is None
    db.close()


def test_a_failed_write_leaves_the_stream_time_it_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VersionedKeyValueStore(tmp_path / "v", 100, 10) as store:
        store.put(b"k", b"v1", 100)
        save = store._save_stream_time

        def save_then_fail(previous: int, current: int) -> None:
            save(previous, current)  # staged and remembered, then the operation fails
            raise RuntimeError("disk gone")

        monkeypatch.setattr(store, "_save_stream_time", save_then_fail)
        with pytest.raises(RuntimeError, match="disk gone"):
            store.put(b"k", b"v2", 1_000)
        monkeypatch.undo()
        assert store.observed_stream_time == 100  # the operation was rolled back
        assert store.get(b"k", 150) == VersionedRecord(b"v1", 100, None)


def test_the_stream_time_survives_a_reopen(tmp_path: Path) -> None:
    with VersionedKeyValueStore(tmp_path / "v", 100, 10) as store:
        store.put(b"k", b"v1", 100)
        store.put(b"k", b"v2", 400)
    with VersionedKeyValueStore(tmp_path / "v", 100, 10) as store:
        assert store.observed_stream_time == 400
        assert store.get(b"k", 150) is None  # past the retention at 400
        assert store.get(b"k", 300) == VersionedRecord(b"v1", 100, 400)


def test_a_version_in_its_own_segment_is_one_read_and_the_stream_time_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with VersionedKeyValueStore(tmp_path / "v", 1_000, 100) as store:
        for ts in (110, 130, 150, 170, 400):
            store.put(b"k", b"v%d" % ts, ts)
        store.get(b"k", 0)  # the stream time is read once here, then kept
        reads: list[tuple[bytes, str]] = []
        get = store.wrapped.get

        def counting(key: bytes, cf: str = "default") -> bytes | None:
            reads.append((key, cf))
            return get(key, cf)

        monkeypatch.setattr(store.wrapped, "get", counting)
        assert store.get(b"k", 140) == VersionedRecord(b"v130", 130, 150)
        assert reads == [(segment_prefix(1) + b"k", "default")]
        reads.clear()
        # The latest value answers after reading the own segment's row, which ends before.
        assert store.get(b"k", 450) == VersionedRecord(b"v400", 400, None)
        assert [cf for _, cf in reads] == ["default", "default"]


def test_a_history_read_stops_at_its_byte_budget_and_an_empty_one_answers_nothing(
    tmp_path: Path,
) -> None:
    with VersionedKeyValueStore(tmp_path / "v", 100, 10) as store:
        empty = store.history()
        assert empty is not None and len(empty) == 0
        nothing = empty.as_of_columns(pa.array([b"a", None]), pa.array([5, 5]))
        assert nothing.column(0).null_count == 2 and nothing.num_rows == 2
        store.put(b"a", b"1", 5)
        store.put(b"a", b"2", 8)
        assert store.history(max_bytes=4) is None  # the rows take more
        history = store.history(max_bytes=1_000)
        assert history is not None and len(history) == 2
        found = history.as_of_columns(pa.array([b"a", b"a", b"a"]), pa.array([4, 6, 9]))
        assert found.to_pylist() == [
            {"value": None, "valid_from": None, "valid_to": None},
            {"value": b"1", "valid_from": 5, "valid_to": 8},
            {"value": b"2", "valid_from": 8, "valid_to": None},
        ]
