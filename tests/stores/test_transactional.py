"""Transactional stores (KIP-892 / KIP-1035) over every store kind: one contract, run per kind."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stores import (
    KeyValueStore,
    SessionStore,
    SessionStoreWithHeaders,
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    VersionedKeyValueStore,
    WindowStore,
    WindowStoreWithHeaders,
)
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CorruptDataError, InvalidOptionError
from stores.transactional import OFFSETS_CF, FileChangelog, MemoryChangelog, TransactionalStore

REPO = Path(__file__).resolve().parents[2]
H = (("trace", b"\x01"),)

# kind -> (store class, parameters, one write by step i)
KINDS: dict[str, tuple[Any, dict[str, Any], Callable[[Any, int], None]]] = {
    "keyvalue": (KeyValueStore, {},
                 lambda s, i: s.put(b"k%d" % (i % 7), None if i % 5 == 4 else b"v%d" % i)),
    "timestamped": (TimestampedKeyValueStore, {},
                    lambda s, i: s.put(b"k%d" % (i % 7), ValueAndTimestamp(b"v%d" % i, i))),
    "timestamped-headers": (TimestampedKeyValueStoreWithHeaders, {},
                            lambda s, i: s.put(b"k%d" % (i % 7),
                                               ValueTimestampHeaders(b"v%d" % i, i, H))),
    "versioned": (VersionedKeyValueStore, {"history_retention_ms": 50},
                  lambda s, i: s.put(b"k%d" % (i % 7), b"v%d" % i, 10 * i - 7 * (i % 3))),
    "window": (WindowStore, {"retention_ms": 60, "window_size_ms": 10},
               lambda s, i: s.put(b"k%d" % (i % 5), b"v%d" % i, 5 * i)),
    "window-duplicates": (WindowStore, {"retention_ms": 60, "window_size_ms": 10,
                                        "retain_duplicates": True},
                          lambda s, i: s.put(b"k%d" % (i % 5), b"v%d" % i, 5 * (i // 2))),
    "timestamped-window": (TimestampedWindowStore, {"retention_ms": 60, "window_size_ms": 10},
                           lambda s, i: s.put(b"k%d" % (i % 5), ValueAndTimestamp(b"v", i), 5 * i)),
    "window-headers": (WindowStoreWithHeaders, {"retention_ms": 60, "window_size_ms": 10},
                       lambda s, i: s.put(b"k%d" % (i % 5), ValueAndHeaders(b"v", H), 5 * i)),
    "timestamped-window-headers": (
        TimestampedWindowStoreWithHeaders, {"retention_ms": 60, "window_size_ms": 10},
        lambda s, i: s.put(b"k%d" % (i % 5), ValueTimestampHeaders(b"v", i, H), 5 * i)),
    "session": (SessionStore, {"retention_ms": 60},
                lambda s, i: s.put(b"k%d" % (i % 5), 5 * i, 5 * i + 3, b"v%d" % i)),
    "session-headers": (SessionStoreWithHeaders, {"retention_ms": 60},
                        lambda s, i: s.put(b"k%d" % (i % 5), 5 * i, 5 * i + 3,
                                           ValueAndHeaders(b"v", H))),
}  # fmt: skip


def _open(path: Path, kind: str, **kwargs: Any) -> TransactionalStore[Any]:
    store_class, params, _ = KINDS[kind]
    return TransactionalStore.of(path, store_class, **params, **kwargs)


def _write(tx: TransactionalStore[Any], kind: str, steps: range) -> None:
    for i in steps:
        KINDS[kind][2](tx.store, i)


def _committed(path: Path, kind: str) -> dict[str, list[tuple[bytes, bytes]]]:
    """What a fresh reader of the database sees: every family, committed data only."""
    families = KINDS[kind][0].column_families()
    db = RocksDBBytesStore(path, (*families, OFFSETS_CF), read_only=True)
    try:
        return {f: list(db.items(f)) for f in (*families, OFFSETS_CF)}
    finally:
        db.close()


def _reference(tmp_path: Path, kind: str, steps: range, offset: int) -> dict[str, Any]:
    """The state of an uninterrupted run of ``steps`` committed at ``offset``."""
    path = tmp_path / "reference"
    with _open(path, kind) as tx:
        _write(tx, kind, steps)
        tx.commit(offset)
    return _committed(path, kind)


@pytest.mark.parametrize("kind", list(KINDS))
def test_writes_are_invisible_until_commit_and_then_atomic_with_the_offset(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "db"
    with _open(path, kind) as tx:
        _write(tx, kind, range(12))
        families = KINDS[kind][0].column_families()
        mine = {f: list(tx.db.items(f)) for f in families}
        assert any(mine.values())  # the writer reads its own writes
        assert not any(_committed(path, kind).values())  # nobody else does
        assert tx.committed_offset() is None
        tx.commit(12)
        assert tx.committed_offset() == 12
    seen = _committed(path, kind)
    assert {f: seen[f] for f in families} == mine
    assert seen == _reference(tmp_path, kind, range(12), 12)


@pytest.mark.parametrize("kind", list(KINDS))
def test_closing_without_commit_loses_the_uncommitted_writes(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "db"
    with _open(path, kind) as tx:
        _write(tx, kind, range(6))
        tx.commit(6)
        _write(tx, kind, range(6, 12))
    assert _committed(path, kind) == _reference(tmp_path, kind, range(6), 6)
    with _open(path, kind) as tx:
        assert tx.committed_offset() == 6


@pytest.mark.parametrize("kind", list(KINDS))
def test_recover_replays_the_changelog_after_the_committed_offset(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "db"
    log = tmp_path / "changelog"
    with _open(path, kind, changelog=FileChangelog(log)) as tx:
        _write(tx, kind, range(10))
        tx.commit()
        _write(tx, kind, range(10, 20))  # logged, never committed: the crash
    with _open(path, kind, changelog=FileChangelog(log)) as tx:
        assert tx.committed_offset() == 10  # one record per operation
        assert tx.recover() == 10
        assert tx.committed_offset() == 20
        _write(tx, kind, range(20, 22))  # and the store goes on
        tx.commit()
    assert _committed(path, kind) == _reference(tmp_path, kind, range(22), 22)


_KILLED_WRITER = """
import os, signal, sys
sys.path.insert(0, {repo!r})
from tests.stores.test_transactional import _open, _write
from stores.transactional import FileChangelog
kind, path, log = sys.argv[1], sys.argv[2], sys.argv[3]
tx = _open(path, kind, changelog=FileChangelog(log, sync=True))
_write(tx, kind, range(10))
tx.commit()
_write(tx, kind, range(10, 20))
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("kind", ["keyvalue", "versioned", "timestamped-window-headers", "session"])
def test_a_killed_writer_recovers_exactly_what_it_logged(tmp_path: Path, kind: str) -> None:
    path, log = tmp_path / "db", tmp_path / "changelog"
    script = _KILLED_WRITER.format(repo=str(REPO))
    result = subprocess.run([sys.executable, "-c", script, kind, str(path), str(log)],
                            capture_output=True, text=True, check=False)  # fmt: skip
    assert result.returncode == -9, result.stderr
    assert _committed(path, kind) == _reference(tmp_path / "a", kind, range(10), 10)
    with _open(path, kind, changelog=FileChangelog(log)) as tx:
        assert tx.recover() == 10
    assert _committed(path, kind) == _reference(tmp_path / "b", kind, range(20), 20)


def test_a_transaction_far_beyond_the_bound_commits_early_and_stays_bounded(tmp_path: Path) -> None:
    bound = 64 << 10
    value = b"x" * 1000
    with TransactionalStore.of(tmp_path / "db", KeyValueStore, changelog=MemoryChangelog(),
                               max_uncommitted_bytes=bound) as tx:  # fmt: skip
        for i in range(10_000):  # 10 MB
            tx.store.put(b"key-%06d" % i, value)
            assert tx.uncommitted_bytes <= bound
        assert tx.committed_offset() is not None and tx.committed_offset() > 100
        tx.commit()
        assert tx.committed_offset() == 10_000
    db = RocksDBBytesStore(tmp_path / "db", ("default", OFFSETS_CF), read_only=True)
    try:
        assert sum(1 for _ in db.items()) == 10_000
    finally:
        db.close()


def test_without_a_changelog_the_owner_is_asked_to_commit(tmp_path: Path) -> None:
    commits: list[int] = []

    def request_commit() -> None:
        commits.append(len(commits) + 1)
        tx.commit(len(commits))

    tx = TransactionalStore.of(tmp_path / "db", KeyValueStore, max_uncommitted_bytes=10_000,
                               request_commit=request_commit)  # fmt: skip
    with tx:
        for i in range(100):
            tx.store.put(b"%03d" % i, b"v" * 500)
        assert len(commits) >= 4 and tx.committed_offset() == len(commits)
    with TransactionalStore.of(tmp_path / "other", KeyValueStore, max_uncommitted_bytes=1000) as tx2:
        with pytest.raises(InvalidOptionError, match="exceed max_uncommitted_bytes"):
            for i in range(10):
                tx2.store.put(b"%03d" % i, b"v" * 500)
        with pytest.raises(InvalidOptionError, match="needs a changelog_offset"):
            tx2.commit()


def test_offsets_never_go_backwards(tmp_path: Path) -> None:
    with TransactionalStore.of(tmp_path / "db", KeyValueStore) as tx:
        tx.commit(5)
        with pytest.raises(InvalidOptionError, match="below the committed offset 5"):
            tx.commit(4)


def test_a_torn_last_record_is_cut_and_a_corrupt_middle_refused(tmp_path: Path) -> None:
    log = tmp_path / "changelog"
    changelog = FileChangelog(log)
    for i in range(3):
        changelog.append([("put", "default", b"k%d" % i, b"v")])
    changelog.close()
    whole = log.read_bytes()
    log.write_bytes(whole[:-3])  # a crash in the middle of the last append
    reopened = FileChangelog(log)
    assert reopened.end_offset() == 2
    reopened.close()
    assert os.path.getsize(log) < len(whole) - 3  # the torn record was cut off
    data = bytearray(whole)
    data[12] ^= 0xFF  # inside the first record
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match=r"\[CHANGELOG_CORRUPT\].*byte 0 followed by more"):
        FileChangelog(log)
