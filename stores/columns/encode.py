"""Kafka's and RocksDB's byte layouts built over whole Arrow columns with numpy: varints,
big-endian integers, binary arrays over numpy buffers. ``pyarrow.compute.binary_join_element_wise``
then concatenates such pieces row by row, with no Python object per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def binary_offsets(array: pa.Array) -> np.ndarray:
    """The int64 value offsets of a binary array (binary or large binary), honouring its
    slice: value ``i`` is ``binary_data(array)[offsets[i]:offsets[i + 1]]``."""
    wide = pa.types.is_large_binary(array.type)
    return np.frombuffer(
        array.buffers()[1], np.int64 if wide else np.int32, len(array) + 1,
        array.offset * (8 if wide else 4),
    ).astype(np.int64)  # fmt: skip


def binary_data(array: pa.Array) -> np.ndarray:
    """A binary array's data buffer as uint8 (empty when it has none)."""
    data = array.buffers()[2]
    return np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)


def whole(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one array, without a copy where it is one already (``combine_chunks``
    copies even a single chunk: on a hot path, a copy of every byte)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    if column.num_chunks == 1:
        return column.chunk(0)
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


def taken(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """The rows of ``table`` at indices ``rows``, copied; ``table`` itself where ``rows`` are
    all of its rows in order (a store whose keys came ascending, one write each). Ascending
    ``rows`` are filtered chunk by chunk: a take would first copy a table of several chunks
    (a changelog file's batches) whole."""
    if not bool((rows[1:] > rows[:-1]).all()):
        return table.take(pa.array(rows))
    if len(rows) == table.num_rows:
        return table
    keep = np.zeros(table.num_rows, dtype=bool)
    keep[rows] = True
    return table.filter(pa.array(keep))


def in_order(rows: np.ndarray, key_order: bool) -> np.ndarray:
    """Distinct row indices chosen in key order (a store's winning rows): as they are with
    ``key_order``, else ascending, so that ``taken`` reads the table front to back instead of
    at random. A read that need not be in key order (a DataFrame has no order) saves most of
    its gather: at 4M rows of 116 bytes, a random gather cost 100 ns a row in process and
    several times that in a busy Spark worker; an ascending one copies nothing where every row
    is kept."""
    return rows if key_order else np.sort(rows)


def whole_table(table: pa.Table) -> pa.Table:
    """``table`` with each column one chunk, copied only where a column has several."""
    if all(c.num_chunks <= 1 for c in table.columns) and table.num_rows:
        return table
    return table.combine_chunks()


def as_binary(array: pa.Array) -> pa.Array:
    """A binary-like array without nulls, of under 2 GiB of bytes, as binary. A large binary
    one keeps its bytes and gets offsets from 0: Arrow's cast checks a slice's offsets as they
    are in the whole array, so it refuses a slice that starts past 2 GiB."""
    if pa.types.is_large_string(array.type):
        array = array.view(pa.large_binary())
    if not pa.types.is_large_binary(array.type):
        return array.cast(pa.binary())
    offsets = binary_offsets(array)
    data = binary_data(array)[int(offsets[0]) : int(offsets[-1])]
    return binary_from(data, offsets - offsets[0])


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes of each value as an unsigned varint (LEB128; values in ``[0, 2**35)``). Kafka's
    zig-zag varint of a size ``n >= 0`` is the unsigned varint of ``2 * n``."""
    sizes = np.ones(len(values), dtype=np.int64)
    for bits in (7, 14, 21, 28):
        sizes += values >= (1 << bits)
    return sizes


def put_varints(out: np.ndarray, at: np.ndarray, values: np.ndarray, sizes: np.ndarray) -> None:
    """Write ``values[i]`` as a varint at ``out[at[i]:]`` (``sizes`` from ``varint_sizes``)."""
    for j in range(5):
        rows = np.flatnonzero(sizes > j)
        if not len(rows):
            return
        more = (sizes[rows] > j + 1).astype(np.uint8) << 7
        out[at[rows] + j] = ((values[rows] >> (7 * j)) & 0x7F).astype(np.uint8) | more


def exact(array: pa.Array) -> pa.Array:
    """``array`` copied into buffers that hold its own values and nothing else.

    An Arrow IPC writer pads each buffer of a sliced array to 64 bytes with the bytes that
    follow the slice in its parent: a piece cut from a larger array carries bytes of its
    neighbours' values, which no reader sees but the file holds. Arrays written as ``exact``
    carry none (an erasure's rewritten files, ``catalog.operations.erase``).
    """
    n, kind = len(array), array.type
    validity = None
    if array.null_count:
        valid = pc.is_valid(array).to_numpy(zero_copy_only=False)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    if pa.types.is_binary(kind) or pa.types.is_string(kind) or pa.types.is_large_binary(
        kind
    ) or pa.types.is_large_string(kind):
        wide = pa.types.is_large_binary(kind) or pa.types.is_large_string(kind)
        offsets = binary_offsets(array)
        data = binary_data(array)[int(offsets[0]) : int(offsets[-1])].tobytes()
        cut = (offsets - offsets[0]).astype(np.int64 if wide else np.int32).tobytes()
        buffers = [validity, pa.py_buffer(cut), pa.py_buffer(data)]
    elif pa.types.is_boolean(kind):
        bits = pc.fill_null(array, False).to_numpy(zero_copy_only=False)
        buffers = [validity, pa.py_buffer(np.packbits(bits, bitorder="little").tobytes())]
    elif kind.bit_width % 8 == 0 and kind.num_fields == 0:
        width = kind.bit_width // 8
        raw = np.frombuffer(array.buffers()[1], np.uint8)
        buffers = [validity, pa.py_buffer(raw[array.offset * width : (array.offset + n) * width]
                                          .tobytes())]  # fmt: skip
    else:  # nested: rebuilt from its values
        return pa.array(array.to_pylist(), kind)
    return pa.Array.from_buffers(kind, n, buffers, null_count=array.null_count)


def binary_from(data: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """A binary array over ``data`` (uint8) cut at ``offsets`` (large past 2 GiB)."""
    large = len(offsets) and int(offsets[-1]) >= 1 << 31
    return pa.Array.from_buffers(
        pa.large_binary() if large else pa.binary(), len(offsets) - 1,
        [None, pa.py_buffer(offsets.astype(np.int64 if large else np.int32)), pa.py_buffer(data)],
    )  # fmt: skip


def _varint_width(values: np.ndarray) -> int | None:
    """The varint size every one of ``values`` has, or None where sizes differ."""
    if not len(values):
        return 1
    low, high = varint_sizes(np.array([values.min(), values.max()], dtype=np.int64)).tolist()
    return int(low) if low == high else None


def varint_column(*columns: np.ndarray, lead_zero: bool = False) -> pa.Array:
    """Per row, the varints of ``columns`` back to back (after a zero byte: ``lead_zero``)."""
    widths = [_varint_width(c) for c in columns]
    if None not in widths:
        # Every row the same width (sizes of fixed-width keys, values all under 128 bytes, ...):
        # a matrix of rows filled a byte column at a time, cut at fixed offsets.
        fixed = [int(w) for w in widths if w is not None]
        rows = np.zeros((len(columns[0]), int(lead_zero) + sum(fixed)), dtype=np.uint8)
        first = int(lead_zero)  # the matrix column of a varint's first byte
        for column, width in zip(columns, fixed, strict=True):
            for j in range(width):
                byte = (column >> (7 * j)) & 0x7F
                rows[:, first + j] = byte | 0x80 if j + 1 < width else byte
            first += width
        offsets = np.arange(len(rows) + 1, dtype=np.int64) * rows.shape[1]
        return binary_from(rows.ravel(), offsets)
    sizes = [varint_sizes(c) for c in columns]
    lengths = sum(sizes, np.full(len(columns[0]), int(lead_zero), dtype=np.int64))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), dtype=np.uint8)
    at = offsets[:-1] + int(lead_zero)
    for column, size in zip(columns, sizes, strict=True):
        put_varints(data, at, column, size)
        at = at + size
    return binary_from(data, offsets)


def big_endian_column(values: np.ndarray, width: int = 8) -> pa.Array:
    """Each signed integer as ``width`` big-endian bytes (Kafka's ``LongSerializer`` layout
    for 8), as a binary array."""
    data = np.ascontiguousarray(values.astype(f">i{width}")).view(np.uint8)
    return binary_from(data, np.arange(len(values) + 1, dtype=np.int64) * width)


def concat_rows(*pieces: pa.Array | bytes, large: bool = True) -> pa.Array:
    """Per row, the ``pieces`` back to back: binary arrays of one length, or ``bytes`` the same
    in every row; large binary (``large``) or binary (the pieces' bytes must then fit 2 GiB)."""
    kind = pa.large_binary() if large else pa.binary()
    parts = [pa.scalar(p, kind) if isinstance(p, bytes) else p.cast(kind) for p in pieces]
    return pc.binary_join_element_wise(*parts, pa.scalar(b"", kind))
