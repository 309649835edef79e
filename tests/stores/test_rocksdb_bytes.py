"""The bytes layer: raw bytes, column families, the indexed write batch, read-only handles."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.bytes.protocol import BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import StoreClosedError, StoreNotFoundError


def test_uncommitted_writes_are_visible_to_reads_but_not_durable(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "db", ["meta"], autocommit=False)
    db.put(b"a", b"1")
    db.put(b"m", b"x", "meta")
    assert db.get(b"a") == b"1" and db.get(b"m", "meta") == b"x"
    assert db.get(b"m") is None  # column families are separate key spaces
    db.close()  # closing discards what was not committed
    db = RocksDBBytesStore(tmp_path / "db", ["meta"], autocommit=False)
    assert db.get(b"a") is None and db.get(b"m", "meta") is None
    db.put(b"a", b"1")
    db.commit()
    db.close()
    assert RocksDBBytesStore(tmp_path / "db", ["meta"]).get(b"a") == b"1"


def test_rollback_discards_staged_writes_including_range_deletes(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "db", autocommit=False)
    for k in (b"a", b"b", b"c"):
        db.put(k, k)
    db.commit()
    db.delete_range(b"a", b"c")
    db.put(b"b", b"new")
    assert list(db.range()) == [(b"b", b"new"), (b"c", b"c")]
    assert db.multi_get([b"a", b"b", b"c", b"d"]) == [None, b"new", b"c", None]
    db.rollback()
    assert list(db.items()) == [(b"a", b"a"), (b"b", b"b"), (b"c", b"c")]


def test_values_are_raw_bytes_never_pickled(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "db")
    db.put(b"k", b"\x80\x04value")  # looks like a pickle header; must come back untouched
    db.commit()
    db.close()
    from rocksdict import Options, Rdict

    raw = Rdict(str(tmp_path / "db"), Options(raw_mode=True))
    assert raw[b"k"] == b"\x80\x04value"
    raw.close()


def test_read_only_handles_coexist_with_each_other(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "db", ["meta"])
    db.put(b"k", b"v")
    db.commit()
    db.close()
    first = RocksDBBytesStore(tmp_path / "db", ["meta", "absent"], read_only=True)
    second = RocksDBBytesStore(tmp_path / "db", ["meta"], read_only=True)
    assert first.get(b"k") == second.get(b"k") == b"v"
    assert first.get(b"k", "absent") is None and list(first.items("absent")) == []
    with pytest.raises(StoreClosedError, match="read-only"):
        first.put(b"x", b"y")
    first.close()
    second.close()
    with pytest.raises(StoreClosedError):
        first.get(b"k")


def test_read_only_open_of_a_missing_database_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError, match="no RocksDB database"):
        RocksDBBytesStore(tmp_path / "nothing", read_only=True)


keys = st.binary(min_size=0, max_size=3)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), keys, st.binary(max_size=3)),
        st.tuples(st.just("delete"), keys),
        st.tuples(st.just("delete_range"), keys, keys),
        st.tuples(st.just("commit")),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(ops=ops, bounds=st.tuples(st.none() | keys, st.none() | keys), reverse=st.booleans())
def test_merged_view_matches_a_dict_model(tmp_path_factory, ops, bounds, reverse) -> None:  # type: ignore[no-untyped-def]
    db = RocksDBBytesStore(tmp_path_factory.mktemp("db"), autocommit=False)
    model: dict[bytes, bytes] = {}
    for op in ops:
        if op[0] == "put":
            db.put(op[1], op[2])
            model[op[1]] = op[2]
        elif op[0] == "delete":
            db.delete(op[1])
            model.pop(op[1], None)
        elif op[0] == "delete_range":
            db.delete_range(op[1], op[2])
            for k in [k for k in model if op[1] <= k < op[2]]:
                del model[k]
        else:
            db.commit()
    start, end = bounds
    expected = sorted(
        (k, v)
        for k, v in model.items()
        if (start is None or k >= start) and (end is None or k < end)
    )
    if reverse:
        expected.reverse()
    assert list(db.range(start, end, reverse=reverse)) == expected
    assert list(db.items()) == sorted(model.items())
    for k in model:
        assert db.get(k) == model[k]
    db.close()


def test_the_generation_changes_whenever_what_the_handle_reads_may_change(tmp_path: Path) -> None:
    db: BytesStore = RocksDBBytesStore(tmp_path / "db", autocommit=False)
    seen = [db.generation]

    def changed() -> bool:
        new = db.generation not in seen
        seen.append(db.generation)
        return new

    assert db.get(b"k") is None and not changed()  # reads leave it
    db.put(b"k", b"v")
    assert changed()
    db.put_many([b"a", b"b"], [b"1", None])
    assert changed()
    db.delete(b"a")
    assert changed()
    db.delete_range(b"a", b"c")
    assert changed()
    db.commit()
    assert changed()
    db.commit()  # nothing staged: nothing changes
    assert not changed()
    db.put(b"k", b"w")
    db.rollback()
    assert changed()
    db.ingest_sorted("default", [])
    assert not changed()  # an empty ingest writes no file
    db.ingest_sorted("default", [(pa.array([b"x"], pa.binary()), pa.array([b"1"], pa.binary()))])
    assert changed() and db.get(b"x") == b"1"
    db.close()
    assert changed()
