"""RocksDB table files (SST) written from Arrow columns, for ``IngestExternalFile``.

RocksDB's own ``SstFileWriter`` takes one key and value per call: for a million rows the calls
and the ``bytes`` objects they need cost more than the bytes themselves. This module lays out
the same file from whole columns: the entries, restart arrays and block tails of every block
with numpy and one ``binary_join_element_wise`` per few MiB of entries; then each block is
compressed and checksummed (one call each). The format is the one ``SstFileWriter`` writes
with these options; a test compares the two through RocksDB:

| part          | what                                                                    |
|---------------|-------------------------------------------------------------------------|
| data blocks   | entries ``[varint 0][varint key size][varint value size][key][value]``, |
|               | key = user key + 8 bytes ``(sequence 0 << 8) | type``, LE: type 1 a put,|
|               | 0 a deletion (no value; written for a null value with ``deletions``);   |
|               | every entry a restart point (no shared prefixes, so no sequential pass) |
|               | then ``uint32 restarts[n]``, ``uint32 n``                                |
| block trailer | compression type: ``4`` LZ4 (``[varint32 size][raw LZ4 block]``, where  |
|               | that saves an eighth, as RocksDB decides) or ``0`` none; then the XXH32 |
|               | of the stored block and type byte (checksum type ``kxxHash``)           |
| properties    | those ``SstFileWriter`` records: sizes, counts, comparator, and         |
|               | ``rocksdb.external_sst_file.version`` 2, global sequence number 0       |
| metaindex     | ``rocksdb.properties`` -> its block handle                              |
| index block   | one entry per data block: its last internal key -> ``[offset][size]``   |
| footer        | checksum type, metaindex and index handles (padded to 40 bytes),        |
|               | ``uint32 format_version`` 2, ``uint64`` magic ``0x88e241b785f4cff7``       |

Format version 2 (RocksDB reads every version from 2 on) keeps the index entries plain: full
internal keys, handles not delta-encoded.
"""

from __future__ import annotations

import contextlib
import os
import struct
import uuid
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from stores.columns.encode import (
    as_binary,
    binary_from,
    binary_offsets,
    concat_rows,
    varint_column,
    whole,
)

#: Data block size target (RocksDB's ``block_size``; its default is 4 KiB). Larger blocks mean
#: fewer checksum calls and index entries; a lookup decodes one block by binary search.
BLOCK_SIZE = 16 * 1024
#: Bytes of entries per round of assembly: memory the allocator reuses round after round (fresh
#: pages cost more than the copying) and far below Arrow's 32-bit offsets.
_CHUNK_BYTES = 4 << 20

_PUT_SUFFIX = struct.pack("<Q", (0 << 8) | 1)  # sequence 0, kTypeValue
_SUFFIX_BYTES = 8
_PUT, _DELETION = 1, 0  # kTypeValue, kTypeDeletion
_FORMAT_VERSION = 2
_CHECKSUM_XXHASH = 2
_MAGIC = 0x88E241B785F4CFF7
_TRAILER = 5  # compression type byte + 32-bit checksum
_NONE_TYPE = b"\x00"
_LZ4_TYPE = b"\x04"  # kLZ4Compression
_LZ4 = pa.Codec("lz4_raw")
_FIXED32 = struct.Struct("<I")
_UNKNOWN_COLUMN_FAMILY = 0x7FFFFFFF  # RocksDB: "not from a column family"


def _blocks(
    keys: pa.Array, suffix: bytes | pa.Array, values: pa.Array, key_sizes: np.ndarray,
    value_sizes: np.ndarray, first_of_block: np.ndarray,
) -> tuple[memoryview, list[int], list[int]]:  # fmt: skip
    """The contents of blocks of entries ``keys[i] + suffix -> values[i]``, each entry a
    restart point, back to back; a new block starts at each ``first_of_block``.

    Returns ``(bytes, block starts, block sizes)`` (no trailers: see ``_sealed``).
    """
    n = len(keys)
    full_key_sizes = key_sizes + (len(suffix) if isinstance(suffix, bytes) else _SUFFIX_BYTES)
    header = varint_column(full_key_sizes, value_sizes, lead_zero=True)
    header_sizes = _sizes(header)
    entry_sizes = header_sizes + full_key_sizes + value_sizes
    marks = np.zeros(n, dtype=bool)
    marks[first_of_block] = True
    block_of = np.cumsum(marks) - 1
    counts = np.diff(np.append(first_of_block, n))
    # Within a block, entry offsets are the restart points.
    entry_ends = np.cumsum(entry_sizes)
    entry_starts = entry_ends - entry_sizes
    block_entry_base = entry_starts[first_of_block]
    within = entry_starts - block_entry_base[block_of]
    # Each block's tail: uint32 restarts[count], uint32 count; carried by its last entry.
    tail_offsets = np.zeros(len(first_of_block) + 1, dtype=np.int64)
    np.cumsum(4 * counts + 4, out=tail_offsets[1:])
    tails = np.zeros(int(tail_offsets[-1]), dtype=np.uint8)
    slot = tail_offsets[block_of] + 4 * (np.arange(n) - first_of_block[block_of])
    tails[(slot[:, None] + np.arange(4)).ravel()] = within.astype("<u4").view(np.uint8)
    count_at = tail_offsets[:-1] + 4 * counts
    tails[(count_at[:, None] + np.arange(4)).ravel()] = counts.astype("<u4").view(np.uint8)
    last = np.zeros(n, dtype=bool)
    last[np.append(first_of_block[1:], n) - 1] = True
    tail = binary_from(tails, np.concatenate([[0], tail_offsets[block_of + last]]))
    joined = concat_rows(header, keys, suffix, values, tail, large=False)
    sizes = np.append(block_entry_base[1:], entry_ends[-1]) - block_entry_base + 4 * counts + 4
    starts = np.cumsum(sizes) - sizes
    total = int(entry_ends[-1]) + len(tails)
    return memoryview(joined.buffers()[2])[:total], starts.tolist(), sizes.tolist()


def _sealed(
    data: memoryview, starts: list[int], sizes: list[int], compress: bool
) -> tuple[list[bytes | memoryview], list[int]]:
    """Blocks with their trailers, LZ4-compressed where that saves at least an eighth (as
    RocksDB decides): ``(pieces to write in order, each block's size without trailer)``."""
    pieces: list[bytes | memoryview] = []
    stored: list[int] = []
    checksum = xxhash.xxh32_intdigest
    pack = _FIXED32.pack
    codec = _LZ4 if compress else None
    for start, size in zip(starts, sizes, strict=True):
        raw = data[start : start + size]
        if codec is not None:
            # RocksDB's LZ4 block (compression format 2): varint32 size, then a raw LZ4 block.
            packed = _varint(size) + codec.compress(raw, asbytes=True)
            if len(packed) < size - size // 8:
                pieces.append(packed)
                pieces.append(_LZ4_TYPE + pack(checksum(packed + _LZ4_TYPE)))
                stored.append(len(packed))
                continue
        hasher = xxhash.xxh32(raw)
        hasher.update(_NONE_TYPE)
        pieces.append(raw)
        pieces.append(_NONE_TYPE + pack(hasher.intdigest()))
        stored.append(size)
    return pieces, stored


def _plain_block(entries: list[tuple[bytes, bytes]]) -> bytes:
    """A small block built in Python (properties, metaindex), with its trailer."""
    body = bytearray()
    restarts = []
    for key, value in entries:
        restarts.append(len(body))
        body += b"\x00" + _varint(len(key)) + _varint(len(value)) + key + value
    for offset in restarts:
        body += struct.pack("<I", offset)
    body += struct.pack("<I", len(restarts)) + _NONE_TYPE
    return bytes(body) + _FIXED32.pack(xxhash.xxh32_intdigest(bytes(body)))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _handle(offset: int, size: int) -> bytes:
    return _varint(offset) + _varint(size)


def _sizes(array: pa.Array) -> np.ndarray:
    """The byte length of each value of a binary array (int64)."""
    return np.diff(binary_offsets(array))


class _Table:
    """One SST file being written: data blocks as batches come, then the rest at ``finish``."""

    def __init__(self, f: BinaryIO, compress: bool, deletions: bool) -> None:
        self.f = f
        self.compress = compress
        self.deletions = deletions
        self.offset = 0
        self.entries = 0
        self.deleted = 0
        self.raw_keys = 0
        self.raw_values = 0
        self.index_keys: list[pa.Array] = []
        self.at: list[int] = []
        self.stored: list[int] = []
        self.last_key: bytes | None = None
        # Sealing (LZ4, checksums) and writing a round of blocks run on one helper thread while
        # the next round is laid out: both sides spend most of their time in Arrow, LZ4 and
        # the file write, which release the GIL.
        self._sealer: ThreadPoolExecutor | None = None
        self._sealing: Future[list[int]] | None = None

    def _seal(self, data: memoryview, starts: list[int], sizes: list[int]) -> list[int]:
        pieces, stored = _sealed(data, starts, sizes, self.compress)
        self.f.writelines(pieces)
        return stored

    def _emit(self, data: memoryview | None, starts: list[int], sizes: list[int]) -> None:
        """Seal and write a round of blocks after the rounds before it (None: just wait)."""
        if self._sealing is not None:
            stored = self._sealing.result()
            self._sealing = None
            for size in stored:
                self.at.append(self.offset)
                self.offset += size + _TRAILER
            self.stored += stored
        if data is None:
            return
        if self._sealer is None:
            self._sealer = ThreadPoolExecutor(1, thread_name_prefix="sst-seal")
        self._sealing = self._sealer.submit(self._seal, data, starts, sizes)

    def close(self) -> None:
        """Wait for the helper thread (after an error too) and stop it."""
        if self._sealer is not None:
            with contextlib.suppress(Exception):
                self._emit(None, [], [])
            self._sealer.shutdown(wait=True)
            self._sealer = None

    def add(self, keys: pa.Array | pa.ChunkedArray, values: pa.Array | pa.ChunkedArray) -> None:
        """Append a batch (its keys after every key so far)."""
        keys, values = whole(keys), whole(values)
        n = len(keys)
        if len(values) != n:
            raise ValueError(f"{n} keys but {len(values)} values")
        if not n:
            return
        if keys.null_count or (values.null_count and not self.deletions):
            raise ValueError("an SST file holds no null keys or values")
        suffix: bytes | pa.Array = _PUT_SUFFIX
        if values.null_count:  # deletions: an entry of type 0 with no value
            kinds = np.zeros((n, _SUFFIX_BYTES), dtype=np.uint8)
            kinds[:, 0] = np.where(values.is_valid().to_numpy(zero_copy_only=False), _PUT, _DELETION)
            suffix = binary_from(kinds.ravel(), np.arange(n + 1, dtype=np.int64) * _SUFFIX_BYTES)
            self.deleted += values.null_count
            values = values.fill_null(b"")
        # Binary over the same bytes (a slice of a large binary column may start past 2 GiB).
        keys, values = as_binary(keys), as_binary(values)
        first = keys[0].as_py()
        if (self.last_key is not None and first <= self.last_key) or (
            n > 1 and not pc.all(pc.less(keys.slice(0, n - 1), keys.slice(1))).as_py()
        ):
            raise ValueError("SST keys must be strictly ascending")
        self.last_key = keys[n - 1].as_py()
        key_sizes, value_sizes = _sizes(keys), _sizes(values)
        self.entries += n
        self.raw_keys += int(key_sizes.sum()) + n * _SUFFIX_BYTES
        self.raw_values += int(value_sizes.sum())
        # RocksDB's flush policy cuts a block once it reaches the target: here by running
        # size, so that every block ends within one entry of it (an entry alone can exceed it).
        costs = key_sizes + value_sizes + _SUFFIX_BYTES + 3 + 4
        running = np.cumsum(costs) - costs
        first_of_block = np.flatnonzero(np.diff(running // BLOCK_SIZE, prepend=-1))
        # Whole blocks, about _CHUNK_BYTES of entries at a time.
        chunk_of_block = running[first_of_block] // _CHUNK_BYTES
        chunk_starts = np.flatnonzero(np.diff(chunk_of_block, prepend=-1)).tolist()
        for i, head in enumerate(chunk_starts):
            after = chunk_starts[i + 1] if i + 1 < len(chunk_starts) else len(first_of_block)
            start = int(first_of_block[head])
            stop = int(first_of_block[after]) if after < len(first_of_block) else n
            data, starts, sizes = _blocks(
                keys.slice(start, stop - start),
                suffix if isinstance(suffix, bytes) else suffix.slice(start, stop - start),
                values.slice(start, stop - start), key_sizes[start:stop],
                value_sizes[start:stop], first_of_block[head:after] - start,
            )  # fmt: skip
            self._emit(data, starts, sizes)
            # The index holds each block's last internal key (a deletion's sorts after a put's).
            lasts = pa.array(np.append(first_of_block[head + 1 : after], stop) - 1)
            last_suffix = suffix if isinstance(suffix, bytes) else suffix.take(lasts)
            self.index_keys.append(concat_rows(keys.take(lasts), last_suffix, large=False))

    def finish(self) -> None:
        """Write the index, properties, metaindex and footer."""
        if not self.entries:
            raise ValueError("an SST file needs at least one key")
        self._emit(None, [], [])
        data_size = self.offset
        last_keys = pa.concat_arrays(self.index_keys)
        handles = varint_column(np.array(self.at, np.int64), np.array(self.stored, np.int64))
        index_data, index_starts, index_sizes = _blocks(
            last_keys, b"", handles, _sizes(last_keys), _sizes(handles),
            np.zeros(1, dtype=np.int64),
        )  # fmt: skip
        index_pieces, _ = _sealed(index_data, index_starts, index_sizes, compress=False)
        self.f.writelines(index_pieces)
        index_at, index_size = self.offset, index_sizes[0]
        self.offset += index_size + _TRAILER
        properties = _plain_block(
            _properties(
                self.entries, self.deleted, len(self.at), data_size, index_size, self.raw_keys,
                self.raw_values, b"LZ4" if self.compress else b"NoCompression",
            )
        )  # fmt: skip
        properties_at = self.offset
        self.f.write(properties)
        self.offset += len(properties)
        metaindex = _plain_block(
            [(b"rocksdb.properties", _handle(properties_at, len(properties) - _TRAILER))]
        )
        self.f.write(metaindex)
        handles_bytes = _handle(self.offset, len(metaindex) - _TRAILER) + _handle(
            index_at, index_size
        )
        self.f.write(
            bytes([_CHECKSUM_XXHASH]) + handles_bytes.ljust(40, b"\x00")
            + struct.pack("<IQ", _FORMAT_VERSION, _MAGIC)
        )  # fmt: skip


def write_sst(
    path: str,
    batches: Iterable[tuple[pa.Array, pa.Array]],
    compress: bool = True,
    allow_empty: bool = False,
    deletions: bool = False,
) -> int:
    """Write ``(keys, values)`` batches (binary, no nulls, keys strictly ascending in byte
    order across all batches) as one SST file at ``path`` that ``IngestExternalFile`` takes,
    as ``SstFileWriter`` would; data blocks LZ4-compressed where that pays (``compress``).
    With ``deletions``, a null value writes a deletion of its key (``SstFileWriter.Delete``):
    ingested over a database, the file removes those keys. Batches are encoded as they come:
    memory stays that of a batch. Returns the entries (with ``allow_empty``, 0 for no rows,
    and no file).

    Raises:
        ValueError: no rows (without ``allow_empty``), nulls (null values without
            ``deletions``), or keys not strictly ascending; no file is left.
    """
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as f:
            table = _Table(f, compress, deletions)
            try:
                for keys, values in batches:
                    table.add(keys, values)
                if allow_empty and not table.entries:
                    return 0
                table.finish()
            finally:
                table.close()
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return table.entries


def _properties(
    entries: int, deleted: int, blocks: int, data_size: int, index_size: int, raw_keys: int,
    raw_values: int, compression: bytes,
) -> list[tuple[bytes, bytes]]:  # fmt: skip
    """The table properties ``SstFileWriter`` records (bar its session and host identity)."""
    fixed32 = struct.Struct("<I").pack
    numbers = {
        "column.family.id": _UNKNOWN_COLUMN_FAMILY, "creation.time": 0, "data.size": data_size,
        "deleted.keys": deleted, "filter.size": 0, "fixed.key.length": 0,
        "format.version": _FORMAT_VERSION, "index.key.is.user.key": 0, "index.size": index_size,
        "index.value.is.delta.encoded": 0, "key.largest.seqno": 0, "merge.operands": 0,
        "num.data.blocks": blocks, "num.entries": entries, "num.filter_entries": 0,
        "num.range-deletions": 0, "oldest.key.time": 0, "raw.key.size": raw_keys,
        "raw.value.size": raw_values, "tail.start.offset": data_size,
    }  # fmt: skip
    texts = {
        "block.based.table.prefix.filtering": b"0",
        "block.based.table.whole.key.filtering": b"1",
        "comparator": b"leveldb.BytewiseComparator",
        "compression": compression,
        "creating.db.identity": b"SST Writer",
        "merge.operator": b"nullptr",
        "prefix.extractor.name": b"nullptr",
        "property.collectors": b"[]",
    }
    properties = {f"rocksdb.{k}".encode(): _varint(v) for k, v in numbers.items()}
    properties.update({f"rocksdb.{k}".encode(): v for k, v in texts.items()})
    properties[b"rocksdb.block.based.table.index.type"] = fixed32(0)  # binary search
    properties[b"rocksdb.external_sst_file.version"] = fixed32(2)
    properties[b"rocksdb.external_sst_file.global_seqno"] = struct.pack("<Q", 0)
    return sorted(properties.items())
