"""CRC-32 (zlib's, IEEE) of every value of an Arrow binary column at once, with numpy.

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
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa

from stores.columns.encode import binary_data, binary_offsets

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
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], values.type)
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
