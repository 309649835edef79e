"""SST files written from Arrow columns (``stores.bytes.sst``): RocksDB ingests them, reads back every
entry, and checks their block checksums."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.bytes import sst
from stores.bytes.rocksdb import RocksDBBytesStore

# Keys of every length around varint and block borders, values from empty to a few blocks.
_ENTRIES = st.dictionaries(
    st.binary(max_size=40),
    st.one_of(
        st.binary(max_size=200),
        st.integers(0, 3 * sst.BLOCK_SIZE).map(lambda n: b"v" * n),  # compressible
        st.integers(0, 2 * sst.BLOCK_SIZE).map(os.urandom),  # not: stored raw
    ),
    min_size=1,
    max_size=60,
)


def _batches(items: list[tuple[bytes, bytes]], cuts: list[int]) -> list[tuple[pa.Array, pa.Array]]:
    bounds = sorted({0, len(items), *(c % (len(items) + 1) for c in cuts)})
    return [
        (pa.array([k for k, _ in items[a:b]], pa.binary()), pa.array([v for _, v in items[a:b]], pa.binary()))
        for a, b in itertools.pairwise(bounds)
    ]  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_ENTRIES, st.lists(st.integers(0, 100), max_size=4), st.booleans())
def test_ingested_file_reads_back_every_entry(
    tmp_path: Path, entries: dict[bytes, bytes], cuts: list[int], compress: bool
) -> None:
    items = sorted(entries.items())
    path = tmp_path / f"db-{os.urandom(4).hex()}"
    db = RocksDBBytesStore(str(path), ["family"])
    try:
        db.ingest_sorted("family", _batches(items, cuts))
        assert list(db.items("family")) == items
        assert db.multi_get([k for k, _ in items], "family") == [v for _, v in items]
        assert db.get(b"\xff" * 41, "family") is None
    finally:
        db.close()
    reopened = RocksDBBytesStore(str(path), ["family"], read_only=True)
    assert list(reopened.items("family")) == items
    reopened.close()


def test_entries_match_rocksdb_s_own_writer(tmp_path: Path) -> None:
    from rocksdict import Options, Rdict, SstFileWriter

    items = [(f"{i:06d}".encode(), (b"x" * (i % 300)) + os.urandom(i % 7)) for i in range(5000)]
    keys = pa.array([k for k, _ in items], pa.binary())
    values = pa.array([v for _, v in items], pa.binary())
    assert sst.write_sst(str(tmp_path / "ours.sst"), [(keys, values)]) == len(items)
    writer = SstFileWriter(Options(raw_mode=True))
    writer.open(str(tmp_path / "theirs.sst"))
    for k, v in items:
        writer[k] = v
    writer.finish()
    for name in ("ours", "theirs"):
        db = Rdict(str(tmp_path / name), Options(raw_mode=True))
        db.ingest_external_file([str(tmp_path / f"{name}.sst")])
        assert list(db.items()) == items
        db.close()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(st.binary(max_size=12), st.binary(max_size=50), max_size=40),
    st.dictionaries(st.binary(max_size=12), st.one_of(st.none(), st.binary(max_size=50)), min_size=1, max_size=40),
    st.lists(st.integers(0, 100), max_size=3),
)  # fmt: skip
def test_a_file_with_deletions_ingested_over_a_database_overrides_it(
    tmp_path: Path, base: dict[bytes, bytes], overlay: dict[bytes, bytes | None], cuts: list[int]
) -> None:
    """With ``deletions``, a null value writes a deletion: ingested over a database holding
    earlier rows (an SST of their own), puts replace them and deletions remove them."""
    path = tmp_path / f"db-{os.urandom(4).hex()}"
    db = RocksDBBytesStore(str(path), ["family"])
    try:
        if base:
            db.ingest_sorted("family", _batches(sorted(base.items()), []))
        db.ingest_sorted("family", _batches(sorted(overlay.items()), cuts), deletions=True)
        expected = {**base, **overlay}
        assert list(db.items("family")) == sorted((k, v) for k, v in expected.items() if v is not None)
    finally:
        db.close()


def test_deletions_match_rocksdb_s_own_writer(tmp_path: Path) -> None:
    from rocksdict import Options, Rdict, SstFileWriter

    base = [(f"{i:06d}".encode(), b"old" * (i % 50)) for i in range(0, 6000, 2)]
    overlay: list[tuple[bytes, bytes | None]] = [
        (f"{i:06d}".encode(), None if i % 3 else b"new" * (i % 40)) for i in range(3000)
    ]
    keys = pa.array([k for k, _ in overlay], pa.binary())
    values = pa.array([v for _, v in overlay], pa.binary())
    ours = sst.write_sst(str(tmp_path / "ours.sst"), [(keys, values)], deletions=True)
    assert ours == len(overlay)
    writer = SstFileWriter(Options(raw_mode=True))
    writer.open(str(tmp_path / "theirs.sst"))
    for k, v in overlay:
        if v is None:
            del writer[k]
        else:
            writer[k] = v
    writer.finish()
    contents = []
    for name in ("ours", "theirs"):
        db = Rdict(str(tmp_path / name), Options(raw_mode=True))
        for k, v in base:
            db[k] = v
        db.flush()
        db.ingest_external_file([str(tmp_path / f"{name}.sst")])
        # Point lookups too: they find a key's block through the index.
        contents.append((list(db.items()), [db.get(k) for k, _ in base + overlay]))
        db.close()
    expected = dict(base) | dict(overlay)
    assert contents[0] == contents[1]
    assert contents[0][0] == sorted((k, v) for k, v in expected.items() if v is not None)
    assert contents[0][1] == [expected[k] for k, _ in base + overlay]


def test_a_damaged_block_is_caught_by_its_checksum(tmp_path: Path) -> None:
    from rocksdict import Options, Rdict

    items = [(f"{i:08d}".encode(), os.urandom(100)) for i in range(2000)]
    path = tmp_path / "damaged.sst"
    sst.write_sst(str(path), [(pa.array([k for k, _ in items]), pa.array([v for _, v in items]))])
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01  # inside the first data block
    path.write_bytes(bytes(data))
    db = Rdict(str(tmp_path / "db"), Options(raw_mode=True))
    try:
        with pytest.raises(Exception, match="block checksum mismatch"):
            db.ingest_external_file([str(path)])
            list(db.items())
    finally:
        db.close()


@pytest.mark.parametrize(
    ("batches", "message"),
    [
        ([(pa.array([b"b", b"a"]), pa.array([b"1", b"2"]))], "strictly ascending"),
        ([(pa.array([b"a", b"a"]), pa.array([b"1", b"2"]))], "strictly ascending"),
        (
            [(pa.array([b"b"]), pa.array([b"1"])), (pa.array([b"a"]), pa.array([b"2"]))],
            "strictly ascending",
        ),
        ([(pa.array([b"a", None]), pa.array([b"1", b"2"]))], "null"),
        ([(pa.array([b"a"]), pa.array([None], pa.binary()))], "null"),
        ([(pa.array([b"a"]), pa.array([b"1", b"2"]))], "1 keys but 2 values"),
        ([], "at least one key"),
    ],
)
def test_bad_input_is_refused_and_leaves_no_file(
    tmp_path: Path, batches: list[tuple[pa.Array, pa.Array]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        sst.write_sst(str(tmp_path / "bad.sst"), batches)
    assert os.listdir(tmp_path) == []


def test_rounds_sealed_on_the_helper_thread_land_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many rounds of blocks, each sealed and written by the helper thread while the next is
    laid out: the file holds every block in order, and RocksDB reads each entry back."""
    monkeypatch.setattr(sst, "_CHUNK_BYTES", 3 * sst.BLOCK_SIZE)  # a round every 3 blocks
    items = [(f"{i:08d}".encode(), (b"v" if i % 3 else os.urandom(1)) * (i % 700)) for i in range(4000)]
    path = tmp_path / "db"
    db = RocksDBBytesStore(str(path), ["family"])
    try:
        db.ingest_sorted("family", _batches(items, [1000, 2500]))
        assert list(db.items("family")) == items
        assert db.multi_get([k for k, _ in items[::97]], "family") == [v for _, v in items[::97]]
    finally:
        db.close()


def test_a_round_that_fails_to_seal_fails_the_file_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    monkeypatch.setattr(sst, "_CHUNK_BYTES", 3 * sst.BLOCK_SIZE)
    real, calls = sst._sealed, itertools.count()

    def failing(*args: object, **kwargs: object) -> object:
        if next(calls) == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sst, "_sealed", failing)
    items = [(f"{i:08d}".encode(), b"v" * 500) for i in range(2000)]
    with pytest.raises(OSError, match="disk full"):
        sst.write_sst(str(tmp_path / "x.sst"), _batches(items, []))
    assert os.listdir(tmp_path) == []
    assert not [t for t in threading.enumerate() if t.name.startswith("sst-seal")]


def test_no_rows_with_allow_empty_writes_nothing(tmp_path: Path) -> None:
    assert sst.write_sst(str(tmp_path / "none.sst"), [], allow_empty=True) == 0
    assert os.listdir(tmp_path) == []


def test_large_binary_slices_are_written_as_their_own_bytes(tmp_path: Path) -> None:
    """Columns computed for a cache come as large binary, cut in slices: each slice is written
    from its own bytes (``arrow_bytes.as_binary``), with the entries binary columns give."""
    items = [(f"{i:06d}".encode(), b"v" * (i % 90)) for i in range(3000)]
    keys = pa.array([k for k, _ in items], pa.large_binary())
    values = pa.array([v for _, v in items], pa.large_binary())
    sliced = [(keys.slice(a, 1000), values.slice(a, 1000)) for a in (0, 1000, 2000)]
    sst.write_sst(str(tmp_path / "large.sst"), sliced)
    db = RocksDBBytesStore(str(tmp_path / "db"), ["family"])
    try:
        db.ingest_sorted("family", sliced)
        assert list(db.items("family")) == items
    finally:
        db.close()


def test_as_binary_keeps_the_bytes_of_a_slice_past_2_gib() -> None:
    """Arrow's cast refuses a large binary slice that starts past 2 GiB; ``as_binary`` gives
    binary over the same bytes (the buffer is allocated, not touched: only its last bytes
    are)."""
    from stores.columns.encode import as_binary

    sizes = [1 << 30, (1 << 30) + 100, 200]
    buffer = pa.allocate_buffer(sum(sizes))
    np.frombuffer(buffer, np.uint8)[-200:] = np.frombuffer(bytes(range(200)), np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    column = pa.Array.from_buffers(pa.large_binary(), 3, [None, pa.py_buffer(offsets), buffer])
    tail = column.slice(2, 1)
    with pytest.raises(pa.ArrowInvalid):
        tail.cast(pa.binary())
    assert as_binary(tail).type == pa.binary()
    assert as_binary(tail).to_pylist() == [bytes(range(200))]
    assert as_binary(pa.array(["a", "bc"], pa.large_string()).slice(1)).to_pylist() == [b"bc"]
