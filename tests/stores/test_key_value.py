"""Contract suite of ``KeyValueStore``, run over every way a store is built (Kafka's
AbstractKeyValueStoreTest in spirit): standalone (each call atomic and durable) and wrapped over
a bytes store whose owner commits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError
from stores.key_value.store import KeyValueStore


@pytest.fixture(params=["standalone", "over-uncommitted-batch"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyValueStore]:
    if request.param == "standalone":
        with KeyValueStore(tmp_path / "kv") as s:
            yield s
    else:
        db = RocksDBBytesStore(tmp_path / "kv", KeyValueStore.column_families(), autocommit=False)
        yield KeyValueStore.over(db)
        db.close()


def test_put_get_delete(store: KeyValueStore) -> None:
    assert store.get(b"a") is None
    store.put(b"a", b"1")
    assert store.get(b"a") == b"1"
    store.put(b"a", b"2")
    assert store.get(b"a") == b"2"
    assert store.delete(b"a") == b"2"
    assert store.get(b"a") is None
    assert store.delete(b"a") is None


def test_null_value_deletes_as_in_kafka(store: KeyValueStore) -> None:
    store.put(b"a", b"1")
    store.put(b"a", None)
    assert store.get(b"a") is None


def test_put_if_absent_returns_the_existing_value(store: KeyValueStore) -> None:
    assert store.put_if_absent(b"a", b"1") is None
    assert store.put_if_absent(b"a", b"2") == b"1"
    assert store.get(b"a") == b"1"


def test_range_is_inclusive_and_in_serialized_byte_order(store: KeyValueStore) -> None:
    store.put_all([(bytes([i]), bytes([i])) for i in (5, 1, 3, 2, 4)])
    assert [k for k, _ in store.range(b"\x02", b"\x04")] == [b"\x02", b"\x03", b"\x04"]
    assert [k for k, _ in store.range(b"\x02", b"\x04", reverse=True)] == [b"\x04", b"\x03", b"\x02"]
    assert [k for k, _ in store.range(None, b"\x02")] == [b"\x01", b"\x02"]
    assert [k for k, _ in store.range(b"\x04", None)] == [b"\x04", b"\x05"]
    assert list(store.range(b"\x04", b"\x02")) == []  # inverted bounds: empty, as in Kafka
    assert [k for k, _ in store.all()] == [bytes([i]) for i in range(1, 6)]
    assert [k for k, _ in store.all(reverse=True)] == [bytes([i]) for i in range(5, 0, -1)]
    assert store.approximate_num_entries() == 5


def test_prefix_scan(store: KeyValueStore) -> None:
    store.put_all([(b"ab", b"1"), (b"abc", b"2"), (b"b", b"3"), (b"a\xff", b"4")])
    assert [k for k, _ in store.prefix_scan(b"ab")] == [b"ab", b"abc"]
    assert [k for k, _ in store.prefix_scan(b"a")] == [b"ab", b"abc", b"a\xff"]


def test_keys_must_be_bytes(store: KeyValueStore) -> None:
    with pytest.raises(InvalidOptionError, match="key must be bytes"):
        store.put("a", b"1")  # type: ignore[arg-type]


def test_standalone_store_keeps_its_data_across_reopen(tmp_path: Path) -> None:
    with KeyValueStore(tmp_path / "kv") as s:
        s.put(b"a", b"1")
    with KeyValueStore(tmp_path / "kv") as s:
        assert s.get(b"a") == b"1"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.binary(max_size=2), st.none() | st.binary(max_size=2)), max_size=25)
)
def test_matches_a_dict(tmp_path_factory, entries) -> None:  # type: ignore[no-untyped-def]
    model: dict[bytes, bytes] = {}
    with KeyValueStore(tmp_path_factory.mktemp("kv")) as store:
        for key, value in entries:
            store.put(key, value)
            if value is None:
                model.pop(key, None)
            else:
                model[key] = value
        assert list(store.all()) == sorted(model.items())


def test_a_store_over_an_open_database_leaves_it_open(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "kv", KeyValueStore.column_families())
    with KeyValueStore(db=db) as store:
        store.put(b"k", b"v")
    assert not db.closed and db.get(b"k") == b"v"
    db.close()


def test_a_store_takes_a_path_or_a_database(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="a path or db="):
        KeyValueStore()
    db = RocksDBBytesStore(tmp_path / "kv", KeyValueStore.column_families())
    with pytest.raises(TypeError, match="a path or db="):
        KeyValueStore(tmp_path / "other", db=db)
    db.close()
