"""A store's state in and out of a Kafka Streams state directory (``<state.dir>/<app id>``).

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

Kafka keeps no stream time on disk (it restarts at -1), and neither do the rows read here: a
read shows every row, as Kafka's store does after a restart. A database in an older format
(plain values beside timestamped ones, KIP-258's upgrade mode) has rows in the older format's
family too: where the engine cannot compute the scan from such rows, they are ingested into a
temporary RocksDB and the kind's store (which has Kafka's upgrade rules) scans them.

Writing (``write_state_dir``): a store's committed state at a snapshot, partition ``p`` as
task directory ``<subtopology>_<p>`` that Kafka Streams of the given version opens as its own:
exactly the column families its store declares (our ``segmentsMetadata`` and
``versionedStoreMetadata`` never), one RocksDB per segment for window and session stores,
SST files ingested from Arrow columns (no row puts), table ``format_version`` 5 for Kafka 3.x
(RocksDB 7.9), offsets as ``.checkpoint`` (<= 4.2) or in the ``offsets`` family (4.3+). Each
task directory (or store directory, in a task directory that exists) is built under a
temporary name in the application directory and renamed into place, so a crash leaves no
half-written one (only a ``.statestore-*`` directory that Kafka ignores).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from catalog.kafka.task_dirs import (
    CHECKPOINT,
    DB_FILE_DIR,
    OFFSETS_CF,
    OFFSETS_CF_VERSION,
    app_dir_unlocked,
    application_id_of,
    changelog_topic,
    check_families,
    kafka_families,
    offsets_from_rows,
    offsets_rows,
    read_checkpoint,
    segment_dirs,
    segment_name,
    table_format_version,
    task_dirs,
    write_checkpoint,
)
from catalog.kafka.task_dirs import kafka_version as parse_kafka_version
from catalog.kinds import STORE_MUST_ANSWER, Runs, Scan, StoreKind, kind_of
from catalog.log.spec import StoreSpec
from catalog.table import Table
from stores.bytes.foreign import open_foreign
from stores.bytes.protocol import DEFAULT_CF, BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.columns.decode import ByteColumn, segment_ids
from stores.columns.encode import concat_rows
from stores.errors import CorruptDataError, InvalidOptionError, StoreNotFoundError

log = logging.getLogger(__name__)
#: Where the segment time (8-byte BE) sits in a segmented store's key, counted from its end:
#: ``WindowKeySchema``: ``key ‖ start ‖ seqnum (4)``; ``SessionKeySchema``: ``key ‖ end ‖ start``.
SEGMENT_TIME_FROM_END = {"window": 12, "session": 16}
_PREFIX = 8
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
    """

    partition: int
    raw: pa.Table
    offsets: dict[tuple[str, int], int]


# -- reading ------------------------------------------------------------------------------------


def read_state_dir(
    app_dir: str,
    store_name: str,
    spec: StoreSpec,
    *,
    partitions: Collection[int] | None = None,
    scan: Scan | None = None,
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
            states[partition] = TaskState(partition, raw, offsets)
            where[partition] = task
    return [states[p] for p in sorted(states)]


def _task_rows(
    task: str, store: str, spec: StoreSpec
) -> tuple[Runs, dict[tuple[str, int], int]] | None:
    """Our rows of the store in one task dir and its ``offsets`` family's offsets; None if the
    task dir does not hold the store."""
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
    for seg, path in segment_dirs(segmented, store, interval):
        rows, seg_offsets = _database_rows(path, families.accepted, declared)
        for tp, offset in seg_offsets.items():
            offsets[tp] = max(offset, offsets.get(tp, offset))
        for family, (keys, values) in rows.items():
            _check_segment(keys, seg, interval, time_at, path)
            prefix = seg.to_bytes(_PREFIX, "big", signed=True)
            parts.setdefault(family, []).append((concat_rows(prefix, keys), values))
    runs = {
        family: (
            pa.concat_arrays([k for k, _ in pieces]).cast(_BYTES),
            pa.concat_arrays([v for _, v in pieces]).cast(_BYTES),
        )
        for family, pieces in parts.items()
    }
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
            keys, values = _whole_family(db, family)
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


def _whole_family(db: BytesStore, family: str) -> tuple[pa.Array, pa.Array]:
    """Every row of a column family, in key order, as two large binary arrays."""
    keys: list[pa.Array] = []
    values: list[pa.Array] = []
    for batch_keys, batch_values in db.scan_columns(cf=family):
        keys.append(pa.array(batch_keys, _BYTES))
        values.append(pa.array(batch_values, _BYTES))
    if not keys:
        return pa.array([], _BYTES), pa.array([], _BYTES)
    return pa.concat_arrays(keys), pa.concat_arrays(values)


def _check_segment(keys: pa.Array, seg: int, interval: int, time_at: int, where: str) -> None:
    """Refuse a segment database holding a key whose segment time lies in another segment
    (Kafka's segments are by the app's interval; ours must be the same).

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
                    db.ingest_sorted(family, _slices(keys, values))
                store = kind.open(db, params)
                batches = list(kind.scan(store, scan, params))
            finally:
                db.close()
        result = pa.Table.from_batches(batches, schema=schema)
    return result.select(schema.names).cast(schema)


def _slices(keys: pa.Array, values: pa.Array) -> Iterator[tuple[pa.Array, pa.Array]]:
    for start in range(0, len(keys), _SLICE_ROWS):
        yield keys.slice(start, _SLICE_ROWS), values.slice(start, _SLICE_ROWS)


# -- writing ------------------------------------------------------------------------------------


def write_state_dir(
    table: Table,
    app_dir: str,
    *,
    store_name: str,
    kafka_version: str,
    subtopology: int,
    offsets: dict[int, int],
    snapshot: int | None = None,
) -> list[str]:
    """Write a store's committed state as the task directories of store ``store_name`` of a
    Kafka Streams application (``app_dir`` = ``<state.dir>/<application.id>``), which a
    stopped instance of Kafka Streams ``kafka_version`` opens as its own on restart.

    Partition ``p`` becomes task directory ``<subtopology>_<p>`` (added to one that exists,
    whose other stores and checkpoint entries are kept), if the store holds rows in ``p`` or
    ``offsets`` names ``p``. Its offset is that of the last changelog record the state
    reflects, for ``<application.id>-<store_name>-changelog`` partition ``p``: produce the
    changelog first. A partition without one gets no checkpoint entry: Kafka then restores
    that task's changelog from its start over the data (and under exactly-once wipes it).

    Args:
        table: the store (its partitioner must be ``kafka``: partition p holds task p's keys).
        app_dir: the application's state directory (created if missing); its basename is the
            application id.
        store_name: the store's name in the application's topology.
        kafka_version: the application's Kafka Streams version (``"3.9.1"``, ``"4.3.0"``).
        subtopology: the topic group id of the subtopology that owns the store.
        offsets: partition -> changelog offset.
        snapshot: the commit to export (None: the latest).

    Returns:
        The task directories written, by partition.

    Raises:
        InvalidOptionError: a store not partitioned by Kafka's partitioner
            (PARTITIONER_MISMATCH); a header-aware store for Kafka before 4.3, or a version
            before 3.0 (UNSUPPORTED_KAFKA_VERSION); an offset for a partition the store does
            not have, or below 0 (INVALID_OFFSET); a store directory that exists and is not
            empty (STORE_DIR_EXISTS); the directory is locked by a running instance
            (STATE_DIR_LOCKED). Nothing is written then.
    """
    version = parse_kafka_version(kafka_version)
    spec = table.spec
    _check_exportable(spec, version, store_name, subtopology, offsets)
    snapshot = table.log.latest_id() if snapshot is None else snapshot
    table = table.at_commit(snapshot)
    spec = table.spec
    _check_exportable(spec, version, store_name, subtopology, offsets)
    topic = changelog_topic(application_id_of(app_dir), store_name)
    segmented = spec.kind in SEGMENT_TIME_FROM_END
    relative = store_name if segmented else os.path.join(DB_FILE_DIR, store_name)
    os.makedirs(app_dir, exist_ok=True)
    written = []
    with app_dir_unlocked(app_dir):
        for partition in range(spec.num_partitions):
            target = os.path.join(app_dir, f"{subtopology}_{partition}", relative)
            if os.path.isdir(target) and os.listdir(target) or os.path.isfile(target):
                raise InvalidOptionError(
                    f"{target} exists and is not empty: Kafka Streams state of store "
                    f"{store_name!r} is there already; delete it (with the application "
                    "stopped) or write to another state directory",
                    code="STORE_DIR_EXISTS",
                )
        for partition in range(spec.num_partitions):
            rows = partition_rows(table, partition, snapshot)
            offset = offsets.get(partition)
            if not any(len(keys) for keys, _ in rows.values()) and offset is None:
                continue
            task = os.path.join(app_dir, f"{subtopology}_{partition}")
            _write_task(
                app_dir, task, relative, _kafka_databases(spec, store_name, rows), version,
                None if offset is None else {(topic, partition): offset}, topic,
            )  # fmt: skip
            written.append(task)
    return written


def _check_exportable(
    spec: StoreSpec,
    version: tuple[int, int],
    store_name: str,
    subtopology: int,
    offsets: dict[int, int],
) -> None:
    """Refuse what no Kafka Streams application of ``version`` could open (see
    ``write_state_dir``)."""
    if spec.partitioner != "kafka":
        raise InvalidOptionError(
            f"store {spec.name!r} is partitioned by {spec.partitioner!r}, not by Kafka's "
            "partitioner: its partition p does not hold Kafka Streams task p's keys. Create "
            "the store with partitioner 'kafka' (or rewrite it into one)",
            code="PARTITIONER_MISMATCH",
        )
    if spec.params.get("headers") and version < OFFSETS_CF_VERSION:
        raise InvalidOptionError(
            f"store {spec.name!r} keeps headers, which Kafka Streams stores have from 4.3 "
            f"(KIP-1271); kafka_version {'.'.join(map(str, version))} has none",
            code="UNSUPPORTED_KAFKA_VERSION",
        )
    if not store_name or os.sep in store_name or store_name in (".", ".."):
        raise InvalidOptionError(f"store_name {store_name!r} is not a Kafka Streams store name")
    if not isinstance(subtopology, int) or subtopology < 0:
        raise InvalidOptionError(f"subtopology must be an integer >= 0, got {subtopology!r}")
    wrong = {p: o for p, o in offsets.items() if not 0 <= p < spec.num_partitions or o < 0}
    if wrong:
        raise InvalidOptionError(
            f"offsets {wrong} name a partition outside 0..{spec.num_partitions - 1} or an "
            "offset below 0; give partition -> offset of the last changelog record",
            code="INVALID_OFFSET",
        )


def partition_rows(table: Table, partition: int, snapshot: int) -> Runs:
    """Our RocksDB rows of one partition at commit ``snapshot`` by column family (the kind's
    ``store_rows`` from columns, or read from the partition's cache where it must answer)."""
    if snapshot == 0:
        return {}
    cache = table.partition_cache(partition)
    params = table.spec.params
    runs, commits = cache.columns_at(snapshot)
    rows = table.kind.store_rows(runs, commits, params)
    if rows is not STORE_MUST_ANSWER:
        return rows
    with cache.open_at(snapshot) as (store, _):
        db = store.wrapped
        return {family: _whole_family(db, family) for family in cache.families}


def _kafka_databases(spec: StoreSpec, store: str, rows: Runs) -> dict[str, Runs]:
    """Kafka's databases of one partition: relative path (``""``: the store's one database;
    else a segment's) -> rows by column family, only the families Kafka's store declares."""
    families = kafka_families(spec.kind, spec.params)
    kept = {f: r for f, r in rows.items() if f in families.accepted and len(r[0])}
    if spec.kind not in SEGMENT_TIME_FROM_END:
        return {"": kept}
    interval = int(spec.params["segment_interval_ms"])
    databases: dict[str, Runs] = {}
    for family, (keys, values) in kept.items():
        column = ByteColumn(keys)
        segs = column.longs_at(column.starts)
        stripped = column.slices(column.starts + _PREFIX, column.lengths - _PREFIX)
        values = values.cast(_BYTES)
        bounds = np.flatnonzero(np.diff(segs)) + 1
        for start, stop in zip(np.append(0, bounds), np.append(bounds, len(segs))):
            name = segment_name(store, int(segs[start]), interval)
            databases.setdefault(name, {})[family] = (
                stripped.slice(start, stop - start),
                values.slice(start, stop - start),
            )
    return databases


def _write_task(
    app_dir: str,
    task: str,
    relative: str,
    databases: dict[str, Runs],
    version: tuple[int, int],
    offsets: dict[tuple[str, int], int] | None,
    topic: str,
) -> None:
    """Build the store's directory (and a new task directory's checkpoint) under a temporary
    name in ``app_dir``, then rename it into place. In a task directory that exists, the
    checkpoint's entries of the store's changelog ``topic`` (an earlier state's) go before
    the store is in place, its new entry after (a crash between leaves the store without an
    entry: restored from the changelog, never trusted at a wrong offset)."""
    in_cf = version >= OFFSETS_CF_VERSION
    fmt = table_format_version(version)
    tmp = os.path.join(app_dir, f".statestore-{uuid.uuid4().hex}")
    try:
        store_dir = os.path.join(tmp, relative)
        os.makedirs(store_dir)

        def write(name: str, rows: Runs) -> None:
            families = [DEFAULT_CF, *rows] + ([OFFSETS_CF] if in_cf and offsets else [])
            path = os.path.join(store_dir, name) if name else store_dir
            _write_database(path, families, rows, fmt, offsets if in_cf else None)

        # A new database costs a few fsyncs (its MANIFEST, CURRENT, OPTIONS, the ingested
        # file): segments' databases are written side by side, their waits overlapping.
        with ThreadPoolExecutor(max(1, min(_WRITERS, len(databases)))) as pool:
            for done in [pool.submit(write, name, rows) for name, rows in databases.items()]:
                done.result()
        # Offsets go into a .checkpoint before 4.3, and where there is no database to hold
        # them (a segmented store without segments), which 4.3 reads and migrates.
        checkpoint = offsets if offsets and (not in_cf or not databases) else None
        if not os.path.isdir(task):
            if checkpoint:
                write_checkpoint(os.path.join(tmp, CHECKPOINT), checkpoint)
            os.rename(tmp, task)
            return
        path = os.path.join(task, CHECKPOINT)
        others = {tp: o for tp, o in read_checkpoint(path).items() if tp[0] != topic}
        if others != read_checkpoint(path):
            write_checkpoint(path, others)  # Kafka would trust them for the state written here
        target = os.path.join(task, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(target)  # empty (checked before)
        os.rename(store_dir, target)
        if checkpoint:
            write_checkpoint(path, {**others, **checkpoint})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _write_database(
    path: str,
    families: list[str],
    rows: Runs,
    fmt: int,
    offsets: dict[tuple[str, int], int] | None,
) -> None:
    """One Kafka database: ``families`` created, each family's rows ingested as an SST file,
    the ``offsets`` family's rows if given, flushed and closed; rocksdict's own file removed."""
    db = RocksDBBytesStore(path, list(dict.fromkeys(families)), table_format_version=fmt)
    try:
        for family, (keys, values) in rows.items():
            db.ingest_sorted(family, _slices(keys, values))
        if offsets:
            db.ingest_sorted(OFFSETS_CF, [offsets_rows(offsets)])
        db.flush()
    finally:
        db.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, "rocksdict-config.json"))


__all__ = [
    "TaskState",
    "partition_rows",
    "read_state_dir",
    "state_dir_partitions",
    "write_state_dir",
]
