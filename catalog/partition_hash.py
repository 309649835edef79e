"""CRC-32 (zlib's, IEEE) and Kafka's murmur2 of every value of an Arrow binary column at once,
with numpy (``crc32_array``, ``murmur2_array``).

CRC-32
------

zlib's ``crc32`` is fast per call, but a Python loop over a million keys spends most of its time
making ``bytes`` objects and calling. Here the rows are computed side by side, two bytes per
numpy step, from what CRC-32 is: a linear map over GF(2).

- Started from a zero register, a row's register is the XOR over its byte pairs of a table
  entry: the register of that pair followed by ``k`` zero bytes (``_pair_table(k)``). Zero
  bytes leave a zero register at zero, so an odd row is left-padded with one.
- zlib starts from ``0xFFFFFFFF`` and inverts at the end; by linearity that adds a term that
  depends on the length only: ``crc32(b"\\0" * length)``.

| rows                    | how                                                          |
|-------------------------|--------------------------------------------------------------|
| all one length, <= 64   | the data buffer viewed as a ``(rows, length)`` matrix, no copy |
| mixed lengths, <= 64    | sorted by length (a radix sort), one gathered matrix each    |
| longer than 64 bytes    | zlib, one call per row (small next to the row's own cost)    |

A pair table is 65,536 ``uint32`` (256 KiB), made when first needed; at most 32 of them.

murmur2
-------
Kafka's ``Utils.murmur2`` (the producer's and Kafka Streams' default partitioner hashes the
serialized key with it) mixes a row's 4-byte little-endian blocks into its hash one after
another, so the rows are computed side by side, one block index per numpy step, in ``uint32``
(whose wrap-around is Java's ``int`` overflow; ``>>`` on ``uint32`` is Java's ``>>>``):

- rows ordered by block count, longest first, so the rows that have a block ``j`` are a prefix;
- block ``j`` of each of them is read where it lies, from a view of the data buffer as a
  ``uint32`` at every byte offset (no copy, no per-length grouping);
- then the 0 to 3 tail bytes and the final mix, over all rows at once.

The numpy steps are as many as the longest row has blocks (e.g. 3 for 12-byte keys): a single
1 MiB key among short ones costs 262,144 small steps.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa

from stores.columns.encode import binary_data, binary_offsets, whole

#: Rows up to this many bytes are computed in numpy; longer ones by zlib, one call each.
MAX_WIDTH = 64

_POLY = np.uint32(0xEDB88320)  # CRC-32's polynomial, reflected


def _byte_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ _POLY, table >> 1).astype(np.uint32)
    return table


_BYTE = _byte_table()
_BYTE_TABLES: list[np.ndarray] = [_BYTE]  # [k]: the register of one byte, then k zero bytes
_PAIR_TABLES: dict[int, np.ndarray] = {}  # [k]: of a little-endian byte pair, then k zeros
# zlib.crc32 of ``length`` zero bytes: the term the initial register adds to a row's CRC.
_ZEROS = np.array([zlib.crc32(bytes(n)) for n in range(MAX_WIDTH + 1)], dtype=np.uint32)


def _byte_table_after(zeros: int) -> np.ndarray:
    while len(_BYTE_TABLES) <= zeros:
        previous = _BYTE_TABLES[-1]
        _BYTE_TABLES.append(_BYTE[previous & 0xFF] ^ (previous >> 8))
    return _BYTE_TABLES[zeros]


def _pair_table(zeros: int) -> np.ndarray:
    table = _PAIR_TABLES.get(zeros)
    if table is None:
        pairs = np.arange(1 << 16, dtype=np.uint32)
        # The low byte comes first in the data, so one more byte follows it than the high one.
        table = _byte_table_after(zeros + 1)[pairs & 0xFF] ^ _byte_table_after(zeros)[pairs >> 8]
        _PAIR_TABLES[zeros] = table
    return table


def _crc_of_rows(matrix: np.ndarray) -> np.ndarray:
    """``zlib.crc32`` of each row of a ``(rows, length)`` uint8 matrix."""
    rows, length = matrix.shape
    if length % 2:  # one zero byte on the left: an even width, the same register
        matrix = np.hstack([np.zeros((rows, 1), np.uint8), matrix])
    return _registers(matrix) ^ _ZEROS[length]


def _registers(matrix: np.ndarray) -> np.ndarray:
    """The zero-initialised CRC register of each row of a ``(rows, width)`` uint8 matrix
    (``width`` even)."""
    rows, width = matrix.shape
    pairs = np.ascontiguousarray(np.ascontiguousarray(matrix).view("<u2").T)
    register = np.zeros(rows, dtype=np.uint32)
    for j in range(width // 2):
        register ^= _pair_table(width - 2 - 2 * j)[pairs[j]]
    return register


def _buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets as int64, data as uint8)`` of a binary-like array, honouring its slice."""
    if pa.types.is_string(values.type):
        values = values.cast(pa.binary())
    elif pa.types.is_large_string(values.type):
        values = values.cast(pa.large_binary())
    if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
        raise TypeError(f"crc32 needs a binary or string array, not {values.type}")
    return binary_offsets(values), binary_data(values)


def crc32_array(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``zlib.crc32`` of every value, as ``uint32`` (a null counts as empty bytes).

    Raises:
        TypeError: ``values`` is not binary or string.
    """
    values = whole(values)
    offsets, data = _buffers(values)
    rows = len(values)
    if values.null_count:
        # A null's offsets may span bytes; count it as empty, as its ``as_py`` would be.
        lengths = np.where(values.is_null().to_numpy(zero_copy_only=False), 0, np.diff(offsets))
    else:
        lengths = np.diff(offsets)
    starts = offsets[:-1]
    out = np.empty(rows, dtype=np.uint32)
    if rows == 0:
        return out
    first = int(lengths[0])
    if first <= MAX_WIDTH and not values.null_count and (lengths == first).all():
        # One length: the data buffer is the matrix already.
        return _crc_of_rows(data[starts[0] : starts[0] + rows * first].reshape(rows, first))
    # Rows grouped by length (a radix sort of small ints); longer rows last, zlib's.
    order = np.argsort(np.minimum(lengths, MAX_WIDTH + 1).astype(np.uint8), kind="stable")
    ordered_lengths = lengths[order]
    crc = zlib.crc32
    for group in np.split(order, np.flatnonzero(np.diff(ordered_lengths)) + 1):
        length = int(lengths[group[0]])
        if length > MAX_WIDTH:
            for i in group.tolist():
                start = int(starts[i])
                out[i] = crc(data[start : start + int(lengths[i])].tobytes())
        else:
            out[group] = _crc_of_rows(data[starts[group][:, None] + np.arange(length)])
    return out


_SEED = 0x9747B28C  # Kafka's seed and mixing constant (Utils.murmur2)
_M = np.uint32(0x5BD1E995)


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of one byte string, as Java's signed ``int``: the reference
    ``murmur2_array`` is checked against, statement for statement Kafka's."""
    mask = 0xFFFFFFFF
    m = 0x5BD1E995
    length = len(data)
    h = (_SEED ^ length) & mask
    for i in range(length // 4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = length & ~3
    if length % 4 == 3:
        h ^= data[tail + 2] << 16
    if length % 4 >= 2:
        h ^= data[tail + 1] << 8
    if length % 4 >= 1:
        h ^= data[tail]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_array(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Kafka's ``Utils.murmur2`` of every value, as ``int32`` (Java's ``int``; a null counts
    as empty bytes).

    Raises:
        TypeError: ``values`` is not binary or string.
    """
    values = whole(values)
    offsets, data = _buffers(values)
    lengths = np.diff(offsets)
    if values.null_count:
        lengths[values.is_null().to_numpy(zero_copy_only=False)] = 0
    starts = offsets[:-1]
    h = lengths.astype(np.uint32) ^ np.uint32(_SEED)
    blocks = lengths // 4
    most = int(blocks.max()) if len(blocks) else 0
    if most:
        # Longest rows first: the rows with a block ``j`` are the first ``having[j]``.
        order = np.argsort(-blocks, kind="stable")
        having = np.searchsorted(-blocks[order], -np.arange(most), side="left")
        at = starts[order]
        ordered = h[order]
        # The data as a little-endian uint32 at every byte offset (unaligned, no copy).
        words = np.ndarray((len(data) - 3,), dtype="<u4", buffer=data, strides=(1,))
        for j in range(most):
            n = int(having[j])
            k = words[at[:n] + 4 * j].astype(np.uint32, copy=False)
            k *= _M
            k ^= k >> 24
            k *= _M
            ordered[:n] *= _M
            ordered[:n] ^= k
        h[order] = ordered
    tail = starts + (lengths & ~3)
    rest = lengths % 4
    for byte, shift in ((2, 16), (1, 8), (0, 0)):
        rows = np.flatnonzero(rest > byte)
        h[rows] ^= data[tail[rows] + byte].astype(np.uint32) << shift
    rows = np.flatnonzero(rest > 0)
    h[rows] *= _M
    h ^= h >> 13
    h *= _M
    h ^= h >> 15
    return h.view(np.int32)
