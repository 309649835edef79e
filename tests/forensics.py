"""Byte forensics: which files under some directories still hold given byte markers.

A test that erases keys must show that no byte of them survives in any file, and a grep misses
what compression hides. So every file is searched raw and in each decoded view of it:

| file                        | views besides the raw bytes                                       |
|-----------------------------|-------------------------------------------------------------------|
| with ``ARROW1``, IPC stream | every column buffer of every record batch of each Arrow IPC file  |
|                             | at any offset (pieces concatenated), of the stream in it, and of  |
|                             | the file as a stream (pyarrow undoes our changelogs' LZ4 frames)  |
| ``PAR1...`` (parquet)       | every column buffer, decompressed by pyarrow                      |
| ``*.sst`` (RocksDB tables)  | each LZ4 block (trailer type 4), found by scanning, not through   |
|                             | the footer, whose layout varies across RocksDB versions           |
| ``*.log``, ``MANIFEST-*``   | the payloads of the records, without the 32 KiB blocks' headers,  |
|                             | which can split a marker; neither is compressed with our options  |
|                             | (RocksDB compresses a WAL only with ``wal_compression``)          |
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

#: Largest file read (all its views are held in memory).
MAX_FILE_BYTES = 64 << 20
_ARROW_MAGIC = b"ARROW1"
_ARROW_FILE_HEAD = b"ARROW1\x00\x00"  # the magic padded to 8 bytes: a file's start, not its end
_IPC_CONTINUATION = b"\xff\xff\xff\xff"  # how an IPC stream starts
_READ_ERRORS = (pa.ArrowException, ValueError, OSError, IndexError)
_SST_LZ4 = 4  # kLZ4Compression, a block trailer's first byte
_WAL_BLOCK = 32768
_WAL_HEADER = 7  # checksum(4) + length(2) + type(1)
_WAL_RECYCLED_HEADER = 11  # + log number(4), record types 5 to 8 (recycled log files)


def find_markers(
    roots: Iterable[str | os.PathLike[str]], markers: Iterable[bytes]
) -> dict[bytes, list[str]]:
    """For each marker, the files (absolute paths) under any of ``roots`` (walked recursively,
    symlinks not followed) whose bytes, raw or decoded (see the module doc), contain it.

    Raises:
        FileNotFoundError: a root does not exist (searching nothing would prove nothing).
        ValueError: a marker is empty, or a file is larger than ``MAX_FILE_BYTES``.
    """
    found: dict[bytes, list[str]] = {marker: [] for marker in markers}
    if b"" in found:
        raise ValueError("[EMPTY_MARKER] the empty marker is in every file; pass non-empty ones")
    for path in _files(roots):
        missing = set(found)
        for view in decoded_views(path):
            for marker in [m for m in missing if m in view]:
                missing.discard(marker)
                found[marker].append(path)
            if not missing:
                break
    return found


def _files(roots: Iterable[str | os.PathLike[str]]) -> Iterator[str]:
    for root in roots:
        top = os.path.abspath(root)
        if not os.path.lexists(top):
            raise FileNotFoundError(f"[NO_SUCH_ROOT] {top} does not exist; pass existing paths")
        if os.path.islink(top) or not os.path.isdir(top):
            yield top
            continue
        for folder, _, names in os.walk(top):  # os.walk enters no linked folder
            for name in sorted(names):
                if not os.path.islink(path := os.path.join(folder, name)):
                    yield path


def decoded_views(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The raw bytes of the file at ``path``, then every decoded view of them (see the module
    doc); what fails to decode gives no view.

    Raises:
        ValueError: the file is larger than ``MAX_FILE_BYTES``.
    """
    if (size := os.path.getsize(path)) > MAX_FILE_BYTES:
        raise ValueError(
            f"[FILE_TOO_LARGE] {os.fspath(path)} has {size} bytes, over the {MAX_FILE_BYTES} "
            "that forensics reads; search a smaller store"
        )
    with open(path, "rb") as file:
        data = file.read()
    yield data
    name = os.path.basename(path)
    if _ARROW_FILE_HEAD in data or data.startswith(_IPC_CONTINUATION):
        yield from ipc_views(data)
    if data.startswith(b"PAR1"):
        yield from parquet_views(data)
    if name.endswith(".sst"):
        yield from sst_lz4_blocks(data)
    if name.endswith(".log") or name.startswith("MANIFEST-"):
        yield wal_payloads(data)


def ipc_views(data: bytes) -> Iterator[bytes]:
    """Every column buffer of each Arrow IPC file starting at any offset of ``data`` (and
    ending at a later ``ARROW1``), of the stream inside it, and of ``data`` as a stream."""
    whole = pa.py_buffer(data)
    magics = [m.start() for m in re.finditer(_ARROW_MAGIC, data)]
    for start in (m for m in magics if data.startswith(_ARROW_FILE_HEAD, m)):
        for end in (m + len(_ARROW_MAGIC) for m in magics if m > start):
            if (batches := _file_batches(whole.slice(start, end - start))) is not None:
                yield from _batch_views(batches)
                break
        # The stream inside the file: what a truncated file or a bad footer still holds.
        yield from _batch_views(_stream_batches(whole.slice(start + len(_ARROW_FILE_HEAD))))
    if data.startswith(_IPC_CONTINUATION):
        yield from _batch_views(_stream_batches(whole))


def _file_batches(buffer: pa.Buffer) -> list[pa.RecordBatch] | None:
    try:
        reader = pa.ipc.open_file(buffer)
        return [reader.get_batch(i) for i in range(reader.num_record_batches)]
    except _READ_ERRORS:
        return None


def _stream_batches(buffer: pa.Buffer) -> list[pa.RecordBatch]:
    batches: list[pa.RecordBatch] = []
    try:
        for batch in pa.ipc.open_stream(buffer):
            batches.append(batch)  # noqa: PERF402 (one at a time: a failure keeps those before)
    except _READ_ERRORS:
        pass
    return batches


def _batch_views(batches: list[pa.RecordBatch]) -> Iterator[bytes]:
    for batch in batches:
        for column in batch.columns:
            yield from array_views(column)


def parquet_views(data: bytes) -> Iterator[bytes]:
    """Every buffer of every column of the parquet file ``data`` (none if it is unreadable)."""
    try:
        batches = pq.read_table(pa.BufferReader(data)).to_batches()
    except _READ_ERRORS:
        return
    yield from _batch_views(batches)


def array_views(array: pa.Array) -> Iterator[bytes]:
    """Every buffer of ``array`` and, recursively, of its children and its dictionary."""
    for buffer in array.buffers()[: array.type.num_buffers]:  # its own; the children's below
        if buffer is not None:
            yield buffer.to_pybytes()
    kind = array.type
    if isinstance(array, pa.DictionaryArray):
        children = [array.dictionary]
    elif isinstance(array, pa.ExtensionArray):
        children = [array.storage]
    elif pa.types.is_struct(kind) or pa.types.is_union(kind):
        children = [array.field(i) for i in range(kind.num_fields)]
    elif pa.types.is_run_end_encoded(kind):
        children = [array.run_ends, array.values]
    else:  # the lists and maps have values
        children = [array.values] if hasattr(array, "values") else []
    for child in children:
        yield from array_views(child)


def _length(data: bytes, pos: int, length: int) -> tuple[int, int]:
    """An LZ4 length whose token nibble is ``length``: ``(length, pos)`` after its extra bytes
    (which follow a nibble of 15)."""
    if length == 15:
        while True:
            extra = data[pos]  # IndexError past the end: the caller's failure
            pos += 1
            length += extra
            if extra != 255:
                break
    return length, pos


def lz4_block_decode(data: bytes, start: int, size: int) -> tuple[bytes, int] | None:
    """Decode the raw LZ4 block (no frame) at ``data[start:]`` until ``size`` bytes are out.

    Returns ``(output, bytes of data consumed)``, or ``None`` where no such block is there:
    ``start`` out of range, input ending early, a match offset 0 or beyond the output, or more
    output than ``size``.
    """
    if not 0 <= start < len(data) or not 0 <= size <= MAX_FILE_BYTES:
        return None
    out = bytearray()
    pos = start
    try:
        while True:
            token = data[pos]
            length, pos = _length(data, pos + 1, token >> 4)
            if pos + length > len(data) or len(out) + length > size:
                return None
            out += data[pos : pos + length]
            pos += length
            if len(out) == size:  # the last sequence has literals only
                return bytes(out), pos - start
            offset = data[pos] | data[pos + 1] << 8
            length, pos = _length(data, pos + 2, token & 15)
            length += 4  # the minimum match
            if not 0 < offset <= len(out) or len(out) + length > size:
                return None
            if offset >= length:
                out += out[len(out) - offset : len(out) - offset + length]
            else:  # overlapping: the last ``offset`` bytes repeat
                out += (out[-offset:] * (length // offset + 1))[:length]
    except IndexError:
        return None


def rocksdb_lz4_block(data: bytes, start: int) -> tuple[bytes, int] | None:
    """Decode RocksDB's LZ4 block contents (compression format 2: ``[varint32 size][raw LZ4
    block]``) at ``data[start:]``: ``(output, bytes consumed)``, or ``None``."""
    size = shift = 0
    for pos in range(start, min(start + 5, len(data))):
        size |= (data[pos] & 0x7F) << shift
        shift += 7
        if data[pos] < 0x80:
            decoded = lz4_block_decode(data, pos + 1, size) if size else None
            return None if decoded is None else (decoded[0], pos + 1 - start + decoded[1])
    return None


def _lz4_start_pattern() -> re.Pattern[bytes]:
    """Where a RocksDB LZ4 block can start (a necessary test, in C, of every offset at once):
    a size varint, then a first sequence of 15 or more literals, or of n < 15 literals and a
    match reaching back at most n bytes; or, for a size n < 15, n literals alone."""
    first, alone = [rb"[\xf0-\xff]"], []
    for n in range(1, 15):
        first.append(b"[\\x%02x-\\x%02x].{%d}[\\x01-\\x%02x]\\x00" % (n << 4, n << 4 | 15, n, n))
        alone.append(b"\\x%02x[\\x%02x-\\x%02x]" % (n, n << 4, n << 4 | 15))
    sized = rb"[\x80-\xff]{0,4}[\x00-\x7f](?:" + b"|".join(first) + b")"
    return re.compile(b"(?=" + b"|".join([sized, *alone]) + b")", re.DOTALL)


_LZ4_START = _lz4_start_pattern()


def sst_lz4_blocks(data: bytes) -> Iterator[bytes]:
    """Every LZ4-compressed block of the SST file ``data``: what decodes at any offset where
    one can start and is followed by a trailer of type 4. No offset is skipped, not even
    within a block found: a spurious decode must not hide a real block that it overlaps."""
    for match in _LZ4_START.finditer(data):
        if (decoded := rocksdb_lz4_block(data, match.start())) is not None:
            trailer = match.start() + decoded[1]
            if trailer < len(data) and data[trailer] == _SST_LZ4:
                yield decoded[0]


def wal_payloads(data: bytes) -> bytes:
    """The payloads of a RocksDB log file's records (WAL or MANIFEST) back to back: its 32 KiB
    blocks without their record headers and the zero padding of their tails."""
    out = bytearray()
    for block in range(0, len(data), _WAL_BLOCK):
        block_end = min(block + _WAL_BLOCK, len(data))
        pos = block
        while block_end - pos >= _WAL_HEADER:
            length, kind = data[pos + 4] | data[pos + 5] << 8, data[pos + 6]
            if kind == 0 and length == 0:  # padding, or space allocated ahead
                break
            header = _WAL_RECYCLED_HEADER if 5 <= kind <= 8 else _WAL_HEADER
            out += data[pos + header : min(pos + header + length, block_end)]
            pos += header + length
    return bytes(out)
