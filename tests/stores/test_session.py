"""Behaviour of ``SessionStore`` and ``SessionStoreWithHeaders``: the scenarios of Kafka's
AbstractSessionBytesStoreTest (restated for the key-first RocksDB session store), golden bytes of
the key and value layouts, lazy migration from a plain store, and this library's additions
(persistence, ``over`` an uncommitted batch, argument checks). The contract suite runs over both
stores through an adapter that wraps and unwraps values."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.bytes.protocol import DEFAULT_CF
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError, StoreClosedError
from stores.records import KeyValue, ValueAndHeaders, Window, Windowed
from stores.segments.store import SEGMENTS_META_CF, STREAM_TIME_KEY
from stores.session.format import (
    MAX_LONG,
    SESSION_HEADERS_CF,
    decode_session_key,
    decode_with_headers_value,
    encode_session_key,
    encode_with_headers_value,
    lower_range,
    lower_range_fixed_size,
    upper_range,
    upper_range_fixed_size,
)
from stores.session.store import (
    AggregationWithHeaders,
    SessionStore,
    SessionStoreWithHeaders,
    default_segment_interval_ms,
)

RETENTION = 10_000  # Kafka's AbstractSessionBytesStoreTest.RETENTION_PERIOD
SEGMENT_INTERVAL = 60_000  # max(RETENTION / 2, 60 000), its SEGMENT_INTERVAL
HEADERS = (("src", b"h"), ("nil", None))


@dataclass
class Adapter:
    """One store under test, with the value wrapping of its kind."""

    store: Any
    with_headers: bool

    def wrap(self, value: bytes | None) -> Any:
        if value is None or not self.with_headers:
            return value
        return ValueAndHeaders(value, HEADERS)

    def unwrap(self, stored: Any) -> bytes | None:
        if stored is None or not self.with_headers:
            return stored  # type: ignore[no-any-return]
        assert isinstance(stored, ValueAndHeaders) and stored.headers == HEADERS, stored
        return stored.value  # type: ignore[no-any-return]

    def put(self, key: str | bytes, start: int, end: int, value: bytes | None) -> None:
        self.store.put(_b(key), start, end, self.wrap(value))

    def pairs(self, it: Iterator[KeyValue]) -> list[tuple[bytes, int, int, bytes | None]]:
        return [(kv.key.key, kv.key.start, kv.key.end, self.unwrap(kv.value)) for kv in it]

    def values(self, it: Iterator[KeyValue]) -> set[bytes | None]:
        return {v for *_, v in self.pairs(it)}


def _b(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


def s(key: str | bytes, start: int, end: int, value: bytes) -> tuple[bytes, int, int, bytes]:
    return (_b(key), start, end, value)


KINDS = {"plain": (SessionStore, False), "headers": (SessionStoreWithHeaders, True)}


def _open(
    kind: str, mode: str, path: Path, retention: int = RETENTION, interval: int | None = None
) -> tuple[Adapter, RocksDBBytesStore | None]:
    cls, with_headers = KINDS[kind]
    if mode == "standalone":
        return Adapter(cls(path, retention, interval), with_headers), None
    db = RocksDBBytesStore(path, cls.column_families(), autocommit=False)
    return Adapter(cls.over(db, retention, interval), with_headers), db


@pytest.fixture(
    params=[(kind, mode) for kind in KINDS for mode in ("standalone", "over")],
    ids=lambda p: "-".join(p),
)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of stores of one kind and mode; every store it opens is closed afterwards."""
    kind, mode = request.param
    opened: list[tuple[Adapter, RocksDBBytesStore | None]] = []

    def factory(retention: int = RETENTION, interval: int | None = None) -> Adapter:
        pair = _open(kind, mode, tmp_path / f"s{len(opened)}", retention, interval)
        opened.append(pair)
        return pair[0]

    yield factory
    for adapter, db in opened:
        adapter.store.close()
        if db is not None:
            db.close()


@pytest.fixture
def store(make: Any) -> Adapter:
    return make()  # type: ignore[no-any-return]


# -- Kafka's AbstractSessionBytesStoreTest scenarios ------------------------------------------------


def test_put_and_find_sessions_in_range(store: Adapter) -> None:
    for start, end, v in [(10, 10, b"1"), (500, 1000, b"2"), (1500, 2000, b"1"), (2500, 3000, b"2")]:
        store.put("a", start, end, v)
    a1, a2 = s("a", 10, 10, b"1"), s("a", 500, 1000, b"2")
    assert store.pairs(store.store.find_sessions(b"a", 0, 1000)) == [a1, a2]
    assert store.pairs(store.store.find_sessions(b"a", 400, 600)) == [a2]
    assert store.pairs(store.store.backward_find_sessions(b"a", 0, 1000)) == [a2, a1]
    assert store.pairs(store.store.backward_find_sessions(b"a", 400, 600)) == [a2]


def test_fetch_all_sessions_of_a_key(store: Adapter) -> None:
    expected = [
        s("a", 0, 0, b"1"), s("a", 10, 10, b"2"), s("a", 100, 100, b"3"), s("a", 1000, 1000, b"4"),
    ]
    for row in expected:
        store.put(*row)
    store.put("aa", 0, 0, b"5")  # shares the prefix, must not appear
    assert store.pairs(store.store.fetch(b"a")) == expected
    assert store.pairs(store.store.backward_fetch(b"a")) == expected[::-1]
    assert store.pairs(store.store.find_sessions(b"a", 0, MAX_LONG)) == expected


def test_fetch_within_key_range_and_open_bounds(store: Adapter) -> None:
    expected = [
        s("aa", 10, 10, b"2"),
        s("aaa", 100, 100, b"3"),
        s("aaaa", 100, 100, b"6"),
        s("b", 1000, 1000, b"4"),
        s("bb", 1500, 2000, b"5"),
    ]
    for row in expected:
        store.put(*row)
    a, bbb = s("a", 0, 0, b"1"), s("bbb", 2500, 3000, b"6")
    store.put(*a)
    store.put(*bbb)
    st_ = store.store
    assert store.pairs(st_.fetch(b"aa", b"bb")) == expected
    assert store.pairs(st_.find_sessions(b"aa", b"bb", 0, MAX_LONG)) == expected
    assert store.pairs(st_.fetch(None, b"bb")) == [a, *expected]
    assert store.pairs(st_.fetch(b"aa", None)) == [*expected, bbb]
    assert store.pairs(st_.fetch(None, None)) == [a, *expected, bbb]
    assert store.pairs(st_.backward_fetch(b"aa", b"bb")) == expected[::-1]
    assert store.pairs(st_.backward_find_sessions(b"aa", b"bb", 0, MAX_LONG)) == expected[::-1]
    assert store.pairs(st_.backward_fetch(None, b"bb")) == [a, *expected][::-1]
    assert store.pairs(st_.backward_fetch(b"aa", None)) == [*expected, bbb][::-1]
    assert store.pairs(st_.backward_fetch(None, None)) == [a, *expected, bbb][::-1]


def test_fetch_exact_session(store: Adapter) -> None:
    for key, start, end, v in [("a", 0, 4, b"1"), ("aa", 0, 3, b"2"), ("aa", 0, 4, b"3"),
                               ("aa", 1, 4, b"4"), ("aaa", 0, 4, b"5")]:
        store.put(key, start, end, v)
    assert store.unwrap(store.store.fetch_session(b"aa", 0, 4)) == b"3"
    assert store.store.fetch_session(b"any key", 0, 5) is None


def test_find_values_within_merging_session_window_range(store: Adapter) -> None:
    store.put("a", 0, 0, b"1")
    store.put("a", 1000, 1000, b"2")
    expected = [s("a", 0, 0, b"1"), s("a", 1000, 1000, b"2")]
    assert store.pairs(store.store.find_sessions(b"a", -1, 1000)) == expected
    assert store.pairs(store.store.backward_find_sessions(b"a", -1, 1000)) == expected[::-1]


@pytest.mark.parametrize("how", ["remove", "remove-windowed", "put-none"])
def test_remove(store: Adapter, how: str) -> None:
    store.put("a", 0, 1000, b"1")
    store.put("a", 1500, 2500, b"2")
    if how == "remove":
        store.store.remove(b"a", 0, 1000)
    elif how == "remove-windowed":
        store.store.remove(Windowed(b"a", Window(0, 1000)))
    else:
        store.store.put(Windowed(b"a", Window(0, 1000)), None)
    assert list(store.store.find_sessions(b"a", 0, 1000)) == []
    assert store.pairs(store.store.find_sessions(b"a", 1500, 2500)) == [s("a", 1500, 2500, b"2")]
    store.store.remove(b"zzz", 0, 1)  # removing a missing session is fine


def test_find_sessions_to_merge(store: Adapter) -> None:
    sessions = [s("a", 0, 100, b"1"), s("a", 101, 200, b"2"), s("a", 201, 300, b"3"),
                s("a", 301, 400, b"4"), s("a", 401, 500, b"5")]
    for row in sessions:
        store.put(*row)
    assert store.pairs(store.store.find_sessions(b"a", 150, 300)) == sessions[1:3]
    assert store.pairs(store.store.backward_find_sessions(b"a", 150, 300)) == sessions[2:0:-1]


@pytest.mark.parametrize("forward", [True, False])
def test_fetch_exact_keys_with_huge_timestamps(make: Any, forward: bool) -> None:
    store = make(retention=0x7A00000000000000)
    far = 0x7A00000000000000
    for key, start, end, v in [("a", 0, 0, b"1"), ("aa", 0, 10, b"2"), ("a", 10, 20, b"3"),
                               ("aa", 10, 20, b"4"), ("a", far - 2, far - 1, b"5")]:
        store.put(key, start, end, v)
    find = store.store.find_sessions if forward else store.store.backward_find_sessions
    assert store.values(find(b"a", 0, MAX_LONG)) == {b"1", b"3", b"5"}
    assert store.values(find(b"aa", 0, MAX_LONG)) == {b"2", b"4"}
    everything = {b"1", b"2", b"3", b"4", b"5"}
    assert store.values(find(b"a", b"aa", 0, MAX_LONG)) == everything
    assert store.values(find(b"a", b"aa", 10, 0)) == {b"2"}
    assert store.values(find(None, b"aa", 0, MAX_LONG)) == everything
    assert store.values(find(b"a", None, 0, MAX_LONG)) == everything
    assert store.values(find(None, None, 0, MAX_LONG)) == everything


def test_fetch_and_iterate_over_exact_binary_keys(store: Adapter) -> None:
    keys = [b"\x00", b"\x00\x00", b"\x00\x00\x00"]
    for i in range(9):
        store.put(keys[i % 3], i + 1, 100, str(i + 1).encode())
    for n, key in enumerate(keys):
        want = {str(n + 1 + 3 * j).encode() for j in range(3)}
        assert store.values(store.store.find_sessions(key, 0, MAX_LONG)) == want
        assert store.values(store.store.backward_find_sessions(key, 0, MAX_LONG)) == want


def test_single_key_find_equals_equal_key_range(store: Adapter) -> None:
    rows = [("a", 0, 1, b"0"), ("aa", 2, 3, b"1"), ("aa", 4, 5, b"2"), ("aaa", 6, 7, b"3")]
    for key, start, end, v in rows:
        store.put(key, start, end, v)
    single = store.pairs(store.store.find_sessions(b"aa", 0, 10))
    assert single == store.pairs(store.store.find_sessions(b"aa", b"aa", 0, 10))
    assert single == [s("aa", 2, 3, b"1"), s("aa", 4, 5, b"2")]


def test_expired_records_are_dropped(store: Adapter) -> None:
    store.put("initial record", 0, 2 * SEGMENT_INTERVAL, b"0")
    store.put("late record", 0, 0, b"0")  # its segment expired: dropped
    store.put("another on-time record", 0, 2 * SEGMENT_INTERVAL, b"0")
    keys = [kv.key.key for kv in store.store.fetch(None, None)]
    assert keys == [b"another on-time record", b"initial record"]
    assert store.store.observed_stream_time == 2 * SEGMENT_INTERVAL


def test_inverted_key_range_is_empty_and_warns(store: Adapter, caplog: pytest.LogCaptureFixture) -> None:
    store.put("a", 0, 0, b"1")
    key_from, key_to = (-1).to_bytes(4, "big", signed=True), (1).to_bytes(4, "big")
    with caplog.at_level(logging.WARNING, logger="stores.session.store"):
        assert list(store.store.find_sessions(key_from, key_to, 0, 10)) == []
        assert list(store.store.backward_fetch(b"b", b"a")) == []
    assert "invalid key range: from > to" in caplog.text


def test_remove_expired(store: Adapter) -> None:
    store.put("a", 0, 0, b"1")
    store.put("aa", 0, SEGMENT_INTERVAL, b"2")
    store.put("a", 10, SEGMENT_INTERVAL, b"3")
    store.put("aa", 10, 2 * SEGMENT_INTERVAL, b"4")  # advances stream time
    # 2 and 3 end before stream time - retention + 1: hidden though their segment is live.
    assert store.values(store.store.find_sessions(b"a", b"b", 0, MAX_LONG)) == {b"4"}
    assert store.store.fetch_session(b"aa", 0, SEGMENT_INTERVAL) is None
    assert store.values(store.store.all()) == {b"4"}


def test_not_fetch_expired_sessions(store: Adapter) -> None:
    now, r = 1_700_000_000_000, RETENTION
    store.put("p", now - 3 * r, now - 2 * r, b"1")
    store.put("q", now - 2 * r, now - r, b"4")
    store.put("r", now - r, now - r // 2, b"3")
    store.put("p", now - r, now - r // 2, b"2")
    st_ = store.store
    assert store.values(st_.find_sessions(b"p", now - 2 * r, now - r)) == {b"2"}
    assert list(st_.backward_find_sessions(b"p", now - 5 * r, now - 4 * r)) == []
    assert list(st_.find_sessions(b"p", b"r", now - 5 * r, now - 4 * r)) == []
    assert store.values(st_.find_sessions(b"p", b"r", now - r, now - r // 2)) == {b"2", b"3", b"4"}
    assert store.values(st_.find_sessions(b"p", b"r", now - 2 * r, now - r)) == {b"2", b"3", b"4"}
    backward = st_.backward_find_sessions(b"p", b"r", now - 2 * r, now - r)
    assert store.values(backward) == {b"2", b"3", b"4"}


def test_find_sessions_by_end_time(store: Adapter) -> None:
    # Kafka's shouldFindSessionsForTimeRange, as its in-memory and time-ordered stores answer.
    store.put("a", 0, 0, b"5")
    st_ = store.store
    assert store.pairs(st_.find_sessions(0, 0)) == [s("a", 0, 0, b"5")]
    store.put("b", 10, 20, b"10")
    store.put("c", 30, 40, b"20")
    a, b, c = s("a", 0, 0, b"5"), s("b", 10, 20, b"10"), s("c", 30, 40, b"20")
    assert store.pairs(st_.find_sessions(0, 20)) == [a, b]
    assert store.pairs(st_.find_sessions(0, 19)) == [a]
    assert store.pairs(st_.find_sessions(1, 20)) == [b]
    assert store.pairs(st_.find_sessions(19, 41)) == [b, c]
    assert store.pairs(st_.find_sessions_by_end(0, 40)) == [a, b, c]
    assert store.pairs(st_.find_sessions(earliest_session_end=0, latest_session_end=40)) == [a, b, c]


def test_find_sessions_by_end_orders_by_end_then_key(make: Any) -> None:
    store = make(retention=1_000, interval=10)
    for key, start, end in [("b", 0, 5), ("a", 3, 5), ("a", 0, 12), ("c", 1, 1), ("a", 1, 5)]:
        store.put(key, start, end, key.encode())
    got = [(k, st_, e) for k, st_, e, _ in store.pairs(store.store.find_sessions_by_end(0, 100))]
    assert got == [(b"c", 1, 1), (b"a", 1, 5), (b"a", 3, 5), (b"b", 0, 5), (b"a", 0, 12)]


# -- segments and order -----------------------------------------------------------------------------


def test_find_sessions_goes_segment_by_segment(make: Any) -> None:
    # Kafka's key-first RocksDB store returns the sessions of each segment in key order,
    # oldest segment first (backward: newest segment first, keys descending).
    store = make(retention=1_000, interval=10)
    rows = [s("b", 0, 1, b"1"), s("a", 0, 15, b"2"), s("b", 11, 12, b"3"), s("a", 20, 25, b"4")]
    for row in rows:
        store.put(*row)
    forward = store.pairs(store.store.fetch(b"a", b"b"))
    assert forward == [rows[0], rows[1], rows[2], rows[3]]
    assert store.pairs(store.store.backward_fetch(b"a", b"b")) == forward[::-1]
    # all() is the full scan in binary-key order across segments.
    assert store.pairs(store.store.all()) == [rows[1], rows[3], rows[0], rows[2]]
    assert store.pairs(store.store.backward_all()) == [rows[2], rows[0], rows[3], rows[1]]


def test_prefix_sharing_keys_interleave_by_bytes(store: Adapter) -> None:
    # The binary key of b"a" [0, 0] sorts before b"a\x00" [5, 5], and b"a" [0, 0x100] after
    # it: the byte order of the whole binary key, as in Kafka's RocksDB.
    store.put(b"a\x00", 5, 5, b"x")
    store.put(b"a", 0, 0, b"y")
    store.put(b"a", 0, 0x0100, b"z")
    got = store.pairs(store.store.fetch(b"a", b"a\x00"))
    assert [v for *_, v in got] == [b"y", b"x", b"z"]
    assert [v for *_, v in store.pairs(store.store.fetch(b"a"))] == [b"y", b"z"]
    assert [v for *_, v in store.pairs(store.store.all())] == [b"y", b"x", b"z"]


def test_retention_boundary(store: Adapter) -> None:
    store.put("k", 0, 20_000, b"now")
    store.put("k", 0, 10_000, b"edge")  # live segment, but end < stream time - retention + 1
    store.put("k", 0, 10_001, b"kept")
    assert store.values(store.store.fetch(b"k")) == {b"now", b"kept"}
    assert store.store.fetch_session(b"k", 0, 10_000) is None
    assert store.unwrap(store.store.fetch_session(b"k", 0, 10_001)) == b"kept"


def test_remove_advances_stream_time(store: Adapter) -> None:
    store.store.remove(b"a", 0, 500_000)
    assert store.store.observed_stream_time == 500_000
    store.put("a", 0, 0, b"late")  # expired now
    assert list(store.store.fetch(b"a")) == []


def test_overwrite_keeps_one_session(store: Adapter) -> None:
    store.put("a", 0, 5, b"1")
    store.put("a", 0, 5, b"2")
    assert store.pairs(store.store.fetch(b"a")) == [s("a", 0, 5, b"2")]


# -- lifecycle, persistence, over() -----------------------------------------------------------------


def test_closed_store(store: Adapter) -> None:
    store.put("a", 0, 0, b"1")
    store.put("b", 10, 50, b"2")
    it = store.store.fetch(None, None)
    assert next(it).key.key == b"a"
    store.store.close()
    assert list(it) == []  # Kafka: open iterators report no next element
    assert store.store.closed
    with pytest.raises(StoreClosedError, match="STORE_CLOSED"):
        store.store.fetch(b"a")
    with pytest.raises(StoreClosedError):
        store.put("a", 0, 0, b"1")
    with pytest.raises(StoreClosedError):
        store.store.fetch_session(b"a", 0, 0)


@pytest.mark.parametrize("kind", ["plain", "headers"])
def test_reopen_keeps_sessions_and_stream_time(tmp_path: Path, kind: str) -> None:
    a, _ = _open(kind, "standalone", tmp_path / "s")
    a.put("a", 0, 0, b"1")
    a.put("a", 10, 100_000, b"2")
    a.store.close()
    b, _ = _open(kind, "standalone", tmp_path / "s")
    with b.store:
        assert b.store.observed_stream_time == 100_000
        assert b.pairs(b.store.fetch(b"a")) == [s("a", 10, 100_000, b"2")]
        b.put("late", 0, 0, b"x")  # still expired after reopening
        assert list(b.store.fetch(b"late")) == []


@pytest.mark.parametrize("kind", ["plain", "headers"])
def test_over_uncommitted_batch(tmp_path: Path, kind: str) -> None:
    cls = KINDS[kind][0]
    db = RocksDBBytesStore(tmp_path / "s", cls.column_families(), autocommit=False)
    store = Adapter(cls.over(db, RETENTION), KINDS[kind][1])
    store.put("a", 0, 0, b"1")
    assert db.has_uncommitted
    assert store.values(store.store.fetch(b"a")) == {b"1"}
    db.rollback()
    assert list(store.store.fetch(b"a")) == []
    assert store.store.observed_stream_time == -1
    store.put("a", 0, 0, b"2")
    db.commit()
    store.store.close()
    assert not db.closed  # the owner closes its bytes store
    db.close()
    with cls(tmp_path / "s", RETENTION) as again:
        assert [kv.key.key for kv in again.fetch(b"a")] == [b"a"]


def test_the_constructor_takes_a_path_or_an_open_db(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "s", SessionStore.column_families())
    with SessionStore(None, RETENTION, db=db) as store:
        store.put(b"a", 0, 0, b"1")
    assert not db.closed  # not owned: its owner closes it
    db.close()
    with SessionStore(tmp_path / "s", RETENTION) as reopened:
        assert reopened.fetch_session(b"a", 0, 0) == b"1"
    for path, open_db in ((None, None), (tmp_path / "s", db)):
        with pytest.raises(TypeError, match="a path or db="):
            SessionStore(path, RETENTION, db=open_db)


def test_column_families_and_defaults() -> None:
    assert SessionStore.column_families() == (DEFAULT_CF, SEGMENTS_META_CF)
    assert SessionStoreWithHeaders.column_families() == (
        "sessionKeyValueWithHeaders", DEFAULT_CF, SEGMENTS_META_CF,
    )
    assert default_segment_interval_ms(10_000) == 60_000
    assert default_segment_interval_ms(0) == 60_000
    assert default_segment_interval_ms(86_400_000) == 43_200_000
    assert AggregationWithHeaders is ValueAndHeaders


def test_segment_interval_property(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s", 200_000) as store:
        assert (store.retention_ms, store.segment_interval_ms) == (200_000, 100_000)
        assert store.observed_stream_time == -1
    with SessionStore(tmp_path / "t", 200_000, 7) as store:
        assert store.segment_interval_ms == 7


# -- argument checks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "name"),
    [((-1,), "retention_ms"), ((10, 0), "segment_interval_ms"), (("10",), "retention_ms"),
     ((10, 1.5), "segment_interval_ms")],
)
def test_bad_configuration(tmp_path: Path, args: tuple[Any, ...], name: str) -> None:
    with pytest.raises(InvalidOptionError, match=name):
        SessionStore(tmp_path / "s", *args)
    assert not (tmp_path / "s").exists()  # checked before anything is created


def test_bad_arguments(store: Adapter) -> None:
    st_ = store.store
    cases = [
        (lambda: st_.put("a", 0, 0, store.wrap(b"v")), "key"),
        (lambda: st_.put(b"a", -1, 0, store.wrap(b"v")), "start"),
        (lambda: st_.put(b"a", 5, 4, store.wrap(b"v")), "end"),
        (lambda: st_.put(b"a", 0, 0), "put"),
        (lambda: st_.put((b"a", 0, 0), store.wrap(b"v")), "session_key"),
        (lambda: st_.put(b"a", 0, 0, "not bytes"), "value"),
        (lambda: st_.remove(None), "session_key"),
        (lambda: st_.find_sessions(None, 1, 2), "key"),
        (lambda: st_.find_sessions(b"a", "1", 2), "earliest_session_end"),
        (lambda: st_.find_sessions(b"a", 1, 2**63), "latest_session_start"),
        (lambda: st_.fetch(None), "key"),
        (lambda: st_.fetch(1, None), "key_from"),
        (lambda: st_.fetch(b"a", key_to=b"b", nope=1), "nope"),
        (lambda: st_.fetch_session(b"a", 0, None), "end"),
    ]
    for call, name in cases:
        with pytest.raises(InvalidOptionError, match=name):
            call()


def test_headers_store_refuses_bare_bytes(tmp_path: Path) -> None:
    with SessionStoreWithHeaders(tmp_path / "s", RETENTION) as store:
        with pytest.raises(InvalidOptionError, match="ValueAndHeaders"):
            store.put(b"a", 0, 0, b"bare")
        store.put(b"a", 0, 0, ValueAndHeaders(b"v"))
        store.put(b"a", 0, 0, ValueAndHeaders(None))  # a null aggregate deletes
        assert store.fetch_session(b"a", 0, 0) is None


# -- golden bytes -----------------------------------------------------------------------------------


def test_golden_session_key() -> None:
    binary = encode_session_key(b"key", 10, 300)
    assert binary.hex() == "6b6579" + "000000000000012c" + "000000000000000a"
    assert decode_session_key(binary) == (b"key", 10, 300)
    assert encode_session_key(b"", 0, MAX_LONG).hex() == "7fffffffffffffff" + "00" * 8


def test_golden_value_with_headers() -> None:
    assert encode_with_headers_value(b"v", ()).hex() == "0076"
    raw = encode_with_headers_value(b"v", (("k", b"x"),))
    assert raw.hex() == "0a" + "02" + "02" + "6b" + "02" + "78" + "76"
    assert encode_with_headers_value(b"", (("k", None),)).hex() == "08" + "02" + "026b" + "01"
    assert decode_with_headers_value(raw) == ValueAndHeaders(b"v", (("k", b"x"),))


@pytest.mark.parametrize("kind", ["plain", "headers"])
def test_golden_stored_rows(tmp_path: Path, kind: str) -> None:
    a, _ = _open(kind, "standalone", tmp_path / "s", 1_000_000, 100)
    a.store.put(b"k", 250, 300, ValueAndHeaders(b"v", (("k", b"x"),)) if a.with_headers else b"v")
    db = a.store.wrapped
    cf = SESSION_HEADERS_CF if a.with_headers else DEFAULT_CF
    rows = list(db.range(cf=cf))
    assert [(k.hex(), v.hex()) for k, v in rows] == [(
        "0000000000000003" + "6b" + "000000000000012c" + "00000000000000fa",
        "0a02026b027876" if a.with_headers else "76",
    )]
    assert db.get(STREAM_TIME_KEY, SEGMENTS_META_CF) == (300).to_bytes(8, "big")
    if a.with_headers:
        assert list(db.range(cf=DEFAULT_CF)) == []
    a.store.close()


# -- lazy migration from a plain store --------------------------------------------------------------


def test_lazy_migration_from_plain_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with SessionStore(path, RETENTION) as plain:
        plain.put(b"a", 0, 10, b"1")
        plain.put(b"b", 5, 20, b"2")
        plain.put(b"c", 7, 30, b"3")
    with SessionStoreWithHeaders(path, RETENTION) as store:
        assert store.upgrade_mode
        assert store.observed_stream_time == 30
        old = [
            KeyValue(Windowed(b"a", Window(0, 10)), ValueAndHeaders(b"1")),
            KeyValue(Windowed(b"b", Window(5, 20)), ValueAndHeaders(b"2")),
            KeyValue(Windowed(b"c", Window(7, 30)), ValueAndHeaders(b"3")),
        ]
        assert list(store.all()) == old
        assert list(store.fetch(None, None)) == old
        db = store.wrapped
        assert len(list(db.range(cf=DEFAULT_CF))) == 3  # iterators never migrate
        # fetch_session is Kafka's get: it migrates the session it reads (see
        # test_session_kafka.py for the read-only case).
        assert store.fetch_session(b"b", 5, 20) == ValueAndHeaders(b"2")
        assert len(list(db.range(cf=DEFAULT_CF))) == 2
        assert len(list(db.range(cf=SESSION_HEADERS_CF))) == 1
        assert list(store.all()) == old
        # Writes: an overwrite moves the session, a new one lands in the new family, a removal
        # deletes from both.
        store.put(b"b", 5, 20, ValueAndHeaders(b"22", HEADERS))
        store.put(Windowed(b"d", Window(1, 40)), ValueAndHeaders(b"4"))
        store.remove(b"c", 7, 30)
        new = [
            old[0],
            KeyValue(Windowed(b"b", Window(5, 20)), ValueAndHeaders(b"22", HEADERS)),
            KeyValue(Windowed(b"d", Window(1, 40)), ValueAndHeaders(b"4")),
        ]
        assert list(store.all()) == new
        assert list(store.backward_fetch(None, None)) == new[::-1]
        assert [decode_session_key(k[8:])[0] for k, _ in db.range(cf=DEFAULT_CF)] == [b"a"]
        assert [decode_session_key(k[8:])[0] for k, _ in db.range(cf=SESSION_HEADERS_CF)] == [
            b"b", b"d",
        ]
    with SessionStoreWithHeaders(path, RETENTION) as again:
        assert again.upgrade_mode  # a plain session is still there
        assert list(again.all()) == new
        again.remove(Windowed(b"a", Window(0, 10)))
    with SessionStoreWithHeaders(path, RETENTION) as done:
        assert not done.upgrade_mode


def test_migration_expires_old_segments_in_both_families(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with SessionStore(path, 100, 10) as plain:
        plain.put(b"old", 0, 5, b"1")
    with SessionStoreWithHeaders(path, 100, 10) as store:
        store.put(b"new", 0, 500, ValueAndHeaders(b"2"))
        assert [kv.key.key for kv in store.all()] == [b"new"]
        assert list(store.wrapped.range(cf=DEFAULT_CF)) == []


# -- the bounds of key-range scans: Kafka's SessionKeySchema / OrderedBytes ----------------------


def test_golden_range_bounds() -> None:
    """``SessionKeySchema.lowerRange/upperRange`` (``OrderedBytes``) and the fixed-size bounds of
    a single key, byte for byte."""
    suffix = "7fffffffffffffff" "0000000000000005"  # [MAX_LONG][latest start 5]
    assert lower_range(b"ab").hex() == "6162" + "00" * 16
    # The suffix starts with 7f: the first byte of the key always, then its bytes >= 7f.
    assert upper_range(b"ab", 5).hex() == "61" + suffix
    assert upper_range(b"a\x7f\x80\x01", 5).hex() == "617f80" + suffix
    assert upper_range(b"\x00", 5).hex() == "00" + suffix
    assert upper_range(b"", 5).hex() == suffix
    assert lower_range_fixed_size(b"a", 7).hex() == "61" "0000000000000007" "0000000000000000"
    assert lower_range_fixed_size(b"a", -7).hex() == "61" "0000000000000000" "0000000000000000"
    assert upper_range_fixed_size(b"a", 5).hex() == "61" "7fffffffffffffff" "0000000000000005"


KEY = st.binary(max_size=4).map(lambda b: b.replace(b"\x01", b"\x7f").replace(b"\x02", b"\xff"))
TIME = st.one_of(
    st.integers(0, 100), st.integers(0, MAX_LONG), st.sampled_from([0x7F00 << 48, MAX_LONG])
)


@settings(max_examples=300, deadline=None)
@given(key_to=KEY, key=KEY, a=TIME, b=TIME, latest=TIME)
def test_kafka_upper_range_covers_sessions_ending_before_2_pow_55(
    key_to: bytes, key: bytes, a: int, b: int, latest: int
) -> None:
    """Kafka's bound leaves out no session of a key <= ``key_to`` starting by ``latest`` unless
    its end is 2**55 or more (see :func:`test_kafka_range_leaves_out_a_session_ending_late`)."""
    start, end = min(a, b), max(a, b)
    if key > key_to or start > latest or end >= 2**55:
        return
    assert encode_session_key(key, start, end) <= upper_range(key_to, latest)


@pytest.mark.parametrize("forward", [True, False])
def test_kafka_range_leaves_out_a_session_ending_late(tmp_path: Path, forward: bool) -> None:
    """Kafka's accident, kept: ``findSessions(null, 00, 0, MAX)`` never reads the session of
    ``b""`` ending at 2**55, whose binary key ``[2**55][0]`` sorts above
    ``SessionKeySchema.upperRange(00, MAX)`` = ``00 + [MAX_LONG][MAX_LONG]``; the single-key
    search of ``b""`` (fixed-size bounds) finds it. Checked against Kafka 4.3.1 in
    ``tests/kafka/test_window_ranges_kafka.py``."""
    late = 2**55
    with SessionStore(tmp_path / "s", RETENTION) as store:
        store.put(b"", 0, late, b"1")
        store.put(b"\x00", 0, late, b"2")
        find = store.find_sessions if forward else store.backward_find_sessions
        assert [kv.key.key for kv in find(None, b"\x00", 0, MAX_LONG)] == [b"\x00"]
        assert [kv.key.key for kv in find(b"", b"\x00", 0, MAX_LONG)] == [b"\x00"]
        assert [kv.key.key for kv in find(b"", 0, MAX_LONG)] == [b""]
        # Byte order: 00 + [2**55] (00 00 80 ...) before [2**55] (00 80 ...).
        assert [kv.key.key for kv in find(None, b"\x01", 0, MAX_LONG)] == (
            [b"\x00", b""] if forward else [b"", b"\x00"])


@pytest.mark.parametrize("kind", ["plain", "headers"])
def test_read_only_reader(tmp_path: Path, kind: str) -> None:
    writer, _ = _open(kind, "standalone", tmp_path / "s")
    writer.put("a", 0, 5, b"1")
    writer.store.close()
    cls, with_headers = KINDS[kind]
    db = RocksDBBytesStore(tmp_path / "s", cls.column_families(), read_only=True)
    reader = Adapter(cls.over(db, RETENTION), with_headers)
    assert reader.pairs(reader.store.all()) == [s("a", 0, 5, b"1")]
    assert reader.unwrap(reader.store.fetch_session(b"a", 0, 5)) == b"1"
    with pytest.raises(StoreClosedError, match="read-only"):
        reader.put("a", 0, 6, b"2")
    db.close()


def test_headers_store_reads_plain_store_read_only(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "s", RETENTION) as plain:
        plain.put(b"a", 0, 5, b"1")
    db = RocksDBBytesStore(tmp_path / "s", SessionStoreWithHeaders.column_families(), read_only=True)
    store = SessionStoreWithHeaders.over(db, RETENTION)
    assert list(store.fetch(b"a")) == [KeyValue(Windowed(b"a", Window(0, 5)), ValueAndHeaders(b"1"))]
    db.close()


def test_a_session_of_an_expired_segment_is_skipped_with_kafka_s_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from stores.segments.store import EXPIRED_SEGMENT_WARNING

    with SessionStore(tmp_path / "row", retention_ms=100) as store:
        store.put(b"a", 1_000_000, 1_000_000, b"new")
        with caplog.at_level("INFO"):
            store.put(b"a", 0, 10, b"late")
        assert EXPIRED_SEGMENT_WARNING in caplog.text
        assert store.fetch_session(b"a", 0, 10) is None
    caplog.clear()
    with SessionStore(tmp_path / "bulk", retention_ms=100) as store:
        with caplog.at_level("INFO"):
            store.put_columns([b"a", b"a"], [b"new", b"late"], [1_000_000, 0], [1_000_000, 10])
        assert f"{EXPIRED_SEGMENT_WARNING} (1 records)" in caplog.text


@pytest.mark.parametrize("headers", [False, True])
def test_a_dropped_put_expires_segments_only_with_headers(tmp_path: Path, headers: bool) -> None:
    """Kafka 4.3.1 drops expired segments when a put writes (``AbstractSegments.
    getOrCreateSegmentIfLive``), but its session store with headers on every put, a put
    dropped as expired too (``SessionSegmentsWithHeaders.getOrCreateSegmentIfLive``)."""
    cls = SessionStoreWithHeaders if headers else SessionStore
    value = ValueAndHeaders(b"v") if headers else b"v"
    with cls(tmp_path / "s", 120_000, 60_000) as store:
        store.put(Windowed(b"k", Window(0, 0)), value)
        store.remove(Windowed(b"k", Window(150_000, 180_000)))  # stream time 180000, no cleanup
        store.put(Windowed(b"k", Window(0, 0)), None)  # dropped: segment 0 is expired
        rows = list(store.wrapped.items(type(store)._format.data_cf))
    assert (rows == []) is headers
