"""Kafka's session store scenarios, one test per Kafka test, run over ``SessionStore`` and
``SessionStoreWithHeaders``.

Sources: ``AbstractSessionBytesStoreTest`` (the scenarios that hold for the key-first
``RocksDBSessionStore``; ``findSessions(earliestEnd, latestEnd)`` follows the in-memory store,
which implements it), ``RocksDBMigratingSessionStoreWithHeadersTest`` (lazy migration, restated
for sessions). Kafka's ``Long`` aggregates are bytes here (``b"1"`` for ``1L``); keys are the
UTF-8 bytes of Kafka's ``String`` keys. Where this library differs on purpose, the test says so.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stores.bytes.protocol import DEFAULT_CF
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError, StoreClosedError
from stores.iterators import KeyValueIterator
from stores.records import KeyValue, ValueAndHeaders, Window, Windowed
from stores.session.format import MAX_LONG, SESSION_HEADERS_CF
from stores.session.store import SessionStore, SessionStoreWithHeaders

RETENTION_PERIOD = 10_000
SEGMENT_INTERVAL = 60_000  # Stores.persistentSessionStore: max(retention / 2, 60 000)
HEADERS = (("h", b"v"),)
SYSTEM_TIME = 1_700_000_000_000  # Kafka's tests use the wall clock; any fixed time will do


class Store:
    """A session store under test and the value wrapping of its kind."""

    def __init__(self, cls: type[Any], path: Path, retention: int = RETENTION_PERIOD) -> None:
        self.cls = cls
        self.path = path
        self.headers = cls is SessionStoreWithHeaders
        self.store: Any = cls(path, retention)

    def reopen(self, retention: int) -> None:
        self.store.close()
        self.store = self.cls(self.path / "again", retention)

    def wrap(self, value: bytes | None) -> Any:
        return ValueAndHeaders(value, HEADERS) if self.headers and value is not None else value

    def unwrap(self, value: Any) -> bytes | None:
        if self.headers and value is not None:
            assert value.headers == HEADERS
            return value.value  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]

    def put(self, key: str | bytes, start: int, end: int, value: int | bytes | None) -> None:
        self.store.put(Windowed(_k(key), Window(start, end)), self.wrap(_v(value)))

    def list(self, it: Iterator[KeyValue]) -> list[tuple[bytes, int, int, bytes | None]]:
        with it as entries:  # type: ignore[attr-defined]
            return [(kv.key.key, kv.key.start, kv.key.end, self.unwrap(kv.value)) for kv in entries]

    def values(self, it: Iterator[KeyValue]) -> set[bytes | None]:
        return {value for *_, value in self.list(it)}


def _k(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


def _v(value: int | bytes | None) -> bytes | None:
    return str(value).encode() if isinstance(value, int) else value


def kv(key: str | bytes, start: int, end: int, value: int | bytes) -> tuple[bytes, int, int, bytes]:
    encoded = _v(value)
    assert encoded is not None
    return (_k(key), start, end, encoded)


def vals(*values: int) -> set[bytes | None]:
    return {_v(v) for v in values}


@pytest.fixture(params=[SessionStore, SessionStoreWithHeaders], ids=["plain", "headers"])
def st(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store = Store(request.param, tmp_path / "s")
    yield store
    store.store.close()


def _four_sessions_of_a(st: Store) -> list[tuple[bytes, int, int, bytes]]:
    expected = [kv("a", 0, 0, 1), kv("a", 10, 10, 2), kv("a", 100, 100, 3), kv("a", 1000, 1000, 4)]
    for key, start, end, value in expected:
        st.put(key, start, end, value)
    st.put("aa", 0, 0, 5)  # must not appear in the results
    return expected


def test_should_put_and_find_sessions_in_range(st: Store) -> None:
    st.put("a", 10, 10, 1)
    st.put("a", 500, 1000, 2)
    st.put("a", 1500, 2000, 1)
    st.put("a", 2500, 3000, 2)
    assert st.list(st.store.find_sessions(b"a", 0, 1000)) == [
        kv("a", 10, 10, 1), kv("a", 500, 1000, 2),
    ]
    assert st.list(st.store.find_sessions(b"a", 400, 600)) == [kv("a", 500, 1000, 2)]


def test_should_put_and_backward_find_sessions_in_range(st: Store) -> None:
    st.put("a", 10, 10, 1)
    st.put("a", 500, 1000, 2)
    st.put("a", 1500, 2000, 1)
    st.put("a", 2500, 3000, 2)
    assert st.list(st.store.backward_find_sessions(b"a", 0, 1000)) == [
        kv("a", 500, 1000, 2), kv("a", 10, 10, 1),
    ]
    assert st.list(st.store.backward_find_sessions(b"a", 400, 600)) == [kv("a", 500, 1000, 2)]


def test_should_fetch_all_sessions_with_same_record_key(st: Store) -> None:
    expected = _four_sessions_of_a(st)
    assert st.list(st.store.fetch(b"a")) == expected


def test_should_backward_fetch_all_sessions_with_same_record_key(st: Store) -> None:
    expected = _four_sessions_of_a(st)
    assert st.list(st.store.backward_fetch(b"a")) == expected[::-1]


def test_should_find_sessions_for_time_range(st: Store) -> None:
    # Kafka's RocksDBSessionStore throws UnsupportedOperationException here; this store
    # implements the all-keys form, ordered as Kafka's InMemorySessionStore orders it.
    st.put("a", 0, 0, 5)
    assert st.list(st.store.find_sessions(0, 0)) == [kv("a", 0, 0, 5)]
    st.put("b", 10, 20, 10)
    st.put("c", 30, 40, 20)
    a, b, c = kv("a", 0, 0, 5), kv("b", 10, 20, 10), kv("c", 30, 40, 20)
    assert st.list(st.store.find_sessions(0, 20)) == [a, b]  # find boundary
    assert st.list(st.store.find_sessions(0, 19)) == [a]  # left boundary
    assert st.list(st.store.find_sessions(1, 20)) == [b]  # right boundary
    assert st.list(st.store.find_sessions(19, 41)) == [b, c]  # partial, off by one
    assert st.list(st.store.find_sessions(0, 40)) == [a, b, c]  # all


def test_find_sessions_by_end_orders_by_end_then_key_then_start(st: Store) -> None:
    # InMemorySessionStore walks endTime -> key -> startTime maps.
    st.put("b", 5, 10, 1)
    st.put("a", 7, 10, 2)
    st.put("a", 3, 10, 3)
    st.put("a", 0, 5, 4)
    assert st.list(st.store.find_sessions(0, 10)) == [
        kv("a", 0, 5, 4), kv("a", 3, 10, 3), kv("a", 7, 10, 2), kv("b", 5, 10, 1),
    ]


def _key_range_data(st: Store) -> list[tuple[bytes, int, int, bytes]]:
    expected = [
        kv("aa", 10, 10, 2),
        kv("aaa", 100, 100, 3),
        kv("aaaa", 100, 100, 6),
        kv("b", 1000, 1000, 4),
        kv("bb", 1500, 2000, 5),
    ]
    for key, start, end, value in expected:
        st.put(key, start, end, value)
    st.put("a", 0, 0, 1)  # only in open-ended fetches
    st.put("bbb", 2500, 3000, 6)
    return expected


def test_should_fetch_all_sessions_within_key_range(st: Store) -> None:
    expected = _key_range_data(st)
    a, bbb = kv("a", 0, 0, 1), kv("bbb", 2500, 3000, 6)
    assert st.list(st.store.fetch(b"aa", b"bb")) == expected
    assert st.list(st.store.find_sessions(b"aa", b"bb", 0, MAX_LONG)) == expected
    assert st.list(st.store.fetch(None, b"bb")) == [a, *expected]
    assert st.list(st.store.fetch(b"aa", None)) == [*expected, bbb]
    assert st.list(st.store.fetch(None, None)) == [a, *expected, bbb]


def test_should_backward_fetch_all_sessions_within_key_range(st: Store) -> None:
    expected = _key_range_data(st)
    a, bbb = kv("a", 0, 0, 1), kv("bbb", 2500, 3000, 6)
    assert st.list(st.store.backward_fetch(b"aa", b"bb")) == expected[::-1]
    assert st.list(st.store.backward_find_sessions(b"aa", b"bb", 0, MAX_LONG)) == expected[::-1]
    assert st.list(st.store.backward_fetch(None, b"bb")) == [a, *expected][::-1]
    assert st.list(st.store.backward_fetch(b"aa", None)) == [*expected, bbb][::-1]
    assert st.list(st.store.backward_fetch(None, None)) == [a, *expected, bbb][::-1]


def test_should_fetch_exact_session(st: Store) -> None:
    st.put("a", 0, 4, 1)
    st.put("aa", 0, 3, 2)
    st.put("aa", 0, 4, 3)
    st.put("aa", 1, 4, 4)
    st.put("aaa", 0, 4, 5)
    assert st.unwrap(st.store.fetch_session(b"aa", 0, 4)) == b"3"


def test_should_return_null_on_session_not_found(st: Store) -> None:
    assert st.store.fetch_session(b"any key", 0, 5) is None


def test_should_find_values_within_merging_session_window_range(st: Store) -> None:
    st.put("a", 0, 0, 1)
    st.put("a", 1000, 1000, 2)
    expected = [kv("a", 0, 0, 1), kv("a", 1000, 1000, 2)]
    assert st.list(st.store.find_sessions(b"a", -1, 1000)) == expected


def test_should_backward_find_values_within_merging_session_window_range(st: Store) -> None:
    st.put("a", 0, 0, 1)
    st.put("a", 1000, 1000, 2)
    expected = [kv("a", 1000, 1000, 2), kv("a", 0, 0, 1)]
    assert st.list(st.store.backward_find_sessions(b"a", -1, 1000)) == expected


def test_should_remove(st: Store) -> None:
    st.put("a", 0, 1000, 1)
    st.put("a", 1500, 2500, 2)
    st.store.remove(Windowed(b"a", Window(0, 1000)))
    with st.store.find_sessions(b"a", 0, 1000) as it:
        assert not it.has_next()
    with st.store.find_sessions(b"a", 1500, 2500) as it:
        assert it.has_next()


def test_should_remove_on_null_agg_value(st: Store) -> None:
    st.put("a", 0, 1000, 1)
    st.put("a", 1500, 2500, 2)
    st.put("a", 0, 1000, None)
    with st.store.find_sessions(b"a", 0, 1000) as it:
        assert not it.has_next()
    with st.store.find_sessions(b"a", 1500, 2500) as it:
        assert it.has_next()


def _five_sessions_to_merge(st: Store) -> None:
    for value, (start, end) in enumerate(
        [(0, 100), (101, 200), (201, 300), (301, 400), (401, 500)], start=1
    ):
        st.put("a", start, end, value)


def test_should_find_sessions_to_merge(st: Store) -> None:
    _five_sessions_to_merge(st)
    assert st.list(st.store.find_sessions(b"a", 150, 300)) == [
        kv("a", 101, 200, 2), kv("a", 201, 300, 3),
    ]


def test_should_backward_find_sessions_to_merge(st: Store) -> None:
    _five_sessions_to_merge(st)
    assert st.list(st.store.backward_find_sessions(b"a", 150, 300)) == [
        kv("a", 201, 300, 3), kv("a", 101, 200, 2),
    ]


def _exact_keys(st: Store) -> None:
    huge = 0x7A00000000000000
    st.reopen(huge)
    st.put("a", 0, 0, 1)
    st.put("aa", 0, 10, 2)
    st.put("a", 10, 20, 3)
    st.put("aa", 10, 20, 4)
    st.put("a", huge - 2, huge - 1, 5)


@pytest.mark.parametrize("method", ["find_sessions", "backward_find_sessions"])
def test_should_fetch_exact_keys(st: Store, method: str) -> None:
    _exact_keys(st)
    find = getattr(st.store, method)
    assert st.values(find(b"a", 0, MAX_LONG)) == vals(1, 3, 5)
    assert st.values(find(b"aa", 0, MAX_LONG)) == vals(2, 4)
    assert st.values(find(b"a", b"aa", 0, MAX_LONG)) == vals(1, 2, 3, 4, 5)
    assert st.values(find(b"a", b"aa", 10, 0)) == vals(2)
    assert st.values(find(None, b"aa", 0, MAX_LONG)) == vals(1, 2, 3, 4, 5)
    assert st.values(find(b"a", None, 0, MAX_LONG)) == vals(1, 2, 3, 4, 5)
    assert st.values(find(None, None, 0, MAX_LONG)) == vals(1, 2, 3, 4, 5)


@pytest.mark.parametrize("method", ["find_sessions", "backward_find_sessions"])
def test_should_fetch_and_iterate_over_exact_binary_keys(st: Store, method: str) -> None:
    keys = [b"\x00", b"\x00\x00", b"\x00\x00\x00"]
    for i in range(9):
        st.put(keys[i % 3], i + 1, 100, i + 1)
    find = getattr(st.store, method)
    order = -1 if method.startswith("backward") else 1
    for n, key in enumerate(keys, start=1):
        got = [v for *_, v in st.list(find(key, 0, MAX_LONG))]
        assert got == [_v(n), _v(n + 3), _v(n + 6)][::order]


def test_iterator_peek(st: Store) -> None:
    st.put("a", 0, 0, 1)
    st.put("aa", 0, 10, 2)
    st.put("a", 10, 20, 3)
    st.put("aa", 10, 20, 4)
    with st.store.find_sessions(b"a", 0, 20) as it:
        assert it.peek_next_key() == Windowed(b"a", Window(0, 0))
        assert it.peek_next_key() == next(it).key
        assert it.peek_next_key() == next(it).key
        assert not it.has_next()
        with pytest.raises(StopIteration):
            it.peek_next_key()


def test_iterator_peek_backward(st: Store) -> None:
    st.put("a", 0, 0, 1)
    st.put("aa", 0, 10, 2)
    st.put("a", 10, 20, 3)
    st.put("aa", 10, 20, 4)
    with st.store.backward_find_sessions(b"a", 0, 20) as it:
        assert it.peek_next_key() == Windowed(b"a", Window(10, 20))
        assert it.peek_next_key() == next(it).key
        assert it.peek_next_key() == next(it).key
        assert not it.has_next()


def test_should_restore(st: Store) -> None:
    # Kafka restores a closed store from its changelog; here the data is durable, so reopening
    # finds it. Unlike Kafka (an empty iterator), a closed store refuses reads.
    expected = _four_sessions_of_a(st)
    assert st.list(st.store.fetch(b"a")) == expected
    st.store.close()
    with pytest.raises(StoreClosedError):
        st.store.fetch(b"a")
    st.store = st.cls(st.path, RETENTION_PERIOD)
    assert st.list(st.store.fetch(b"a")) == expected


def test_should_close_open_iterators_when_store_is_closed_and_not_throw_on_has_next(
    st: Store,
) -> None:
    st.put("a", 0, 0, 1)
    st.put("b", 10, 50, 2)
    st.put("c", 100, 500, 3)
    with st.store.fetch(b"a") as it:
        assert it.has_next()
        st.store.close()
        assert not it.has_next()
        with pytest.raises(StopIteration):
            next(it)


def test_an_iterator_used_after_its_own_close_raises(st: Store) -> None:
    st.put("a", 0, 0, 1)
    it = st.store.fetch(b"a")
    assert isinstance(it, KeyValueIterator)
    it.close()
    it.close()  # idempotent
    with pytest.raises(StoreClosedError):
        it.has_next()


def test_should_return_same_results_for_single_key_find_sessions_and_equal_key_range(
    st: Store,
) -> None:
    st.put("a", 0, 1, 0)
    st.put("aa", 2, 3, 1)
    st.put("aa", 4, 5, 2)
    st.put("aaa", 6, 7, 3)
    with st.store.find_sessions(b"aa", 0, 10) as single, st.store.find_sessions(
        b"aa", b"aa", 0, 10
    ) as ranged:
        assert next(single) == next(ranged)
        assert next(single) == next(ranged)
        assert not single.has_next()
        assert not ranged.has_next()


def test_should_measure_expired_records(st: Store) -> None:
    # Kafka counts the dropped late record in a metric; here: it is dropped, the others kept.
    st.put("initial record", 0, 2 * SEGMENT_INTERVAL, 0)
    st.put("late record", 0, 0, 0)
    st.put("another on-time record", 0, 2 * SEGMENT_INTERVAL, 0)
    keys = [key for key, *_ in st.list(st.store.fetch(None, None))]
    assert keys == [b"another on-time record", b"initial record"]
    assert st.store.observed_stream_time == 2 * SEGMENT_INTERVAL


def test_should_not_throw_exception_removing_nonexistent_key(st: Store) -> None:
    st.store.remove(Windowed(b"a", Window(0, 1)))


def test_should_throw_on_find_sessions_null_key(st: Store) -> None:
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.find_sessions(None, 1, 2)
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.backward_find_sessions(None, 1, 2)


def test_should_throw_on_fetch_null_key(st: Store) -> None:
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.fetch(None)
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.backward_fetch(None)


def test_should_throw_on_remove_null_key(st: Store) -> None:
    with pytest.raises(InvalidOptionError, match="session_key"):
        st.store.remove(None)
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.remove(None, 0, 1)


def test_should_throw_on_put_null_key(st: Store) -> None:
    with pytest.raises(InvalidOptionError, match="session_key"):
        st.store.put(None, st.wrap(b"1"))
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.put(None, 0, 1, st.wrap(b"1"))
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.put(Windowed(None, Window(0, 1)), st.wrap(b"1"))
    with pytest.raises(InvalidOptionError, match="key"):
        st.store.fetch_session(None, 0, 1)


def test_a_window_ending_before_its_start_is_refused(st: Store) -> None:
    # Kafka's Window: "Window endMs time cannot be smaller than window startMs time."
    with pytest.raises(InvalidOptionError, match="before"):
        Window(10, 5)
    with pytest.raises(InvalidOptionError, match="before"):
        st.store.put(b"a", 10, 5, st.wrap(b"1"))
    with pytest.raises(InvalidOptionError, match="before"):
        st.store.remove(b"a", 10, 5)
    # ... and so is a negative start ("Window startMs time cannot be negative").
    with pytest.raises(InvalidOptionError, match="start"):
        st.store.put(Windowed(b"a", Window(-1, 5)), st.wrap(b"1"))


def test_should_not_throw_invalid_range_exception_with_negative_from_key(
    st: Store, caplog: pytest.LogCaptureFixture
) -> None:
    # Kafka's String deserializer turns Integer -1's bytes into U+FFFD characters.
    key_from = struct.pack(">i", -1).decode("utf-8", "replace").encode()
    key_to = struct.pack(">i", 1)
    with caplog.at_level(logging.WARNING, logger="stores.session.store"):
        with st.store.find_sessions(key_from, key_to, 0, 10) as it:
            assert not it.has_next()
    assert (
        "Returning empty iterator for fetch with invalid key range: from > to. This may be due "
        "to range arguments set in the wrong order, or serdes that don't preserve ordering when "
        "lexicographically comparing the serialized bytes. Note that the built-in numerical "
        "serdes do not follow this for negative numbers"
    ) in caplog.messages


def test_should_remove_expired(st: Store) -> None:
    st.put("a", 0, 0, 1)
    st.put("aa", 0, SEGMENT_INTERVAL, 2)
    st.put("a", 10, SEGMENT_INTERVAL, 3)
    st.put("aa", 10, 2 * SEGMENT_INTERVAL, 4)  # advances stream time
    # 2 and 3 end before stream time - retention + 1: expired though their segment lives.
    assert st.values(st.store.find_sessions(b"a", b"b", 0, MAX_LONG)) == vals(4)


def test_should_not_fetch_expired_sessions(st: Store) -> None:
    now, r = SYSTEM_TIME, RETENTION_PERIOD
    st.put("p", now - 3 * r, now - 2 * r, 1)
    st.put("q", now - 2 * r, now - r, 4)
    st.put("r", now - r, now - r // 2, 3)
    st.put("p", now - r, now - r // 2, 2)
    assert st.values(st.store.find_sessions(b"p", now - 2 * r, now - r)) == vals(2)
    with st.store.backward_find_sessions(b"p", now - 5 * r, now - 4 * r) as it:
        assert not it.has_next()
    with st.store.find_sessions(b"p", b"r", now - 5 * r, now - 4 * r) as it:
        assert not it.has_next()
    assert st.values(st.store.find_sessions(b"p", b"r", now - r, now - r // 2)) == vals(2, 3, 4)
    assert st.values(st.store.find_sessions(b"p", b"r", now - 2 * r, now - r)) == vals(2, 3, 4)
    assert st.values(
        st.store.backward_find_sessions(b"p", b"r", now - 2 * r, now - r)
    ) == vals(2, 3, 4)


# -- RocksDBMigratingSessionStoreWithHeadersTest, restated for sessions ---------------------------


def _prepare_plain_store(path: Path) -> None:
    with SessionStore(path, RETENTION_PERIOD) as plain:
        for n in range(1, 8):
            plain.put(f"key{n}".encode(), n, 10 * n, str(n).encode() * n)


def _session(n: int) -> Windowed[bytes]:
    return Windowed(f"key{n}".encode(), Window(n, 10 * n))


def _rows(db: RocksDBBytesStore, cf: str) -> int:
    return sum(1 for _ in db.range(cf=cf))


def test_should_open_new_store_in_regular_mode(tmp_path: Path) -> None:
    with SessionStoreWithHeaders(tmp_path / "s", RETENTION_PERIOD) as store:
        assert not store.upgrade_mode
        with store.all() as it:
            assert not it.has_next()


def test_should_open_existing_store_in_regular_mode(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with SessionStoreWithHeaders(path, RETENTION_PERIOD) as store:
        store.put(b"key", 0, 1, ValueAndHeaders(b"withHeaders"))
    with SessionStoreWithHeaders(path, RETENTION_PERIOD) as store:
        assert not store.upgrade_mode
        assert _rows(store.wrapped, DEFAULT_CF) == 0
        assert _rows(store.wrapped, SESSION_HEADERS_CF) == 1


def test_should_migrate_from_default_to_headers_aware_column_family(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _prepare_plain_store(path)
    with SessionStoreWithHeaders(path, RETENTION_PERIOD) as store:
        db = store.wrapped
        assert store.upgrade_mode
        # fetch_session is Kafka's get: lazy migration on read.
        assert store.fetch_session(b"unknown", 0, 1) is None
        assert store.fetch_session(b"key1", 1, 10) == ValueAndHeaders(b"1")
        assert (_rows(db, DEFAULT_CF), _rows(db, SESSION_HEADERS_CF)) == (6, 1)
        # Writes move a session (put), delete it everywhere (None, remove), or add one.
        store.put(_session(2), ValueAndHeaders(b"22", HEADERS))
        store.put(_session(3), None)
        store.remove(_session(6))
        store.put(b"key8new", 8, 80, ValueAndHeaders(b"88888888"))
        # Iterators convert on the fly and migrate nothing.
        expected = [
            KeyValue(_session(1), ValueAndHeaders(b"1")),
            KeyValue(_session(2), ValueAndHeaders(b"22", HEADERS)),
            KeyValue(_session(4), ValueAndHeaders(b"4444")),
            KeyValue(_session(5), ValueAndHeaders(b"55555")),
            KeyValue(_session(7), ValueAndHeaders(b"7777777")),
            KeyValue(Windowed(b"key8new", Window(8, 80)), ValueAndHeaders(b"88888888")),
        ]
        assert list(store.fetch(None, None)) == expected
        assert list(store.backward_fetch(None, None)) == expected[::-1]
        assert list(store.fetch(b"key2", b"key5")) == expected[1:4]
        assert list(store.backward_fetch(b"key2", b"key5")) == expected[1:4][::-1]
        assert list(store.find_sessions(0, 100)) == [
            expected[0], expected[1], expected[2], expected[3], expected[4], expected[5],
        ]
        assert (_rows(db, DEFAULT_CF), _rows(db, SESSION_HEADERS_CF)) == (3, 3)
    # Still in upgrade mode while plain sessions remain; regular once they are gone.
    with SessionStoreWithHeaders(path, RETENTION_PERIOD) as store:
        assert store.upgrade_mode
        for n in (4, 5, 7):
            assert store.fetch_session(b"key%d" % n, n, 10 * n) is not None
        assert _rows(store.wrapped, DEFAULT_CF) == 0
    with SessionStoreWithHeaders(path, RETENTION_PERIOD) as store:
        assert not store.upgrade_mode
        assert list(store.fetch(None, None)) == expected


def test_a_read_only_store_converts_on_read_and_writes_nothing(tmp_path: Path) -> None:
    # Our rule (no Kafka counterpart): a store over a read-only bytes store never writes.
    path = tmp_path / "s"
    _prepare_plain_store(path)
    db = RocksDBBytesStore(path, SessionStoreWithHeaders.column_families(), read_only=True)
    try:
        store = SessionStoreWithHeaders.over(db, RETENTION_PERIOD)
        assert store.upgrade_mode
        assert store.fetch_session(b"key1", 1, 10) == ValueAndHeaders(b"1")
        assert _rows(db, DEFAULT_CF) == 7
        assert not db.has_uncommitted
    finally:
        db.close()


def test_migration_over_an_owned_batch_waits_for_the_owner(tmp_path: Path) -> None:
    path = tmp_path / "s"
    _prepare_plain_store(path)
    db = RocksDBBytesStore(path, SessionStoreWithHeaders.column_families(), autocommit=False)
    try:
        store = SessionStoreWithHeaders.over(db, RETENTION_PERIOD)
        assert store.fetch_session(b"key1", 1, 10) == ValueAndHeaders(b"1")
        assert db.has_uncommitted
        db.rollback()
        assert _rows(db, DEFAULT_CF) == 7
    finally:
        db.close()
