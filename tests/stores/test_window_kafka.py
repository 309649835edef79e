"""Kafka's own window-store scenarios, one test per Kafka test, over all four window stores.

Followed: ``AbstractWindowBytesStoreTest``, ``AbstractRocksDBWindowStoreTest`` (the
``RocksDBWindowStore`` branch), ``WindowStoreFetchTest`` and the KIP-1271
``TimestampedWindowStoreWithHeadersTest`` (its store-level assertions). Each test is named after
the Kafka test it follows (snake_case). Kafka's constants: window size 3, segment interval
60 000, retention two segments; Integer keys are 4-byte big-endian ints, String values UTF-8.

Where Kafka asserts a ``NullPointerException`` we expect ``InvalidOptionError``; where it asserts
a changelog (``flush`` + ``recordCollector``) there is no changelog here and that part is left
out; metrics are not kept, only the log line.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stores.errors import InvalidOptionError, StoreClosedError
from stores.iterators import KeyValueIterator
from stores.records import (
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
    Windowed,
)
from stores.segments.store import EXPIRED_SEGMENT_WARNING, INVALID_KEY_RANGE_WARNING
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

WINDOW_SIZE = 3
SEGMENT_INTERVAL = 60_000
RETENTION_PERIOD = 2 * SEGMENT_INTERVAL
START = SEGMENT_INTERVAL - 4  # Kafka's defaultStartTime
MAX_LONG = 2**63 - 1


def k(i: int) -> bytes:
    """Kafka's IntegerSerializer."""
    return struct.pack(">i", i)


# -- one contract over four value types -------------------------------------------------------

Wrap = Callable[[bytes, int], Any]

WRAPS: dict[str, tuple[type, Wrap]] = {
    "WindowStore": (WindowStore, lambda v, t: v),
    "TimestampedWindowStore": (TimestampedWindowStore, lambda v, t: ValueAndTimestamp(v, t)),
    "WindowStoreWithHeaders": (
        WindowStoreWithHeaders,
        lambda v, t: ValueAndHeaders(v, (("h", b"1"),)),
    ),
    "TimestampedWindowStoreWithHeaders": (
        TimestampedWindowStoreWithHeaders,
        lambda v, t: ValueTimestampHeaders(v, t, (("h", b"1"),)),
    ),
}


def _plain(value: Any) -> Any:
    return value if value is None or isinstance(value, bytes) else value.value


class Store:
    """A window store seen through Kafka's ``WindowStore<Integer, String>``: puts take plain
    bytes (wrapped in the store's value type), reads give plain bytes back."""

    def __init__(self, cls: type, wrap: Wrap, path: Path, **config: Any) -> None:
        self.inner: Any = cls(
            path,
            config.get("retention", RETENTION_PERIOD),
            config.get("size", WINDOW_SIZE),
            config.get("dups", False),
            config.get("interval", SEGMENT_INTERVAL),
        )
        self._wrap = wrap

    def put(self, key: bytes, value: bytes | None, start: int) -> None:
        self.inner.put(key, None if value is None else self._wrap(value, start), start)

    def get(self, key: bytes, time: int) -> bytes | None:
        found: bytes | None = _plain(self.inner.fetch(key, time))
        return found

    def it(self, method: str, *args: Any) -> KeyValueIterator:
        iterator: KeyValueIterator = getattr(self.inner, method)(*args)
        return iterator

    def rows(self, method: str, *args: Any) -> list[KeyValue]:
        with self.it(method, *args) as iterator:
            return [KeyValue(kv.key, _plain(kv.value)) for kv in iterator]

    def values(self, key: bytes, time_from: int, time_to: int) -> set[bytes]:
        return {kv.value for kv in self.rows("fetch", key, time_from, time_to)}


@pytest.fixture(params=list(WRAPS))
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Store]]:
    cls, wrap = WRAPS[request.param]
    opened: list[Store] = []

    def factory(**config: Any) -> Store:
        store = Store(cls, wrap, tmp_path / f"store{len(opened)}", **config)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.inner.close()


@pytest.fixture
def ws(build: Callable[..., Store]) -> Store:
    return build()


def windowed(key: bytes | int, value: bytes, start: int, size: int = WINDOW_SIZE) -> KeyValue:
    raw = k(key) if isinstance(key, int) else key
    return KeyValue(Windowed(raw, Window(start, min(start + size, MAX_LONG))), value)


ZERO = windowed(0, b"zero", START)
ONE = windowed(1, b"one", START + 1)
TWO = windowed(2, b"two", START + 2)
THREE = windowed(3, b"three", START + 2)
FOUR = windowed(4, b"four", START + 4)
FIVE = windowed(5, b"five", START + 5)


def put_first_batch(ws: Store) -> None:
    for kv in (ZERO, ONE, TWO, THREE, FOUR, FIVE):
        ws.put(kv.key.key, kv.value, kv.key.start)


def put_second_batch(ws: Store) -> None:
    for i in range(1, 7):
        ws.put(k(2), b"two+%d" % i, START + 2 + i)


def two(*suffixes: int) -> set[bytes]:
    return {b"two" if i == 0 else b"two+%d" % i for i in suffixes}


# -- AbstractWindowBytesStoreTest ---------------------------------------------------------------


def test_range_and_single_point_fetch(ws: Store) -> None:
    put_first_batch(ws)
    for kv in (ZERO, ONE, TWO, THREE, FOUR, FIVE):
        assert ws.get(kv.key.key, kv.key.start) == kv.value
    assert ws.values(k(0), START - WINDOW_SIZE, START + WINDOW_SIZE) == {b"zero"}
    put_second_batch(ws)
    for i in range(1, 7):
        assert ws.get(k(2), START + 2 + i) == b"two+%d" % i
    # fetch(2, t - 3, t + 3) for t = start - 2 .. start + 12
    expected = [
        two(), two(0), two(0, 1), two(0, 1, 2), two(0, 1, 2, 3), two(0, 1, 2, 3, 4),
        two(0, 1, 2, 3, 4, 5), two(0, 1, 2, 3, 4, 5, 6), two(1, 2, 3, 4, 5, 6),
        two(2, 3, 4, 5, 6), two(3, 4, 5, 6), two(4, 5, 6), two(5, 6), two(6), two(),
    ]
    for offset, want in zip(range(-2, 13), expected, strict=True):
        t = START + offset
        assert ws.values(k(2), t - WINDOW_SIZE, t + WINDOW_SIZE) == want, offset


def test_should_get_all(ws: Store) -> None:
    put_first_batch(ws)
    assert ws.rows("all") == [ZERO, ONE, TWO, THREE, FOUR, FIVE]


def test_should_get_all_non_deleted_records(ws: Store) -> None:
    for i, name in enumerate((b"zero", b"one", b"two", b"three", b"four")):
        ws.put(k(i), name, START + i)
    ws.put(k(1), None, START + 1)
    ws.put(k(3), None, START + 3)
    assert ws.rows("all") == [ZERO, windowed(2, b"two", START + 2), FOUR]


def test_should_get_all_return_timestamp_ordered_records(ws: Store) -> None:
    for i, name in ((4, b"four"), (0, b"zero"), (2, b"two"), (3, b"three"), (1, b"one")):
        ws.put(k(i), name, START + i)
    assert ws.rows("all") == [
        ZERO, ONE, windowed(2, b"two", START + 2), windowed(3, b"three", START + 3), FOUR
    ]


def test_should_early_closed_iterator_still_get_all_records(ws: Store) -> None:
    ws.put(k(0), b"zero", START)
    ws.put(k(1), b"one", START + 1)
    iterator = ws.it("all")
    assert KeyValue(next(iterator).key, b"zero") == ZERO
    iterator.close()
    assert ws.rows("all") == [ZERO, ONE]


def test_should_get_backward_all(ws: Store) -> None:
    put_first_batch(ws)
    assert ws.rows("backward_all") == [FIVE, FOUR, THREE, TWO, ONE, ZERO]


def test_should_fetch_all_in_time_range(ws: Store) -> None:
    put_first_batch(ws)
    assert ws.rows("fetch_all", START + 1, START + 4) == [ONE, TWO, THREE, FOUR]
    assert ws.rows("fetch_all", START + 0, START + 3) == [ZERO, ONE, TWO, THREE]
    assert ws.rows("fetch_all", START + 1, START + 5) == [ONE, TWO, THREE, FOUR, FIVE]


def test_should_backward_fetch_all_in_time_range(ws: Store) -> None:
    put_first_batch(ws)
    assert ws.rows("backward_fetch_all", START + 1, START + 4) == [FOUR, THREE, TWO, ONE]
    assert ws.rows("backward_fetch_all", START + 0, START + 3) == [THREE, TWO, ONE, ZERO]
    assert ws.rows("backward_fetch_all", START + 1, START + 5) == [FIVE, FOUR, THREE, TWO, ONE]


FETCH_RANGE_CASES = [
    # key_from, key_to, time_from, time_to, expected (forward)
    (0, 1, START - WINDOW_SIZE, START + WINDOW_SIZE, [ZERO, ONE]),
    (1, 1, START - WINDOW_SIZE, START + WINDOW_SIZE, [ONE]),
    (1, 3, START - WINDOW_SIZE, START + WINDOW_SIZE, [ONE, TWO, THREE]),
    (0, 5, START - WINDOW_SIZE, START + WINDOW_SIZE, [ZERO, ONE, TWO, THREE]),
    (0, 5, START - WINDOW_SIZE, START + WINDOW_SIZE + 5, [ZERO, ONE, TWO, THREE, FOUR, FIVE]),
    (0, 5, START + 2, START + WINDOW_SIZE + 5, [TWO, THREE, FOUR, FIVE]),
    (4, 5, START + 2, START + WINDOW_SIZE, []),
    (0, 3, START + 3, START + WINDOW_SIZE + 5, []),
    # KIP-766: a null key bound is open.
    (None, 2, START - WINDOW_SIZE, START + WINDOW_SIZE, [ZERO, ONE, TWO]),
    (2, None, START - WINDOW_SIZE, START + WINDOW_SIZE + 5, [TWO, THREE, FOUR, FIVE]),
    (None, None, START - WINDOW_SIZE, START + WINDOW_SIZE + 5, [ZERO, ONE, TWO, THREE, FOUR, FIVE]),
]


@pytest.mark.parametrize(("lo", "hi", "t0", "t1", "expected"), FETCH_RANGE_CASES)
def test_fetch_range(
    ws: Store, lo: int | None, hi: int | None, t0: int, t1: int, expected: list[KeyValue]
) -> None:
    put_first_batch(ws)
    key_from = None if lo is None else k(lo)
    key_to = None if hi is None else k(hi)
    assert ws.rows("fetch", key_from, key_to, t0, t1) == expected


@pytest.mark.parametrize(("lo", "hi", "t0", "t1", "expected"), FETCH_RANGE_CASES)
def test_backward_fetch_range(
    ws: Store, lo: int | None, hi: int | None, t0: int, t1: int, expected: list[KeyValue]
) -> None:
    put_first_batch(ws)
    key_from = None if lo is None else k(lo)
    key_to = None if hi is None else k(hi)
    assert ws.rows("backward_fetch", key_from, key_to, t0, t1) == expected[::-1]


def test_put_and_fetch_before(ws: Store) -> None:
    put_first_batch(ws)
    for kv in (ZERO, ONE, TWO, THREE, FOUR, FIVE):
        start = kv.key.start
        assert ws.values(kv.key.key, start - WINDOW_SIZE, start) == {kv.value}
    put_second_batch(ws)
    expected = [
        two(), two(), two(), two(0), two(0, 1), two(0, 1, 2), two(0, 1, 2, 3), two(1, 2, 3, 4),
        two(2, 3, 4, 5), two(3, 4, 5, 6), two(4, 5, 6), two(5, 6), two(6), two(), two(),
    ]
    for offset, want in zip(range(-1, 14), expected, strict=True):
        t = START + offset
        assert ws.values(k(2), t - WINDOW_SIZE, t) == want, offset


def test_put_and_fetch_after(ws: Store) -> None:
    put_first_batch(ws)
    for key, offset, want in ((0, 0, {b"zero"}), (1, 1, {b"one"}), (2, 2, {b"two"}),
                              (3, 3, set()), (4, 4, {b"four"}), (5, 5, {b"five"})):
        assert ws.values(k(key), START + offset, START + offset + WINDOW_SIZE) == want
    put_second_batch(ws)
    expected = [
        two(), two(0), two(0, 1), two(0, 1, 2), two(0, 1, 2, 3), two(1, 2, 3, 4),
        two(2, 3, 4, 5), two(3, 4, 5, 6), two(4, 5, 6), two(5, 6), two(6), two(), two(), two(),
        two(),
    ]
    for offset, want in zip(range(-2, 13), expected, strict=True):
        t = START + offset
        assert ws.values(k(2), t, t + WINDOW_SIZE) == want, offset


def test_put_same_key_timestamp(build: Callable[..., Store]) -> None:
    ws = build(dups=True)
    ws.put(k(0), b"zero", START)
    assert ws.values(k(0), START - WINDOW_SIZE, START + WINDOW_SIZE) == {b"zero"}
    for value in (b"zero", b"zero+", b"zero++"):
        ws.put(k(0), value, START)
    for offset in range(4):
        t = START + offset
        rows = ws.rows("fetch", k(0), t - WINDOW_SIZE, t + WINDOW_SIZE)
        # Every duplicate, in put order (sequence numbers), under its window start.
        assert rows == [KeyValue(START, v) for v in (b"zero", b"zero", b"zero+", b"zero++")]
    assert ws.values(k(0), START + 4 - WINDOW_SIZE, START + 4 + WINDOW_SIZE) == set()


def test_should_close_open_iterators_when_store_is_closed_and_not_throw_on_has_next(
    ws: Store,
) -> None:
    ws.put(k(1), b"one", 1)
    ws.put(k(1), b"two", 2)
    ws.put(k(1), b"three", 3)
    with ws.it("fetch", k(1), 1, 3) as iterator:
        assert iterator.has_next()
        ws.inner.close()
        assert not iterator.has_next()
        with pytest.raises(StopIteration):
            next(iterator)


def test_should_fetch_and_iterate_over_exact_keys(build: Callable[..., Store]) -> None:
    size = retention = 0x7A00000000000000
    ws = build(retention=retention, size=size, interval=None)
    ws.put(b"a", b"0001", 0)
    ws.put(b"aa", b"0002", 0)
    ws.put(b"a", b"0003", 1)
    ws.put(b"aa", b"0004", 1)
    ws.put(b"a", b"0005", 0x7A00000000000000 - 1)
    assert ws.values(b"a", 0, MAX_LONG) == {b"0001", b"0003", b"0005"}
    assert set(ws.rows("fetch", b"a", b"a", 0, MAX_LONG)) == {
        windowed(b"a", b"0001", 0, size),
        windowed(b"a", b"0003", 1, size),
        windowed(b"a", b"0005", 0x7A00000000000000 - 1, size),
    }
    assert set(ws.rows("fetch", b"aa", b"aa", 0, MAX_LONG)) == {
        windowed(b"aa", b"0002", 0, size),
        windowed(b"aa", b"0004", 1, size),
    }


def test_delete_and_update(ws: Store) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"one v2", 0)
    assert next(ws.it("fetch", k(1), 0, 0)) == KeyValue(0, ws.inner.fetch(k(1), 0))
    assert ws.rows("fetch", k(1), 0, 0) == [KeyValue(0, b"one v2")]
    ws.put(k(1), None, 0)
    assert not ws.it("fetch", k(1), 0, 0).has_next()


def test_should_return_null_on_window_not_found(ws: Store) -> None:
    assert ws.inner.fetch(k(1), 0) is None


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda s: s.put(None, None, 0), id="put"),
        pytest.param(lambda s: s.fetch(None, 0), id="fetch_single"),
        pytest.param(lambda s: s.fetch(None, 1, 2), id="fetch_key"),
        pytest.param(lambda s: s.backward_fetch(None, 1, 2), id="backward_fetch_key"),
    ],
)
def test_should_throw_on_null_key(ws: Store, call: Callable[[Any], Any]) -> None:
    """Kafka's ``shouldThrowNullPointerExceptionOnPutNullKey`` / ``...OnGetNullKey``."""
    with pytest.raises(InvalidOptionError, match="key cannot be None"):
        call(ws.inner)


def test_should_fetch_and_iterate_over_exact_binary_keys(build: Callable[..., Store]) -> None:
    ws = build(dups=True)
    key1, key2, key3 = b"\x00", b"\x00\x00", b"\x00\x00\x00"
    for key, value, start in ((key1, b"1", 0), (key2, b"2", 0), (key3, b"3", 0), (key1, b"4", 1),
                              (key2, b"5", 1), (key3, b"6", 59999), (key1, b"7", 59999),
                              (key2, b"8", 59999), (key3, b"9", 59999)):
        ws.put(key, value, start)
    assert ws.values(key1, 0, MAX_LONG) == {b"1", b"4", b"7"}
    assert ws.values(key2, 0, MAX_LONG) == {b"2", b"5", b"8"}
    assert ws.values(key3, 0, MAX_LONG) == {b"3", b"6", b"9"}


def test_should_return_same_results_for_single_key_fetch_and_equal_key_range_fetch(
    ws: Store,
) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(2), b"two", 1)
    ws.put(k(2), b"two", 2)
    ws.put(k(3), b"three", 3)
    with ws.it("fetch", k(2), 0, 5) as single, ws.it("fetch", k(2), k(2), 0, 5) as ranged:
        assert next(single).value == next(ranged).value
        assert next(single).value == next(ranged).value
        assert not single.has_next()
        assert not ranged.has_next()


def test_should_not_throw_invalid_range_exception_with_negative_from_key(
    ws: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="stores.window.store"):
        with ws.it("fetch", k(-1), k(1), 0, 10) as iterator:
            assert not iterator.has_next()
    assert INVALID_KEY_RANGE_WARNING in caplog.messages


def test_should_log_and_measure_expired_records(
    ws: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="stores.window.store"):  # Kafka's WARN: INFO
        ws.put(k(1), b"initial record", 2 * RETENTION_PERIOD)
        ws.put(k(1), b"late record", 0)
        ws.put(k(1), b"another on-time record", RETENTION_PERIOD + 1)
    assert caplog.messages.count(EXPIRED_SEGMENT_WARNING) == 1
    assert ws.values(k(1), 0, 3 * RETENTION_PERIOD) == {
        b"initial record", b"another on-time record"
    }


def test_should_not_throw_exception_when_fetch_range_is_expired(ws: Store) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"two", 4 * RETENTION_PERIOD)
    with ws.it("fetch", k(1), 0, 10) as iterator:
        assert not iterator.has_next()


def test_window_iterator_peek(ws: Store) -> None:
    ws.put(k(1), b"one", 0)
    with ws.it("fetch_all", 0, 0) as iterator:
        assert iterator.has_next()
        next_key = iterator.peek_next_key()
        assert iterator.peek_next_key() == next_key == Windowed(k(1), Window(0, WINDOW_SIZE))
        assert iterator.peek_next_key() == next(iterator).key
        assert not iterator.has_next()
        with pytest.raises(StopIteration):
            iterator.peek_next_key()


def test_value_iterator_peek(ws: Store) -> None:
    ws.put(k(1), b"one", 0)
    with ws.it("fetch", k(1), 0, 10) as iterator:
        assert iterator.has_next()
        next_key = iterator.peek_next_key()
        assert iterator.peek_next_key() == next_key == 0
        assert iterator.peek_next_key() == next(iterator).key
        assert not iterator.has_next()


def test_should_not_throw_concurrent_modification_exception(ws: Store) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"two", WINDOW_SIZE * 10)
    with ws.it("all") as iterator:
        ws.put(k(1), b"three", WINDOW_SIZE * 20)
        ws.put(k(2), b"four", WINDOW_SIZE * 30)
        got = [KeyValue(kv.key, _plain(kv.value)) for kv in iterator]
    assert got == [
        windowed(1, b"one", 0),
        windowed(1, b"two", WINDOW_SIZE * 10),
        windowed(1, b"three", WINDOW_SIZE * 20),
        windowed(2, b"four", WINDOW_SIZE * 30),
    ]


def test_fetch_duplicates(build: Callable[..., Store]) -> None:
    ws = build(dups=True)
    for start, name in ((0, b"one"), (WINDOW_SIZE * 10, b"two"), (WINDOW_SIZE * 20, b"three")):
        ws.put(k(1), name, start)
        ws.put(k(1), name + b"-2", start)
    assert ws.rows("fetch", k(1), 0, WINDOW_SIZE * 10) == [
        KeyValue(0, b"one"),
        KeyValue(0, b"one-2"),
        KeyValue(WINDOW_SIZE * 10, b"two"),
        KeyValue(WINDOW_SIZE * 10, b"two-2"),
    ]


def test_closed_iterator_refuses_use(ws: Store) -> None:
    """Kafka's ``RocksDbIterator`` after ``close()``: ``InvalidStateStoreException``."""
    ws.put(k(1), b"one", 0)
    iterator = ws.it("fetch", k(1), 0, 10)
    iterator.close()
    iterator.close()  # idempotent
    with pytest.raises(StoreClosedError):
        iterator.has_next()
    with pytest.raises(StoreClosedError):
        next(iterator)


# -- AbstractRocksDBWindowStoreTest (RocksDBWindowStore) -----------------------------------------


def test_should_only_iterate_open_segments(ws: Store) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"two", SEGMENT_INTERVAL)
    ws.put(k(1), b"three", 2 * SEGMENT_INTERVAL)
    with ws.it("fetch", k(1), 0, 2 * SEGMENT_INTERVAL) as iterator:
        # roll to the next segment, which drops the first
        ws.put(k(1), b"four", 3 * SEGMENT_INTERVAL)
        assert [KeyValue(kv.key, _plain(kv.value)) for kv in iterator] == [
            KeyValue(SEGMENT_INTERVAL, b"two"),
            KeyValue(2 * SEGMENT_INTERVAL, b"three"),
        ]


def test_rolling(ws: Store) -> None:
    start, inc = SEGMENT_INTERVAL * 2, SEGMENT_INTERVAL // 2
    segments = ws.inner.segments

    def fetched(i: int) -> set[bytes]:
        t = start + inc * i
        return ws.values(k(i), t - WINDOW_SIZE, t + WINDOW_SIZE)

    ws.put(k(0), b"zero", start)
    assert segments.segment_ids() == [2]
    ws.put(k(1), b"one", start + inc)
    assert segments.segment_ids() == [2]
    ws.put(k(2), b"two", start + inc * 2)
    assert segments.segment_ids() == [2, 3]
    ws.put(k(4), b"four", start + inc * 4)
    assert segments.segment_ids() == [2, 3, 4]
    ws.put(k(5), b"five", start + inc * 5)
    assert segments.segment_ids() == [2, 3, 4]
    # actualFrom = stream time - retention + 1 = 150 001: "one" at 150 000 is out.
    assert [fetched(i) for i in range(6)] == [
        set(), set(), {b"two"}, set(), {b"four"}, {b"five"}
    ]
    ws.put(k(6), b"six", start + inc * 6)
    assert segments.segment_ids() == [3, 4, 5]
    assert [fetched(i) for i in range(7)] == [
        set(), set(), set(), set(), {b"four"}, {b"five"}, {b"six"}
    ]
    ws.put(k(7), b"seven", start + inc * 7)
    assert segments.segment_ids() == [3, 4, 5]
    assert [fetched(i) for i in range(8)] == [
        set(), set(), set(), set(), {b"four"}, {b"five"}, {b"six"}, {b"seven"}
    ]
    ws.put(k(8), b"eight", start + inc * 8)
    assert segments.segment_ids() == [4, 5, 6]
    assert [fetched(i) for i in range(9)] == [
        set(), set(), set(), set(), set(), {b"five"}, {b"six"}, {b"seven"}, {b"eight"}
    ]


def test_segment_maintenance(build: Callable[..., Store]) -> None:
    ws = build(dups=True)
    segments = ws.inner.segments

    def count(time_from: int, time_to: int) -> int:
        with ws.it("fetch", k(0), time_from, time_to) as iterator:
            return sum(1 for _ in iterator)

    ws.put(k(0), b"v", 0)
    assert segments.segment_ids() == [0]
    ws.put(k(0), b"v", SEGMENT_INTERVAL - 1)
    ws.put(k(0), b"v", SEGMENT_INTERVAL - 1)
    assert segments.segment_ids() == [0]
    ws.put(k(0), b"v", SEGMENT_INTERVAL)
    assert segments.segment_ids() == [0, 1]
    assert count(0, SEGMENT_INTERVAL * 4) == 4
    assert segments.segment_ids() == [0, 1]
    ws.put(k(0), b"v", SEGMENT_INTERVAL * 3)
    # actualFrom = 180 000 - 120 000 + 1: the record at 60 000 is out, its segment still live.
    assert count(0, SEGMENT_INTERVAL * 4) == 1
    assert segments.segment_ids() == [1, 3]
    ws.put(k(0), b"v", SEGMENT_INTERVAL * 5)
    assert count(SEGMENT_INTERVAL * 4, SEGMENT_INTERVAL * 10) == 1
    assert segments.segment_ids() == [3, 5]


def test_initial_loading(build: Callable[..., Store], tmp_path: Path) -> None:
    """Kafka's version seeds segment directories; ours reopens a store holding segments 0..6
    and checks the first put after reopening expires the old ones."""
    ws = build(retention=7 * SEGMENT_INTERVAL)
    for seg in range(7):
        ws.put(k(0), b"v", seg * SEGMENT_INTERVAL)
    assert ws.inner.segments.segment_ids() == list(range(7))
    ws.inner.close()
    reopened = Store(type(ws.inner), ws._wrap, tmp_path / "store0")
    try:
        reopened.put(k(1), b"v", 6 * SEGMENT_INTERVAL)
        assert reopened.inner.segments.segment_ids() == [4, 5, 6]
        assert reopened.rows("fetch", k(0), 0, 1_000_000) == [
            KeyValue(5 * SEGMENT_INTERVAL, b"v"), KeyValue(6 * SEGMENT_INTERVAL, b"v")
        ]
        assert reopened.inner.segments.segment_ids() == [4, 5, 6]
    finally:
        reopened.inner.close()


# -- WindowStoreFetchTest ------------------------------------------------------------------------


@pytest.mark.parametrize("forward", [True, False])
def test_store_config(build: Callable[..., Store], forward: bool) -> None:
    """Counts of five keys in two windows (the topology's result, put directly)."""
    size, data = 500, 5
    ws = build(retention=10_000, size=size, interval=None)
    expected = []
    for i in range(data):
        key = b"key-%d" % (i * 2)
        start = 0 if i < data // 2 else size
        ws.put(key, struct.pack(">q", 2), start)
        expected.append(windowed(key, struct.pack(">q", 2), start, size))
    if not forward:
        expected.reverse()
    scan = "fetch_all" if forward else "backward_fetch_all"
    ranged = "fetch" if forward else "backward_fetch"
    assert ws.rows(scan, 0, MAX_LONG) == expected
    assert ws.rows(ranged, None, None, 0, MAX_LONG) == expected

    def in_range(lo: bytes | None, hi: bytes | None) -> list[KeyValue]:
        return [
            kv for kv in ws.rows(scan, 0, MAX_LONG)
            if (lo is None or kv.key.key >= lo) and (hi is None or kv.key.key <= hi)
        ]

    for lo, hi in ((b"key-2", b"key-6"), (None, b"key-4"), (b"key-4", None),
                   (None, b"key-7"), (b"key-1", None)):
        assert ws.rows(ranged, lo, hi, 0, MAX_LONG) == in_range(lo, hi), (lo, hi)


# -- KIP-1271: TimestampedWindowStoreWithHeadersTest (store-level) -------------------------------

HEADERS1 = (("source", b"test"), ("version", b"1.0"))
HEADERS2 = (("source", b"test"), ("version", b"2.0"))


def _checker_put(
    store: TimestampedWindowStoreWithHeaders, key: int, value: bytes | None, ts: int,
    headers: Any, window: int,
) -> None:
    # The processor writes ValueTimestampHeaders.make(value, ts, headers): None deletes.
    store.put(k(key), ValueTimestampHeaders.make(value, ts, headers), window - window % 100)


def test_should_put_fetch_and_delete(tmp_path: Path) -> None:
    with TimestampedWindowStoreWithHeaders(tmp_path / "s", 1000, 100) as store:
        base = 10_000
        for key, value in ((1, b"a0"), (2, b"b0"), (3, None)):
            _checker_put(store, key, value, base, HEADERS1, base)
        for key, value in ((1, b"a50"), (2, None), (3, b"c50")):
            _checker_put(store, key, value, base + 50, HEADERS2, base + 50)
        for key, value in ((1, b"a100"), (2, b"b100"), (3, None)):
            _checker_put(store, key, value, base + 100, (), base + 100)
        assert store.fetch(k(1), base) == ValueTimestampHeaders(b"a50", base + 50, HEADERS2)
        assert store.fetch(k(2), base) is None
        assert store.fetch(k(3), base) == ValueTimestampHeaders(b"c50", base + 50, HEADERS2)
        assert store.fetch(k(1), base + 100) == ValueTimestampHeaders(b"a100", base + 100, ())
        assert store.fetch(k(3), base + 100) is None
        assert [kv.key for kv in store.fetch(k(1), base, base + 100)] == [base, base + 100]


def test_should_manual_upgrade_from_timestamped_to_headers(tmp_path: Path) -> None:
    base = 10_000
    with TimestampedWindowStore(tmp_path / "s", 1000, 100) as legacy:
        legacy.put(k(1), ValueAndTimestamp(b"a0", base), base)
        legacy.put(k(2), ValueAndTimestamp(b"b0", base), base)
        legacy.put(k(1), ValueAndTimestamp(b"a50", base + 50), base)
        legacy.put(k(2), None, base)
        legacy.put(k(1), ValueAndTimestamp(b"a100", base + 100), base + 100)
    with TimestampedWindowStoreWithHeaders(tmp_path / "s", 1000, 100) as store:
        # Legacy values come back with empty headers and their timestamps.
        assert store.fetch(k(1), base) == ValueTimestampHeaders(b"a50", base + 50, ())
        assert store.fetch(k(2), base) is None
        upgraded = (("upgraded", b"true"),)
        store.put(k(1), ValueTimestampHeaders(b"a200", base + 200, upgraded), base + 200)
        assert [(kv.key, kv.value) for kv in store.fetch(k(1), base, base + 200)] == [
            (base, ValueTimestampHeaders(b"a50", base + 50, ())),
            (base + 100, ValueTimestampHeaders(b"a100", base + 100, ())),
            (base + 200, ValueTimestampHeaders(b"a200", base + 200, upgraded)),
        ]
        assert store.observed_stream_time == base + 200
