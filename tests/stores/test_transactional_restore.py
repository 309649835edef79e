"""A transactional store always equals a fresh store restored from its changelog (issue 23).

Kafka restores a store by replaying its changelog from the checkpointed offset to the log's end
before the task processes (``StoreChangelogReader``: ``hasRestoredToEnd``, end offsets listed
``read_uncommitted`` so that a trailing transaction marker counts, KAFKA-10167). What the
replay reads is decided by the processing guarantee: under ``at_least_once`` the restore
consumer reads every record; under ``exactly_once_v2`` ``StreamsConfig`` sets
``isolation.level=read_committed`` on its consumers, so records of aborted (or still open)
transactions are never restored, and transaction markers take offsets of their own. KIP-892
(transactional state stores) keeps these semantics: a store's uncommitted writes are those of
the open transaction. The semantics ours follows are stated once, in the module doc of
``stores.transactional`` (its section "Restore is Kafka's").
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores import (
    KeyValueStore,
    SessionStore,
    TimestampedKeyValueStore,
    ValueAndTimestamp,
    VersionedKeyValueStore,
    WindowStore,
)
from stores.bytes.protocol import RawOp
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CommitConflictError, InvalidOptionError
from stores.transactional import (
    ABORT,
    AT_LEAST_ONCE,
    COMMIT,
    EXACTLY_ONCE_V2,
    OFFSETS_CF,
    PROCESSING_GUARANTEES,
    FileChangelog,
    LogRecord,
    MemoryChangelog,
    TransactionalStore,
    committed_offset_of,
    restored_records,
)

Write = Callable[[Any, int, int], None]  # (store, key index, step) -> None

# kind -> (store class, parameters, a put, a delete)
KINDS: dict[str, tuple[Any, dict[str, Any], Write, Write]] = {
    "keyvalue": (KeyValueStore, {},
                 lambda s, k, i: s.put(b"k%d" % k, b"v%d" % i),
                 lambda s, k, i: s.delete(b"k%d" % k)),
    "timestamped": (TimestampedKeyValueStore, {},
                    lambda s, k, i: s.put(b"k%d" % k, ValueAndTimestamp(b"v%d" % i, i)),
                    lambda s, k, i: s.delete(b"k%d" % k)),
    "versioned": (VersionedKeyValueStore, {"history_retention_ms": 40, "segment_interval_ms": 10},
                  lambda s, k, i: s.put(b"k%d" % k, b"v%d" % i, 30 + 10 * i - 15 * (i % 3)),
                  lambda s, k, i: s.delete(b"k%d" % k, 30 + 10 * i - 15 * (i % 2))),
    "window": (WindowStore, {"retention_ms": 60, "window_size_ms": 10},
               lambda s, k, i: s.put(b"k%d" % k, b"v%d" % i, 20 + 5 * i - 20 * (i % 2)),
               lambda s, k, i: s.put(b"k%d" % k, None, 20 + 5 * i - 20 * (i % 2))),
    "session": (SessionStore, {"retention_ms": 60},
                lambda s, k, i: s.put(b"k%d" % k, 5 * i + 5, 5 * i + 8, b"v%d" % i),
                lambda s, k, i: s.remove(b"k%d" % k, 5 * i, 5 * i + 3)),
}  # fmt: skip


def _open(path: Path, kind: str, changelog: Any, guarantee: str, **kwargs: Any) -> Any:
    store_class, params, _, _ = KINDS[kind]
    return TransactionalStore.of(path, store_class, **params, changelog=changelog,
                                 processing_guarantee=guarantee, **kwargs)  # fmt: skip


def _families(kind: str) -> tuple[str, ...]:
    return tuple(KINDS[kind][0].column_families())


def _view(db: Any, kind: str) -> dict[str, list[tuple[bytes, bytes]]]:
    return {f: list(db.items(f)) for f in _families(kind)}


def _committed(path: Path, kind: str) -> tuple[dict[str, Any], int | None]:
    """What a fresh reader of the database sees: committed data and offset."""
    db = RocksDBBytesStore(path, (*_families(kind), OFFSETS_CF), read_only=True)
    try:
        return _view(db, kind), committed_offset_of(db)
    finally:
        db.close()


def _restored(kind: str, guarantee: str, records: list[LogRecord], offset: int | None,
              to_end: bool = False) -> tuple[dict[str, Any], int | None]:  # fmt: skip
    """A fresh store restored, in a new directory, from a copy of the changelog up to
    ``offset`` (None: not restored at all), or ``to_end``: then an open transaction at the end
    is committed first (the writer's own, which it reads)."""
    copy = MemoryChangelog(records)
    if to_end and records and records[-1].control is None and records[-1].transactional:
        copy.append_marker(COMMIT)
    with tempfile.TemporaryDirectory() as tmp, _open(Path(tmp) / "f", kind, copy, guarantee) as fresh:
        if to_end or offset is not None:
            fresh.recover(None if to_end else offset)
        return _view(fresh.db, kind), fresh.committed_offset()


def _read_committed(records: list[LogRecord]) -> list[LogRecord]:
    """A model of ``read_committed`` apart from the code under test: a transactional record
    lives iff the first marker after it commits; the others, and markers, become empty plain
    records (offsets kept), so an at-least-once replay of the result is what exactly-once
    restores."""
    fate, out = None, []
    for record in reversed(records):
        fate = record.control or fate
        live = record.control is None and (not record.transactional or fate == COMMIT)
        out.append(record if live else LogRecord(record.offset, []))
    return out[::-1]


def _records(log: Path) -> list[LogRecord]:
    changelog = FileChangelog(log)
    try:
        return list(changelog.read(0))
    finally:
        changelog.close()


def _crash(tx: Any) -> None:
    """A kill: no marker, no commit; the log keeps what it was given."""
    close = getattr(tx.changelog, "close", None)
    if close is not None:
        close()
    tx.db.close()


# -- the issue's sequence ----------------------------------------------------------------------


def test_the_issue_sequence_under_exactly_once_aborts_b(tmp_path: Path) -> None:
    """put a, commit; put b; recover(committed offset); put c, commit: ``b``'s transaction
    is aborted in the changelog (a marker with an offset of its own, as Kafka's control records
    have), so the store and a replay of its changelog both hold a, c at offset 6."""
    log = tmp_path / "changelog"
    with _open(tmp_path / "db", "keyvalue", FileChangelog(log), EXACTLY_ONCE_V2) as tx:
        tx.store.put(b"a", b"1")
        tx.commit()
        assert tx.committed_offset() == 2  # the record, then its commit marker
        tx.store.put(b"b", b"2")
        assert tx.recover(tx.committed_offset()) == 0
        assert tx.store.get(b"b") is None and not tx.behind_changelog
        tx.store.put(b"c", b"3")
        tx.commit()
        mine = _view(tx.db, "keyvalue"), tx.committed_offset()
    assert mine == ({"default": [(b"a", b"1"), (b"c", b"3")]}, 6)
    shapes = [(r.offset, r.control, r.transactional) for r in _records(log)]
    assert shapes == [(1, None, True), (2, COMMIT, False), (3, None, True), (4, ABORT, False),
                      (5, None, True), (6, COMMIT, False)]  # fmt: skip
    with _open(tmp_path / "other", "keyvalue", FileChangelog(log), EXACTLY_ONCE_V2) as other:
        assert other.recover() == 2
        assert (_view(other.db, "keyvalue"), other.committed_offset()) == mine


def test_the_issue_sequence_under_at_least_once_refuses_c_until_restored(tmp_path: Path) -> None:
    """Under at-least-once nothing is aborted and a restore replays every record to the end: a
    store recovered to an offset below the end refuses to write on top of records it lacks
    (Kafka does not process before restoring to the end); recovered, it holds a, b, c, as does
    a replay of its changelog."""
    log = tmp_path / "changelog"
    with _open(tmp_path / "db", "keyvalue", FileChangelog(log), AT_LEAST_ONCE) as tx:
        tx.store.put(b"a", b"1")
        tx.commit()
        tx.store.put(b"b", b"2")
        assert tx.recover(tx.committed_offset()) == 0
        assert tx.behind_changelog and tx.store.get(b"b") is None
        with pytest.raises(CommitConflictError, match=r"\[STORE_BEHIND_CHANGELOG\].*offset 1; "
                           r".*up to 2.*processing_guarantee='at_least_once'.*recover\(\)"):  # fmt: skip
            tx.store.put(b"c", b"3")
        with pytest.raises(CommitConflictError, match="STORE_BEHIND_CHANGELOG"):
            tx.commit()
        assert tx.store.get(b"c") is None  # the refused write left nothing behind
        assert tx.recover() == 1
        tx.store.put(b"c", b"3")
        tx.commit()
        mine = _view(tx.db, "keyvalue"), tx.committed_offset()
    assert mine == ({"default": [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]}, 3)
    with _open(tmp_path / "other", "keyvalue", FileChangelog(log), AT_LEAST_ONCE) as other:
        assert other.recover() == 3
        assert (_view(other.db, "keyvalue"), other.committed_offset()) == mine


def test_a_recover_of_the_same_log_fences_the_writer(tmp_path: Path) -> None:
    """A log has one writer: another store's recover() of it aborts the writer's open
    transaction (Kafka's initTransactions fences the producer with the same transactional id);
    the fenced writer's next append is refused, and the log stays whole."""
    log = tmp_path / "changelog"
    with _open(tmp_path / "db", "keyvalue", FileChangelog(log, sync=True), EXACTLY_ONCE_V2) as tx:
        tx.store.put(b"a", b"1")
        tx.commit()
        tx.store.put(b"b", b"2")  # logged, its transaction open
        with _open(tmp_path / "other", "keyvalue", FileChangelog(log), EXACTLY_ONCE_V2) as other:
            other.recover()
            assert other.store.get(b"b") is None
        with pytest.raises(CommitConflictError, match=r"\[CHANGELOG_FENCED\].*another writer"):
            tx.commit()
    shapes = [(r.offset, r.control) for r in _records(log)]
    assert shapes == [(1, None), (2, COMMIT), (3, None), (4, ABORT)]


# -- the rules one by one ----------------------------------------------------------------------


def test_an_unknown_guarantee_is_refused(tmp_path: Path) -> None:
    for bad in ("exactly_once", "EXACTLY_ONCE_V2", "none"):  # exactly_once: removed in Kafka 4.0
        with pytest.raises(InvalidOptionError, match=r"processing_guarantee is '.*'; accepted: "
                           r"'at_least_once', 'exactly_once_v2'"):  # fmt: skip
            _open(tmp_path / "db", "keyvalue", MemoryChangelog(), bad)


@pytest.mark.parametrize("guarantee", PROCESSING_GUARANTEES)
def test_a_crashed_writer_is_restored_before_anything_is_written(
    tmp_path: Path, guarantee: str
) -> None:
    """Opening after a crash does not restore by itself, but writes wait for ``recover()``;
    under exactly-once the crashed transaction is aborted by it, before the next append."""
    log = tmp_path / "changelog"
    tx = _open(tmp_path / "db", "keyvalue", FileChangelog(log), guarantee)
    tx.store.put(b"a", b"1")
    tx.commit()
    tx.store.put(b"b", b"2")
    _crash(tx)
    with _open(tmp_path / "db", "keyvalue", FileChangelog(log), guarantee) as tx:
        assert tx.behind_changelog
        with pytest.raises(CommitConflictError, match="STORE_BEHIND_CHANGELOG"):
            tx.store.put(b"c", b"3")
        assert tx.recover() == (1 if guarantee == AT_LEAST_ONCE else 0)
        assert tx.store.get(b"b") == (b"2" if guarantee == AT_LEAST_ONCE else None)
        tx.store.put(b"c", b"3")
        tx.commit()
    controls = [r.control for r in _records(log)]
    if guarantee == EXACTLY_ONCE_V2:
        assert controls == [None, COMMIT, None, ABORT, None, COMMIT]
    else:
        assert controls == [None, None, None]  # at-least-once writes no markers


def test_rollback_aborts_under_exactly_once_and_leaves_the_store_behind_otherwise(
    tmp_path: Path,
) -> None:
    with _open(tmp_path / "e", "keyvalue", MemoryChangelog(), EXACTLY_ONCE_V2) as tx:
        tx.store.put(b"a", b"1")
        tx.rollback()
        assert [r.control for r in tx.changelog.read(0)] == [None, ABORT]
        tx.store.put(b"b", b"2")  # not behind: nothing a restore would apply
    with _open(tmp_path / "a", "keyvalue", MemoryChangelog(), AT_LEAST_ONCE) as tx:
        tx.store.put(b"a", b"1")
        tx.rollback()
        assert tx.behind_changelog  # the record stays in the log, and a restore replays it
        tx.recover()
        assert tx.store.get(b"a") == b"1"


def test_a_commit_offset_other_than_the_changelogs_is_refused(tmp_path: Path) -> None:
    with _open(tmp_path / "db", "keyvalue", MemoryChangelog(), EXACTLY_ONCE_V2) as tx:
        tx.store.put(b"a", b"1")
        with pytest.raises(InvalidOptionError, match=r"changelog_offset is 1; .* reaches: 2"):
            tx.commit(1)  # the marker takes offset 2
        tx.commit(2)
        assert tx.committed_offset() == 2


def test_plain_records_are_read_under_both_guarantees() -> None:
    """Records without a transaction (files written before markers existed, or at-least-once
    writers) are read by ``read_committed`` too, as Kafka reads non-transactional records;
    under at-least-once even aborted ones are read (``read_uncommitted``)."""
    ops: list[RawOp] = [("put", "default", b"k", b"v")]
    records = [LogRecord(1, ops), LogRecord(2, ops, None, True), LogRecord(3, ops),
               LogRecord(4, [], ABORT), LogRecord(5, ops, None, True), LogRecord(6, ops)]  # fmt: skip
    # 2 is aborted at 4; 3 waits behind it (the last stable offset) and is read at 4; 6 waits
    # behind the transaction 5 opens, which nothing decides
    assert [r.offset for r in restored_records(records, EXACTLY_ONCE_V2)] == [1, 3]
    aborted: list[bool] = []
    eos = restored_records(records, EXACTLY_ONCE_V2, lambda: aborted.append(True))
    assert [r.offset for r in eos] == [1, 3, 6] and aborted == [True]  # recover() aborts 5
    assert [r.offset for r in restored_records(records, AT_LEAST_ONCE)] == [1, 2, 3, 5, 6]


def test_an_old_changelog_file_without_markers_still_reads(tmp_path: Path) -> None:
    """A file of plain records (the format before markers: the count field has no flag) reads
    under both guarantees as records outside any transaction."""
    log = tmp_path / "changelog"
    old = FileChangelog(log)
    for i in range(3):
        old.append([("put", "default", b"k%d" % i, b"v")])  # plain, as every old file holds
    old.close()
    for guarantee in PROCESSING_GUARANTEES:
        with _open(tmp_path / guarantee, "keyvalue", FileChangelog(log), guarantee) as tx:
            assert tx.behind_changelog
            assert tx.recover() == 3 and tx.committed_offset() == 3


# -- the property: after every step, the store equals a fresh restore ---------------------------

STEPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["put", "put", "delete"]), st.integers(0, 3)),
        st.tuples(st.sampled_from(["commit", "crash", "close", "rollback", "reopen"]), st.just(0)),
        st.tuples(st.just("recover"), st.integers(-1, 12)),  # -1: to the end
    ),
    max_size=14,
)


@pytest.mark.parametrize("guarantee", PROCESSING_GUARANTEES)
@pytest.mark.parametrize("kind", list(KINDS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, on_file=st.booleans(), bound=st.sampled_from([None, 120]))
def test_the_store_always_equals_a_fresh_restore_of_its_changelog(
    kind: str, guarantee: str, steps: list[tuple[str, int]], on_file: bool, bound: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path, log = Path(tmp) / "db", Path(tmp) / "changelog"
        memory = MemoryChangelog()
        extra = {} if bound is None else {"max_uncommitted_bytes": bound}

        def reopen() -> Any:
            return _open(path, kind, FileChangelog(log) if on_file else memory, guarantee, **extra)

        tx = reopen()
        try:
            for i, (step, arg) in enumerate(steps):
                behind = tx.behind_changelog
                if step in ("put", "delete", "commit"):
                    try:
                        if step == "commit":
                            tx.commit()
                        else:
                            _, _, put, delete = KINDS[kind]
                            (put if step == "put" else delete)(tx.store, arg, i)
                        assert not behind
                    except CommitConflictError as e:
                        assert behind and e.code == "STORE_BEHIND_CHANGELOG"
                elif step in ("crash", "close"):
                    if step == "crash":
                        _crash(tx)
                    else:
                        tx.close()
                    tx = reopen()
                elif step == "rollback":
                    tx.rollback()
                elif step == "reopen":
                    tx.reopen()
                else:
                    tx.recover(None if arg < 0 else arg)
                records = list(tx.changelog.read(0))
                committed = _committed(path, kind)
                offset = tx.committed_offset()
                assert committed == _restored(kind, guarantee, records, offset), (
                    f"after step {i} {steps[: i + 1]}"
                )
                if guarantee == EXACTLY_ONCE_V2:  # and aborted writes are nowhere
                    model = _read_committed(records)
                    assert committed == _restored(kind, AT_LEAST_ONCE, model, offset)
                if not tx.behind_changelog:  # what the writer reads of its own
                    own = _restored(kind, guarantee, records, None, to_end=True)
                    assert _view(tx.db, kind) == own[0], f"writer, after step {i} {steps[: i + 1]}"
            tx.recover()
            mine = _view(tx.db, kind), tx.committed_offset()
        finally:
            tx.close()
        fresh_log: Any = FileChangelog(log) if on_file else MemoryChangelog(memory.records)
        with _open(Path(tmp) / "fresh", kind, fresh_log, guarantee) as fresh:
            fresh.recover()
            assert (_view(fresh.db, kind), fresh.committed_offset()) == mine
