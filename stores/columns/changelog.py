"""Changelog records by column: what every kind's columnar changelog (``stores/<kind>/
changelog.py``: ``changelog_columns`` and ``store_columns``) shares.

A kind's changelog columns are ``key`` (binary, the changelog key), ``value`` (binary, None
a delete or tombstone), ``timestamp`` (int64 epoch ms, the record's time) and ``headers``
(KIP-1271 headersBytes, empty for none). Records of several Kafka partitions come grouped,
each partition's in offset order, with ``groups`` saying which partition each row is of
(restore keeps a stream time per partition: one store per task).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import segment_ids
from stores.columns.encode import (
    big_endian_column,
    binary_data,
    binary_from,
    binary_offsets,
    concat_rows,
    whole,
)
from stores.columns.key_sort import key_runs, run_lasts

#: The columns of changelog records (see the module doc).
CHANGELOG_COLUMNS = ("key", "value", "timestamp", "headers")


def no_headers(n: int) -> pa.Array:
    """``n`` empty headersBytes (KIP-1271: no headers)."""
    return binary_from(np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))


def last_rows(
    keys: pa.Array | pa.ChunkedArray, suffix: Sequence[tuple[np.ndarray, int]] = ()
) -> np.ndarray:
    """Row indices of the last row (in row order) of each key followed by its ``suffix``
    fields (integers and their byte widths, big-endian), in that store key's order."""
    order, first = key_runs(keys, suffix=suffix)
    return order[run_lasts(first)]


def group_bounds(groups: np.ndarray) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of equal ``groups`` (rows come grouped by partition)."""
    n = len(groups)
    if not n:
        return
    cuts = np.flatnonzero(groups[1:] != groups[:-1]) + 1
    edges = [0, *cuts.tolist(), n]
    yield from pairwise(edges)


def stream_times(times: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each row's stream time as Kafka's restore tracks it: the largest time of its
    partition up to and including the row (in row order)."""
    out = np.empty_like(times)
    for start, end in group_bounds(groups):
        out[start:end] = np.maximum.accumulate(times[start:end])
    return out


def latest_times(times: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each row's partition's largest time (a segmented store's stream time once the
    partition's records are restored)."""
    out = np.empty_like(times)
    for start, end in group_bounds(groups):
        out[start:end] = times[start:end].max()
    return out


def live_segments(
    times: np.ndarray, groups: np.ndarray, retention_ms: int, segment_interval_ms: int
) -> np.ndarray:
    """Which rows lie in a segment still live once their partition is restored
    (``AbstractRocksDBSegmentedBytesStore``: a segment below ``segment_id(stream time -
    retention)`` is dropped, and stream time ends at the partition's latest segment time,
    whatever the batches: the rule only grows stricter as stream time advances)."""
    live = np.empty(len(times), dtype=bool)
    for start, end in group_bounds(groups):
        part = times[start:end]
        floor = int(segment_ids(np.array([part.max() - retention_ms]), segment_interval_ms)[0])
        # The first time of segment ``floor`` (Java's truncating division: segment 0 spans
        # (-interval, interval), segment -1 (-2 interval, -interval], ...).
        first = floor * segment_interval_ms if floor > 0 else (floor - 1) * segment_interval_ms + 1
        live[start:end] = part >= first
    return live


def unexpired(times: np.ndarray, groups: np.ndarray, retention_ms: int) -> np.ndarray:
    """Which rows a segmented store's reads still show once their partition is restored: a
    time after the partition's latest minus the retention (Kafka's ``getActualFrom``; older
    rows of a live segment are held but never read again, as stream time never goes back)."""
    return times > latest_times(times, groups) - retention_ms  # type: ignore[no-any-return]


def split_keys(
    keys: pa.Array | pa.ChunkedArray, widths: Sequence[int]
) -> tuple[pa.Array, list[np.ndarray]]:
    """Changelog keys ``key ‖ BE field ‖ ...`` (fields of ``widths`` bytes, 8 or 4) cut into
    the keys (binary) and the fields (int64 each). Every key must be at least
    ``sum(widths)`` bytes long (the caller checks, naming the records).
    """
    keys = whole(keys)
    n, total = len(keys), sum(widths)
    offsets = binary_offsets(keys)
    size = int(offsets[1] - offsets[0]) if n else 0
    if size > total and not keys.null_count and (np.diff(offsets) == size).all():
        # Keys of one length: the data buffer is a (rows, size) matrix already.
        start = int(offsets[0])
        rows = binary_data(keys)[start : start + n * size].reshape(n, size)
        plain_size = size - total
        plain = binary_from(
            np.ascontiguousarray(rows[:, :plain_size]).reshape(-1),
            np.arange(n + 1, dtype=np.int64) * plain_size,
        )
        block = rows[:, plain_size:]
    else:
        plain = pc.binary_slice(keys, 0, -total).cast(pa.binary()) if total else keys
        suffix = pc.binary_slice(keys, -total).cast(pa.binary(total))
        block = np.frombuffer(
            suffix.buffers()[1], np.uint8, count=n * total, offset=suffix.offset * total
        ).reshape(n, total)
    fields = []
    at = 0
    for width in widths:
        # A view of every row's field (a strided, unaligned read), converted in one pass.
        fields.append(block[:, at : at + width].view(f">i{width}")[:, 0].astype(np.int64))
        at += width
    return plain, fields


def suffixed_keys(
    keys: pa.Array | pa.ChunkedArray,
    fields: Sequence[tuple[np.ndarray, int]],
    order: np.ndarray | None = None,
) -> pa.Array:
    """Changelog keys ``key ‖ BE field ‖ ...`` (``split_keys`` undone; fields of 8 or 4
    bytes) of the rows ``order`` picks (default: every row, in order), as binary. Keys of one
    length are laid out in one numpy pass; others are joined by Arrow."""
    keys = whole(keys)
    n = len(keys)
    width = sum(w for _, w in fields)
    offsets = binary_offsets(keys)
    lengths = np.diff(offsets)
    size = int(lengths[0]) if n else 0
    if size and not keys.null_count and (lengths == size).all() and n * (size + width) < 1 << 31:
        start = int(offsets[0])
        # Rows as records of fixed-width fields (no padding): one gather per field.
        row = np.dtype(
            [("key", f"V{size}")] + [(f"f{i}", f">i{w}") for i, (_, w) in enumerate(fields)]
        )
        whole_keys = binary_data(keys)[start : start + n * size].view(f"V{size}")
        if order is not None:
            whole_keys, n = whole_keys[order], len(order)
        out = np.empty(n, dtype=row)
        out["key"] = whole_keys
        for i, (values, _) in enumerate(fields):
            out[f"f{i}"] = values if order is None else values[order]
        return binary_from(out.view(np.uint8), np.arange(n + 1, dtype=np.int64) * (size + width))
    joined = concat_rows(keys, *(big_endian_column(v, w) for v, w in fields), large=False)
    return joined if order is None else joined.take(pa.array(order))


__all__ = [
    "CHANGELOG_COLUMNS",
    "group_bounds",
    "last_rows",
    "latest_times",
    "live_segments",
    "no_headers",
    "whole",
    "split_keys",
    "stream_times",
    "suffixed_keys",
    "unexpired",
]
