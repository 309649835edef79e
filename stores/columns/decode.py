"""Many binary values read at once with numpy: the decoding of Kafka's byte layouts in bulk.

Snapshots (``catalog.operations.compaction``) hold a store's RocksDB rows; reading them back as columns
(``stores.versioned.columns``, ``stores.window.columns``) cuts fields out of every row. Doing
that per row in Python costs a Python object per field; here each field is one numpy gather
over all rows, and byte ranges become an Arrow array over the same buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from stores.columns.encode import (
    big_endian_column,
    binary_offsets,
    concat_rows,
    varint_column,
    whole,
)
from stores.errors import CorruptDataError

_BYTES = pa.large_binary()
Ints = np.ndarray[Any, Any]


class ByteColumn:
    """A binary Arrow array's bytes and offsets as numpy arrays, for reading many rows at once:
    fixed-width integers at given positions, varints, and byte ranges cut out as a new array."""

    def __init__(self, array: pa.Array | pa.ChunkedArray) -> None:
        array = whole(array).cast(_BYTES)
        _, offsets, data = array.buffers()
        bounds = np.frombuffer(offsets, dtype=np.int64)[
            array.offset : array.offset + len(array) + 1
        ]
        self.buffer = data if data is not None else pa.py_buffer(b"")
        self.data = np.frombuffer(self.buffer, dtype=np.uint8)
        self.starts = bounds[:-1]
        self.lengths = np.diff(bounds)

    def longs_at(self, positions: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The big-endian signed 64-bit integers at ``positions``."""
        return self._at(positions, 8).view(">i8").ravel().astype(np.int64)

    def ints_at(self, positions: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The big-endian signed 32-bit integers at ``positions``."""
        return self._at(positions, 4).view(">i4").ravel().astype(np.int64)

    def _at(self, positions: np.ndarray[Any, Any], width: int) -> np.ndarray[Any, Any]:
        if len(positions) and (positions.min() < 0 or positions.max() + width > len(self.data)):
            raise CorruptDataError("a snapshot row is shorter than its layout says")
        if len(self.data) < width:
            return np.zeros((0, width), dtype=np.uint8)
        # Every ``width`` bytes from every offset, as overlapping rows of one view: a gather of
        # rows, with no index array per byte.
        windows = np.lib.stride_tricks.as_strided(
            self.data, shape=(len(self.data) - width + 1, width), strides=(1, 1), writeable=False
        )
        return windows[positions]

    def slices(
        self,
        starts: np.ndarray[Any, Any],
        lengths: np.ndarray[Any, Any],
        nulls: np.ndarray[Any, Any] | None = None,
        picks: np.ndarray[Any, Any] | None = None,
    ) -> pa.Array:
        """A large binary array of the byte ranges ``[starts[i], starts[i] + lengths[i])``,
        which do not overlap: element ``j`` is range ``picks[j]`` (default: every range once, in
        order; a range may be picked any number of times), a null where ``nulls[j]``."""
        if len(lengths) and (lengths.min() < 0 or (starts + lengths).max() > len(self.data)):
            raise CorruptDataError("a snapshot row is shorter than its layout says")
        n = len(lengths)
        ascending = bool(np.all(starts[1:] >= starts[:-1]))
        order = None if ascending else np.argsort(starts, kind="stable")
        # Over the same buffer, an array whose elements alternate between the gap before a
        # range and the range itself (ranges by address); one take of the ranges' elements
        # copies each picked range once.
        bounds = np.empty(2 * n + 1, dtype=np.int64)
        bounds[0] = 0
        bounds[1::2] = starts if order is None else starts[order]
        bounds[2::2] = bounds[1::2] + (lengths if order is None else lengths[order])
        interleaved = pa.LargeBinaryArray.from_buffers(
            _BYTES, 2 * n, [None, pa.py_buffer(bounds), self.buffer]
        )
        element = np.arange(1, 2 * n, 2, dtype=np.int64)
        if order is not None:
            element[order] = element.copy()
        if picks is not None:
            element = element[picks]
        if nulls is not None and not nulls.any():
            nulls = None
        return interleaved.take(pa.array(element, mask=nulls))

    def varints_at(self, positions: Ints) -> tuple[Ints, Ints]:
        """Kafka's ``ByteUtils.readVarint`` (zig-zag) at ``positions``: (values, sizes)."""
        value = np.zeros(len(positions), dtype=np.int64)
        size = np.zeros(len(positions), dtype=np.int64)
        active = np.arange(len(positions))
        for shift in range(0, 35, 7):
            if not len(active):
                break
            at = positions[active] + size[active]
            if len(at) and at.max() >= len(self.data):
                raise CorruptDataError("a snapshot row ends inside a varint")
            byte = self.data[at].astype(np.int64)
            value[active] |= (byte & 0x7F) << shift
            size[active] += 1
            active = active[byte >= 0x80]
        if len(active):
            raise CorruptDataError("a snapshot row holds a varint of more than 5 bytes")
        value &= 0xFFFFFFFF
        return (value >> 1) ^ -(value & 1), size


def segment_ids(times: Ints, interval: int) -> Ints:
    """The segment id of each time (Java's truncating division):
    ``stores.segments.store.segment_id`` and ``stores.versioned.format.segment_id`` over an
    array, for the keys' segment prefixes."""
    quotient = np.abs(times) // interval
    return np.where(times >= 0, quotient, -quotient)


def stored_values(
    values: pa.Array | pa.ChunkedArray,
    *,
    stamps: pa.Array | pa.ChunkedArray | None = None,
    headers: pa.Array | pa.ChunkedArray | None = None,
) -> pa.Array:
    """Values (no nulls) in Kafka's stored layouts, as ``value_columns`` reads them (large
    binary): ``[varint size][headers]`` if ``headers`` are given (a null is no headers), then
    ``[timestamp 8]`` if ``stamps`` are, then the value."""
    pieces = [whole(values)]
    if stamps is not None:
        pieces.insert(0, big_endian_column(whole(stamps).to_numpy(zero_copy_only=False)))
    if headers is not None:
        given = whole(headers).fill_null(b"")
        sizes = np.diff(binary_offsets(given))
        pieces[:0] = [varint_column(2 * sizes), given]  # zig-zag: 2n for n >= 0
    return concat_rows(*pieces)


def value_columns(raws: ByteColumn, timestamped: bool, headers: bool) -> dict[str, pa.Array]:
    """Value, timestamp and headers columns of stored values in Kafka's layouts (KIP-258,
    KIP-1271): ``[varint size][headers]`` if ``headers``, then ``[timestamp 8]`` if
    ``timestamped``, then the value.

    Raises:
        CorruptDataError: a value is shorter than its layout says.
    """
    at, ends = raws.starts, raws.starts + raws.lengths
    out: dict[str, pa.Array] = {}
    if headers:
        size, width = raws.varints_at(at)
        out["headers"] = raws.slices(at + width, size)
        at = at + width + size
    if timestamped:
        out["timestamp"] = pa.array(raws.longs_at(at), pa.int64())
        at = at + 8
    out["value"] = raws.slices(at, ends - at)
    return out


__all__ = ["ByteColumn", "Ints", "segment_ids", "stored_values", "value_columns"]
