"""Sorting rows by serialized key bytes (RocksDB's order), then by numbers, with numpy.

Every columnar read sorts by store key: Arrow's ``sort_indices`` compares binary values one pair
at a time. Keys of up to 32 bytes are instead cut into big-endian 64-bit words (zero-padded on
the right) and sorted by ``numpy.lexsort`` on (words..., length, tie-breakers...), which orders
byte strings as RocksDB does (a key sorts before any longer key it is a prefix of: equal words,
smaller length) about twice as fast. Longer keys go to Arrow.

| keys                        | how                                              |
|-----------------------------|--------------------------------------------------|
| one length, <= 32 bytes     | the data buffer viewed as rows, copied to words  |
| mixed lengths, <= 32 bytes  | rows gathered into a zeroed matrix, then words   |
| any longer than 32 bytes    | ``pyarrow.compute.sort_indices``                   |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.arrow_bytes import binary_data, binary_offsets

#: Keys up to this many bytes are sorted by numpy; longer ones by Arrow.
MAX_WORDS_BYTES = 32

#: A tie-breaker: an integer or boolean column, and whether it sorts descending.
Column = tuple[Any, bool]


def _numbers(column: Any, descending: bool) -> np.ndarray:
    values = (
        column.to_numpy(zero_copy_only=False)
        if isinstance(column, (pa.Array, pa.ChunkedArray))
        else np.asarray(column)
    )
    if values.dtype == bool:
        values = values.astype(np.int8)
    return ~values if descending else values  # ~x = -x - 1: reversed order, no overflow


def key_order(
    keys: pa.Array | pa.ChunkedArray,
    before: Sequence[Column] = (),
    after: Sequence[Column] = (),
) -> np.ndarray:
    """Row indices (int64) in order of ``before`` columns, then key bytes, then ``after``
    columns; stable. ``keys`` is binary without nulls.
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], keys.type)
    if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type):
        keys = keys.cast(pa.large_binary() if pa.types.is_large_string(keys.type) else pa.binary())
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = binary_offsets(keys)
    lengths = np.diff(offsets)
    longest = int(lengths.max())
    if longest > MAX_WORDS_BYTES or keys.null_count:
        return _arrow_order(keys, before, after)
    words = max(1, (longest + 7) // 8)
    data = binary_data(keys)
    matrix = np.zeros((n, words * 8), dtype=np.uint8)
    if longest and (lengths == longest).all():
        start = int(offsets[0])
        matrix[:, :longest] = data[start : start + n * longest].reshape(n, longest)
    elif longest:
        row = np.repeat(np.arange(n), lengths)
        within = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        matrix[row, within] = data[offsets[:-1][row] + within]
    columns = matrix.view(">u8")
    # lexsort: the last column is the primary one.
    sort_by = [_numbers(c, d) for c, d in reversed(after)]
    if (lengths != longest).any():
        sort_by.append(lengths)
    sort_by += [columns[:, j] for j in reversed(range(words))]
    sort_by += [_numbers(c, d) for c, d in reversed(before)]
    return np.lexsort(sort_by).astype(np.int64)


def _arrow_order(keys: pa.Array, before: Sequence[Column], after: Sequence[Column]) -> np.ndarray:
    columns: dict[str, Any] = {}
    sort_keys = []
    for i, (column, descending) in enumerate(before):
        columns[f"b{i}"] = _numbers(column, False)
        sort_keys.append((f"b{i}", "descending" if descending else "ascending"))
    columns["key"] = keys
    sort_keys.append(("key", "ascending"))
    for i, (column, descending) in enumerate(after):
        columns[f"a{i}"] = _numbers(column, False)
        sort_keys.append((f"a{i}", "descending" if descending else "ascending"))
    return pc.sort_indices(pa.table(columns), sort_keys=sort_keys).to_numpy().astype(np.int64)
