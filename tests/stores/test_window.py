"""Window stores: a contract suite over all four classes, Kafka's scenarios, golden bytes and
lazy migration between the formats.

The scenarios are those of Kafka's ``AbstractWindowBytesStoreTest``, ``RocksDBWindowStoreTest``
and ``WindowStoreFetchTest``, with Kafka's constants (window size 3, segment interval 60 000,
retention two segments) and Integer keys serialized as 4-byte big-endian ints.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError, StoreClosedError
from stores.records import (
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Windowed,
)
from stores.segments.store import INVALID_KEY_RANGE_WARNING, SEGMENTS_META_CF, segment_prefix
from stores.window.format import (
    TIMESTAMPED_HEADERS_CF,
    WINDOW_HEADERS_CF,
    decode_window_key,
    encode_window_key,
    lower_range,
    time_window_for_size,
    upper_range,
)
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
    default_segment_interval_ms,
)

WINDOW_SIZE = 3
SEGMENT_INTERVAL = 60_000
RETENTION = 2 * SEGMENT_INTERVAL
START = SEGMENT_INTERVAL - 4  # Kafka's defaultStartTime: the batch straddles two segments
MAX_LONG = 2**63 - 1
HEADERS = (("source", b"test"), ("nil", None))


def k(i: int) -> bytes:
    """Kafka's IntegerSerializer."""
    return struct.pack(">i", i)


# -- the adapter: one contract, four value types ----------------------------------------------


@dataclass
class Adapter:
    """Wraps bytes into a store's value type and back, so one suite drives every class."""

    cls: type
    wrap: Callable[[bytes, int], Any]
    unwrap: Callable[[Any], bytes]
    store: Any = None

    def open(self, path: Path, retention: int = RETENTION, size: int = WINDOW_SIZE,
             dups: bool = False, interval: int | None = SEGMENT_INTERVAL) -> Adapter:
        self.store = self.cls(path, retention, size, dups, interval)
        return self

    def put(self, key: bytes, value: bytes | None, start: int) -> None:
        self.store.put(key, None if value is None else self.wrap(value, start), start)

    def get(self, key: bytes, time: int) -> bytes | None:
        found = self.store.fetch(key, time)
        return None if found is None else self.unwrap(found)

    def values(self, it: Iterator[KeyValue]) -> list[Any]:
        return [KeyValue(kv.key, self.unwrap(kv.value)) for kv in it]

    def fetch(self, *args: Any) -> list[Any]:
        return self.values(self.store.fetch(*args))

    def backward_fetch(self, *args: Any) -> list[Any]:
        return self.values(self.store.backward_fetch(*args))

    def fetch_all(self, *args: Any) -> list[Any]:
        return self.values(self.store.fetch_all(*args))

    def backward_fetch_all(self, *args: Any) -> list[Any]:
        return self.values(self.store.backward_fetch_all(*args))

    def all(self) -> list[Any]:
        return self.values(self.store.all())

    def backward_all(self) -> list[Any]:
        return self.values(self.store.backward_all())


ADAPTERS: dict[str, Callable[[], Adapter]] = {
    "plain": lambda: Adapter(WindowStore, lambda v, t: v, lambda v: v),
    "timestamped": lambda: Adapter(
        TimestampedWindowStore, lambda v, t: ValueAndTimestamp(v, t + 7), lambda v: v.value
    ),
    "headers": lambda: Adapter(
        WindowStoreWithHeaders, lambda v, t: ValueAndHeaders(v, HEADERS), lambda v: v.value
    ),
    "timestamped_headers": lambda: Adapter(
        TimestampedWindowStoreWithHeaders,
        lambda v, t: ValueTimestampHeaders(v, t + 7, HEADERS),
        lambda v: v.value,
    ),
}


@pytest.fixture(params=list(ADAPTERS))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Adapter]]:
    opened: list[Adapter] = []

    def factory(**kwargs: Any) -> Adapter:
        adapter = ADAPTERS[request.param]().open(tmp_path / f"db{len(opened)}", **kwargs)
        opened.append(adapter)
        return adapter

    yield factory
    for adapter in opened:
        adapter.store.close()


@pytest.fixture
def ws(make: Callable[..., Adapter]) -> Adapter:
    return make()


def pair(key: int | bytes, value: bytes, start: int, size: int = WINDOW_SIZE) -> KeyValue:
    raw = k(key) if isinstance(key, int) else key
    return KeyValue(Windowed(raw, time_window_for_size(start, size)), value)


ZERO = pair(0, b"zero", START)
ONE = pair(1, b"one", START + 1)
TWO = pair(2, b"two", START + 2)
THREE = pair(3, b"three", START + 2)
FOUR = pair(4, b"four", START + 4)
FIVE = pair(5, b"five", START + 5)


def put_first_batch(ws: Adapter) -> None:
    for kv in (ZERO, ONE, TWO, THREE, FOUR, FIVE):
        ws.put(kv.key.key, kv.value, kv.key.start)


def put_second_batch(ws: Adapter) -> None:
    for i in range(1, 7):
        ws.put(k(2), b"two+%d" % i, START + 2 + i)


def values(rows: list[Any]) -> set[bytes]:
    return {kv.value for kv in rows}


# -- AbstractWindowBytesStoreTest ----------------------------------------------------------------


def test_range_and_single_point_fetch(ws: Adapter) -> None:
    put_first_batch(ws)
    assert values(ws.fetch(k(0), START - WINDOW_SIZE, START + WINDOW_SIZE)) == {b"zero"}
    put_second_batch(ws)
    for i in range(1, 7):
        assert ws.get(k(2), START + 2 + i) == b"two+%d" % i
    expected_by_offset = {
        -2: set(),
        -1: {b"two"},
        0: {b"two", b"two+1"},
        4: {b"two", b"two+1", b"two+2", b"two+3", b"two+4", b"two+5"},
        6: {b"two+1", b"two+2", b"two+3", b"two+4", b"two+5", b"two+6"},
        11: {b"two+6"},
        12: set(),
    }
    for offset, expected in expected_by_offset.items():
        t = START + offset
        assert values(ws.fetch(k(2), t - WINDOW_SIZE, t + WINDOW_SIZE)) == expected, offset


def test_put_and_fetch_before_and_after(ws: Adapter) -> None:
    put_first_batch(ws)
    put_second_batch(ws)
    assert values(ws.fetch(k(2), START + 1 - WINDOW_SIZE, START + 1)) == set()
    assert values(ws.fetch(k(2), START + 5 - WINDOW_SIZE, START + 5)) == {
        b"two", b"two+1", b"two+2", b"two+3"}
    assert values(ws.fetch(k(2), START + 3, START + 3 + WINDOW_SIZE)) == {
        b"two+1", b"two+2", b"two+3", b"two+4"}
    assert values(ws.fetch(k(3), START + 3, START + 3 + WINDOW_SIZE)) == set()


def test_get_all_in_order(ws: Adapter) -> None:
    put_first_batch(ws)
    assert ws.all() == [ZERO, ONE, TWO, THREE, FOUR, FIVE]
    assert ws.backward_all() == [FIVE, FOUR, THREE, TWO, ONE, ZERO]


def test_get_all_non_deleted_records(ws: Adapter) -> None:
    for i in range(5):
        ws.put(k(i), b"v%d" % i, START + i)
    ws.put(k(1), None, START + 1)
    ws.put(k(3), None, START + 3)
    assert ws.all() == [pair(0, b"v0", START), pair(2, b"v2", START + 2),
                        pair(4, b"v4", START + 4)]


def test_get_all_returns_timestamp_ordered_records(ws: Adapter) -> None:
    for i in (4, 0, 2, 3, 1):
        ws.put(k(i), b"v%d" % i, START + i)
    assert [kv.key.start for kv in ws.all()] == [START + i for i in range(5)]


def test_fetch_all_in_time_range(ws: Adapter) -> None:
    put_first_batch(ws)
    assert ws.fetch_all(START + 1, START + 4) == [ONE, TWO, THREE, FOUR]
    assert ws.fetch_all(START, START + 3) == [ZERO, ONE, TWO, THREE]
    assert ws.fetch_all(START + 1, START + 5) == [ONE, TWO, THREE, FOUR, FIVE]
    assert ws.backward_fetch_all(START + 1, START + 4) == [FOUR, THREE, TWO, ONE]
    assert ws.backward_fetch_all(START, START + 3) == [THREE, TWO, ONE, ZERO]


def test_fetch_key_range(ws: Adapter) -> None:
    put_first_batch(ws)
    lo, hi = START - WINDOW_SIZE, START + WINDOW_SIZE
    assert ws.fetch(k(0), k(1), lo, hi) == [ZERO, ONE]
    assert ws.fetch(k(1), k(1), lo, hi) == [ONE]
    assert ws.fetch(k(1), k(3), lo, hi) == [ONE, TWO, THREE]
    assert ws.fetch(k(0), k(5), lo, hi) == [ZERO, ONE, TWO, THREE]
    assert ws.fetch(k(0), k(5), lo, hi + 5) == [ZERO, ONE, TWO, THREE, FOUR, FIVE]
    assert ws.fetch(k(0), k(5), START + 2, hi + 5) == [TWO, THREE, FOUR, FIVE]
    assert ws.fetch(k(4), k(5), START + 2, START + WINDOW_SIZE) == []
    assert ws.fetch(k(0), k(3), START + 3, START + WINDOW_SIZE + 5) == []


def test_backward_fetch_key_range(ws: Adapter) -> None:
    put_first_batch(ws)
    lo, hi = START - WINDOW_SIZE, START + WINDOW_SIZE
    assert ws.backward_fetch(k(0), k(1), lo, hi) == [ONE, ZERO]
    assert ws.backward_fetch(k(1), k(3), lo, hi) == [THREE, TWO, ONE]
    assert ws.backward_fetch(k(0), k(5), lo, hi + 5) == [FIVE, FOUR, THREE, TWO, ONE, ZERO]
    assert ws.backward_fetch(k(0), k(5), START + 2, hi + 5) == [FIVE, FOUR, THREE, TWO]
    assert ws.backward_fetch(k(4), k(5), START + 2, START + WINDOW_SIZE) == []


def test_open_key_bounds(ws: Adapter) -> None:
    put_first_batch(ws)
    lo, hi = 0, START + 10
    assert ws.fetch(None, k(1), lo, hi) == [ZERO, ONE]
    assert ws.fetch(k(4), None, lo, hi) == [FOUR, FIVE]
    assert ws.fetch(None, None, lo, hi) == ws.fetch_all(lo, hi)
    assert ws.backward_fetch(None, k(1), lo, hi) == [ONE, ZERO]


def test_put_same_key_timestamp_with_duplicates(make: Callable[..., Adapter]) -> None:
    ws = make(dups=True)
    ws.put(k(0), b"zero", START)
    assert values(ws.fetch(k(0), START - WINDOW_SIZE, START + WINDOW_SIZE)) == {b"zero"}
    for v in (b"zero", b"zero+", b"zero++"):
        ws.put(k(0), v, START)
    rows = ws.fetch(k(0), START - WINDOW_SIZE, START + WINDOW_SIZE)
    assert [kv.value for kv in rows] == [b"zero", b"zero", b"zero+", b"zero++"]
    assert values(ws.fetch(k(0), START + 4 - WINDOW_SIZE, START + 4 + WINDOW_SIZE)) == set()
    # Kafka's RocksDBWindowStore.fetch(key, time) reads the current sequence number's row:
    # the last put's value, and None once another window was put after it.
    assert ws.get(k(0), START) == b"zero++"
    ws.put(k(1), b"one", START)
    assert ws.get(k(0), START) is None


def test_fetch_duplicates_in_order(make: Callable[..., Adapter]) -> None:
    ws = make(dups=True)
    t = 0
    for name in (b"one", b"two", b"three"):
        ws.put(k(1), name, t)
        ws.put(k(1), name + b"-2", t)
        t += WINDOW_SIZE * 10
    assert ws.fetch(k(1), 0, WINDOW_SIZE * 10) == [
        KeyValue(0, b"one"), KeyValue(0, b"one-2"),
        KeyValue(30, b"two"), KeyValue(30, b"two-2"),
    ]
    assert [kv.value for kv in ws.backward_fetch(k(1), 0, WINDOW_SIZE * 10)] == [
        b"two-2", b"two", b"one-2", b"one"]


def test_duplicates_ignore_null_and_take_sequence_numbers(make: Callable[..., Adapter]) -> None:
    ws = make(dups=True)
    ws.put(k(1), b"a", 5)
    ws.put(k(1), None, 5)  # Kafka: delete is not supported for duplicates
    ws.put(k(1), b"b", 5)
    assert [kv.value for kv in ws.fetch(k(1), 0, 10)] == [b"a", b"b"]
    cf = ws.store.segments.data_cf
    seqs = [decode_window_key(key[8:])[2] for key, _ in ws.store.wrapped.range(cf=cf)]
    assert seqs == [1, 2]


def test_fetch_exact_keys_with_huge_window(make: Callable[..., Adapter]) -> None:
    size = 0x7A00000000000000
    ws = make(retention=size, size=size, interval=None)
    ws.put(b"a", b"0001", 0)
    ws.put(b"aa", b"0002", 0)
    ws.put(b"a", b"0003", 1)
    ws.put(b"aa", b"0004", 1)
    ws.put(b"a", b"0005", size - 1)
    assert values(ws.fetch(b"a", 0, MAX_LONG)) == {b"0001", b"0003", b"0005"}
    assert set(ws.fetch(b"a", b"a", 0, MAX_LONG)) == {
        pair(b"a", b"0001", 0, size), pair(b"a", b"0003", 1, size),
        pair(b"a", b"0005", size - 1, size)}
    assert set(ws.fetch(b"aa", b"aa", 0, MAX_LONG)) == {
        pair(b"aa", b"0002", 0, size), pair(b"aa", b"0004", 1, size)}
    # Windowed end = start + size, capped at Long.MAX_VALUE.
    assert ws.fetch(b"a", b"a", size - 1, MAX_LONG)[0].key.end == MAX_LONG


def test_fetch_exact_binary_keys(make: Callable[..., Adapter]) -> None:
    ws = make(dups=True)
    key1, key2, key3 = b"\x00", b"\x00\x00", b"\x00\x00\x00"
    for key, v, t in [(key1, b"1", 0), (key2, b"2", 0), (key3, b"3", 0), (key1, b"4", 1),
                      (key2, b"5", 1), (key3, b"6", 59999), (key1, b"7", 59999),
                      (key2, b"8", 59999), (key3, b"9", 59999)]:
        ws.put(key, v, t)
    assert values(ws.fetch(key1, 0, MAX_LONG)) == {b"1", b"4", b"7"}
    assert values(ws.fetch(key2, 0, MAX_LONG)) == {b"2", b"5", b"8"}
    assert values(ws.fetch(key3, 0, MAX_LONG)) == {b"3", b"6", b"9"}
    assert {kv.key.key for kv in ws.fetch(key2, key2, 0, MAX_LONG)} == {key2}
    assert {kv.key.key for kv in ws.fetch(key1, key2, 0, MAX_LONG)} == {key1, key2}


def test_key_range_over_keys_of_different_lengths(ws: Adapter) -> None:
    # Shorter keys that are prefixes of the bounds, and longer keys that extend them.
    keys = [b"a", b"a\x00", b"a\x00\x00", b"a\x01", b"ab", b"b", b"\x00", b"a\xff"]
    for i, key in enumerate(keys):
        ws.put(key, b"v%d" % i, 100 + i)
    # Kafka's accident (WindowKeySchema.upperRange): the bound 61 00 + [1000][MAX_INT] sorts
    # below b"a" at 100 (61 + [100][0]), so Kafka never reads it, though b"a" is in range.
    got = {kv.key.key for kv in ws.fetch(b"a", b"a\x00", 0, 1000)}
    assert got == {b"a\x00"}
    # With a time bound of 2**56 or more the bound keeps only b"a": b"a" is read.
    got = {kv.key.key for kv in ws.fetch(b"a", b"a\x00", 0, MAX_LONG)}
    assert got == {b"a", b"a\x00"}
    got = {kv.key.key for kv in ws.fetch(b"a\x00", b"ab", 0, 1000)}
    assert got == {b"a\x00", b"a\x00\x00", b"a\x01", b"ab"}
    assert [kv.value for kv in ws.fetch(b"a", 0, 1000)] == [b"v0"]


@pytest.mark.parametrize("dups", [False, True])
def test_key_range_reads_what_kafka_s_bounds_reach(make: Callable[..., Adapter], dups: bool) -> None:
    """Kafka's ``AbstractRocksDBSegmentedBytesStore.fetch(keyFrom, keyTo, from, to)`` scans each
    segment between ``WindowKeySchema.lowerRange(keyFrom)`` and ``upperRange(keyTo, to)``
    (``OrderedBytes``), then filters with ``hasNextCondition``: a row in range that sorts above
    the bound is never read. ``upperRange(00, 1)`` = ``00 + [1][MAX_INT]`` sorts below b"" at 1
    (``[1][seq]``); ``upperRange(00, 60001)`` = ``00 + [60001][MAX_INT]`` lies above b"" at 0
    and 1 but below b"" at 60000 and 60001 (``[00 00 00 00 00 00 ea 6x]``). Checked against
    Kafka 4.3.1 in ``tests/kafka/test_window_ranges_kafka.py``."""
    ws = make(size=10_000, dups=dups)
    for start in (0, 1, 60_000, 60_001):
        ws.put(b"", b"%d" % start, start)

    def starts(rows: list[Any]) -> list[int]:
        return [kv.key.start for kv in rows]

    assert starts(ws.fetch(None, b"\x00", 0, 1)) == [0]
    assert starts(ws.backward_fetch(None, b"\x00", 0, 1)) == [0]
    assert starts(ws.fetch(b"", b"\x00", 0, 1)) == [0]
    assert starts(ws.fetch(None, b"\x00", 0, 60_001)) == [0, 1]
    assert starts(ws.backward_fetch(None, b"\x00", 0, 60_001)) == [1, 0]
    assert starts(ws.fetch(None, b"", 0, 60_001)) == [0, 1, 60_000, 60_001]
    assert starts(ws.fetch(None, b"\x01", 0, 60_001)) == [0, 1, 60_000, 60_001]
    assert starts(ws.fetch(None, None, 0, 60_001)) == [0, 1, 60_000, 60_001]
    assert [kv.key for kv in ws.fetch(b"", 0, 60_001)] == [0, 1, 60_000, 60_001]


def test_delete_and_update(ws: Adapter) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"one v2", 0)
    assert ws.fetch(k(1), 0, 0) == [KeyValue(0, b"one v2")]
    ws.put(k(1), None, 0)
    assert ws.fetch(k(1), 0, 0) == []
    assert ws.get(k(1), 0) is None


def test_return_null_on_window_not_found(ws: Adapter) -> None:
    assert ws.get(k(1), 0) is None


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.put(None, None, 0),
        lambda s: s.fetch(None, 1, 2),
        lambda s: s.fetch(None, 1),
        lambda s: s.put("text", None, 0),
        lambda s: s.put(k(1), None, -1),
        lambda s: s.fetch(k(1), "1", 2),
        lambda s: s.fetch_all(1.5, 2),
    ],
)
def test_bad_arguments(ws: Adapter, call: Callable[[Any], Any]) -> None:
    with pytest.raises(InvalidOptionError):
        call(ws.store)


def test_wrong_value_type_is_refused(ws: Adapter) -> None:
    with pytest.raises(InvalidOptionError, match="value must be"):
        ws.store.put(k(1), 42, 0)


def test_wrong_arity(ws: Adapter) -> None:
    with pytest.raises(TypeError):
        ws.store.fetch(k(1))
    with pytest.raises(TypeError):
        ws.store.backward_fetch(k(1), 0)
    with pytest.raises(TypeError):
        ws.store.fetch(k(1), k(2), 0, 1, 2)


def test_keyword_arguments(ws: Adapter) -> None:
    ws.put(k(1), b"x", 10)
    assert ws.unwrap(ws.store.fetch(key=k(1), time=10)) == b"x"
    assert len(list(ws.store.fetch(k(1), time_from=0, time_to=20))) == 1
    assert len(list(ws.store.fetch(key_from=None, key_to=k(2), time_from=0, time_to=20))) == 1


def test_same_results_single_key_and_equal_key_range(ws: Adapter) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(2), b"two", 1)
    ws.put(k(2), b"two", 2)
    ws.put(k(3), b"three", 3)
    single = [kv.value for kv in ws.fetch(k(2), 0, 5)]
    ranged = [kv.value for kv in ws.fetch(k(2), k(2), 0, 5)]
    assert single == ranged == [b"two", b"two"]


def test_inverted_key_range_logs_and_is_empty(
    ws: Adapter, caplog: pytest.LogCaptureFixture
) -> None:
    ws.put(k(1), b"one", 0)
    with caplog.at_level(logging.WARNING, logger="stores.window.store"):
        assert ws.fetch(k(-1), k(1), 0, 10) == []  # -1 serializes above 1
        assert ws.backward_fetch(k(2), k(1), 0, 10) == []
    assert caplog.messages.count(INVALID_KEY_RANGE_WARNING) == 2


def test_inverted_time_range_is_empty(ws: Adapter) -> None:
    ws.put(k(1), b"one", 5)
    assert ws.fetch(k(1), 6, 4) == []
    assert ws.fetch(k(0), k(2), 6, 4) == []
    assert ws.fetch_all(6, 4) == []
    assert ws.backward_fetch_all(6, 4) == []


def test_late_record_for_expired_segment_is_dropped(ws: Adapter) -> None:
    ws.put(k(1), b"initial record", 2 * RETENTION)
    ws.put(k(1), b"late record", 0)
    ws.put(k(1), b"another on-time record", RETENTION + 1)
    assert [kv.value for kv in ws.fetch(k(1), 0, 3 * RETENTION)] == [
        b"another on-time record", b"initial record"]
    assert ws.store.observed_stream_time == 2 * RETENTION


def test_fetch_range_that_is_expired(ws: Adapter) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"two", 4 * RETENTION)
    assert ws.fetch(k(1), 0, 10) == []
    assert ws.get(k(1), 0) is None


def test_reads_ignore_windows_older_than_retention_in_live_segments(ws: Adapter) -> None:
    ws.put(k(1), b"old", 60_000)
    ws.put(k(1), b"edge", 30_001)
    ws.put(k(2), b"new", 150_000)
    # Stream time 150 000: readable from 150 000 - 120 000 + 1 (Kafka's actualFrom).
    assert ws.fetch(k(1), 0, MAX_LONG) == [KeyValue(30_001, b"edge"), KeyValue(60_000, b"old")]
    ws.put(k(1), b"too-old", 30_000)  # segment 0 is live: written, but never readable
    assert ws.get(k(1), 30_000) is None
    assert ws.fetch(k(1), 0, 30_000) == []
    assert ws.store.segments.segment_ids() == [0, 1, 2]
    ws.put(k(3), b"x", 180_000)  # segment 0 expires; 60 000 drops below actualFrom
    assert ws.store.segments.segment_ids() == [1, 2, 3]
    assert ws.fetch(k(1), 0, MAX_LONG) == []
    assert ws.get(k(1), 60_000) is None
    assert ws.all() == [pair(2, b"new", 150_000), pair(3, b"x", 180_000)]
    assert ws.fetch_all(0, MAX_LONG) == ws.all()
    ws.put(k(4), b"late", 1_000)  # its segment is gone: dropped
    assert ws.store.segments.segment_ids() == [1, 2, 3]


def test_iterator_sees_puts_made_before_first_next(ws: Adapter) -> None:
    ws.put(k(1), b"one", 0)
    ws.put(k(1), b"two", 30)
    it = ws.store.all()
    ws.put(k(1), b"three", 60)
    ws.put(k(2), b"four", 90)
    assert [ws.unwrap(kv.value) for kv in it] == [b"one", b"two", b"three", b"four"]


def test_open_iterators_stop_when_store_closes(ws: Adapter) -> None:
    for i, v in enumerate((b"one", b"two", b"three")):
        ws.put(k(1), v, i + 1)
    it = ws.store.fetch(k(1), 1, 3)
    assert next(it).key == 1
    ws.store.close()
    assert list(it) == []
    with pytest.raises(StoreClosedError):
        ws.store.put(k(1), None, 1)
    with pytest.raises(StoreClosedError):
        ws.store.all()


# -- RocksDBWindowStoreTest: segments roll and expire whole ------------------------------------


def test_rolling_segments(ws: Adapter) -> None:
    start, inc = SEGMENT_INTERVAL * 2, SEGMENT_INTERVAL // 2
    seg = ws.store.segments

    def fetch(i: int, at: int) -> set[bytes]:
        return values(ws.fetch(k(i), at - WINDOW_SIZE, at + WINDOW_SIZE))

    ws.put(k(0), b"zero", start)
    assert seg.segment_ids() == [2]
    ws.put(k(1), b"one", start + inc)
    assert seg.segment_ids() == [2]
    ws.put(k(2), b"two", start + inc * 2)
    assert seg.segment_ids() == [2, 3]
    ws.put(k(4), b"four", start + inc * 4)
    ws.put(k(5), b"five", start + inc * 5)
    assert seg.segment_ids() == [2, 3, 4]
    # Stream time 270 000: segment 2 is live, but only windows from 150 001 are readable.
    assert fetch(0, start) == set()
    assert fetch(1, start + inc) == set()
    assert fetch(2, start + inc * 2) == {b"two"}
    assert fetch(4, start + inc * 4) == {b"four"}
    ws.put(k(6), b"six", start + inc * 6)
    assert seg.segment_ids() == [3, 4, 5]
    assert fetch(0, start) == set()
    assert fetch(1, start + inc) == set()
    assert fetch(2, start + inc * 2) == set()  # in a live segment, but before actualFrom
    assert fetch(4, start + inc * 4) == {b"four"}
    assert fetch(6, start + inc * 6) == {b"six"}
    ws.put(k(8), b"eight", start + inc * 8)
    assert seg.segment_ids() == [4, 5, 6]
    assert fetch(5, start + inc * 5) == {b"five"}
    assert fetch(8, start + inc * 8) == {b"eight"}


def test_segment_maintenance_drops_whole_segments(ws: Adapter) -> None:
    seg = ws.store.segments
    for t in range(0, 5 * SEGMENT_INTERVAL, SEGMENT_INTERVAL // 4):
        ws.put(k(t % 7), b"v", t)
    # Stream time 285 000: live from segment id (285 000 - 120 000) // 60 000 = 2.
    assert seg.segment_ids() == [2, 3, 4]
    assert all(kv.key.start >= 285_000 - RETENTION + 1 for kv in ws.all())
    data_cf = seg.data_cf
    raw = list(ws.store.wrapped.range(None, segment_prefix(2), data_cf))
    assert raw == []


def test_stream_time_and_data_survive_reopen(make: Callable[..., Adapter]) -> None:
    ws = make(dups=True)
    path = Path(ws.store.wrapped.path)
    ws.put(k(1), b"a", 100)
    ws.put(k(1), b"b", 100)
    ws.store.close()
    again = ADAPTERS_BY_CLASS[ws.cls]().open(path, dups=True)
    try:
        assert again.store.observed_stream_time == 100
        again.put(k(1), b"c", 100)  # continues the sequence: no overwrite of a or b
        assert [kv.value for kv in again.fetch(k(1), 0, 200)] == [b"a", b"b", b"c"]
    finally:
        again.store.close()


ADAPTERS_BY_CLASS = {factory().cls: factory for factory in ADAPTERS.values()}


# -- configuration (Kafka's Stores.persistentWindowStore checks) -------------------------------


def test_default_segment_interval() -> None:
    assert default_segment_interval_ms(RETENTION) == SEGMENT_INTERVAL
    assert default_segment_interval_ms(1000) == 60_000
    assert default_segment_interval_ms(10 * 60_000) == 5 * 60_000


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((-1, 0), "retention_ms"),
        ((10, -1), "window_size_ms"),
        ((10, 11), "window_size_ms"),
        ((10, 5, False, 0), "segment_interval_ms"),
        ((10, 5, "yes"), "retain_duplicates"),
        (("10", 5), "retention_ms"),
    ],
)
def test_invalid_configuration(tmp_path: Path, args: tuple[Any, ...], named: str) -> None:
    with pytest.raises(InvalidOptionError, match=named):
        WindowStore(tmp_path / "db", *args)


def test_properties(make: Callable[..., Adapter]) -> None:
    store = make(retention=1000, size=10, dups=True, interval=None).store
    assert (store.retention_ms, store.window_size_ms, store.retain_duplicates) == (1000, 10, True)
    assert store.segment_interval_ms == 60_000
    assert store.observed_stream_time == -1
    assert not store.closed


# -- over(): the catalog owns the bytes store and commits ----------------------------------------


@pytest.mark.parametrize("cls", list(ADAPTERS_BY_CLASS))
def test_over_an_uncommitted_bytes_store(tmp_path: Path, cls: Any) -> None:
    adapter = ADAPTERS_BY_CLASS[cls]()
    db = RocksDBBytesStore(tmp_path / "db", cls.column_families(), autocommit=False)
    store = cls.over(db, RETENTION, WINDOW_SIZE)
    store.put(k(1), adapter.wrap(b"x", 5), 5)
    assert db.has_uncommitted
    assert adapter.unwrap(store.fetch(k(1), 5)) == b"x"  # reads see staged writes
    db.rollback()
    assert store.fetch(k(1), 5) is None
    assert store.observed_stream_time == -1
    store.put(k(1), adapter.wrap(b"y", 5), 5)
    db.commit()
    store.close()  # does not close a bytes store it does not own
    assert not db.closed
    db.close()
    with cls(tmp_path / "db", RETENTION, WINDOW_SIZE) as reopened:
        assert adapter.unwrap(reopened.fetch(k(1), 5)) == b"y"


def test_the_constructor_takes_a_path_or_an_open_db(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "db", WindowStore.column_families())
    with WindowStore(None, RETENTION, WINDOW_SIZE, db=db) as store:
        store.put(k(1), b"x", 5)
    assert not db.closed  # not owned: its owner closes it
    db.close()
    with WindowStore(tmp_path / "db", RETENTION, WINDOW_SIZE) as reopened:
        assert reopened.fetch(k(1), 5) == b"x"
    for path, open_db in ((None, None), (tmp_path / "db", db)):
        with pytest.raises(TypeError, match="a path or db="):
            WindowStore(path, RETENTION, WINDOW_SIZE, db=open_db)


def test_column_families() -> None:
    assert WindowStore.column_families() == ("default", SEGMENTS_META_CF)
    assert TimestampedWindowStore.column_families() == (
        "keyValueWithTimestamp", "default", SEGMENTS_META_CF)
    assert WindowStoreWithHeaders.column_families() == (
        "windowKeyValueWithHeaders", "default", SEGMENTS_META_CF)
    assert TimestampedWindowStoreWithHeaders.column_families() == (
        "keyValueWithTimestampAndHeaders", "keyValueWithTimestamp", "default", SEGMENTS_META_CF)


# -- golden bytes -------------------------------------------------------------------------------


def test_golden_key_layout() -> None:
    key = encode_window_key(b"\x00\x00\x00\x07", 60_000, 3)
    assert key.hex() == "00000007" "000000000000ea60" "00000003"
    assert decode_window_key(key) == (b"\x00\x00\x00\x07", 60_000, 3)
    assert lower_range(b"ab").hex() == "6162" + "00" * 12
    assert upper_range(b"ab", 5).hex() == "6162" "0000000000000005" "7fffffff"
    # Kafka's WindowKeySchema.upperRange = OrderedBytes.upperRange(key, [to][MAX_INT]): with a
    # first time byte of 0 the whole key comes first (even one ending in 00); otherwise the first
    # byte of the key, then its bytes while they are >= the first time byte.
    assert upper_range(b"a\x00", 5).hex() == "6100" "0000000000000005" "7fffffff"
    assert upper_range(b"", 5).hex() == "0000000000000005" "7fffffff"
    assert upper_range(b"\x0c\x0c\x09", 0x0AFFFFFFFFFFFFFF).hex() == (
        "0c0c" "0affffffffffffff" "7fffffff")  # Kafka's WindowKeySchemaTest
    assert upper_range(b"\x01\x80\x7f", -1).hex() == "01" "ffffffffffffffff" "7fffffff"


def _raw_rows(store: Any, cf: str) -> list[tuple[str, str]]:
    return [(key.hex(), value.hex()) for key, value in store.wrapped.range(cf=cf)]


def test_golden_values(tmp_path: Path) -> None:
    key_hex = "0000000000000001" "6b" "000000000000ea60" "00000000"  # segment 1, b"k", 60 000
    with WindowStore(tmp_path / "a", RETENTION, WINDOW_SIZE) as s:
        s.put(b"k", b"v", 60_000)
        assert _raw_rows(s, "default") == [(key_hex, "76")]
    with TimestampedWindowStore(tmp_path / "b", RETENTION, WINDOW_SIZE) as t:
        t.put(b"k", ValueAndTimestamp(b"v", 5), 60_000)
        assert _raw_rows(t, "keyValueWithTimestamp") == [(key_hex, "0000000000000005" "76")]
    with WindowStoreWithHeaders(tmp_path / "c", RETENTION, WINDOW_SIZE) as h:
        h.put(b"k", ValueAndHeaders(b"v", [("h", b"1")]), 60_000)
        # headersSize 5 (0a); count 1 (02), key len 1 (02) "h", value len 1 (02) "1"; then "v".
        assert _raw_rows(h, WINDOW_HEADERS_CF) == [(key_hex, "0a" "02" "02" "68" "02" "31" "76")]
        h.put(b"k", ValueAndHeaders(b"v"), 60_000)
        assert _raw_rows(h, WINDOW_HEADERS_CF) == [(key_hex, "00" "76")]
    with TimestampedWindowStoreWithHeaders(tmp_path / "d", RETENTION, WINDOW_SIZE) as th:
        th.put(b"k", ValueTimestampHeaders(b"v", 5, [("h", None)]), 60_000)
        assert _raw_rows(th, TIMESTAMPED_HEADERS_CF) == [
            (key_hex, "08" "02" "02" "68" "01" "0000000000000005" "76")]
        assert _raw_rows(th, SEGMENTS_META_CF) == [
            (b"observedStreamTime".hex(), "000000000000ea60")]


def test_golden_sequence_numbers(tmp_path: Path) -> None:
    with WindowStore(tmp_path / "a", RETENTION, WINDOW_SIZE, True) as s:
        s.put(b"k", b"v", 0)
        s.put(b"k", b"w", 0)
        assert [key for key, _ in _raw_rows(s, "default")] == [
            "0000000000000000" "6b" "0000000000000000" "00000001",
            "0000000000000000" "6b" "0000000000000000" "00000002",
        ]


# -- lazy migration between formats ------------------------------------------------------------


MIGRATIONS = [
    (WindowStore, TimestampedWindowStore, lambda v: ValueAndTimestamp(v, -1)),
    (WindowStore, WindowStoreWithHeaders, lambda v: ValueAndHeaders(v, ())),
    (TimestampedWindowStore, TimestampedWindowStoreWithHeaders,
     lambda v: ValueTimestampHeaders(v, 11, ())),
    (WindowStore, TimestampedWindowStoreWithHeaders, lambda v: ValueTimestampHeaders(v, -1, ())),
]


@pytest.mark.parametrize(("old", "new", "expected"), MIGRATIONS,
                         ids=[f"{o.__name__}->{n.__name__}" for o, n, _ in MIGRATIONS])
def test_lazy_migration(
    tmp_path: Path, old: Any, new: Any, expected: Callable[[bytes], Any]
) -> None:
    old_wrap = ADAPTERS_BY_CLASS[old]().wrap
    new_wrap = ADAPTERS_BY_CLASS[new]().wrap
    path = tmp_path / "db"
    with old(path, RETENTION, WINDOW_SIZE) as store:
        store.put(b"a", old_wrap(b"1", 4), 10)
        store.put(b"b", old_wrap(b"2", 4), 20)
        store.put(b"c", old_wrap(b"3", 4), 30)
    with new(path, RETENTION, WINDOW_SIZE) as store:
        assert store.segments.has_legacy_data
        assert store.observed_stream_time == 30
        assert store.fetch(b"a", 10) == expected(b"1")
        assert [kv.value for kv in store.fetch(b"b", 0, 100)] == [expected(b"2")]
        store.put(b"b", new_wrap(b"22", 20), 20)  # migrates b: written new, removed old
        store.put(b"c", None, 30)  # deletes c from both families
        store.put(b"d", new_wrap(b"4", 40), 40)
        rows = [(kv.key.key, kv.value) for kv in store.all()]
        assert rows == [(b"a", expected(b"1")), (b"b", new_wrap(b"22", 20)),
                        (b"d", new_wrap(b"4", 40))]
        assert [kv.key.key for kv in store.backward_fetch_all(0, 100)] == [b"d", b"b", b"a"]
        legacy = {cf for cf, _ in store.segments.legacy_cfs}
        left = {key[8:-12] for cf in legacy for key, _ in store.wrapped.range(cf=cf)}
        assert left == {b"a"}
    with new(path, RETENTION, WINDOW_SIZE) as store:
        assert [kv.key.key for kv in store.all()] == [b"a", b"b", b"d"]
        store.put(b"e", new_wrap(b"5", 10**6), 10**6)  # expiry drops legacy segments too
        assert [kv.key.key for kv in store.all()] == [b"e"]
        for cf, _ in store.segments.legacy_cfs:
            assert list(store.wrapped.range(cf=cf)) == []


def test_headers_store_merges_both_legacy_families(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with WindowStore(path, RETENTION, WINDOW_SIZE) as plain:
        plain.put(b"a", b"plain", 10)
        plain.put(b"b", b"plain-b", 10)
    with TimestampedWindowStore(path, RETENTION, WINDOW_SIZE) as stamped:
        stamped.put(b"b", ValueAndTimestamp(b"stamped", 3), 10)  # migrates b out of default
        stamped.put(b"c", ValueAndTimestamp(b"stamped-c", 4), 10)
    with TimestampedWindowStoreWithHeaders(path, RETENTION, WINDOW_SIZE) as store:
        assert [(kv.key.key, kv.value) for kv in store.fetch_all(0, 100)] == [
            (b"a", ValueTimestampHeaders(b"plain", -1)),
            (b"b", ValueTimestampHeaders(b"stamped", 3)),
            (b"c", ValueTimestampHeaders(b"stamped-c", 4)),
        ]
