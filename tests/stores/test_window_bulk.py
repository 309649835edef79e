"""The window stores' bulk paths against their row-by-row equivalents.

``put_columns`` must leave a store exactly as ``put`` called row by row leaves it (same reads,
same stream time, same raw RocksDB rows in every column family, sequence numbers included),
and ``scan_columns`` must yield exactly what ``all()`` / ``fetch_all()`` iterate. Both are
checked by hypothesis over every store class, with and without duplicates, across segment
expiry, reopening, uncommitted (owner-committed) writes and lazy migration of legacy rows.
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
from stores.records import ValueAndHeaders, ValueAndTimestamp, ValueTimestampHeaders
from stores.segments.store import EXPIRED_SEGMENT_WARNING
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

CLASSES = [
    WindowStore,
    TimestampedWindowStore,
    WindowStoreWithHeaders,
    TimestampedWindowStoreWithHeaders,
]
KEYS = st.sampled_from([b"a", b"ab", b"a\x00", b"b", b"\x00", b"bb\xff"])
BOUNDS = st.one_of(st.none(), KEYS)
VALUES = st.sampled_from([None, b"", b"x", b"yy"])
HEADERS = st.sampled_from(
    [None, b"", encode_headers([("h", b"1")]), encode_headers([("k", None), ("k", b"")])]
)
# (retention, window size, segment interval): expiry within a few rows, one segment, many.
CONFIGS = st.sampled_from([(20, 5, 7), (0, 0, 1), (10, 3, 100), (30, 1, 5), (12, 12, 4)])
# Starts often repeat, so one batch writes the same window several times (the last must win).
STARTS = st.one_of(st.integers(0, 80), st.sampled_from([10, 11, 40]))
ROW = st.tuples(KEYS, VALUES, STARTS, st.integers(-1, 99), HEADERS)
BATCHES = st.lists(st.lists(ROW, max_size=25), min_size=1, max_size=4)
QUERIES = st.lists(st.tuples(BOUNDS, BOUNDS, st.integers(-5, 90), st.integers(-5, 90)), max_size=4)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

Row = tuple[bytes, Any, int, int, Any]


def value_object(cls: type, value: bytes | None, ts: int, headers: bytes | None) -> Any:
    """The value ``put`` takes for a row of ``put_columns``."""
    if value is None:
        return None
    parsed = decode_headers(headers or b"")
    if cls is TimestampedWindowStoreWithHeaders:
        return ValueTimestampHeaders(value, ts, parsed)
    if cls is TimestampedWindowStore:
        return ValueAndTimestamp(value, ts)
    if cls is WindowStoreWithHeaders:
        return ValueAndHeaders(value, parsed)
    return value


def columns_of(cls: type, stored: Any) -> tuple[Any, ...]:
    """The value columns ``scan_columns`` yields for a stored value object."""
    if cls is TimestampedWindowStoreWithHeaders:
        return (stored.value, stored.timestamp, encode_headers(stored.headers))
    if cls is TimestampedWindowStore:
        return (stored.value, stored.timestamp)
    if cls is WindowStoreWithHeaders:
        return (stored.value, encode_headers(stored.headers))
    return (stored,)


def put_bulk(store: Any, rows: list[Row]) -> None:
    cls = type(store)
    store.put_columns(
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        [r[3] for r in rows] if cls in (TimestampedWindowStore, TimestampedWindowStoreWithHeaders)
        else None,
        [r[4] for r in rows] if cls in (WindowStoreWithHeaders, TimestampedWindowStoreWithHeaders)
        else None,
    )


def put_rows(store: Any, rows: list[Row]) -> None:
    for key, value, start, ts, headers in rows:
        store.put(key, value_object(type(store), value, ts, headers), start)


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


def expected_scan(cls: type, entries: Iterator[Any]) -> list[Any]:
    return [
        (w.key, *columns_of(cls, v)[:1], w.window.start, w.window.end, *columns_of(cls, v)[1:])
        for w, v in entries
    ]


class Pair:
    """Two stores of one class and config: ``bulk`` fed by put_columns, ``rows`` by put."""

    def __init__(self, root: str, cls: type, config: tuple[int, int, int], dups: bool,
                 autocommit: bool) -> None:
        self.root, self.cls, self.config, self.dups = root, cls, config, dups
        self.autocommit = autocommit
        self.bulk = self._open("bulk")
        self.rows = self._open("rows")

    def _open(self, name: str) -> Any:
        retention, size, interval = self.config
        path = f"{self.root}/{name}"
        if self.autocommit:
            return self.cls(path, retention, size, self.dups, interval)
        db = RocksDBBytesStore(path, self.cls.column_families(), autocommit=False)
        return self.cls.over(db, retention, size, self.dups, interval)

    def reopen(self) -> None:
        self.close()
        self.bulk = self._open("bulk")
        self.rows = self._open("rows")

    def close(self) -> None:
        for store in (self.bulk, self.rows):
            if not self.autocommit:
                store.wrapped.commit()
            store.close()
            if not self.autocommit:
                store.wrapped.close()


@contextmanager
def pair(cls: type, config: tuple[int, int, int], dups: bool, autocommit: bool = True
         ) -> Iterator[Pair]:
    with tempfile.TemporaryDirectory() as root:
        stores = Pair(root, cls, config, dups, autocommit)
        try:
            yield stores
        finally:
            stores.close()


def assert_same(stores: Pair, queries: list[tuple[Any, Any, int, int]]) -> None:
    bulk, rows = stores.bulk, stores.rows
    assert bulk.observed_stream_time == rows.observed_stream_time
    assert list(bulk.all()) == list(rows.all())
    assert list(bulk.backward_all()) == list(rows.backward_all())
    for key_from, key_to, lo, hi in queries:
        assert list(bulk.fetch_all(lo, hi)) == list(rows.fetch_all(lo, hi))
        assert list(bulk.fetch(key_from, key_to, lo, hi)) == list(
            rows.fetch(key_from, key_to, lo, hi)
        )
        key = key_from or b"a"
        assert list(bulk.fetch(key, lo, hi)) == list(rows.fetch(key, lo, hi))
        assert list(bulk.backward_fetch(key, lo, hi)) == list(rows.backward_fetch(key, lo, hi))
        assert bulk.fetch(key, lo) == rows.fetch(key, lo)
    if stores.autocommit:
        assert raw_rows(bulk) == raw_rows(rows)


@SETTINGS
@given(
    cls=st.sampled_from(CLASSES),
    config=CONFIGS,
    dups=st.booleans(),
    batches=BATCHES,
    reopen=st.booleans(),
    autocommit=st.booleans(),
    queries=QUERIES,
)
def test_put_columns_is_put_row_by_row(
    cls: type, config: tuple[int, int, int], dups: bool, batches: list[list[Row]],
    reopen: bool, autocommit: bool, queries: list[tuple[Any, Any, int, int]],
) -> None:
    logging.disable(logging.WARNING)  # expired rows log Kafka's warning; not the point here
    try:
        with pair(cls, config, dups, autocommit) as stores:
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
    finally:
        logging.disable(logging.NOTSET)


@SETTINGS
@given(
    cls=st.sampled_from(CLASSES),
    config=CONFIGS,
    dups=st.booleans(),
    batches=BATCHES,
    batch_rows=st.integers(1, 7),
    autocommit=st.booleans(),
    bounds=st.lists(st.tuples(st.none() | st.integers(-5, 90), st.none() | st.integers(-5, 90)),
                    max_size=4),
)
def test_scan_columns_is_all(
    cls: type, config: tuple[int, int, int], dups: bool, batches: list[list[Row]],
    batch_rows: int, autocommit: bool, bounds: list[tuple[int | None, int | None]],
) -> None:
    logging.disable(logging.WARNING)
    try:
        with pair(cls, config, dups, autocommit) as stores:
            store = stores.rows
            for batch in batches:
                put_rows(store, batch)  # uncommitted when not autocommit: the merging path
                assert scanned(store, batch_rows) == expected_scan(cls, store.all())
                for lo, hi in bounds:
                    want = store.fetch_all(0 if lo is None else lo, 2**63 - 1 if hi is None else hi)
                    assert scanned(store, batch_rows, lo, hi) == expected_scan(cls, want)
    finally:
        logging.disable(logging.NOTSET)


LEGACY = [
    (WindowStore, TimestampedWindowStore),
    (WindowStore, WindowStoreWithHeaders),
    (WindowStore, TimestampedWindowStoreWithHeaders),
    (TimestampedWindowStore, TimestampedWindowStoreWithHeaders),
]


@SETTINGS
@given(
    classes=st.sampled_from(LEGACY),
    dups=st.booleans(),
    old=st.lists(ROW, max_size=20),
    batch=st.lists(ROW, max_size=20),
    batch_rows=st.integers(1, 7),
)
def test_put_columns_migrates_legacy_rows(
    classes: tuple[type, type], dups: bool, old: list[Row], batch: list[Row], batch_rows: int,
) -> None:
    """A store over an older store's rows: bulk writes move them as ``put`` does, and scans
    merge the old family in (converted) as ``all()`` does."""
    legacy, cls = classes
    config = (30, 1, 5)
    logging.disable(logging.WARNING)
    try:
        with tempfile.TemporaryDirectory() as root:
            for name in ("bulk", "rows"):
                with legacy(f"{root}/{name}", *config[:2], dups, config[2]) as store:
                    put_rows(store, old)
            stores = Pair.__new__(Pair)
            stores.root, stores.cls, stores.config, stores.dups = root, cls, config, dups
            stores.autocommit = True
            stores.bulk, stores.rows = stores._open("bulk"), stores._open("rows")
            try:
                assert scanned(stores.bulk, batch_rows) == expected_scan(cls, stores.bulk.all())
                put_bulk(stores.bulk, batch)
                put_rows(stores.rows, batch)
                assert_same(stores, [(None, None, 0, 90)])
                assert scanned(stores.bulk, batch_rows) == expected_scan(cls, stores.bulk.all())
            finally:
                stores.close()
    finally:
        logging.disable(logging.NOTSET)


# -- edges --------------------------------------------------------------------------------------


@pytest.fixture
def window(tmp_path: Any) -> Iterator[WindowStore]:
    with WindowStore(tmp_path / "w", 20, 5, False, 7) as store:
        yield store


def test_put_columns_logs_one_warning_for_expired_rows(
    window: WindowStore, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="stores.window.store"):
        window.put_columns([b"a", b"a", b"b", b"c"], [b"1", b"2", b"3", b"4"], [100, 1, 2, 101])
    assert [r.getMessage() for r in caplog.records] == [f"{EXPIRED_SEGMENT_WARNING} (2 records)"]
    assert [(w.key, w.window.start) for w, _ in window.all()] == [(b"a", 100), (b"c", 101)]


@pytest.mark.parametrize(
    "args",
    [
        ([b"a"], [b"1", b"2"], [1, 2]),  # lengths differ
        ([b"a", "b"], [b"1", b"2"], [1, 2]),  # a str key
        ([b"a", None], [b"1", b"2"], [1, 2]),  # a None key
        ([b"a", b"b"], [b"1", 2], [1, 2]),  # an int value
        ([b"a", b"b"], [b"1", b"2"], [1, -1]),  # a negative start
        ([b"a", b"b"], [b"1", b"2"], [1, 2.0]),  # a float start
        ([b"a", b"b"], [b"1", b"2"], [1, True]),  # a bool start
        ([b"a", b"b"], [b"1", b"2"], [1, 2**63]),  # beyond a long
        ([b"a"], [b"1"], [1], [5]),  # timestamps for a store without them
        ([b"a"], [b"1"], [1], None, [b""]),  # headers for a store without them
    ],
)
def test_put_columns_refuses_bad_columns_and_writes_nothing(
    window: WindowStore, args: tuple[Any, ...]
) -> None:
    with pytest.raises(InvalidOptionError):
        window.put_columns(*args)
    assert window.observed_stream_time == -1
    assert list(window.all()) == []


def test_timestamped_put_columns_needs_timestamps(tmp_path: Any) -> None:
    with TimestampedWindowStore(tmp_path / "t", 20, 5) as store:
        with pytest.raises(InvalidOptionError, match="timestamps"):
            store.put_columns([b"a"], [b"1"], [1])
        with pytest.raises(InvalidOptionError):
            store.put_columns([b"a"], [b"1"], [1], [2**63])


def test_bulk_paths_refuse_a_closed_store(tmp_path: Any) -> None:
    store = WindowStore(tmp_path / "w", 20, 5)
    store.close()
    with pytest.raises(StoreClosedError):
        store.put_columns([b"a"], [b"1"], [1])
    with pytest.raises(StoreClosedError):
        store.scan_columns()


def test_scan_columns_refuses_bad_arguments(window: WindowStore) -> None:
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidOptionError, match="batch_rows"):
            window.scan_columns(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="time_from"):
        window.scan_columns(10, "0")  # type: ignore[arg-type]


def test_scan_columns_ends_quietly_when_the_store_closes(tmp_path: Any) -> None:
    store = WindowStore(tmp_path / "w", 100, 5)
    store.put_columns([b"a", b"b", b"c"], [b"1", b"2", b"3"], [1, 2, 3])
    scan = store.scan_columns(1)
    assert next(scan)[0] == [b"a"]
    store.close()
    assert list(scan) == []


def test_window_ends_are_capped(tmp_path: Any) -> None:
    top = 2**63 - 1
    with WindowStore(tmp_path / "w", 100, 50, False, 10**18) as store:
        store.put_columns([b"a", b"b"], [b"1", b"2"], [top - 60, top - 10])
        batches = list(store.scan_columns())
        assert batches == [([b"a", b"b"], [b"1", b"2"], [top - 60, top - 10], [top - 10, top])]
        assert [(w.window.start, w.window.end) for w, _ in store.all()] == [
            (top - 60, top - 10), (top - 10, top)
        ]


def test_the_last_write_of_a_window_wins(window: WindowStore) -> None:
    window.put_columns([b"a", b"b", b"a", b"b", b"a"], [b"1", b"2", b"3", b"4", None],
                       [3, 3, 3, 3, 4])
    window.put_columns([b"c", b"c"], [None, b"5"], [3, 3])
    assert [(w.key, v) for w, v in window.all()] == [(b"a", b"3"), (b"b", b"4"), (b"c", b"5")]


def test_duplicates_take_sequence_numbers_across_both_paths(tmp_path: Any) -> None:
    with WindowStore(tmp_path / "w", 100, 5, True) as store:
        store.put(b"a", b"0", 1)
        store.put_columns([b"a", b"a", b"a"], [b"1", None, b"2"], [1, 1, 1])
        store.put(b"a", b"3", 1)
        assert [v for _, v in store.fetch(b"a", 0, 10)] == [b"0", b"1", b"2", b"3"]
