"""The bulk as-of lookups of the versioned store (``get_many``, ``as_of_columns``), kept apart
from Kafka's per-record algorithm: a collaborator of
:class:`stores.versioned.store.VersionedKeyValueStore` that reads the store's rows through its
:class:`stores.versioned.client.VersionedStoreClient`. Behaviour is documented in
:mod:`stores.versioned.store`: every answer is the one ``get(key, as_of)`` gives.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.checks import checked_long
from stores.errors import InvalidOptionError
from stores.protocols import VersionedRecord
from stores.versioned.client import VersionedStoreClient
from stores.versioned.format import (
    LATEST_PREFIX,
    ROW_ENDS_BEFORE,
    ROW_STARTS_AFTER,
    TIMESTAMP_SIZE,
    find_in_row,
    latest_timestamp,
    row_versions,
    versioned_record,
)

_MAX_LONG = 2**63 - 1


_pack_long = struct.Struct(">q").pack


class VersionedLookups:
    """``get_many`` and ``as_of_columns`` over a versioned store's rows (see the module doc).

    The store checks that it is open before it asks.

    Args:
        client: the store's segments, stream time and bytes store.
    """

    def __init__(self, client: VersionedStoreClient) -> None:
        self._client = client

    def get_many(
        self, keys: Sequence[bytes], as_ofs: Sequence[int]
    ) -> list[VersionedRecord | None]:
        """``[get(keys[i], as_ofs[i]) for i ...]``, from fewer reads: see :meth:`as_of_columns`.

        Raises:
            InvalidOptionError: a key or instant has a wrong type or value, or the sequences
                differ in length.
        """
        if len(as_ofs) != len(keys):
            raise InvalidOptionError(
                f"get_many: {len(keys)} keys but {len(as_ofs)} as_of instants; give one of each"
            )
        for key in keys:
            if type(key) is not bytes:
                raise InvalidOptionError(f"keys must be bytes, got {type(key).__name__}")
        checked = [
            a if type(a) is int and 0 <= a <= _MAX_LONG else checked_long(a, "as_of", 0)
            for a in as_ofs
        ]
        found = self.as_of_columns(pa.array(keys, pa.binary()), pa.array(checked, pa.int64()))
        return [
            None if value is None else versioned_record(value, valid_from, valid_to)
            for value, valid_from, valid_to in zip(
                found.column(0).to_pylist(),
                found.column(1).to_pylist(),
                found.column(2).to_pylist(),
            )
        ]

    def as_of_columns(self, keys: pa.Array, as_ofs: pa.Array) -> pa.RecordBatch:
        """What ``get(keys[i], as_ofs[i])`` answers for every ``i``, as columns: the lookups of
        an as-of join.

        Lookups run in key order (RocksDB then reads neighbouring blocks), each key's instants
        in time order, and each key's latest value is read once. A key asked about at least as
        many times as there are segments its instants can fall in has those segments' rows
        read once and merged with its instants; a key asked about less often is answered
        instant by instant as ``get`` answers, keeping the rows it read. The stream time is
        read once for the whole call.

        Args:
            keys: a binary array of serialized keys.
            as_ofs: an integer array of instants (epoch ms, >= 0), as long as ``keys``.

        Returns:
            A batch of ``len(keys)`` rows, in the order asked: ``value`` (binary),
            ``valid_from`` and ``valid_to`` (int64 epoch ms; ``valid_to`` null for a latest
            version); all null where ``get`` returns None, or the key or instant is null.

        Raises:
            InvalidOptionError: ``keys`` is not binary, ``as_ofs`` not integers or negative, or
                their lengths differ.
        """
        keys, as_ofs = _checked_columns(keys, as_ofs)
        count = len(keys)
        asked = pa.table({"key": keys, "at": as_ofs, "row": pa.array(np.arange(count))})
        if keys.null_count or as_ofs.null_count:
            asked = asked.filter(pc.and_(keys.is_valid(), as_ofs.is_valid()))
        asked = asked.take(
            pc.sort_indices(asked, sort_keys=[("key", "ascending"), ("at", "ascending")])
        )
        found = _Answers(asked.num_rows)
        if found.total:
            sorted_keys = asked.column("key").combine_chunks()
            changes = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, found.total - 1))
            starts = np.flatnonzero(changes.to_numpy(zero_copy_only=False)) + 1
            bounds = [0, *starts.tolist(), found.total]
            group_keys = sorted_keys.take(pa.array(bounds[:-1])).to_pylist()
            times = asked.column("at").to_numpy()
            self._answer(group_keys, bounds, times, found)
        # Answer j (in key order) is for row asked["row"][j]; rows not asked get nulls.
        where = np.full(count, -1, dtype=np.int64)
        where[asked.column("row").to_numpy()] = np.arange(found.total)
        return found.columns(where)

    def _answer(
        self, group_keys: list[bytes], bounds: list[int], times: np.ndarray, found: _Answers
    ) -> None:
        """Answer the instants ``times[bounds[g]:bounds[g + 1]]`` (ascending) of each key
        ``group_keys[g]`` (see as_of_columns)."""
        client = self._client
        stream_time = client.stream_time()
        horizon = stream_time - client.retention
        live = client.min_live(stream_time)
        interval = client.interval
        segments = client.segments
        newest = segments[-1] if segments else -1
        get = client.db.get
        stamps = times.tolist()
        merged = _Merge(times)
        for group, key in enumerate(group_keys):
            first, end = bounds[group], bounds[group + 1]
            latest = get(LATEST_PREFIX + key)
            latest_ts = 0
            if latest is not None:
                latest_ts = latest_timestamp(latest)
                latest = latest[TIMESTAMP_SIZE:]
            j = first
            # Instants past the retention: only the latest version answers (Kafka's rule).
            while j < end and stamps[j] < horizon:
                if latest is not None and latest_ts <= stamps[j]:
                    found.add(j, latest, latest_ts, None)
                j += 1
            if j == end:
                continue
            # The rows that can answer the rest (see get): from the first instant's segment
            # (or the first live one) to the latest value's (or the newest).
            low = bisect_left(segments, max(stamps[j] // interval, live))
            high = bisect_right(segments, newest if latest is None else latest_ts // interval)
            if high - low <= end - j:
                # As many instants as rows to read, or more: read them all, merge in bulk.
                for sid in segments[low:high]:
                    raw = get(_pack_long(sid) + key)
                    if raw is not None:
                        merged.add_row(group, row_versions(raw))
                if latest is not None:
                    merged.add_latest(group, latest, latest_ts)
                merged.ask(group, j, end)
            else:
                self._answer_each(key, latest, latest_ts, stamps, j, end, live, found)
        merged.answer(found)

    def _answer_each(
        self,
        key: bytes,
        latest: bytes | None,
        latest_ts: int,
        times: list[int],
        first: int,
        end: int,
        live: int,
        found: _Answers,
    ) -> None:
        """Answer one key's instants ``times[first:end]`` one by one, as ``get`` does (the
        latest value given, rows kept as they are read)."""
        client = self._client
        interval = client.interval
        segments = client.segments
        get = client.db.get
        rows: dict[int, bytes | None] = {}
        for j in range(first, end):
            as_of = times[j]
            own = as_of // interval
            low = bisect_left(segments, max(live, own))
            high = len(segments)
            if low < high and segments[low] == own:
                raw = rows[own] if own in rows else rows.setdefault(own, get(_pack_long(own) + key))
                if raw is not None:
                    hit = find_in_row(raw, as_of)
                    if type(hit) is tuple:
                        valid_from, valid_to, value = hit
                        if value is not None:
                            found.add(j, value, valid_from, valid_to)
                        continue
                    if hit == ROW_STARTS_AFTER:
                        continue
                low += 1
            if latest is not None:
                if latest_ts <= as_of:
                    found.add(j, latest, latest_ts, None)
                    continue
                high = bisect_right(segments, latest_ts // interval)
            while high > low:
                high -= 1
                sid = segments[high]
                raw = rows[sid] if sid in rows else rows.setdefault(sid, get(_pack_long(sid) + key))
                if raw is None:
                    continue
                hit = find_in_row(raw, as_of)
                if type(hit) is tuple:
                    valid_from, valid_to, value = hit
                    if value is not None:
                        found.add(j, value, valid_from, valid_to)
                    break
                if hit == ROW_ENDS_BEFORE:
                    break


class _Answers:
    """The answers of one ``as_of_columns`` call, by position in key order: a value (an index
    into ``values``, -1: none) and its interval (``valid_to`` -1: open, a latest version)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.values: list[bytes | None] = []
        self.index = np.full(total, -1, dtype=np.int64)
        self.valid_from = np.zeros(total, dtype=np.int64)
        self.valid_to = np.zeros(total, dtype=np.int64)
        self._at: list[int] = []
        self._from: list[int] = []
        self._to: list[int] = []

    def add(self, j: int, value: bytes, valid_from: int, valid_to: int | None) -> None:
        """Answer position ``j`` (one at a time; see ``flush``)."""
        self._at.append(j)
        self.values.append(value)
        self._from.append(valid_from)
        self._to.append(-1 if valid_to is None else valid_to)

    def flush(self) -> None:
        if self._at:
            at = np.array(self._at, dtype=np.int64)
            first = len(self.values) - len(at)
            self.index[at] = np.arange(first, len(self.values))
            self.valid_from[at] = self._from
            self.valid_to[at] = self._to
            self._at, self._from, self._to = [], [], []

    def columns(self, where: np.ndarray) -> pa.RecordBatch:
        """The answers as columns, row ``i`` answered by position ``where[i]`` (-1: null)."""
        self.flush()
        index = np.where(where >= 0, self.index[np.maximum(where, 0)], -1) if self.total else where
        missing = index < 0
        pick = pa.array(index, mask=missing)
        if self.total:
            picked = np.maximum(where, 0)
            valid_from = self.valid_from[picked]
            valid_to = self.valid_to[picked]
        else:
            valid_from = valid_to = np.zeros(len(where), dtype=np.int64)
        return pa.RecordBatch.from_arrays(
            [
                pa.array(self.values, pa.binary()).take(pick),
                pa.array(valid_from, mask=missing),
                pa.array(valid_to, mask=missing | (valid_to < 0)),
            ],
            names=["value", "valid_from", "valid_to"],
        )


class _Merge:
    """Instants answered in bulk from the versions of their keys (see ``as_of_columns``).

    A key's rows are disjoint and ordered by segment (see ``get``), so its versions, row by
    row oldest first, then its latest value, are in time order; the version that spans an
    instant is the last one started at or before it, if it has not ended (a tombstone spans
    as None). Keys are added in order, so (key, start) ascends over all versions, and one
    binary search answers every instant.
    """

    def __init__(self, times: np.ndarray) -> None:
        self.times = times
        self.group: list[int] = []
        self.start: list[int] = []
        self.end: list[int] = []
        self.open: list[bool] = []
        self.value: list[bytes | None] = []
        self.asked: list[tuple[int, int, int]] = []  # (group, first, end) positions

    def add_row(
        self, group: int, versions: tuple[list[int], list[int], list[bytes | None]]
    ) -> None:
        starts, ends, values = versions
        self.group += [group] * len(starts)
        self.start += starts
        self.end += ends
        self.open += [False] * len(starts)
        self.value += values

    def add_latest(self, group: int, value: bytes, timestamp: int) -> None:
        self.group.append(group)
        self.start.append(timestamp)
        self.end.append(timestamp)
        self.open.append(True)
        self.value.append(value)

    def ask(self, group: int, first: int, end: int) -> None:
        self.asked.append((group, first, end))

    def answer(self, found: _Answers) -> None:
        if not self.asked or not self.start:
            return
        found.flush()
        positions = np.concatenate([np.arange(a, b) for _, a, b in self.asked])
        groups = np.concatenate(
            [np.full(b - a, g, dtype=np.int64) for g, a, b in self.asked]
        )
        times = self.times[positions]
        v_group = np.array(self.group, dtype=np.int64)
        v_start = np.array(self.start, dtype=np.int64)
        low = min(int(v_start.min()), int(times.min()))
        span = max(int(v_start.max()), int(times.max())) - low + 1
        if (int(v_group.max()) + 1) * span < 2**62:
            # (group, time) as one int64 that orders as the pair does.
            index = np.searchsorted(
                v_group * span + (v_start - low), groups * span + (times - low), side="right"
            ) - 1
        else:  # times too far apart to pack: one search per key
            index = np.empty(len(times), dtype=np.int64)
            bounds = np.searchsorted(v_group, np.arange(int(v_group.max()) + 2))
            at = 0
            for g, a, b in self.asked:
                lo, hi = bounds[g], bounds[g + 1]
                found_at = np.searchsorted(v_start[lo:hi], times[at : at + b - a], side="right")
                index[at : at + b - a] = np.where(found_at > 0, lo + found_at - 1, -1)
                at += b - a
        safe = np.maximum(index, 0)
        v_end = np.array(self.end, dtype=np.int64)
        v_open = np.array(self.open, dtype=bool)
        v_value = np.array([v is not None for v in self.value], dtype=bool)
        hit = (
            (index >= 0) & (v_group[safe] == groups) & (v_open[safe] | (times < v_end[safe]))
            & v_value[safe]
        )  # fmt: skip
        at = positions[hit]
        chosen = safe[hit]
        first = len(found.values)
        found.values += self.value
        found.index[at] = first + chosen
        found.valid_from[at] = v_start[chosen]
        found.valid_to[at] = np.where(v_open[chosen], -1, v_end[chosen])


def _checked_columns(keys: Any, as_ofs: Any) -> tuple[pa.Array, pa.Array]:
    """``as_of_columns``' arguments as one binary and one int64 array (nulls kept)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(as_ofs, pa.ChunkedArray):
        as_ofs = as_ofs.combine_chunks()
    if not isinstance(keys, pa.Array) or not (
        pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)
    ):
        raise InvalidOptionError(
            f"keys must be an Arrow binary array, got {getattr(keys, 'type', type(keys).__name__)}"
        )
    if not isinstance(as_ofs, pa.Array) or not pa.types.is_integer(as_ofs.type):
        raise InvalidOptionError(
            "as_ofs must be an Arrow integer array (epoch ms), got "
            f"{getattr(as_ofs, 'type', type(as_ofs).__name__)}"
        )
    if len(keys) != len(as_ofs):
        raise InvalidOptionError(
            f"{len(keys)} keys but {len(as_ofs)} as_of instants; give one of each"
        )
    as_ofs = as_ofs.cast(pa.int64())
    lowest = pc.min(as_ofs).as_py()
    if lowest is not None and lowest < 0:
        raise InvalidOptionError(f"as_of must be between 0 and 2**63-1, got {lowest}")
    return keys.cast(pa.binary()), as_ofs


__all__ = ["VersionedLookups"]
