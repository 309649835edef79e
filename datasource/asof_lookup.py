"""The per-task work of ``asof_join`` (``datasource.asof``): the function of its Arrow UDF,
which answers each task's events (their key and time columns) from the executor's local
caches, by one of two methods per store partition.

- **history**: the partition's versions that ``get(key, as_of)`` can answer, read from its
  local cache once per Python worker and kept in memory as columns (values decoded to the
  store's value type once: ``VersionedKeyValueStore.history``); a task's events are then
  answered by a hash lookup of its key and one binary search, with no read and no decode. Spark reuses its Python workers
  across tasks, so the store is read about once per worker, not once per task.
- **lookups**: the events' keys looked up in the partition's RocksDB, in key order, each key's
  rows read once per chunk (``VersionedKeyValueStore.as_of_columns``).

``auto`` picks per partition from the store's statistics and the task's events: a history
kept already is used; else one is read if the partition's rows (from the commit log, counted
on the driver) are at most ``HISTORY_ROWS_PER_EVENT`` per event of the partition in the
chunk, and the history fits in ``HISTORY_BYTES`` (a read that outgrows it stops, and the
partition is looked up instead, then and later). So a long history asked about by few events
is looked up; a store that many events ask about is held.
"""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.caches.partitions import PartitionCache
from catalog.catalog import Catalog, StoreTable
from catalog.log.spec import StoreSpec
from catalog.partitioner import partitions_of
from stores.bytes.rocksdb import is_rocksdb_failure
from stores.serdes import serde_for

_T = TypeVar("_T")

#: The columns a join adds (after its prefix).
ADDED = ("value", "valid_from", "valid_to")
#: The methods ``asof_join`` takes (see the module doc).
METHODS = ("auto", "history", "lookups")
#: ``auto`` reads a partition's history for a chunk with at least one event per this many
#: rows of the partition (rows written, from the commit log: an upper bound of its versions).
HISTORY_ROWS_PER_EVENT = 8
#: The bytes of histories a Python worker keeps (least recently used dropped first); a history
#: that alone outgrows it is not kept: its partition is looked up. ``$STATE_STORE_ASOF_HISTORY_MB``
#: sets it (0: never read one unless ``method="history"``).
HISTORY_BYTES = int(os.environ.get("STATE_STORE_ASOF_HISTORY_MB", "256")) * (1 << 20)


@dataclass(frozen=True)
class AsOfLookup:
    """The per-task work of ``asof_join`` (picklable: configuration only): ``columns``."""

    root: str
    spec: StoreSpec
    snapshot: int
    #: The events' key column (named in errors).
    key: str
    #: The session's time zone: Spark exchanges TIMESTAMP columns with Arrow in it.
    zone: str = "UTC"
    #: ``auto``, ``history`` or ``lookups`` (module doc).
    method: str = "auto"
    #: Rows written to each store partition up to the snapshot (its newest snapshot's and the
    #: changelog's after it), from the commit log: what ``auto`` weighs.
    partition_rows: tuple[int, ...] = ()

    #: Events looked up together: the input batches are kept until their chunk is answered,
    #: so that a key's rows are read once per chunk however many of its events it holds.
    chunk_rows: int = 1 << 18

    def columns(self, arrays: Iterator[tuple[pa.Array, ...]]) -> Iterator[pa.Array]:
        """The function of ``asof_join``'s Arrow UDF (an iterator of arrays): for each batch
        of ``(key, timestamp)`` arrays, a struct array of ``value``, ``valid_from`` and
        ``valid_to``, as long, in order. Batches are answered a chunk of ``chunk_rows``
        events at a time (kept until their chunk is answered)."""
        with OpenPartitions(self.root, self.spec, self.snapshot) as partitions:
            pending: list[tuple[pa.Array, pa.Array]] = []
            rows = 0
            for keys, times, *_ in arrays:
                pending.append((keys, times))
                rows += len(keys)
                if rows >= self.chunk_rows:
                    yield from self._chunk(pending, partitions)
                    pending, rows = [], 0
            if pending:
                yield from self._chunk(pending, partitions)

    def _chunk(
        self, pending: list[tuple[pa.Array, pa.Array]], partitions: OpenPartitions
    ) -> Iterator[pa.Array]:
        keys, times = (pa.chunked_array(c).combine_chunks() for c in zip(*pending))
        answered = pa.StructArray.from_arrays(
            list(self.answer(keys, times, partitions)), names=list(ADDED)
        )
        offset = 0
        for part, _ in pending:
            yield answered.slice(offset, len(part))
            offset += len(part)

    def answer(
        self, keys_column: pa.Array, times: pa.Array, partitions: OpenPartitions
    ) -> tuple[pa.Array, pa.Array, pa.Array]:
        """The value, valid_from and valid_to of each event's key at its time, answered
        together: by store partition, each partition's events at once."""
        spec = self.spec
        key_bytes = serde_for(spec.key_type, column=self.key).encode(keys_column)
        as_of, wanted = _millis(times)
        if key_bytes.null_count:
            wanted &= key_bytes.is_valid().to_numpy(zero_copy_only=False)
        rows = np.flatnonzero(wanted)  # the events that can have a version
        keys = key_bytes.take(pa.array(rows))
        stamps = as_of[rows]
        owners = partitions_of(keys, spec.num_partitions, spec.partitioner)
        # Partition ids as 16-bit integers sort by radix (linear time).
        small = spec.num_partitions <= np.iinfo(np.int16).max
        order = np.argsort(owners.astype(np.int16) if small else owners, kind="stable")
        bounds = np.searchsorted(owners[order], np.arange(spec.num_partitions + 1)).tolist()
        values: list[pa.Array] = []
        starts: list[pa.Array] = []
        ends: list[pa.Array] = []
        for partition in range(spec.num_partitions):
            picked = order[bounds[partition] : bounds[partition + 1]]
            if not len(picked):
                continue
            part_keys, part_stamps = keys.take(pa.array(picked)), stamps[picked]
            held = self._history(partitions, partition, len(picked))
            if held is not None:
                found = held.history.find(held.history.key_groups(part_keys), part_stamps)
                pick = pa.array(found, mask=found < 0)
                values.append(held.values.take(pick))
                starts.append(held.history.valid_from.take(pick))
                ends.append(held.history.valid_to.take(pick))
            else:
                answer = partitions.lookup(partition, part_keys, pa.array(part_stamps))
                values.append(self._decode(answer.column(0)))
                starts.append(answer.column(1))
                ends.append(answer.column(2))
        # Answer k belongs to event rows[order[k]]; the other events get nulls.
        where = np.full(len(as_of), -1, dtype=np.int64)
        where[rows[order]] = np.arange(len(rows))
        pick = pa.array(where, mask=where < 0)
        stamp_type = pa.timestamp("us", tz=self.zone)
        value_column = _concat(values, self._decode(pa.array([], pa.binary()))).take(pick)
        from_column, to_column = (
            pc.multiply(_concat(parts, pa.array([], pa.int64())).take(pick), 1_000).cast(stamp_type)
            for parts in (starts, ends)
        )
        return value_column, from_column, to_column

    def _decode(self, values: pa.Array) -> pa.Array:
        return serde_for(self.spec.value_type, column="value").decode(values)

    def _history(self, partitions: OpenPartitions, partition: int, events: int) -> _Held | None:
        """The partition's history if the method says to answer from one (module doc)."""
        if self.method == "lookups":
            return None
        if self.method == "auto":
            held = partitions.kept(partition)
            if held is not None:
                return held or None
            rows = self.partition_rows[partition] if self.partition_rows else 0
            if not reads_history(rows, events):
                return None
        return partitions.history(partition, None if self.method == "history" else HISTORY_BYTES)


def reads_history(rows: int, events: int) -> bool:
    """Whether ``auto`` reads the history of a partition of ``rows`` rows (from the commit
    log) for a chunk with ``events`` events of it, when the worker keeps none: at most
    ``HISTORY_ROWS_PER_EVENT`` rows per event, and histories are kept at all."""
    return HISTORY_BYTES > 0 and rows <= HISTORY_ROWS_PER_EVENT * events


@dataclass(frozen=True)
class _Held:
    """A partition's history at a commit, with its values decoded to the store's type."""

    history: Any  # stores.versioned.history.VersionedHistory
    values: pa.Array
    nbytes: int

    def __bool__(self) -> bool:
        return self.history is not None


#: The histories this Python worker holds, by (partition cache, commit), least recently used
#: first; a ``_Held`` of None: the history outgrew ``HISTORY_BYTES``, so look it up.
_KEPT: OrderedDict[tuple[str, int], _Held] = OrderedDict()
_TOO_LARGE = _Held(None, pa.array([], pa.binary()), 0)


def _keep(key: tuple[str, int], held: _Held) -> None:
    _KEPT[key] = held
    _KEPT.move_to_end(key)
    total = sum(h.nbytes for h in _KEPT.values())
    while total > HISTORY_BYTES and len(_KEPT) > 1:
        _, dropped = _KEPT.popitem(last=False)
        total -= dropped.nbytes


class OpenPartitions:
    """The store partitions one task has opened, each at the pinned commit, until it ends
    (``close``, or the end of a ``with``): ``asof_join``'s tasks and the SQL lookups' UDTFs
    (``datasource.sql_lookups``) ask them."""

    def __init__(self, root: str, spec: StoreSpec, snapshot: int) -> None:
        self.catalog = Catalog(root)
        self.spec = spec
        self.snapshot = snapshot
        self._open: dict[int, tuple[Any, contextlib.ExitStack]] = {}
        self._caches: dict[int, PartitionCache] = {}

    def __enter__(self) -> OpenPartitions:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for _, stack in self._open.values():
            stack.close()
        self._open.clear()

    def _cache(self, partition: int) -> PartitionCache:
        cache = self._caches.get(partition)
        if cache is None:  # made once: a lookup per row must not rebuild its paths
            cache = StoreTable(self.catalog, self.spec).partition_cache(partition)
            self._caches[partition] = cache
        return cache

    def _store(self, partition: int) -> Any:
        if partition not in self._open:
            stack = contextlib.ExitStack()
            store, _ = stack.enter_context(self._cache(partition).open_at(self.snapshot))
            self._open[partition] = (store, stack)
        return self._open[partition][0]

    def _release(self, partition: int) -> None:
        opened = self._open.pop(partition, None)
        if opened is not None:
            opened[1].close()  # our shared lock first: discarding takes it exclusively

    def ask(self, partition: int, question: Callable[[Any], _T]) -> _T:
        """``question(store)`` on a partition's store; a cache that RocksDB reports damaged is
        closed, discarded, rebuilt from the log and asked again, once
        (``PartitionCache.repairing``)."""
        opened = self._open.get(partition)
        if opened is not None:  # the per-row path of the SQL lookups: no closures
            try:
                return question(opened[0])
            except Exception as exc:
                if not is_rocksdb_failure(exc):
                    raise
        return self._cache(partition).repairing(
            lambda: question(self._store(partition)), release=lambda: self._release(partition)
        )

    def lookup(self, partition: int, keys: pa.Array, as_ofs: pa.Array) -> pa.RecordBatch:
        """``as_of_columns`` on a partition (see ``ask``)."""
        found: pa.RecordBatch = self.ask(partition, lambda s: s.as_of_columns(keys, as_ofs))
        return found

    def kept(self, partition: int) -> _Held | None:
        """The history this worker keeps of the partition at the commit (falsy: it outgrew
        ``HISTORY_BYTES``), or None if it has not read it."""
        key = (self._cache(partition).path, self.snapshot)
        held = _KEPT.get(key)
        if held is not None:
            _KEPT.move_to_end(key)
        return held

    def history(self, partition: int, max_bytes: int | None) -> _Held | None:
        """The partition's history (kept for later tasks), read from its cache (repaired as
        ``lookup`` is) unless kept already; None if it outgrows ``max_bytes``."""
        key = (self._cache(partition).path, self.snapshot)
        held = _KEPT.get(key)
        if held is None or (not held and max_bytes is None):
            history = self.ask(partition, lambda s: s.history(max_bytes=max_bytes))
            if history is None:
                held = _TOO_LARGE
            else:
                values = serde_for(self.spec.value_type, column="value").decode(
                    history.values.cast(pa.binary())
                )
                held = _Held(history, values, history.nbytes + values.nbytes)
            _keep(key, held)
        else:
            _KEPT.move_to_end(key)
        return held or None


def _concat(parts: list[pa.Array], empty: pa.Array) -> pa.Array:
    """``parts`` as one array (``empty`` if none)."""
    if not parts:
        return empty
    return pa.concat_arrays([p.combine_chunks() if isinstance(p, pa.ChunkedArray) else p
                             for p in parts]) if len(parts) > 1 else parts[0]  # fmt: skip


def _millis(column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Epoch milliseconds (floored) of a timestamp or epoch-ms column, and which rows can have
    a version: not null and not before 1970 (Kafka's timestamps are >= 0)."""
    if pa.types.is_timestamp(column.type):
        unit = column.type.unit
        raw = column.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
        factor = {"s": None, "ms": 1, "us": 1_000, "ns": 1_000_000}[unit]
        millis = raw * 1_000 if factor is None else np.floor_divide(raw, factor)
    else:
        millis = column.cast(pa.int64()).fill_null(-1).to_numpy(zero_copy_only=False)
    wanted = millis >= 0
    if column.null_count:
        wanted &= column.is_valid().to_numpy(zero_copy_only=False)
    return millis, wanted


__all__ = [
    "HISTORY_BYTES", "HISTORY_ROWS_PER_EVENT", "METHODS", "AsOfLookup", "OpenPartitions",
    "reads_history",
]  # fmt: skip
