"""The ``headers`` column: Spark's ``list<struct<key: string, value: binary>>`` to and from
KIP-1271 ``headersBytes`` (``stores.formats.headers``), a whole column at a time.

``headersBytes`` is ``[varint count]`` then per header ``[varint key size][key UTF-8]
[varint value size, -1 for null][value]``, all Kafka zig-zag varints; no headers is empty bytes.

- Encoding works on the flattened headers: each header's bytes come from one
  ``binary_join_element_wise`` over its size columns, key and value; as the flattened headers
  are in row order, a row's headers are then one range of those bytes, cut at the list offsets
  (no copy), and its count goes in front.
- Decoding parses all rows side by side, the ``j``-th header of every row that has one per
  step (``ByteColumn.varints_at``): as many numpy passes as the most headers in a row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import ByteColumn
from stores.columns.encode import (
    binary_data,
    binary_from,
    binary_offsets,
    concat_rows,
    varint_column,
    whole,
)
from stores.errors import CorruptDataError, InvalidOptionError

#: The typed ``headers`` column: Kafka's headers, in order, duplicates and null values kept.
HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))


def _zigzag(sizes: np.ndarray) -> np.ndarray:
    """Kafka's zig-zag mapping of sizes >= -1 (``2n`` for ``n >= 0``, 1 for -1)."""
    return np.where(sizes < 0, 1, 2 * sizes)


def headers_from_arrow(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``list<struct<key, value>>`` per row (null: no headers) to KIP-1271 headersBytes.

    Raises:
        InvalidOptionError: a header (or its key) is null.
    """
    column = whole(column)
    flat = column.flatten()
    key_column = flat.field("key")
    if flat.null_count or key_column.null_count:
        raise InvalidOptionError(
            "column 'headers' has a null header or a header with a null key; a header needs a "
            "string key (its value may be null)",
            code="NULL_HEADER_KEY",
        )
    counts = pc.list_value_length(column).fill_null(0).to_numpy(zero_copy_only=False)
    counts = counts.astype(np.int64)
    keys = key_column.cast(pa.binary())
    values = flat.field("value").cast(pa.binary())
    key_sizes = pc.binary_length(keys).to_numpy(zero_copy_only=False).astype(np.int64)
    value_sizes = pc.binary_length(values).fill_null(-1).to_numpy(zero_copy_only=False)
    each = concat_rows(
        varint_column(_zigzag(key_sizes)), keys,
        varint_column(_zigzag(value_sizes.astype(np.int64))), values.fill_null(b""), large=False,
    )  # fmt: skip
    # A row's headers: one range of ``each``'s bytes, from its first header to its last.
    header_offsets = binary_offsets(each)
    ends = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ends[1:])
    data = binary_data(each)
    bodies = binary_from(data, header_offsets[ends])
    prefix = pc.if_else(
        pa.array(counts > 0), varint_column(_zigzag(counts)), pa.scalar(b"", pa.binary())
    )
    return concat_rows(prefix, bodies, large=False)


def headers_to_arrow(raw: pa.Array | pa.ChunkedArray) -> pa.Array:
    """KIP-1271 headersBytes per row (null: a null list) to ``list<struct<key, value>>``.

    Raises:
        CorruptDataError: bytes that do not follow the layout (a negative count or size, a
            key or value past the row's end, trailing bytes, a key that is not UTF-8).
    """
    raw = whole(raw)
    column = ByteColumn(raw)
    n = len(raw)
    row_ends = column.starts + column.lengths
    has = column.lengths > 0
    rows = np.flatnonzero(has)
    counts = np.zeros(n, dtype=np.int64)
    pos = column.starts.copy()
    if len(rows):
        counts[rows], width = _varints(column, pos[rows], row_ends[rows])
        pos[rows] += width
    if (counts < 0).any():
        raise CorruptDataError("a negative header count in stored headers")
    firsts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=firsts[1:])
    total = int(firsts[-1])
    key_at = np.zeros(total, dtype=np.int64)
    key_size = np.zeros(total, dtype=np.int64)
    value_at = np.zeros(total, dtype=np.int64)
    value_size = np.zeros(total, dtype=np.int64)
    for j in range(int(counts.max()) if n else 0):
        active = np.flatnonzero(counts > j)
        slot = firsts[active] + j
        size, width = _varints(column, pos[active], row_ends[active])
        start = pos[active] + width
        if (size < 0).any() or (start + size > row_ends[active]).any():
            raise CorruptDataError("a header key overruns the stored headers")
        key_at[slot], key_size[slot] = start, size
        after = start + size
        size, width = _varints(column, after, row_ends[active])
        start = after + width
        if (size < -1).any() or (start + np.maximum(size, 0) > row_ends[active]).any():
            raise CorruptDataError("a header value overruns the stored headers")
        value_at[slot], value_size[slot] = start, size
        pos[active] = start + np.maximum(size, 0)
    if (pos[has] != row_ends[has]).any():
        raise CorruptDataError("trailing bytes after stored headers")
    try:
        keys = column.slices(key_at, key_size).cast(pa.large_string()).cast(pa.string())
    except pa.ArrowInvalid as exc:
        raise CorruptDataError(f"a header key is not UTF-8: {exc}") from exc
    values = column.slices(value_at, np.maximum(value_size, 0), value_size < 0).cast(pa.binary())
    entries = pa.StructArray.from_arrays([keys, values], fields=list(HEADERS_TYPE.value_type))
    mask = raw.is_null() if raw.null_count else None
    return pa.ListArray.from_arrays(pa.array(firsts, pa.int32()), entries, HEADERS_TYPE, mask=mask)


def _varints(column: ByteColumn, at: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at ``at`` that must end before ``ends``: (values, sizes)."""
    if len(at) and (at >= ends).any():
        raise CorruptDataError("stored headers end inside a varint")
    values, sizes = column.varints_at(at)
    if len(at) and (at + sizes > ends).any():
        raise CorruptDataError("stored headers end inside a varint")
    return values, sizes
