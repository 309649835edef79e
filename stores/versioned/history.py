"""A versioned store's answerable history held in memory as columns: every as-of lookup then
costs two binary searches and no read (``VersionedHistory``, the as-of join's second method).

``VersionedLookups.as_of_columns`` reads the rows of the keys asked, per call. When many calls
ask about the same store (the tasks of an as-of join, each with events of most keys), every
call decodes the same rows again. ``VersionedHistory.read`` reads and decodes them once, with
numpy (``stores.versioned.columns``' decoder of Kafka's segment rows): what ``get`` can answer
at the store's stream time, and nothing else:

| kept | why (``get``'s rules, ``stores.versioned.store``) |
|---|---|
| each key's latest value, open-ended | it answers any instant at or after its start, past the retention too |
| the versions of the rows in live segments (``>= min_live``), tombstones included | an instant within the retention is answered by the version spanning it, or None (a tombstone) |
| no row in a segment after its key's latest value's | ``get`` never reads one |
| the horizon (stream time minus the retention) | an instant before it is answered by the latest value only |

The answers are the ones ``get(key, as_of)`` gives, checked against Kafka's order of reads by
``tests/stores/test_versioned_asof.py``. A history is a snapshot: it does not follow later
writes of the store (the as-of join keeps one per partition and commit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.decode import ByteColumn
from stores.versioned.client import VersionedStoreClient
from stores.versioned.columns import _segment_entries
from stores.versioned.format import LATEST_PREFIX, TIMESTAMP_SIZE, segment_prefix
from stores.versioned.lookups import _checked_columns

_Ints = np.ndarray[Any, Any]
_MAX_LONG = 2**63 - 1
# Regular segment ids are >= 0, so their keys start below 0x80.
_SEGMENTS_END = b"\x80"


class VersionedHistory:
    """The versions ``get(key, as_of)`` of one versioned store can answer, as columns.

    Versions are sorted by key (in the order keys were first read), then start; ``find``
    answers many lookups at once. Build one with :meth:`read` (or
    ``VersionedKeyValueStore.history``).

    Attributes:
        keys: the store's keys (binary), each once; version ``i`` is of ``keys[group[i]]``.
        values: each version's value (binary; null for a tombstone, which answers None).
        valid_from: each version's start (int64 epoch ms).
        valid_to: each version's end (int64; null for a key's latest value).
        horizon: the stream time minus the retention: instants before it are answered by the
            latest value only.
    """

    def __init__(
        self,
        keys: pa.Array,
        group: _Ints,
        values: pa.Array,
        valid_from: _Ints,
        valid_to: _Ints,
        latest: _Ints,
        horizon: int,
    ) -> None:
        order = np.lexsort((np.where(latest, _MAX_LONG, valid_to), valid_from, group))
        self.keys = keys
        self.horizon = horizon
        self._group = group[order]
        self._from = valid_from[order]
        self._to = valid_to[order]
        self._latest = latest[order]
        self._has_value = values.is_valid().to_numpy(zero_copy_only=False)[order]
        self.values = values.take(pa.array(order))
        self.valid_from = pa.array(self._from)
        self.valid_to = pa.array(self._to, mask=self._latest)
        # (key, start) packed into one int64 that orders as the pair does: the start's offset
        # from the first start, or its rank among all starts if the times span too far.
        self._low = int(self._from.min()) if len(self._from) else 0
        self._width = (int(self._from.max()) - self._low + 1) if len(self._from) else 1
        self._starts: _Ints | None = None
        if (int(self._group.max(initial=0)) + 2) * self._width >= 2**62:
            self._starts = np.unique(self._from)
            self._width = len(self._starts) + 1
            offsets = np.searchsorted(self._starts, self._from)
        else:
            offsets = self._from - self._low
        self._packed = self._group * self._width + offsets

    @classmethod
    def read(
        cls, client: VersionedStoreClient, max_bytes: int | None = None
    ) -> VersionedHistory | None:
        """Read and decode every version ``get`` of the store can answer (module doc); None
        if the rows read exceed ``max_bytes`` (the read stops there).

        Raises:
            CorruptDataError: a row does not follow Kafka's layout.
        """
        db = client.db
        stream_time = client.stream_time()
        live = max(client.min_live(stream_time), 0)
        budget = [_MAX_LONG if max_bytes is None else max_bytes]
        latest = _rows(db.scan_columns(LATEST_PREFIX, None), budget)
        segments = _rows(db.scan_columns(segment_prefix(live), _SEGMENTS_END), budget)
        if latest is None or segments is None:
            return None
        (latest_keys, latest_raws), (row_keys, row_raws) = latest, segments
        physical, raws = ByteColumn(row_keys), ByteColumn(row_raws)
        row_sids = physical.longs_at(physical.starts)
        latest_physical, latest_values = ByteColumn(latest_keys), ByteColumn(latest_raws)
        latest_ts = latest_values.longs_at(latest_values.starts)
        keys = pa.concat_arrays(
            [
                latest_physical.slices(
                    latest_physical.starts + TIMESTAMP_SIZE,
                    latest_physical.lengths - TIMESTAMP_SIZE,
                ),
                physical.slices(
                    physical.starts + TIMESTAMP_SIZE, physical.lengths - TIMESTAMP_SIZE
                ),
            ]
        )
        encoded = keys.dictionary_encode()
        groups = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        latest_group, row_group = groups[: len(latest_ts)], groups[len(latest_ts) :]
        # A row in a segment after its key's latest value's is never read by get.
        latest_sid = np.full(len(encoded.dictionary), _MAX_LONG, dtype=np.int64)
        latest_sid[latest_group] = latest_ts // client.interval
        rows = np.flatnonzero(row_sids <= latest_sid[row_group])
        row_of, starts, ends, value_at, size = _segment_entries(raws, rows)
        entry_values = raws.slices(value_at, np.maximum(size, 0), nulls=size < 0)
        latest_value = latest_values.slices(
            latest_values.starts + TIMESTAMP_SIZE, latest_values.lengths - TIMESTAMP_SIZE
        )
        count = len(latest_ts)
        return cls(
            encoded.dictionary,
            np.concatenate([latest_group, row_group[rows[row_of]]]),
            pa.concat_arrays([latest_value, entry_values]),
            np.concatenate([latest_ts, starts]),
            np.concatenate([latest_ts, ends]),
            np.concatenate([np.ones(count, dtype=bool), np.zeros(len(starts), dtype=bool)]),
            stream_time - client.retention,
        )

    @property
    def nbytes(self) -> int:
        """About how many bytes the history holds in memory."""
        arrays = (self._group, self._from, self._to, self._latest, self._has_value, self._packed)
        return int(self.keys.nbytes + self.values.nbytes + sum(a.nbytes for a in arrays))

    def __len__(self) -> int:
        return len(self._group)

    def key_groups(self, keys: pa.Array) -> _Ints:
        """The index in ``keys`` of the history of each serialized key (-1: none, or null)."""
        found = pc.index_in(keys.cast(self.keys.type), value_set=self.keys)
        return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def find(self, groups: _Ints, as_ofs: _Ints) -> _Ints:
        """The version ``get`` answers for key ``keys[groups[i]]`` at ``as_ofs[i]`` (epoch ms,
        >= 0), for every ``i``: its index in the version columns, or -1 for None (also where
        ``groups[i]`` is -1)."""
        if not len(self._group) or not len(groups):
            return np.full(len(groups), -1, dtype=np.int64)
        # The last version of the key started at or before the instant (an instant before
        # every start packs below the key's versions; one after them all, as the last)...
        if self._starts is None:
            offsets = np.clip(as_ofs - self._low, -1, self._width - 1)
        else:
            offsets = np.searchsorted(self._starts, as_ofs, side="right") - 1
        index = np.searchsorted(self._packed, groups * self._width + offsets, side="right") - 1
        safe = np.maximum(index, 0)
        latest = self._latest[safe]
        # ...if it is the key's, has not ended, holds a value, and the instant is within the
        # retention unless the version is the latest value.
        hit = (
            (index >= 0) & (groups >= 0) & (self._group[safe] == groups)
            & (latest | (as_ofs < self._to[safe])) & self._has_value[safe]
            & (latest | (as_ofs >= self.horizon))
        )  # fmt: skip
        return np.where(hit, index, -1)

    def as_of_columns(self, keys: pa.Array, as_ofs: pa.Array) -> pa.RecordBatch:
        """What ``get(keys[i], as_ofs[i])`` answers for every ``i``: the batch that
        ``VersionedKeyValueStore.as_of_columns`` returns (nulls where the key or instant is
        null), from memory.

        Raises:
            InvalidOptionError: as ``VersionedKeyValueStore.as_of_columns``.
        """
        keys, as_ofs = _checked_columns(keys, as_ofs)
        groups = self.key_groups(keys)
        times = as_ofs.fill_null(0).to_numpy(zero_copy_only=False)
        if as_ofs.null_count:
            groups[~as_ofs.is_valid().to_numpy(zero_copy_only=False)] = -1
        return self.columns(self.find(groups, times))

    def columns(self, found: _Ints) -> pa.RecordBatch:
        """The versions ``found`` (indices from :meth:`find`, -1: nulls) as a batch of
        ``value`` (binary), ``valid_from`` and ``valid_to`` (int64)."""
        pick = pa.array(found, mask=found < 0)
        return pa.RecordBatch.from_arrays(
            [self.values.take(pick).cast(pa.binary()), self.valid_from.take(pick),
             self.valid_to.take(pick)],
            names=["value", "valid_from", "valid_to"],
        )  # fmt: skip


def _rows(batches: Any, budget: list[int]) -> tuple[pa.Array, pa.Array] | None:
    """The (keys, values) lists of a ``scan_columns`` as two binary arrays; None once their
    bytes exceed ``budget[0]`` (which is lowered by what they take)."""
    keys: list[bytes] = []
    values: list[bytes] = []
    for batch_keys, batch_values in batches:
        budget[0] -= sum(map(len, batch_keys)) + sum(map(len, batch_values))
        if budget[0] < 0:
            return None
        keys += batch_keys
        values += batch_values
    return pa.array(keys, pa.binary()), pa.array(values, pa.binary())


__all__ = ["VersionedHistory"]
