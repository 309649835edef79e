"""The forensics helper (``tests.forensics``) finds markers that compression hides from a grep:
in LZ4 Arrow IPC files (alone or concatenated), parquet, RocksDB's LZ4 SST blocks and across
the block headers of its WAL; and finds none of a value RocksDB compacted away."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rocksdict import BottommostLevelCompaction, CompactOptions, DBCompressionType, Options, Rdict

from tests import forensics
from tests.forensics import decoded_views, find_markers, lz4_block_decode, wal_payloads

_LZ4_IPC = pa.ipc.IpcWriteOptions(compression="lz4")  # as catalog.log.changelog writes
_LZ4_RAW = pa.Codec("lz4_raw")  # as stores.bytes.sst and RocksDB compress a block


def _hidden(marker: bytes) -> bytes:
    """A value holding ``marker`` once, after its two halves each repeated on their own: LZ4
    encodes the marker as two back references, so no run of compressed bytes spells it."""
    first, second = marker[: len(marker) // 2], marker[len(marker) // 2 :]
    return (first + b"|") * 64 + (b"|" + second) * 64 + first + second + b"|" * 256


def _ipc_file(values: list[bytes]) -> bytes:
    table = pa.table({"key": [b"k%d" % i for i in range(len(values))], "value": values})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema, options=_LZ4_IPC) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_a_marker_in_an_lz4_ipc_file_is_found_though_a_grep_misses_it(tmp_path: Path) -> None:
    marker = b"forensic-ipc-7d1e03c95a"
    path = _write(tmp_path / "changelog.arrow", _ipc_file([b"a" * 1000, _hidden(marker)]))

    assert marker not in Path(path).read_bytes()
    assert find_markers([tmp_path], [marker, b"forensic-absent-00"]) == {
        marker: [path],
        b"forensic-absent-00": [],
    }


@pytest.mark.parametrize("footer", [True, False], ids=["whole", "footer-lost"])
def test_a_marker_in_the_second_of_two_concatenated_ipc_files_is_found(
    tmp_path: Path, footer: bool
) -> None:
    marker = b"forensic-piece-2-4be0c1"
    first, second = _ipc_file([b"b" * 5000]), _ipc_file([b"c" * 3000, _hidden(marker)])
    # Without its footer, the second piece is still read, as the IPC stream inside the file.
    data = first + (second if footer else second[: second.rindex(b"\xff\xff\xff\xff\x00")])
    path = _write(tmp_path / "task-0.arrow", data)

    assert marker not in data
    assert not any(marker in view for view in forensics.ipc_views(first))
    assert find_markers([tmp_path], [marker]) == {marker: [path]}


def test_markers_in_nested_and_dictionary_columns_and_parquet_are_found(tmp_path: Path) -> None:
    nested, in_parquet = b"forensic-nested-93ac2f", b"forensic-parquet-51be7"
    struct = pa.StructArray.from_arrays([pa.array([_hidden(nested)]).dictionary_encode()], ["d"])
    lists = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), struct)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, pa.schema([("l", lists.type)]), options=_LZ4_IPC) as writer:
        writer.write(pa.record_batch([lists], names=["l"]))
    ipc = _write(tmp_path / "nested.arrow", sink.getvalue().to_pybytes())
    parquet = str(tmp_path / "part-0.parquet")
    # Without statistics: their min and max are whole values, uncompressed (a grep finds them).
    table = pa.table({"v": [_hidden(in_parquet)]})
    pq.write_table(table, parquet, compression="zstd", write_statistics=False)

    assert nested not in Path(ipc).read_bytes()
    assert in_parquet not in Path(parquet).read_bytes()
    assert find_markers([tmp_path], [nested, in_parquet]) == {nested: [ipc], in_parquet: [parquet]}


def test_rocksdb_lz4_tables_hide_nothing_kept_and_keep_nothing_compacted_away(
    tmp_path: Path,
) -> None:
    kept, erased = b"forensic-kept-0c5d9e27", b"forensic-erased-a41f7b"
    options = Options(raw_mode=True)
    options.set_compression_type(DBCompressionType.lz4())
    db = Rdict(str(tmp_path / "db"), options)
    for i in range(200):
        db.put(b"filler-%03d" % i, b"filler value " * 40)
    db.put(b"kept", _hidden(kept))
    db.put(b"erased", _hidden(erased))
    db.flush()
    tables = [str(p) for p in (tmp_path / "db").glob("*.sst")]
    assert tables and not any(m in Path(p).read_bytes() for p in tables for m in (kept, erased))
    assert find_markers([tmp_path], [erased])[erased] == tables  # seen before it is erased

    db.delete(b"erased")
    db.flush()
    # Forced: by default RocksDB may just move both tables to the last level (a "trivial
    # move"), the erased value and its tombstone kept.
    compact = CompactOptions()
    compact.set_bottommost_level_compaction(BottommostLevelCompaction.force())
    db.compact_range(None, None, compact)
    db.close()  # waits for RocksDB to delete the files the compaction made obsolete

    found = find_markers([tmp_path / "db"], [kept, erased])
    assert found[erased] == []
    kept_in = [p for p in found[kept] if p.endswith(".sst")]
    assert kept_in and not any(kept in Path(p).read_bytes() for p in kept_in)


def test_a_marker_split_by_a_wal_block_header_is_found(tmp_path: Path) -> None:
    def open_with(name: str, value: bytes) -> tuple[Rdict, Path]:
        db = Rdict(str(tmp_path / name), Options(raw_mode=True))
        db.put(b"key", value)  # in the WAL (and the memtable) only, until closed
        (wal,) = (tmp_path / name).glob("*.log")
        return db, wal

    marker, size = b"forensic-wal-split-6f2d18", 50_000
    # A first database shows where the value starts in its WAL; the same put in a second one
    # lands at the same offset, its marker across the first 32 KiB block's end.
    locator = b"forensic-locator-e39b"
    probe, probe_wal = open_with("probe", locator + b"." * (size - len(locator)))
    start = probe_wal.read_bytes().index(locator)
    probe.close()
    at = 32768 - start - len(marker) // 2
    db, wal = open_with("db", b"." * at + marker + b"." * (size - at - len(marker)))
    try:
        assert marker not in wal.read_bytes()
        assert marker in wal_payloads(wal.read_bytes())
        assert find_markers([tmp_path / "db"], [marker]) == {marker: [str(wal)]}
    finally:
        db.close()


def test_wal_payloads_drop_record_headers_and_block_padding() -> None:
    def record(kind: int, payload: bytes) -> bytes:
        return bytes(4) + len(payload).to_bytes(2, "little") + bytes([kind]) + payload

    # The first block keeps 3 bytes after its record: too few for a header, so zero padding.
    first_block = record(1, b"x" * (32768 - 7 - 3)) + bytes(3)
    data = first_block + record(2, b"ab") + record(4, b"cd") + bytes(20)  # then preallocated
    assert wal_payloads(data) == b"x" * (32768 - 10) + b"abcd"


_COMPRESSIBLE = st.lists(st.tuples(st.binary(max_size=12), st.integers(1, 400)), max_size=8).map(
    lambda parts: b"".join(part * times for part, times in parts)
)


@given(data=st.one_of(st.binary(max_size=3000), _COMPRESSIBLE), junk=st.binary(max_size=9))
def test_lz4_block_decode_round_trips_pyarrow_lz4_raw(data: bytes, junk: bytes) -> None:
    block = _LZ4_RAW.compress(data, asbytes=True)
    assert lz4_block_decode(junk + block + junk, len(junk), len(data)) == (data, len(block))


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


@given(
    st.lists(
        st.tuples(st.one_of(st.binary(min_size=1, max_size=600), _COMPRESSIBLE), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_every_lz4_block_of_a_table_is_decoded(blocks: list[tuple[bytes, bool]]) -> None:
    # Blocks as RocksDB stores them (see stores.bytes.sst): LZ4 (type 4) or plain (type 0).
    data = b"".join(
        _varint(len(block)) + _LZ4_RAW.compress(block, asbytes=True) + b"\x04\x9a\x1b\x2c\x3d"
        if compressed
        else block + b"\x00\x9a\x1b\x2c\x3d"
        for block, compressed in blocks
    )
    found = list(forensics.sst_lz4_blocks(data))
    assert all(block in found for block, compressed in blocks if compressed and block)


@pytest.mark.parametrize(
    ("data", "start", "size"),
    [
        (b"\x10a", 2, 1),  # start past the end
        (b"\x10a", -1, 1),
        (b"\x10a\x00\x00\x00", 0, 8),  # match offset 0
        (b"\x10a\x02\x00\x00", 0, 8),  # match offset beyond the output
        (b"\x30abc", 0, 2),  # more literals than the size
        (b"\x14a\x01\x00", 0, 4),  # a match past the size
        (b"\x30ab", 0, 3),  # input ends among the literals
        (b"\xf0\xff", 0, 300),  # input ends in a length
        (b"\x1fa\x01\x00", 0, 40),  # ... in a match length
        (b"\x10a\x01\x00", 0, 40),  # ... before the next token
    ],
)
def test_lz4_block_decode_refuses_what_is_no_block(data: bytes, start: int, size: int) -> None:
    assert lz4_block_decode(data, start, size) is None


@given(data=st.binary(max_size=200), start=st.integers(-2, 210), size=st.integers(0, 5000))
def test_lz4_block_decode_of_garbage_never_raises(data: bytes, start: int, size: int) -> None:
    decoded = lz4_block_decode(data, start, size)
    assert decoded is None or (len(decoded[0]) == size and 0 < decoded[1] <= len(data) - start)


def test_roots_are_checked_and_symlinks_not_followed(tmp_path: Path) -> None:
    marker = b"forensic-outside-2b7e"
    (tmp_path / "outside").mkdir()
    _write(tmp_path / "outside" / "data", marker)
    (tmp_path / "root").mkdir()
    os.symlink(tmp_path / "outside", tmp_path / "root" / "folder-link")
    os.symlink(tmp_path / "outside" / "data", tmp_path / "root" / "file-link")

    assert find_markers([tmp_path / "root"], [marker]) == {marker: []}
    assert find_markers([tmp_path / "outside" / "data"], [marker])[marker] != []
    with pytest.raises(FileNotFoundError, match=r"\[NO_SUCH_ROOT\]"):
        find_markers([tmp_path / "missing"], [marker])
    with pytest.raises(ValueError, match=r"\[EMPTY_MARKER\]"):
        find_markers([tmp_path], [b""])


def test_a_file_over_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forensics, "MAX_FILE_BYTES", 10)
    path = _write(tmp_path / "big.sst", bytes(11))
    with pytest.raises(ValueError, match=r"\[FILE_TOO_LARGE\]"):
        list(decoded_views(path))
