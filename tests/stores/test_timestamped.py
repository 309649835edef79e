"""Timestamped key-value stores (KIP-258) and their headers-aware variant (KIP-1271).

* A contract suite (Kafka's ``AbstractKeyValueStoreTest`` in spirit) run over both stores, fresh
  or reopened over a database that still holds entries of an older format, standalone or over a
  bytes store whose owner commits. An adapter builds and unpacks each store's records.
* Kafka's own scenarios of ``RocksDBTimestampedStoreTest`` and
  ``RocksDBTimestampedStoreWithHeadersTest``, ported: lazy migration, where the bytes physically
  live per column family, upgrade mode versus regular mode, refused mixes and downgrades.
* Golden bytes of stored values, and a model-based test against a dict.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any, Union

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CorruptDataError, InvalidOptionError, StoreClosedError
from stores.formats.headers import encode_headers
from stores.formats.timestamped import TIMESTAMPED_CF, encode_timestamped
from stores.key_value.store import KeyValueStore
from stores.records import KeyValue, ValueAndTimestamp, ValueTimestampHeaders
from stores.timestamped.store import (
    TIMESTAMPED_WITH_HEADERS_CF,
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
)

Store = Union[TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders]
Hdrs = tuple[tuple[str, Union[bytes, None]], ...]
Entry = tuple[bytes, int, Hdrs]  # value, timestamp, headers

DEFAULT = "default"
ALL_CFS = (DEFAULT, TIMESTAMPED_CF, TIMESTAMPED_WITH_HEADERS_CF)
# Legacy entries interleave with the keys the contract tests use (b"a", b"b", ...).
LEGACY = {b"a0": b"legacy-a", b"c5": b"legacy-c", b"k\xff": b"legacy-k"}
LEGACY_TS = 7
NEW_CF: dict[Any, str] = {
    TimestampedKeyValueStore: TIMESTAMPED_CF,
    TimestampedKeyValueStoreWithHeaders: TIMESTAMPED_WITH_HEADERS_CF,
}


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def seed_plain(path: Path, entries: dict[bytes, bytes]) -> None:
    with KeyValueStore(path) as kv:
        for key, value in entries.items():
            kv.put(key, value)


def seed_timestamped(path: Path, entries: dict[bytes, tuple[bytes, int]]) -> None:
    with TimestampedKeyValueStore(path) as store:
        for key, (value, ts) in entries.items():
            store.put(key, ValueAndTimestamp(value, ts))


def physical(path: Path) -> dict[str, dict[bytes, bytes]]:
    """Every column family's raw entries, read with the store closed."""
    db = RocksDBBytesStore(path, ALL_CFS, read_only=True)
    try:
        return {cf: dict(db.range(cf=cf)) for cf in ALL_CFS}
    finally:
        db.close()


def plant(path: Path, cf: str, writes: dict[bytes, bytes | None]) -> None:
    """Write raw bytes into a column family behind the store's back (as Kafka's tests do)."""
    with RocksDBBytesStore(path, ALL_CFS) as db:
        for key, raw in writes.items():
            if raw is None:
                db.delete(key, cf)
            else:
                db.put(key, raw, cf)


# -- the adapter and the contract fixture -------------------------------------------------------


@dataclass
class Harness:
    """One store under test plus what it should hold before the test touches it."""

    store: Any
    headers_kept: bool
    initial: dict[bytes, Entry]
    db: RocksDBBytesStore | None = None

    def rec(self, value: bytes | None, ts: int, headers: Hdrs = ()) -> Any:
        if self.headers_kept:
            return ValueTimestampHeaders(value, ts, headers)
        return ValueAndTimestamp(value, ts)

    def exp(self, value: bytes, ts: int, headers: Hdrs = ()) -> Entry:
        return value, ts, headers if self.headers_kept else ()

    def unwrap(self, record: Any) -> Entry | None:
        if record is None:
            return None
        if self.headers_kept:
            assert isinstance(record, ValueTimestampHeaders)
            return record.value, record.timestamp, record.headers
        assert isinstance(record, ValueAndTimestamp)
        return record.value, record.timestamp, ()

    def items(self, it: Iterable[Any]) -> list[tuple[bytes, Entry | None]]:
        out = []
        for kv in it:
            assert isinstance(kv, KeyValue)
            out.append((kv.key, self.unwrap(kv.value)))
        return out

    def expected(self, extra: Mapping[bytes, Entry | None]) -> list[tuple[bytes, Entry]]:
        merged: dict[bytes, Entry | None] = {**self.initial, **extra}
        return sorted((k, v) for k, v in merged.items() if v is not None)


FLAVORS = [
    (kind, origin, mode)
    for kind, origins in (("ts", ("fresh", "plain")), ("headers", ("fresh", "plain", "ts")))
    for origin in origins
    for mode in ("standalone", "over")
]


@pytest.fixture(params=FLAVORS, ids=["-".join(f) for f in FLAVORS])
def hn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    kind, origin, mode = request.param
    path = tmp_path / "store"
    initial: dict[bytes, Entry] = {}
    if origin == "plain":
        seed_plain(path, LEGACY)
        initial = {k: (v, -1, ()) for k, v in LEGACY.items()}
    elif origin == "ts":
        seed_timestamped(path, {k: (v, LEGACY_TS) for k, v in LEGACY.items()})
        initial = {k: (v, LEGACY_TS, ()) for k, v in LEGACY.items()}
    cls = TimestampedKeyValueStore if kind == "ts" else TimestampedKeyValueStoreWithHeaders
    if mode == "standalone":
        store = cls(path)
        harness = Harness(store, kind == "headers", initial)
    else:
        db = RocksDBBytesStore(path, cls.column_families(), autocommit=False)
        harness = Harness(cls.over(db), kind == "headers", initial, db)
    assert harness.store.upgrade_mode == (origin != "fresh")
    yield harness
    harness.store.close()
    if harness.db is not None:
        harness.db.close()


# -- contract suite -----------------------------------------------------------------------------


def test_opens_with_exactly_the_older_entries(hn: Harness) -> None:
    assert hn.items(hn.store.all()) == hn.expected({})
    assert hn.store.approximate_num_entries() == len(hn.initial)
    assert not hn.store.closed


def test_put_get_delete(hn: Harness) -> None:
    s = hn.store
    assert s.get(b"a") is None
    s.put(b"a", hn.rec(b"1", 10, (("h", b"x"),)))
    assert hn.unwrap(s.get(b"a")) == hn.exp(b"1", 10, (("h", b"x"),))
    s.put(b"a", hn.rec(b"2", 5))  # an older timestamp still overwrites: no time semantics here
    assert hn.unwrap(s.get(b"a")) == hn.exp(b"2", 5)
    assert hn.unwrap(s.delete(b"a")) == hn.exp(b"2", 5)
    assert s.get(b"a") is None
    assert s.delete(b"a") is None
    assert hn.items(s.all()) == hn.expected({})


def test_timestamps_and_empty_values_are_kept_exactly(hn: Harness) -> None:
    s = hn.store
    for i, ts in enumerate([-1, 0, 2**63 - 1, -(2**63), 1_700_000_000_000]):
        s.put(bytes([i]), hn.rec(b"", ts))
        assert hn.unwrap(s.get(bytes([i]))) == hn.exp(b"", ts)


def test_null_deletes_as_in_kafka(hn: Harness) -> None:
    s = hn.store
    s.put(b"a", hn.rec(b"1", 1))
    s.put(b"a", None)
    assert s.get(b"a") is None
    s.put(b"b", hn.rec(b"1", 1))
    s.put(b"b", hn.rec(None, 2))  # Kafka's serializer turns a null inner value into a delete
    assert s.get(b"b") is None
    assert ValueAndTimestamp.make(None, 1) is None
    assert ValueTimestampHeaders.make(None, 1, [("k", b"v")]) is None
    assert hn.items(s.all()) == hn.expected({})


def test_put_if_absent_returns_the_existing_value(hn: Harness) -> None:
    s = hn.store
    assert s.put_if_absent(b"a", hn.rec(b"1", 1)) is None
    assert hn.unwrap(s.put_if_absent(b"a", hn.rec(b"2", 2))) == hn.exp(b"1", 1)
    assert hn.unwrap(s.get(b"a")) == hn.exp(b"1", 1)
    assert s.put_if_absent(b"z", None) is None  # nothing there, nothing written
    assert s.get(b"z") is None
    assert hn.unwrap(s.put_if_absent(b"a", None)) == hn.exp(b"1", 1)  # does not delete
    assert hn.items(s.all()) == hn.expected({b"a": hn.exp(b"1", 1)})


def test_put_all_is_applied_in_order(hn: Harness) -> None:
    s = hn.store
    s.put(b"d", hn.rec(b"old", 1))
    s.put_all(
        [
            (b"a", hn.rec(b"1", 1)),
            (b"b", hn.rec(b"2", 2, (("k", None),))),
            (b"a", hn.rec(b"3", 3)),
            (b"d", None),
            (bytearray(b"e"), hn.rec(b"5", 5)),
        ]
    )
    assert hn.items(s.all()) == hn.expected(
        {b"a": hn.exp(b"3", 3), b"b": hn.exp(b"2", 2, (("k", None),)), b"e": hn.exp(b"5", 5)}
    )


def test_a_bad_entry_fails_put_all_before_anything_is_written(hn: Harness) -> None:
    with pytest.raises(InvalidOptionError, match="key must be bytes"):
        hn.store.put_all([(b"a", hn.rec(b"1", 1)), ("b", hn.rec(b"2", 2))])
    with pytest.raises(InvalidOptionError, match="pairs"):
        hn.store.put_all([b"abc"])
    assert hn.store.get(b"a") is None


def test_range_is_inclusive_and_merges_older_entries(hn: Harness) -> None:
    s = hn.store
    mine = {bytes([c]): hn.exp(bytes([c]), c) for c in b"adbce"}
    s.put_all([(k, hn.rec(v, ts)) for k, (v, ts, _) in mine.items()])
    everything = hn.expected(mine)

    def between(lo: bytes | None, hi: bytes | None) -> list[tuple[bytes, Entry]]:
        return [
            (k, v) for k, v in everything if (lo is None or k >= lo) and (hi is None or k <= hi)
        ]

    for lo, hi in [(b"b", b"d"), (None, b"c"), (b"c", None), (None, None), (b"c5", b"c5")]:
        assert hn.items(s.range(lo, hi)) == between(lo, hi), (lo, hi)
        assert hn.items(s.range(lo, hi, reverse=True)) == between(lo, hi)[::-1]
        assert hn.items(s.reverse_range(lo, hi)) == between(lo, hi)[::-1]
    assert list(s.range(b"d", b"b")) == []  # inverted bounds: empty, as in Kafka
    assert hn.items(s.all()) == everything
    assert hn.items(s.all(reverse=True)) == everything[::-1]
    assert hn.items(s.reverse_all()) == everything[::-1]
    assert s.approximate_num_entries() == len(everything)


def test_prefix_scan(hn: Harness) -> None:
    s = hn.store
    mine: dict[bytes, Entry | None] = {}
    for key in (b"ab", b"abc", b"b", b"a\xff", b"k\xff\x01", b"k"):
        s.put(key, hn.rec(key, 1))
        mine[key] = hn.exp(key, 1)
    everything = hn.expected(mine)
    assert everything
    for prefix in (b"ab", b"a", b"k\xff", b"\xff", b""):
        expected = [(k, v) for k, v in everything if k.startswith(prefix)]
        assert hn.items(s.prefix_scan(prefix)) == expected, prefix


def test_iterators_peek_close_and_close_with_their_store(hn: Harness) -> None:
    s = hn.store
    s.put_all([(b"a", hn.rec(b"1", 1)), (b"b", hn.rec(b"2", 2))])
    keys = [k for k, _ in hn.expected({b"a": hn.exp(b"1", 1), b"b": hn.exp(b"2", 2)})]
    with s.all() as it:
        assert it.peek_next_key() == keys[0]
        assert it.has_next() and it.has_next()
        assert [kv.key for kv in it] == keys
        assert not it.has_next()
        with pytest.raises(StopIteration):
            it.peek_next_key()
    with pytest.raises(StoreClosedError):
        it.has_next()
    empty = s.range(b"b", b"a")
    assert not empty.has_next()
    open_it = s.reverse_all()
    assert next(open_it).key == keys[-1]
    s.close()
    with pytest.raises(StoreClosedError, match="iterator"):
        next(open_it)


def test_older_entries_can_be_read_overwritten_and_deleted(hn: Harness) -> None:
    s = hn.store
    for key, entry in hn.initial.items():
        assert hn.unwrap(s.get(key)) == entry
        assert hn.unwrap(s.get(key)) == entry  # a second read finds the migrated entry
    extra: dict[bytes, Entry | None] = {}
    for i, key in enumerate(sorted(hn.initial)):
        if i % 2:
            assert hn.unwrap(s.delete(key)) == hn.initial[key]
            extra[key] = None
        else:
            s.put(key, hn.rec(b"new", 99))
            extra[key] = hn.exp(b"new", 99)
    assert hn.items(s.all()) == hn.expected(extra)
    assert s.approximate_num_entries() == len(hn.expected(extra))


def test_bad_input_is_refused(hn: Harness) -> None:
    s = hn.store
    with pytest.raises(InvalidOptionError, match="key must be bytes"):
        s.put("a", hn.rec(b"1", 1))
    with pytest.raises(InvalidOptionError, match="key must be bytes"):
        s.get(None)
    with pytest.raises(InvalidOptionError, match="value must be a Value"):
        s.put(b"a", b"plain bytes")
    with pytest.raises(InvalidOptionError, match="timestamp must be an integer"):
        s.put(b"a", hn.rec(b"1", 1.5))  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="timestamp must be between"):
        s.put(b"a", hn.rec(b"1", 2**63))
    with pytest.raises(InvalidOptionError, match="value must be bytes or None"):
        s.put(b"a", hn.rec("text", 1))  # type: ignore[arg-type]
    if hn.headers_kept:
        with pytest.raises(InvalidOptionError, match="UTF-8"):
            s.put(b"a", hn.rec(b"1", 1, (("\ud800", None),)))
    with pytest.raises(InvalidOptionError, match="start must be bytes"):
        list(s.range("a", None))
    with pytest.raises(InvalidOptionError, match="batch_rows"):
        s.scan_columns(batch_rows=0)
    assert s.get(b"a") is None


def test_closed_store_refuses_every_operation(hn: Harness) -> None:
    s = hn.store
    s.close()
    assert s.closed
    for call in (
        lambda: s.get(b"a"),
        lambda: s.put(b"a", hn.rec(b"1", 1)),
        lambda: s.delete(b"a"),
        lambda: s.all(),
        lambda: s.range(b"a", b"b"),
        lambda: s.approximate_num_entries(),
        lambda: s.scan_columns(),
        lambda: s.put_columns([b"a"], [b"1"], [1]),
    ):
        with pytest.raises(StoreClosedError, match="STORE_CLOSED"):
            call()


def _flatten(batches: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [row for batch in batches for row in zip(*batch)]


def test_put_columns_then_scan_columns(hn: Harness) -> None:
    s = hn.store
    keys = [b"b", b"a", b"c", b"a", b"e"]
    values: list[bytes | None] = [b"2", b"1", b"3", b"1'", None]
    timestamps = [2, 1, 3, 4, 5]
    if hn.headers_kept:
        headers = [encode_headers([("k", b"v")]), b"", b"", encode_headers([("x", None)]), b""]
        s.put_columns(keys, values, timestamps, headers)
    else:
        s.put_columns(keys, values, timestamps)
    expected = hn.expected(
        {
            b"a": hn.exp(b"1'", 4, (("x", None),)),
            b"b": hn.exp(b"2", 2, (("k", b"v"),)),
            b"c": hn.exp(b"3", 3),
        }
    )
    assert hn.items(s.all()) == expected
    rows = _flatten(s.scan_columns(batch_rows=2))
    assert [row[:3] for row in rows] == [(k, v, ts) for k, (v, ts, _) in expected]
    if hn.headers_kept:
        assert [row[3] for row in rows] == [encode_headers(hs) for _, (_, _, hs) in expected]
    s.put_columns([b"a", b"zz"], [None, None], [0, 0])  # a None value deletes
    assert s.get(b"a") is None
    assert s.approximate_num_entries() == len(expected) - 1


def test_scan_columns_batches(hn: Harness) -> None:
    s = hn.store
    keys = [bytes([65 + i]) for i in range(7)]
    s.put_columns(keys, [b"v"] * 7, list(range(7)))
    total = 7 + len(hn.initial)
    batches = list(s.scan_columns(batch_rows=3))
    assert [len(b[0]) for b in batches] == [3] * (total // 3) + ([total % 3] if total % 3 else [])
    assert all(len({len(column) for column in b}) == 1 for b in batches)
    assert _flatten(s.scan_columns()) == _flatten(batches)
    assert len(_flatten(batches)) == total


def test_put_columns_refuses_bad_columns(hn: Harness) -> None:
    s = hn.store
    with pytest.raises(InvalidOptionError, match="one length"):
        s.put_columns([b"a", b"b"], [b"1"], [1, 2])
    with pytest.raises(InvalidOptionError, match="every key must be bytes"):
        s.put_columns(["a"], [b"1"], [1])
    with pytest.raises(InvalidOptionError, match="values must be bytes"):
        s.put_columns([b"a"], ["1"], [1])
    with pytest.raises(InvalidOptionError, match="timestamps"):
        s.put_columns([b"a"], [b"1"], [2**64])
    if hn.headers_kept:
        with pytest.raises(InvalidOptionError, match="one length"):
            s.put_columns([b"a"], [b"1"], [1], [])
    assert s.get(b"a") is None


# -- Kafka's scenarios --------------------------------------------------------------------------

KAFKA_SEVEN = {f"key{i}".encode(): str(i).encode() * i for i in range(1, 8)}


@dataclass(frozen=True)
class UpgradePath:
    name: str
    cls: Any
    legacy_cf: str

    @property
    def new_cf(self) -> str:
        return NEW_CF[self.cls]

    def seed(self, path: Path, entries: dict[bytes, bytes]) -> None:
        if self.legacy_cf == DEFAULT:
            seed_plain(path, entries)
        else:  # as Kafka's wrapTimestampedValue: the timestamp is the number the value spells
            seed_timestamped(path, {k: (v, int(v)) for k, v in entries.items()})

    def legacy_raw(self, value: bytes) -> bytes:
        return value if self.legacy_cf == DEFAULT else encode_timestamped(value, int(value))

    def legacy_ts(self, value: bytes) -> int:
        return -1 if self.legacy_cf == DEFAULT else int(value)

    def new_raw(self, value: bytes, ts: int) -> bytes:
        raw = encode_timestamped(value, ts)
        return raw if self.cls is TimestampedKeyValueStore else b"\x00" + raw

    def rec(self, value: bytes, ts: int) -> Any:
        if self.cls is TimestampedKeyValueStore:
            return ValueAndTimestamp(value, ts)
        return ValueTimestampHeaders(value, ts)


UPGRADES = [
    UpgradePath("plain-to-timestamped", TimestampedKeyValueStore, DEFAULT),
    UpgradePath("plain-to-headers", TimestampedKeyValueStoreWithHeaders, DEFAULT),
    UpgradePath("timestamped-to-headers", TimestampedKeyValueStoreWithHeaders, TIMESTAMPED_CF),
]


@pytest.mark.parametrize("up", UPGRADES, ids=[u.name for u in UPGRADES])
def test_kafka_scenario_lazy_migration(up: UpgradePath, tmp_path: Path) -> None:
    """Kafka's shouldMigrateDataFromDefaultToTimestampColumnFamily and its headers twins."""
    path = tmp_path / "s"
    up.seed(path, KAFKA_SEVEN)
    new_cf = up.new_cf
    store = up.cls(path)
    assert store.upgrade_mode and store.legacy_column_family == up.legacy_cf
    assert store.approximate_num_entries() == 7

    def old(key: bytes) -> Any:
        value = KAFKA_SEVEN[key]
        return up.rec(value, up.legacy_ts(value))

    # get(): unknown keys touch nothing; a known one moves to the new column family
    assert store.get(b"unknown") is None
    assert store.get(b"key1") == old(b"key1")
    assert store.approximate_num_entries() == 7  # 6 old + 1 new
    # put(): new values go to the new column family and the old copy is deleted
    store.put(b"key2", up.rec(b"+22", 22))
    store.put(b"key3", None)
    store.put(b"key8", up.rec(b"+88888888", 88))
    assert store.approximate_num_entries() == 7  # old: key4-7, new: key1, key2, key8
    # put_if_absent(): a get first, so an old entry migrates with its old value
    assert store.put_if_absent(b"key4", up.rec(b"+4444", 44)) == old(b"key4")
    assert store.put_if_absent(b"key11", up.rec(b"+11111111111", 11)) is None
    assert store.put_if_absent(b"key5", None) == old(b"key5")  # migrated, not deleted
    assert store.put_if_absent(b"key12", None) is None
    # delete(): from both column families
    assert store.delete(b"key6") == old(b"key6")
    assert store.approximate_num_entries() == 7  # old: key7, new: 1, 2, 4, 5, 8, 11

    # iterators merge both column families and migrate nothing
    expected = [
        (b"key1", old(b"key1")),
        (b"key11", up.rec(b"+11111111111", 11)),
        (b"key2", up.rec(b"+22", 22)),
        (b"key4", old(b"key4")),
        (b"key5", old(b"key5")),
        (b"key7", old(b"key7")),
        (b"key8", up.rec(b"+88888888", 88)),
    ]
    assert list(store.all()) == expected
    assert list(store.range(b"key2", b"key5")) == expected[2:5]
    assert list(store.reverse_all()) == expected[::-1]
    assert list(store.reverse_range(b"key2", b"key5")) == expected[2:5][::-1]
    assert list(store.prefix_scan(b"key1")) == expected[:2]
    assert list(store.scan_columns())[0][0] == [k for k, _ in expected]
    store.close()

    cfs = physical(path)
    assert cfs[up.legacy_cf] == {b"key7": up.legacy_raw(b"7777777")}
    assert cfs[new_cf] == {
        b"key1": up.new_raw(b"1", up.legacy_ts(b"1")),
        b"key11": up.new_raw(b"+11111111111", 11),
        b"key2": up.new_raw(b"+22", 22),
        b"key4": up.new_raw(b"4444", up.legacy_ts(b"4444")),
        b"key5": up.new_raw(b"55555", up.legacy_ts(b"55555")),
        b"key8": up.new_raw(b"+88888888", 88),
    }
    for other in set(ALL_CFS) - {up.legacy_cf, new_cf}:
        assert cfs[other] == {}

    # still in upgrade mode while an old entry is left; regular mode once it is gone
    with up.cls(path) as store:
        assert store.upgrade_mode
    plant(path, up.legacy_cf, {b"key7": None})
    with up.cls(path) as store:
        assert not store.upgrade_mode and store.legacy_column_family is None
        assert list(store.all()) == [kv for kv in expected if kv[0] != b"key7"]


@pytest.mark.parametrize("up", UPGRADES, ids=[u.name for u in UPGRADES])
def test_reading_every_old_entry_leaves_regular_mode_for_the_next_open(
    up: UpgradePath, tmp_path: Path
) -> None:
    """Kafka's shouldTransitionFromPlainUpgradeModeToRegularMode."""
    path = tmp_path / "s"
    up.seed(path, {b"key1": b"1", b"key2": b"22"})
    with up.cls(path) as store:
        assert store.upgrade_mode
        store.get(b"key1")
        store.get(b"key2")
        assert store.upgrade_mode  # decided at open, for the store's lifetime
    assert physical(path)[up.legacy_cf] == {}
    with up.cls(path) as store:
        assert not store.upgrade_mode
        assert list(store.all()) == [
            (b"key1", up.rec(b"1", up.legacy_ts(b"1"))),
            (b"key2", up.rec(b"22", up.legacy_ts(b"22"))),
        ]


@pytest.mark.parametrize("cls", [TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders])
def test_new_store_opens_in_regular_mode_and_reopens_so(cls: Any, tmp_path: Path) -> None:
    """Kafka's shouldOpenNewStoreInRegularMode and shouldOpenExistingStoreInRegularMode."""
    path = tmp_path / "s"
    with cls(path) as store:
        assert not store.upgrade_mode
        assert list(store.all()) == []
        rec = ValueAndTimestamp(b"timestamped", 1) if cls is TimestampedKeyValueStore else (
            ValueTimestampHeaders(b"timestamped", 1)
        )
        store.put(b"key", rec)
    with cls(path) as store:
        assert not store.upgrade_mode
    cfs = physical(path)
    assert cfs[DEFAULT] == {}
    assert len(cfs[NEW_CF[cls]][b"key"]) == (19 if cls is TimestampedKeyValueStore else 20)


def test_plain_and_timestamped_entries_together_are_refused_by_the_headers_store(
    tmp_path: Path,
) -> None:
    """Kafka's shouldFailWhenBothPlainAndTimestampedDataExist."""
    path = tmp_path / "s"
    seed_plain(path, {b"plainKey1": b"value1", b"plainKey2": b"value2"})
    with TimestampedKeyValueStore(path) as store:
        store.get(b"plainKey1")  # a partial migration: one key in each column family
    with pytest.raises(CorruptDataError, match="Inconsistent store state") as err:
        TimestampedKeyValueStoreWithHeaders(path)
    assert "Cannot have both plain (DEFAULT) and timestamped data simultaneously" in str(err.value)
    # the store closed its database: the path can be opened again
    with TimestampedKeyValueStore(path) as store:
        assert store.get(b"plainKey2") == ValueAndTimestamp(b"value2", -1)


def test_downgrade_from_headers_to_timestamped_is_refused(tmp_path: Path) -> None:
    """Kafka's shouldNotSupportDowngradeFromHeadersAwareToTimestampedStore."""
    path = tmp_path / "s"
    with TimestampedKeyValueStoreWithHeaders(path) as store:
        store.put(b"key1", ValueTimestampHeaders(b"headers-aware-value1", 1))
    with pytest.raises(CorruptDataError, match="is a headers-aware store") as err:
        TimestampedKeyValueStore(path)
    assert "Downgrade from headers-aware to timestamped store is not supported" in str(err.value)


@pytest.mark.parametrize("up", UPGRADES, ids=[u.name for u in UPGRADES])
def test_an_equal_key_in_both_column_families_reads_from_the_new_one(
    up: UpgradePath, tmp_path: Path
) -> None:
    """Kafka's RocksDBDualCFIterator: the new format wins on equal keys, emitted once."""
    path = tmp_path / "s"
    up.seed(path, {b"a": b"1", b"b": b"2", b"c": b"3"})
    plant(path, up.new_cf, {b"b": up.new_raw(b"new", 50)})
    with up.cls(path) as store:
        expected = [
            (b"a", up.rec(b"1", up.legacy_ts(b"1"))),
            (b"b", up.rec(b"new", 50)),
            (b"c", up.rec(b"3", up.legacy_ts(b"3"))),
        ]
        assert list(store.all()) == expected
        assert list(store.reverse_all()) == expected[::-1]
        assert list(store.range(b"b", b"b")) == expected[1:2]
        assert store.get(b"b") == up.rec(b"new", 50)
        store.put(b"b", up.rec(b"newer", 60))  # deletes the shadowed old copy too
    assert b"b" not in physical(path)[up.legacy_cf]


def test_golden_bytes_of_stored_values(tmp_path: Path) -> None:
    with TimestampedKeyValueStore(tmp_path / "t") as store:
        store.put(b"k", ValueAndTimestamp(b"v", 1))
        store.put(b"n", ValueAndTimestamp(b"", -1))
    assert physical(tmp_path / "t")[TIMESTAMPED_CF] == {
        b"k": h("0000000000000001 76"),
        b"n": h("ffffffffffffffff"),
    }
    with TimestampedKeyValueStoreWithHeaders(tmp_path / "h") as hs:
        hs.put(b"k", ValueTimestampHeaders(b"v", 1, (("a", b"x"),)))
        hs.put(b"e", ValueTimestampHeaders(b"v", 1))
        hs.put(b"n", ValueTimestampHeaders(b"v", 2, (("k", None), ("k", b""))))
        hs.put_columns([b"c"], [b"v"], [3], [encode_headers([("a", b"x")])])
        hs.put_columns([b"d"], [b"v"], [4])
        hs.put_columns([b"f", b"g"], [b"v", b"v"], [5, 6], [None, b""])  # type: ignore[list-item]
    assert physical(tmp_path / "h")[TIMESTAMPED_WITH_HEADERS_CF] == {
        b"k": h("0a 0202610278 0000000000000001 76"),
        b"e": h("00 0000000000000001 76"),
        b"n": h("0e 04026b01026b00 0000000000000002 76"),
        b"c": h("0a 0202610278 0000000000000003 76"),
        b"d": h("00 0000000000000004 76"),
        b"f": h("00 0000000000000005 76"),
        b"g": h("00 0000000000000006 76"),
    }


def test_column_families() -> None:
    assert TIMESTAMPED_WITH_HEADERS_CF == "keyValueWithTimestampAndHeaders"
    assert {DEFAULT, TIMESTAMPED_CF} <= set(TimestampedKeyValueStore.column_families())
    assert set(TimestampedKeyValueStoreWithHeaders.column_families()) == set(ALL_CFS)


def test_a_read_only_bytes_store_converts_on_read_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s"
    seed_plain(path, {b"a": b"1", b"b": b"2"})
    db = RocksDBBytesStore(path, TimestampedKeyValueStore.column_families(), read_only=True)
    store = TimestampedKeyValueStore.over(db)
    assert store.upgrade_mode
    assert store.get(b"a") == ValueAndTimestamp(b"1", -1)
    assert not db.has_uncommitted
    assert [k for k, _ in store.all()] == [b"a", b"b"]
    store.close()
    assert not db.closed  # the owner closes it
    db.close()
    assert physical(path)[DEFAULT] == {b"a": b"1", b"b": b"2"}


def test_over_an_owned_batch_migration_and_writes_wait_for_the_owner(tmp_path: Path) -> None:
    path = tmp_path / "s"
    seed_plain(path, {b"a": b"1", b"b": b"2"})
    db = RocksDBBytesStore(path, ALL_CFS, autocommit=False)
    store = TimestampedKeyValueStoreWithHeaders.over(db)
    assert store.get(b"a") == ValueTimestampHeaders(b"1", -1)
    assert db.has_uncommitted  # the migration is a write, left to the owner
    db.rollback()
    assert store.get(b"a") == ValueTimestampHeaders(b"1", -1)  # migrated again, from default
    store.put(b"c", ValueTimestampHeaders(b"3", 3))
    db.commit()
    store.put(b"d", ValueTimestampHeaders(b"4", 4))
    store.close()
    db.close()  # uncommitted writes are dropped
    cfs = physical(path)
    assert cfs[DEFAULT] == {b"b": b"2"}
    assert set(cfs[TIMESTAMPED_WITH_HEADERS_CF]) == {b"a", b"c"}


def test_put_columns_in_upgrade_mode_deletes_old_copies(tmp_path: Path) -> None:
    path = tmp_path / "s"
    seed_plain(path, {b"a": b"1", b"b": b"2", b"c": b"3"})
    with TimestampedKeyValueStore(path) as store:
        store.put_columns([b"a", b"b", b"d"], [b"x", None, b"y"], [1, 2, 3])
        rows = _flatten(store.scan_columns())
        assert rows == [(b"a", b"x", 1), (b"c", b"3", -1), (b"d", b"y", 3)]
    assert physical(path)[DEFAULT] == {b"c": b"3"}


def test_the_mode_is_fixed_when_the_store_opens(tmp_path: Path) -> None:
    """Kafka closes the old column family in regular mode: later plain entries are invisible."""
    path = tmp_path / "s"
    db = RocksDBBytesStore(path, ALL_CFS)
    store = TimestampedKeyValueStore.over(db)
    db.put(b"late", b"plain")
    db.commit()
    assert store.get(b"late") is None and list(store.all()) == []
    assert TimestampedKeyValueStore.over(db).get(b"late") == ValueAndTimestamp(b"plain", -1)
    db.close()
    assert store.closed


# -- model-based test ---------------------------------------------------------------------------

KEYS = [b"a", b"a\x00", b"ab", b"b", b"c", b"d\xff"]
M_LEGACY = {b"a": b"la", b"b": b"lb", b"d\xff": b"ld"}
VALUES = st.one_of(st.none(), st.sampled_from([b"", b"x", b"yy"]))
MHEADERS = st.sampled_from([(), (("k", b"v"),), (("k", None), ("k", b""))])
MTS = st.sampled_from([-1, 0, 5, 2**40])
CONFIGS = [  # a fresh store is the contract suite's business; these start in upgrade mode
    ("ts", "plain", True),
    ("ts", "plain", False),
    ("headers", "plain", True),
    ("headers", "ts", False),
    ("headers", "ts", True),
]
_IDS = count()


class TimestampedMachine(RuleBasedStateMachine):
    """The store against a dict of key -> (value, timestamp, headers)."""

    config: tuple[str, str, bool] = CONFIGS[0]

    def __init__(self) -> None:
        super().__init__()
        kind, origin, self.autocommit = self.config
        self.cls: Any = TimestampedKeyValueStore if kind == "ts" else (
            TimestampedKeyValueStoreWithHeaders
        )
        self.kind = kind
        self.root = tempfile.mkdtemp(prefix="tsmodel")
        self.path = Path(self.root) / str(next(_IDS))
        self.model: dict[bytes, Entry] = {}
        if origin == "plain":
            seed_plain(self.path, M_LEGACY)
            self.model = {k: (v, -1, ()) for k, v in M_LEGACY.items()}
        elif origin == "ts":
            seed_timestamped(self.path, {k: (v, 3) for k, v in M_LEGACY.items()})
            self.model = {k: (v, 3, ()) for k, v in M_LEGACY.items()}
        self.committed = dict(self.model)
        self.db: RocksDBBytesStore | None = None
        self.store: Any = None

    @initialize()
    def open(self) -> None:
        if self.autocommit:
            self.store = self.cls(self.path)
        else:
            self.db = RocksDBBytesStore(self.path, self.cls.column_families(), autocommit=False)
            self.store = self.cls.over(self.db)

    def rec(self, value: bytes | None, ts: int, headers: Hdrs) -> Any:
        if self.kind == "ts":
            return ValueAndTimestamp(value, ts)
        return ValueTimestampHeaders(value, ts, headers)

    def entry(self, value: bytes, ts: int, headers: Hdrs) -> Entry:
        return value, ts, headers if self.kind == "headers" else ()

    def unwrap(self, record: Any) -> Entry | None:
        if record is None:
            return None
        return record.value, record.timestamp, getattr(record, "headers", ())

    def apply(self, key: bytes, value: bytes | None, ts: int, headers: Hdrs) -> None:
        if value is None:
            self.model.pop(key, None)
        else:
            self.model[key] = self.entry(value, ts, headers)
        if self.autocommit:
            self.committed = dict(self.model)

    @rule(key=st.sampled_from(KEYS), value=VALUES, ts=MTS, headers=MHEADERS)
    def put(self, key: bytes, value: bytes | None, ts: int, headers: Hdrs) -> None:
        self.store.put(key, None if value is None and ts == 0 else self.rec(value, ts, headers))
        self.apply(key, value, ts, headers)

    @rule(key=st.sampled_from(KEYS), value=VALUES, ts=MTS, headers=MHEADERS)
    def put_if_absent(self, key: bytes, value: bytes | None, ts: int, headers: Hdrs) -> None:
        got = self.store.put_if_absent(key, self.rec(value, ts, headers))
        assert self.unwrap(got) == self.model.get(key)
        if key not in self.model:
            self.apply(key, value, ts, headers)

    @rule(key=st.sampled_from(KEYS))
    def get_and_delete(self, key: bytes) -> None:
        assert self.unwrap(self.store.get(key)) == self.model.get(key)
        assert self.unwrap(self.store.delete(key)) == self.model.get(key)
        self.apply(key, None, 0, ())

    @rule(key=st.sampled_from(KEYS))
    def get(self, key: bytes) -> None:
        assert self.unwrap(self.store.get(key)) == self.model.get(key)

    @rule(batch=st.lists(st.tuples(st.sampled_from(KEYS), VALUES, MTS, MHEADERS), max_size=5))
    def put_all(self, batch: list[tuple[bytes, bytes | None, int, Hdrs]]) -> None:
        self.store.put_all([(k, self.rec(v, ts, hs)) for k, v, ts, hs in batch])
        for k, v, ts, hs in batch:
            self.apply(k, v, ts, hs)

    @rule(batch=st.lists(st.tuples(st.sampled_from(KEYS), VALUES, MTS, MHEADERS), max_size=5))
    def put_columns(self, batch: list[tuple[bytes, bytes | None, int, Hdrs]]) -> None:
        keys = [k for k, _, _, _ in batch]
        values = [v for _, v, _, _ in batch]
        stamps = [ts for _, _, ts, _ in batch]
        if self.kind == "headers":
            self.store.put_columns(keys, values, stamps, [encode_headers(hs) for *_, hs in batch])
        else:
            self.store.put_columns(keys, values, stamps)
        for k, v, ts, hs in batch:
            self.apply(k, v, ts, hs)

    @precondition(lambda self: self.db is not None)
    @rule()
    def commit(self) -> None:
        assert self.db is not None
        self.db.commit()
        self.committed = dict(self.model)

    @precondition(lambda self: self.db is not None)
    @rule()
    def rollback(self) -> None:
        assert self.db is not None
        self.db.rollback()
        self.model = dict(self.committed)

    @rule()
    def reopen(self) -> None:
        if self.db is not None:
            self.db.commit()
            self.committed = dict(self.model)
            self.store.close()
            self.db.close()
        else:
            self.store.close()
        self.open()

    @invariant()
    def matches_the_model(self) -> None:
        if self.store is None:
            return
        expected = sorted(self.model.items())
        got = [(kv.key, self.unwrap(kv.value)) for kv in self.store.all()]
        assert got == expected
        assert [(kv.key, self.unwrap(kv.value)) for kv in self.store.reverse_all()] == expected[
            ::-1
        ]
        assert [(k, self.unwrap(r)) for k, r in self.store.range(b"a\x00", b"c")] == [
            (k, v) for k, v in expected if b"a\x00" <= k <= b"c"
        ]
        assert [(k, self.unwrap(r)) for k, r in self.store.prefix_scan(b"a")] == [
            (k, v) for k, v in expected if k.startswith(b"a")
        ]
        rows = _flatten(self.store.scan_columns(batch_rows=2))
        assert [row[:3] for row in rows] == [(k, v, ts) for k, (v, ts, _) in expected]
        if self.kind == "headers":
            assert [row[3] for row in rows] == [encode_headers(hs) for _, (_, _, hs) in expected]
        assert self.store.approximate_num_entries() == len(expected)

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.db is not None:
            self.db.close()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.mark.parametrize("config", CONFIGS, ids=["-".join(map(str, c)) for c in CONFIGS])
def test_store_follows_the_model(config: tuple[str, str, bool]) -> None:
    machine = type("Machine", (TimestampedMachine,), {"config": config})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=15,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


@pytest.mark.parametrize("kind", [TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders])
def test_a_store_over_an_open_database_leaves_it_open(tmp_path: Path, kind: Any) -> None:
    db = RocksDBBytesStore(tmp_path / "t", kind.column_families())
    with kind(db=db) as store:
        assert store.wrapped is db
    assert not db.closed
    with pytest.raises(TypeError, match="a path or db="):
        kind(tmp_path / "other", db=db)
    with pytest.raises(TypeError, match="a path or db="):
        kind()
    db.close()
