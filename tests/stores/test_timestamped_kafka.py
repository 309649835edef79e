"""Kafka's key-value store scenarios applied to the timestamped stores, one test per Kafka test.

Sources: ``AbstractKeyValueStoreTest`` (through ``ValueAndTimestamp``, as Kafka's timestamped
stores run it), ``RocksDBStoreTest`` (prefix scans, iterators after close) and
``RocksDBTimestampedStoreTest`` / ``RocksDBTimestampedStoreWithHeadersTest`` (counts in upgrade
mode). Both stores run every scenario; Kafka's ``Integer`` keys are 4-byte big-endian (so -1
sorts after 1, as in Kafka) and its ``String`` values are UTF-8 bytes stamped with the record
time 10 of Kafka's test context. Lazy migration itself is covered in ``test_timestamped.py``.
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stores.bytes.protocol import DEFAULT_CF
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError, StoreClosedError
from stores.formats.timestamped import TIMESTAMPED_CF
from stores.iterators import KeyValueIterator
from stores.records import KeyValue, ValueAndTimestamp, ValueTimestampHeaders
from stores.timestamped.store import KeyValueIterator as ReExported
from stores.timestamped.store import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders

TS = 10  # Kafka's context.setTime(10)
HEADERS = (("h", b"v"),)


class Store:
    """A timestamped store under test, with its kind's record type."""

    def __init__(self, cls: type[Any], path: Path) -> None:
        self.cls = cls
        self.path = path
        self.headers = cls is TimestampedKeyValueStoreWithHeaders
        self.store: Any = cls(path)

    def rec(self, value: str | None, ts: int = TS) -> Any:
        payload = None if value is None else value.encode()
        if self.headers:
            return ValueTimestampHeaders(payload, ts, HEADERS)
        return ValueAndTimestamp(payload, ts)

    def put(self, key: int, value: str | None) -> None:
        self.store.put(k(key), None if value is None else self.rec(value))

    def get(self, key: int) -> str | None:
        return self.text(self.store.get(k(key)))

    def text(self, record: Any) -> str | None:
        if record is None:
            return None
        assert record.timestamp == TS
        if self.headers:
            assert record.headers == HEADERS
        return record.value.decode()  # type: ignore[no-any-return]

    def contents(self, it: Iterator[KeyValue]) -> list[tuple[int, str | None]]:
        return [(struct.unpack(">i", kv.key)[0], self.text(kv.value)) for kv in it]


def k(key: int) -> bytes:
    """Kafka's IntegerSerializer."""
    return struct.pack(">i", key)


@pytest.fixture(
    params=[TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders],
    ids=["timestamped", "headers"],
)
def st(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    store = Store(request.param, tmp_path / "kv")
    yield store
    store.store.close()


def _zero_to_five(st: Store) -> None:
    for key, value in [(0, "zero"), (1, "one"), (2, "two"), (4, "four"), (5, "five")]:
        st.put(key, value)


def test_should_not_include_deleted_from_range_result(st: Store) -> None:
    st.put(0, "zero")
    st.put(1, "one")
    st.put(2, "two")
    st.store.delete(k(0))
    st.store.delete(k(1))
    assert st.contents(st.store.all()) == [(2, "two")]


def test_should_delete_if_serialized_value_is_null(st: Store) -> None:
    st.put(0, "zero")
    st.put(1, "one")
    st.put(2, "two")
    # Kafka: a value serialized to null bytes deletes; here a record whose value is None.
    st.store.put(k(0), st.rec(None))
    st.store.put(k(1), st.rec(None))
    assert st.contents(st.store.all()) == [(2, "two")]


def test_put_get_range(st: Store) -> None:
    _zero_to_five(st)
    assert st.store.approximate_num_entries() == 5
    assert [st.get(n) for n in range(6)] == ["zero", "one", "two", None, "four", "five"]
    st.store.delete(k(5))
    assert st.store.approximate_num_entries() == 4
    assert st.contents(st.store.range(k(2), k(4))) == [(2, "two"), (4, "four")]
    assert st.contents(st.store.range(k(2), k(6))) == [(2, "two"), (4, "four")]
    assert st.contents(st.store.all()) == [(0, "zero"), (1, "one"), (2, "two"), (4, "four")]


def test_put_get_reverse_range(st: Store) -> None:
    _zero_to_five(st)
    st.store.delete(k(5))
    assert st.contents(st.store.reverse_range(k(2), k(4))) == [(4, "four"), (2, "two")]
    assert st.contents(st.store.reverse_range(k(2), k(6))) == [(4, "four"), (2, "two")]
    assert st.contents(st.store.range(k(2), k(4), reverse=True)) == [(4, "four"), (2, "two")]
    assert st.contents(st.store.reverse_all()) == [
        (4, "four"), (2, "two"), (1, "one"), (0, "zero"),
    ]


def test_range_with_null_bounds_is_open(st: Store) -> None:
    # KIP-763: a null bound is open (older Kafka threw NullPointerException).
    _zero_to_five(st)
    assert [key for key, _ in st.contents(st.store.range(None, k(2)))] == [0, 1, 2]
    assert [key for key, _ in st.contents(st.store.range(k(4), None))] == [4, 5]
    assert [key for key, _ in st.contents(st.store.reverse_range(None, k(1)))] == [1, 0]
    assert len(st.contents(st.store.range(None, None))) == 5


def test_restore(st: Store) -> None:
    # Kafka restores from a changelog; here the data is durable: reopen and find it all.
    for key, value in [(0, "zero"), (1, "one"), (2, "two"), (3, "three")]:
        st.put(key, value)
    st.store.close()
    st.store = st.cls(st.path)
    assert [st.get(n) for n in range(4)] == ["zero", "one", "two", "three"]
    assert st.store.approximate_num_entries() == 4


def test_put_if_absent(st: Store) -> None:
    for key, value in [(0, "zero"), (1, "one"), (2, "two"), (4, "four")]:
        assert st.store.put_if_absent(k(key), st.rec(value)) is None
    assert st.text(st.store.put_if_absent(k(4), st.rec("unexpected value"))) == "four"
    assert st.store.approximate_num_entries() == 4
    assert [st.get(n) for n in range(5)] == ["zero", "one", "two", None, "four"]


def test_should_throw_on_null_keys(st: Store) -> None:
    # Kafka: NullPointerException; here InvalidOptionError naming the key.
    calls = [
        lambda: st.store.put(None, st.rec("anyValue")),
        lambda: st.store.put_if_absent(None, st.rec("anyValue")),
        lambda: st.store.put_all([KeyValue(None, st.rec("anyValue"))]),
        lambda: st.store.delete(None),
        lambda: st.store.get(None),
        lambda: st.store.prefix_scan(None),
    ]
    for call in calls:
        with pytest.raises(InvalidOptionError, match="key|prefix"):
            call()
    assert st.store.approximate_num_entries() == 0


def test_should_not_throw_on_null_values(st: Store) -> None:
    st.store.put(k(1), None)
    assert st.store.put_if_absent(k(1), None) is None
    st.store.put_all([KeyValue(k(1), None)])
    assert st.store.approximate_num_entries() == 0


def test_size(st: Store) -> None:
    assert st.store.approximate_num_entries() == 0
    _zero_to_five(st)
    # Exact here; Kafka's is RocksDB's estimate (exact in this case too).
    assert st.store.approximate_num_entries() == 5


def test_should_put_all(st: Store) -> None:
    st.store.put_all([KeyValue(k(1), st.rec("one")), KeyValue(k(2), st.rec("two"))])
    assert st.contents(st.store.all()) == [(1, "one"), (2, "two")]


def test_should_put_reverse_all(st: Store) -> None:
    st.store.put_all([(k(1), st.rec("one")), (k(2), st.rec("two"))])
    assert st.contents(st.store.reverse_all()) == [(2, "two"), (1, "one")]


def test_should_delete_from_store(st: Store) -> None:
    st.put(1, "one")
    st.put(2, "two")
    assert st.text(st.store.delete(k(2))) == "two"
    assert st.store.get(k(2)) is None
    assert st.store.delete(k(2)) is None


@pytest.mark.parametrize("reverse", [False, True])
def test_should_return_same_results_for_get_and_range_with_equal_keys(
    st: Store, reverse: bool
) -> None:
    st.store.put_all([(k(n), st.rec(v)) for n, v in [(1, "one"), (2, "two"), (3, "three")]])
    with st.store.range(k(2), k(2), reverse=reverse) as it:
        assert next(it).value == st.store.get(k(2))
        assert not it.has_next()


def test_should_not_throw_concurrent_modification_exception(st: Store) -> None:
    st.put(0, "zero")
    results = st.store.range(k(0), k(2))
    st.put(1, "one")
    assert next(results) == KeyValue(k(0), st.rec("zero"))
    results.close()


@pytest.mark.parametrize("method", ["range", "reverse_range"])
def test_should_not_throw_invalid_range_exception_with_negative_from_key(
    st: Store, method: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="stores.timestamped.dual"):
        with getattr(st.store, method)(k(-1), k(1)) as it:
            assert not it.has_next()
    assert (
        "Returning empty iterator for fetch with invalid key range: from > to. This may be due "
        "to range arguments set in the wrong order, or serdes that don't preserve ordering when "
        "lexicographically comparing the serialized bytes. Note that the built-in numerical "
        "serdes do not follow this for negative numbers"
    ) in caplog.messages


def test_iterator_peek_and_close(st: Store) -> None:
    st.put(1, "one")
    st.put(2, "two")
    it = st.store.all()
    assert isinstance(it, KeyValueIterator) and ReExported is KeyValueIterator
    assert it.peek_next_key() == k(1)
    assert next(it).key == k(1)
    assert it.peek_next_key() == k(2)
    assert next(it).key == k(2)
    assert not it.has_next()
    with pytest.raises(StopIteration):
        it.peek_next_key()
    it.close()
    with pytest.raises(StoreClosedError):
        it.has_next()


def test_iterators_are_closed_with_their_store(st: Store) -> None:
    # RocksDBStore closes its open iterators; a closed RocksDbIterator throws
    # InvalidStateStoreException on hasNext/next.
    st.put(1, "one")
    it = st.store.range(k(0), k(5))
    assert it.has_next()
    st.store.close()
    with pytest.raises(StoreClosedError):
        it.has_next()
    with pytest.raises(StoreClosedError):
        st.store.get(k(1))


# -- RocksDBStoreTest: prefix scans ---------------------------------------------------------------


def test_should_return_keys_with_given_prefix(st: Store) -> None:
    for key in [b"k1", b"prefix_3", b"k2", b"prefix_2", b"k3", b"prefix_1"]:
        st.store.put(key, st.rec("x" + key.decode()))
    with st.store.prefix_scan(b"prefix") as it:
        assert [kv.key for kv in it] == [b"prefix_1", b"prefix_2", b"prefix_3"]


def test_should_return_keys_with_given_prefix_excluding_next_key_largest_key(st: Store) -> None:
    for key in [b"abc", b"abcd", b"abce"]:
        st.store.put(key, st.rec("v"))
    with st.store.prefix_scan(b"abcd") as it:
        assert [kv.key for kv in it] == [b"abcd"]


def test_should_return_uuids_with_string_prefix(st: Store) -> None:
    ids = sorted(str(uuid.UUID(int=n * 0x1234567)) for n in range(1, 4))
    keys = [f"prefix_{i}".encode() for i in ids]
    for key in keys:
        st.store.put(key, st.rec("v"))
    st.store.put(b"other", st.rec("v"))
    assert [kv.key for kv in st.store.prefix_scan(b"prefix_")] == keys


def test_should_return_no_keys_with_no_matching_prefix(st: Store) -> None:
    for key in [b"k1", b"k2", b"k3"]:
        st.store.put(key, st.rec("v"))
    with st.store.prefix_scan(b"bb") as it:
        assert not it.has_next()


def test_prefix_scan_of_all_ff_bytes(st: Store) -> None:
    for key in [b"\xff", b"\xff\xff", b"\xff\x00", b"\xfe\xff"]:
        st.store.put(key, st.rec("v"))
    assert [kv.key for kv in st.store.prefix_scan(b"\xff")] == [
        b"\xff", b"\xff\x00", b"\xff\xff",
    ]
    assert len(list(st.store.prefix_scan(b""))) == 4


# -- RocksDBTimestampedStore(WithHeaders)Test: counting in upgrade mode ---------------------------


def test_approximate_num_entries_counts_both_column_families_in_upgrade_mode(
    tmp_path: Path,
) -> None:
    # Kafka sums RocksDB's estimates of both families; ours is the exact count of both (a key
    # present in both families, which migration never leaves, would count twice as in Kafka).
    path = tmp_path / "kv"
    with RocksDBBytesStore(path, (DEFAULT_CF,)) as db:
        for n in range(1, 8):
            db.put(f"key{n}".encode(), str(n).encode() * n)
    with TimestampedKeyValueStore(path) as store:
        assert store.upgrade_mode
        assert store.approximate_num_entries() == 7
        assert store.get(b"unknown") is None
        assert store.get(b"key1") == ValueAndTimestamp(b"1", -1)
        assert store.approximate_num_entries() == 7
        store.put(b"key2", ValueAndTimestamp(b"22", 5))
        assert store.approximate_num_entries() == 7
        store.put(b"key3", None)
        assert store.approximate_num_entries() == 6  # Kafka's estimate says 5 (off by one)
        store.put(b"key8", ValueAndTimestamp(b"8", 5))
        assert store.put_if_absent(b"key4", ValueAndTimestamp(b"x", 5)) == ValueAndTimestamp(
            b"4444", -1
        )
        assert store.put_if_absent(b"key5", None) == ValueAndTimestamp(b"55555", -1)
        assert store.delete(b"key6") == ValueAndTimestamp(b"666666", -1)
        assert store.approximate_num_entries() == 6
        db = store.wrapped
        assert [k for k, _ in db.range(cf=DEFAULT_CF)] == [b"key7"]
        assert [k for k, _ in db.range(cf=TIMESTAMPED_CF)] == [
            b"key1", b"key2", b"key4", b"key5", b"key8",
        ]
