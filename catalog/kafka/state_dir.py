"""A Kafka Streams state directory's store read (``<state.dir>/<app id>``).

Reading (``read_state_dir``): every task directory holding the store, read without writing a
byte into it (``stores.bytes.foreign``), under the application's ``.lock`` (refused while a
running instance holds it). Kafka's rows become our engine's rows (``stores.engine.Runs``),
from which the kind's engine computes the raw scan, as it does for a snapshot of our own:

| Kafka's layout (``task_dirs`` module doc)    | our partition's rows                        |
|----------------------------------------------|---------------------------------------------|
| ``rocksdb/<store>``: its column families     | the same families, the same rows            |
| ``<store>/<store>.<start>``: one DB a segment | one DB: ``BE64(segment id) ‖ key``, the     |
|                                              | segment id from the key's window start      |
|                                              | (session: end) and the spec's interval      |
| ``offsets`` family (4.3+), ``.checkpoint``   | ``TaskState.offsets``                       |

Kafka keeps no stream time on disk (an instance restarts at -1 and serves every row it holds
until its first write), so a read takes the view of Kafka's restore instead, as an import of
the same directory does: the stream time is the one a restore of the rows' changelog records
observes (``_task_rows``: the largest window start, session end; a
versioned store's engine derives it from its records), and what is expired at it is not
shown. A database in an older format (plain values beside timestamped ones, KIP-258's upgrade
mode) has rows in the older format's family too: where the engine cannot compute the scan
from such rows, they are ingested into a temporary RocksDB and the kind's store (which has
Kafka's upgrade rules) scans them.

Writing is ``catalog.kafka.export_dir``'s.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from catalog.kafka.task_dirs import (
    CHECKPOINT,
    DB_FILE_DIR,
    OFFSETS_CF,
    app_dir_unlocked,
    application_id_of,
    changelog_topic,
    check_families,
    kafka_families,
    offsets_from_rows,
    read_checkpoint,
    segment_dirs,
    task_dirs,
)
from catalog.kinds import STORE_MUST_ANSWER, Runs, Scan, StoreKind, kind_of
from catalog.log.spec import StoreSpec
from stores.bytes.foreign import open_foreign
from stores.bytes.protocol import BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.columns.decode import ByteColumn, segment_ids
from stores.columns.encode import concat_rows
from stores.errors import CorruptDataError, InvalidOptionError, StoreNotFoundError

log = logging.getLogger(__name__)
#: Where the segment time (8-byte BE) sits in a segmented store's key, counted from its end:
#: ``WindowKeySchema``: ``key ‖ start ‖ seqnum (4)``; ``SessionKeySchema``: ``key ‖ end ‖ start``.
SEGMENT_TIME_FROM_END = {"window": 12, "session": 16}
SEGMENT_PREFIX = 8
_SLICE_ROWS = 1 << 16
_BYTES = pa.large_binary()
#: Segment databases written at once (see ``_write_task``).
_WRITERS = 4


@dataclass(frozen=True)
class TaskState:
    """One task directory's state of a store.

    Attributes:
        partition: the task's partition (the changelog's and the input's).
        raw: the kind's raw scan (``Layout.raw_schema``; a versioned store's whole history,
            ``Scan(all_versions=True)``).
        offsets: ``(topic, partition)`` -> offset of the last changelog record the state
            reflects, from the ``offsets`` family (4.3+; the largest over a store's segments)
            or else the task's ``.checkpoint`` (its entries for the store's changelog topic).
        rows: the store's rows as ours (``stores.engine.Runs``, with the stream time a
            restore observes), if asked for (``read_state_dir(rows=True)``).
    """

    partition: int
    raw: pa.Table
    offsets: dict[tuple[str, int], int]
    rows: Runs | None = None


# -- reading ------------------------------------------------------------------------------------


def read_state_dir(
    app_dir: str,
    store_name: str,
    spec: StoreSpec,
    *,
    partitions: Collection[int] | None = None,
    scan: Scan | None = None,
    rows: bool = False,
) -> list[TaskState]:
    """Read store ``store_name`` from every task directory of a Kafka Streams application
    directory (``<state.dir>/<application.id>``), by partition; the application must be
    stopped on this host. Nothing in the directory is written (not even RocksDB's ``LOG``).

    Args:
        app_dir: the application's state directory; its basename is the application id.
        store_name: the store's name in the application's topology.
        spec: the store's kind and parameters exactly as the application builds it (segment
            interval, timestamped, headers, ...).
        partitions: only these partitions' task directories (None: all).
        scan: what to read of each (``Scan()``: the latest state, as a read of a store of
            ours; None: everything, a versioned store's whole history).
        rows: keep each task's rows as ours (``TaskState.rows``).

    Raises:
        InvalidOptionError: the directory is locked by a running instance (STATE_DIR_LOCKED);
            a database of another kind than ``spec`` declares, or with another kind's column
            families (WRONG_STORE_KIND); a column family no Kafka store has
            (UNKNOWN_COLUMN_FAMILY); segments that do not fit the spec's segment interval
            (SEGMENT_INTERVAL_MISMATCH).
        CorruptDataError: two task directories of one partition hold the store, a malformed
            ``.checkpoint`` or ``offsets`` family, an entry of a store directory that is not
            a segment.
        StoreNotFoundError: ``app_dir`` does not exist.
    """
    kind = kind_of(spec.kind)
    if not os.path.isdir(app_dir):
        raise StoreNotFoundError(f"no Kafka Streams state directory at {app_dir}")
    topic = changelog_topic(application_id_of(app_dir), store_name)
    states: dict[int, TaskState] = {}
    where: dict[int, str] = {}
    with app_dir_unlocked(app_dir):
        for _, partition, task in task_dirs(app_dir):
            if partitions is not None and partition not in partitions:
                continue
            found = _task_rows(task, store_name, spec)
            if found is None:
                continue
            if partition in states:
                raise CorruptDataError(
                    f"task directories {where[partition]} and {task} both hold store "
                    f"{store_name!r} for partition {partition}; read a copy holding one",
                    code="AMBIGUOUS_TASKS",
                )
            runs, store_offsets = found
            checkpoint = {
                tp: offset
                for tp, offset in read_checkpoint(os.path.join(task, CHECKPOINT)).items()
                if tp[0] == topic and offset >= 0
            }
            # Kafka 4.3 looks in the store's own family first, then in the legacy checkpoint;
            # an unknown offset (OffsetCheckpoint.OFFSET_UNKNOWN, -4: nothing logged) is none.
            offsets = {tp: o for tp, o in {**checkpoint, **store_offsets}.items() if o >= 0}
            raw = _raw_scan(kind, spec.params, runs, scan)
            states[partition] = TaskState(partition, raw, offsets, runs if rows else None)
            where[partition] = task
    return [states[p] for p in sorted(states)]


def _task_rows(
    task: str, store: str, spec: StoreSpec
) -> tuple[Runs, dict[tuple[str, int], int]] | None:
    """Our rows of the store in one task dir and its ``offsets`` family's offsets; None if the
    task dir does not hold the store. A window or session store's rows carry the stream time
    Kafka's restore of them observes, where our stores keep it (``StoreKind.stream_time_row``):
    their largest segment time (window start, session end;
    ``AbstractRocksDBSegmentedBytesStore.restoreAllInternal``). Kafka keeps none on disk, so
    a read then expires what the restored store would, as an import of the same rows does."""
    single, segmented = os.path.join(task, DB_FILE_DIR, store), os.path.join(task, store)
    families = kafka_families(spec.kind, spec.params)
    declared = f"{spec.kind} store ({families.store_class})"
    time_at = SEGMENT_TIME_FROM_END.get(spec.kind)
    if time_at is None:
        if os.path.isdir(segmented) and not os.path.isdir(single):
            raise InvalidOptionError(
                f"{segmented} holds segment databases, a window or session store's layout, "
                f"but store {store!r} is declared a {spec.kind} store",
                code="WRONG_STORE_KIND",
            )
        if not os.path.isdir(single):
            return None
        return _database_rows(single, families.accepted, declared)
    if os.path.isdir(single) and not os.path.isdir(segmented):
        raise InvalidOptionError(
            f"{single} is one database, a key-value, timestamped or versioned store's layout, "
            f"but store {store!r} is declared a {spec.kind} store (one database a segment)",
            code="WRONG_STORE_KIND",
        )
    if not os.path.isdir(segmented):
        return None
    interval = int(spec.params["segment_interval_ms"])
    parts: dict[str, list[tuple[pa.Array, pa.Array]]] = {}
    offsets: dict[tuple[str, int], int] = {}
    latest: int | None = None
    for seg, path in segment_dirs(segmented, store, interval):
        rows, seg_offsets = _database_rows(path, families.accepted, declared)
        for tp, offset in seg_offsets.items():
            offsets[tp] = max(offset, offsets.get(tp, offset))
        for family, (keys, values) in rows.items():
            found = _check_segment(keys, seg, interval, time_at, path)
            if found is not None:
                latest = found if latest is None else max(latest, found)
            prefix = seg.to_bytes(SEGMENT_PREFIX, "big", signed=True)
            parts.setdefault(family, []).append((concat_rows(prefix, keys), values))
    runs = {
        family: (
            pa.concat_arrays([k for k, _ in pieces]).cast(_BYTES),
            pa.concat_arrays([v for _, v in pieces]).cast(_BYTES),
        )
        for family, pieces in parts.items()
    }
    where = kind_of(spec.kind).stream_time_row
    if latest is not None and where is not None:
        stamp = latest.to_bytes(8, "big", signed=True)
        runs[where[0]] = (pa.array([where[1]], _BYTES), pa.array([stamp], _BYTES))
    return runs, offsets


def _database_rows(
    path: str, accepted: frozenset[str], declared: str
) -> tuple[Runs, dict[tuple[str, int], int]]:
    """``(rows by family, offsets)`` of one Kafka database, opened read-only through a shadow:
    its families checked against those of the declared store, empty ones left out, the
    ``offsets`` family decoded (a store whose status says open was not closed cleanly: its
    offsets are those of its last commit, which Kafka under at-least-once trusts too)."""
    with open_foreign(path) as (db, found):
        check_families(found, accepted, path, declared)
        rows: Runs = {}
        offsets: dict[tuple[str, int], int] = {}
        for family in found:
            keys, values = whole_family(db, family)
            if family == OFFSETS_CF:
                offsets, status = offsets_from_rows(keys.to_pylist(), values.to_pylist(), path)
                if status not in (None, 0):
                    log.warning(
                        "the Kafka Streams store at %s was not closed cleanly (KIP-1035 status "
                        "%s): under exactly-once Kafka would wipe it and restore its changelog",
                        path, status,
                    )  # fmt: skip
            elif len(keys):
                rows[family] = (keys, values)
    return rows, offsets


def whole_family(db: BytesStore, family: str) -> tuple[pa.Array, pa.Array]:
    """Every row of a column family, in key order, as two large binary arrays."""
    keys: list[pa.Array] = []
    values: list[pa.Array] = []
    for batch_keys, batch_values in db.scan_columns(cf=family):
        keys.append(pa.array(batch_keys, _BYTES))
        values.append(pa.array(batch_values, _BYTES))
    if not keys:
        return pa.array([], _BYTES), pa.array([], _BYTES)
    return pa.concat_arrays(keys), pa.concat_arrays(values)


def _check_segment(
    keys: pa.Array, seg: int, interval: int, time_at: int, where: str
) -> int | None:
    """The largest segment time of a segment database's keys (None: no keys); refused if a
    key's segment time lies in another segment (Kafka's segments are by the app's interval;
    ours must be the same).

    Raises:
        CorruptDataError: a key too short for its layout.
        InvalidOptionError: SEGMENT_INTERVAL_MISMATCH, naming the segment and the time.
    """
    column = ByteColumn(keys)
    if len(column.lengths) and column.lengths.min() < time_at:
        raise CorruptDataError(f"{where} holds a key shorter than its store's key layout")
    times = column.longs_at(column.starts + column.lengths - time_at)
    wrong = np.flatnonzero(segment_ids(times, interval) != seg)
    if len(wrong):
        raise InvalidOptionError(
            f"segment database {where} (segment {seg} of {interval} ms) holds a record of time "
            f"{int(times[wrong[0]])} ms, which lies in segment "
            f"{int(segment_ids(times[wrong[:1]], interval)[0])}: the application's segment "
            "interval is another; declare the store with the application's",
            code="SEGMENT_INTERVAL_MISMATCH",
        )
    return int(times.max()) if len(times) else None


def state_dir_partitions(app_dir: str, store_name: str) -> list[int]:
    """The partitions whose task directories hold store ``store_name`` (nothing is opened:
    a directory of a running application is listed too).

    Raises:
        StoreNotFoundError: ``app_dir`` does not exist.
    """
    if not os.path.isdir(app_dir):
        raise StoreNotFoundError(f"no Kafka Streams state directory at {app_dir}")
    return sorted(
        {
            partition
            for _, partition, task in task_dirs(app_dir)
            if os.path.isdir(os.path.join(task, DB_FILE_DIR, store_name))
            or os.path.isdir(os.path.join(task, store_name))
        }
    )


def _raw_scan(kind: StoreKind, params: dict[str, Any], runs: Runs, scan: Scan | None) -> pa.Table:
    """The kind's raw scan (``scan``; None: everything) of a partition holding ``runs``:
    computed from the columns, or by the kind's store over a temporary RocksDB where the
    engine cannot."""
    if scan is None:
        scan = Scan(all_versions=True) if kind.supports_as_of else Scan()
    schema = kind.layout(params).raw_schema()
    result = kind.scan_columns(runs, [], params, scan)
    if result is STORE_MUST_ANSWER:
        with tempfile.TemporaryDirectory(prefix="kafka-state-") as tmp:
            db = RocksDBBytesStore(os.path.join(tmp, "db"), kind.column_families(params))
            try:
                for family, (keys, values) in runs.items():
                    db.ingest_sorted(family, row_slices(keys, values))
                store = kind.open(db, params)
                batches = list(kind.scan(store, scan, params))
            finally:
                db.close()
        result = pa.Table.from_batches(batches, schema=schema)
    return result.select(schema.names).cast(schema)


def row_slices(keys: pa.Array, values: pa.Array) -> Iterator[tuple[pa.Array, pa.Array]]:
    for start in range(0, len(keys), _SLICE_ROWS):
        yield keys.slice(start, _SLICE_ROWS), values.slice(start, _SLICE_ROWS)


__all__ = [
    "SEGMENT_PREFIX",
    "SEGMENT_TIME_FROM_END",
    "TaskState",
    "read_state_dir",
    "row_slices",
    "state_dir_partitions",
    "whole_family",
]
