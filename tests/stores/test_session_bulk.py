"""The session stores' bulk paths against their row-by-row equivalents.

``put_columns`` must leave a store exactly as ``put(key, start, end, value)`` called row by row
leaves it (same reads, same stream time, same raw RocksDB rows in every column family), and
``scan_columns`` must yield exactly what ``all()`` iterates (sessions of several segments
merged into key order), optionally filtered on the session start. Checked by hypothesis over
both store classes, across segment expiry, reopening, uncommitted (owner-committed) writes and
lazy migration of a plain store's sessions.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError, StoreClosedError
from stores.formats.headers import decode_headers, encode_headers
from stores.records import ValueAndHeaders
from stores.session.store import SessionStore, SessionStoreWithHeaders

CLASSES = [SessionStore, SessionStoreWithHeaders]
KEYS = st.sampled_from([b"a", b"ab", b"a\x00", b"b", b"\x00", b"bb\xff"])
BOUNDS = st.one_of(st.none(), KEYS)
VALUES = st.sampled_from([None, b"", b"x", b"yy"])
HEADERS = st.sampled_from(
    [None, b"", encode_headers([("h", b"1")]), encode_headers([("k", None), ("k", b"")])]
)
# (retention, segment interval): expiry within a few rows, one segment, many segments.
CONFIGS = st.sampled_from([(20, 7), (0, 1), (10, 100), (30, 5), (12, 4)])
# Starts and lengths often repeat, so one batch writes the same session several times.
STARTS = st.one_of(st.integers(0, 80), st.sampled_from([10, 11, 40]))
LENGTHS = st.one_of(st.integers(0, 15), st.just(0))
ROW = st.tuples(KEYS, VALUES, STARTS, LENGTHS, HEADERS)
BATCHES = st.lists(st.lists(ROW, max_size=25), min_size=1, max_size=4)
TIMES = st.integers(-5, 100)
QUERIES = st.lists(st.tuples(BOUNDS, BOUNDS, TIMES, TIMES), max_size=4)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

Row = tuple[bytes, Any, int, int, Any]


def value_object(cls: type, value: bytes | None, headers: bytes | None) -> Any:
    """The value ``put`` takes for a row of ``put_columns``."""
    if value is None or cls is SessionStore:
        return value
    return ValueAndHeaders(value, decode_headers(headers or b""))


def put_bulk(store: Any, rows: list[Row]) -> None:
    store.put_columns(
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[2] + r[3] for r in rows],
        [r[4] for r in rows] if isinstance(store, SessionStoreWithHeaders) else None,
    )


def put_rows(store: Any, rows: list[Row]) -> None:
    for key, value, start, length, headers in rows:
        store.put(key, start, start + length, value_object(type(store), value, headers))


def raw_rows(store: Any) -> dict[str, list[tuple[bytes, bytes]]]:
    db = store.wrapped
    return {cf: list(db.items(cf)) for cf in type(store).column_families()}


def scanned(store: Any, batch_rows: int, lo: int | None = None, hi: int | None = None) -> list[Any]:
    out = []
    for batch in store.scan_columns(batch_rows, lo, hi):
        assert 0 < len(batch[0]) <= batch_rows
        assert len({len(column) for column in batch}) == 1
        out.extend(zip(*batch))
    return out


def expected_scan(store: Any, lo: int | None = None, hi: int | None = None) -> list[Any]:
    headers = isinstance(store, SessionStoreWithHeaders)
    out = []
    for w, v in store.all():
        if (lo is not None and w.window.start < lo) or (hi is not None and w.window.start > hi):
            continue
        if headers:
            out.append((w.key, v.value, w.window.start, w.window.end, encode_headers(v.headers)))
        else:
            out.append((w.key, v, w.window.start, w.window.end))
    return out


class Pair:
    """Two stores of one class and config: ``bulk`` fed by put_columns, ``rows`` by put."""

    def __init__(self, root: str, cls: type, config: tuple[int, int], autocommit: bool) -> None:
        self.root, self.cls, self.config, self.autocommit = root, cls, config, autocommit
        self.bulk = self.open("bulk")
        self.rows = self.open("rows")

    def open(self, name: str) -> Any:
        retention, interval = self.config
        path = f"{self.root}/{name}"
        if self.autocommit:
            return self.cls(path, retention, interval)
        db = RocksDBBytesStore(path, self.cls.column_families(), autocommit=False)
        return self.cls.over(db, retention, interval)

    def reopen(self) -> None:
        self.close()
        self.bulk = self.open("bulk")
        self.rows = self.open("rows")

    def close(self) -> None:
        for store in (self.bulk, self.rows):
            if not self.autocommit:
                store.wrapped.commit()
            store.close()
            if not self.autocommit:
                store.wrapped.close()


@contextmanager
def pair(cls: type, config: tuple[int, int], autocommit: bool = True) -> Iterator[Pair]:
    with tempfile.TemporaryDirectory() as root:
        stores = Pair(root, cls, config, autocommit)
        try:
            yield stores
        finally:
            stores.close()


def assert_same(stores: Pair, queries: list[tuple[Any, Any, int, int]]) -> None:
    bulk, rows = stores.bulk, stores.rows
    assert bulk.observed_stream_time == rows.observed_stream_time
    assert list(bulk.all()) == list(rows.all())
    assert list(bulk.backward_all()) == list(rows.backward_all())
    assert list(bulk.fetch(None, None)) == list(rows.fetch(None, None))
    for key_from, key_to, earliest, latest in queries:
        key = key_from or b"a"
        e, l_ = max(earliest, 0), max(latest, 0)
        assert list(bulk.find_sessions(key, e, l_)) == list(rows.find_sessions(key, e, l_))
        assert list(bulk.find_sessions(key_from, key_to, e, l_)) == list(
            rows.find_sessions(key_from, key_to, e, l_)
        )
        assert list(bulk.backward_find_sessions(key, e, l_)) == list(
            rows.backward_find_sessions(key, e, l_)
        )
        assert list(bulk.find_sessions_by_end(e, l_)) == list(rows.find_sessions_by_end(e, l_))
        assert list(bulk.fetch(key)) == list(rows.fetch(key))
        assert bulk.fetch_session(key, earliest, latest) == rows.fetch_session(
            key, earliest, latest
        )
    if stores.autocommit:
        assert raw_rows(bulk) == raw_rows(rows)


@SETTINGS
@given(
    cls=st.sampled_from(CLASSES),
    config=CONFIGS,
    batches=BATCHES,
    reopen=st.booleans(),
    autocommit=st.booleans(),
    queries=QUERIES,
)
def test_put_columns_is_put_row_by_row(
    cls: type, config: tuple[int, int], batches: list[list[Row]], reopen: bool,
    autocommit: bool, queries: list[tuple[Any, Any, int, int]],
) -> None:
    with pair(cls, config, autocommit) as stores:
        for batch in batches:
            put_bulk(stores.bulk, batch)
            put_rows(stores.rows, batch)
            assert_same(stores, queries)
            if reopen:
                stores.reopen()
                assert_same(stores, queries)
        if not autocommit:
            stores.bulk.wrapped.commit()
            stores.rows.wrapped.commit()
            assert raw_rows(stores.bulk) == raw_rows(stores.rows)


@SETTINGS
@given(
    cls=st.sampled_from(CLASSES),
    config=CONFIGS,
    batches=BATCHES,
    batch_rows=st.integers(1, 7),
    autocommit=st.booleans(),
    bounds=st.lists(st.tuples(st.none() | TIMES, st.none() | TIMES), max_size=4),
)
def test_scan_columns_is_all(
    cls: type, config: tuple[int, int], batches: list[list[Row]], batch_rows: int,
    autocommit: bool, bounds: list[tuple[int | None, int | None]],
) -> None:
    with pair(cls, config, autocommit) as stores:
        store = stores.rows
        for batch in batches:
            put_rows(store, batch)  # uncommitted when not autocommit: the merging path
            assert scanned(store, batch_rows) == expected_scan(store)
            for lo, hi in bounds:
                assert scanned(store, batch_rows, lo, hi) == expected_scan(store, lo, hi)


@SETTINGS
@given(
    old=st.lists(ROW, max_size=20),
    batch=st.lists(ROW, max_size=20),
    batch_rows=st.integers(1, 7),
)
def test_put_columns_migrates_plain_sessions(
    old: list[Row], batch: list[Row], batch_rows: int
) -> None:
    """A headers store over a plain store's sessions: bulk writes move them as ``put`` does,
    and scans merge the plain family in (with empty headers) as ``all()`` does."""
    config = (30, 5)
    with tempfile.TemporaryDirectory() as root:
        for name in ("bulk", "rows"):
            with SessionStore(f"{root}/{name}", *config) as plain:
                put_rows(plain, old)
        stores = Pair.__new__(Pair)
        stores.root, stores.cls, stores.config, stores.autocommit = (
            root, SessionStoreWithHeaders, config, True
        )
        stores.bulk, stores.rows = stores.open("bulk"), stores.open("rows")
        try:
            assert scanned(stores.bulk, batch_rows) == expected_scan(stores.bulk)
            put_bulk(stores.bulk, batch)
            put_rows(stores.rows, batch)
            assert_same(stores, [(None, None, 0, 100)])
            assert scanned(stores.bulk, batch_rows) == expected_scan(stores.bulk)
        finally:
            stores.close()


# -- edges --------------------------------------------------------------------------------------


@pytest.fixture
def sessions(tmp_path: Any) -> Iterator[SessionStore]:
    with SessionStore(tmp_path / "s", 20, 7) as store:
        yield store


def test_the_last_write_of_a_session_wins(sessions: SessionStore) -> None:
    sessions.put_columns(
        [b"a", b"b", b"a", b"b", b"a"], [b"1", b"2", b"3", b"4", None], [3, 3, 3, 3, 4],
        [5, 5, 5, 5, 6],
    )
    sessions.put_columns([b"c", b"c"], [None, b"5"], [3, 3], [5, 5])
    assert [(w.key, v) for w, v in sessions.all()] == [(b"a", b"3"), (b"b", b"4"), (b"c", b"5")]


def test_expired_sessions_are_dropped(sessions: SessionStore) -> None:
    # Stream time reaches 100 with the first row: sessions ending before segment 80 // 7 are
    # expired on arrival; the last row advances no further.
    sessions.put_columns([b"a", b"b", b"c", b"d"], [b"1", b"2", b"3", b"4"], [90, 1, 70, 79],
                         [100, 2, 70, 85])
    assert [(w.key, w.window.end) for w, _ in sessions.all()] == [(b"a", 100), (b"d", 85)]
    assert sessions.observed_stream_time == 100


@pytest.mark.parametrize(
    "args",
    [
        ([b"a"], [b"1", b"2"], [1, 2], [1, 2]),  # lengths differ
        ([b"a", "b"], [b"1", b"2"], [1, 2], [1, 2]),  # a str key
        ([b"a", b"b"], [b"1", 2], [1, 2], [1, 2]),  # an int value
        ([b"a", b"b"], [b"1", b"2"], [1, -1], [1, 2]),  # a negative start
        ([b"a", b"b"], [b"1", b"2"], [1, 3], [1, 2]),  # an end before its start
        ([b"a", b"b"], [b"1", b"2"], [1, 2], [1, 2.5]),  # a float end
        ([b"a", b"b"], [b"1", b"2"], [1, 2], [1, 2**63]),  # beyond a long
        ([b"a"], [b"1"], [1], [1], [b""]),  # headers for a store without them
    ],
)
def test_put_columns_refuses_bad_columns_and_writes_nothing(
    sessions: SessionStore, args: tuple[Any, ...]
) -> None:
    with pytest.raises(InvalidOptionError):
        sessions.put_columns(*args)
    assert sessions.observed_stream_time == -1
    assert list(sessions.all()) == []


def test_bulk_paths_refuse_a_closed_store(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s", 20)
    store.close()
    with pytest.raises(StoreClosedError):
        store.put_columns([b"a"], [b"1"], [1], [1])
    with pytest.raises(StoreClosedError):
        store.scan_columns()


def test_scan_columns_refuses_bad_arguments(sessions: SessionStore) -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidOptionError, match="batch_rows"):
            sessions.scan_columns(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="time_to"):
        sessions.scan_columns(10, None, "0")  # type: ignore[arg-type]


def test_scan_columns_ends_quietly_when_the_store_closes(tmp_path: Any) -> None:
    store = SessionStore(tmp_path / "s", 100, 5)
    # Three segments: the scan merges them.
    store.put_columns([b"c", b"b", b"a"], [b"1", b"2", b"3"], [1, 6, 11], [1, 6, 11])
    scan = store.scan_columns(1)
    assert next(scan)[0] == [b"a"]
    store.close()
    assert list(scan) == []


def test_the_bulk_path_logs_kafka_s_expired_segment_warning_for_sessions(
    sessions: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    # Kafka's window and session stores share AbstractRocksDBSegmentedBytesStore.put, which
    # logs "Skipping record for expired segment."; so do both paths here, once per call in bulk.
    with caplog.at_level(logging.DEBUG):
        sessions.put_columns([b"a", b"b"], [b"1", b"2"], [100, 1], [100, 1])
    assert sessions.fetch_session(b"b", 1, 1) is None  # retention 20: stream time 100 expired it
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["Skipping record for expired segment. (1 records)"]
