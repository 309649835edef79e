"""A store's committed state written as a Kafka Streams state directory (``write_state_dir``).

Partition ``p`` at a snapshot becomes task directory ``<subtopology>_<p>`` that Kafka Streams
of the given version opens as its own: exactly the column families its store declares (our
``segmentsMetadata`` and ``versionedStoreMetadata`` never), one RocksDB per segment for window
and session stores, SST files ingested from Arrow columns (no row puts), table
``format_version`` 5 for Kafka 3.x (RocksDB 7.9), offsets as ``.checkpoint`` (<= 4.2) or in the
``offsets`` family (4.3+). Each task directory (or store directory, in a task directory that
exists) is built under a temporary name in the application directory and renamed into place,
so a crash leaves no half-written one (only a ``.statestore-*`` directory that Kafka ignores).

Exports equal restores: the directory holds what Kafka's restore of the store's exported
changelog (``catalog.kafka.changelog``) builds. A window or session store's rows that its
reads have expired (a time at or before its stream time minus the retention) stay out though
their segment is live: an instance started on the directory, with no stream time, would serve
them, where the restored one would not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from catalog.kafka.state_dir import (
    SEGMENT_PREFIX,
    SEGMENT_TIME_FROM_END,
    row_slices,
    whole_family,
)
from catalog.kafka.task_dirs import (
    CHECKPOINT,
    DB_FILE_DIR,
    OFFSETS_CF,
    OFFSETS_CF_VERSION,
    app_dir_unlocked,
    application_id_of,
    changelog_topic,
    kafka_families,
    offsets_rows,
    read_checkpoint,
    segment_name,
    table_format_version,
    task_dirs,
    write_checkpoint,
)
from catalog.kafka.task_dirs import kafka_version as parse_kafka_version
from catalog.kinds import STORE_MUST_ANSWER, Runs, kind_of
from catalog.log.spec import StoreSpec
from catalog.table import Table
from stores.bytes.protocol import DEFAULT_CF
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.columns.decode import ByteColumn
from stores.errors import InvalidOptionError

_BYTES = pa.large_binary()
#: Segment databases written at once (see ``_write_task``).
_WRITERS = 4


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
    check_export(spec, version, store_name, subtopology, offsets)
    snapshot = table.log.latest_id() if snapshot is None else snapshot
    table = table.at_commit(snapshot)
    spec = table.spec
    check_export(spec, version, store_name, subtopology, offsets)
    topic = changelog_topic(application_id_of(app_dir), store_name)
    segmented = spec.kind in SEGMENT_TIME_FROM_END
    relative = store_name if segmented else os.path.join(DB_FILE_DIR, store_name)
    os.makedirs(app_dir, exist_ok=True)
    written = []
    with app_dir_unlocked(app_dir):
        _check_empty(app_dir, store_name, relative)
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


def check_target(app_dir: str, store_name: str, kind: str) -> None:
    """Refuse a target application directory that a ``write_state_dir`` of store
    ``store_name`` (of ``kind``) would refuse: locked, or holding the store already.

    Raises:
        InvalidOptionError: STATE_DIR_LOCKED, STORE_DIR_EXISTS.
    """
    if not os.path.isdir(app_dir):
        return
    segmented = kind in SEGMENT_TIME_FROM_END
    relative = store_name if segmented else os.path.join(DB_FILE_DIR, store_name)
    with app_dir_unlocked(app_dir):
        _check_empty(app_dir, store_name, relative)


def _check_empty(app_dir: str, store_name: str, relative: str) -> None:
    """Refuse an application directory whose task directories (any partition: a store of
    another partition count leaves others) hold store ``store_name`` already.

    Raises:
        InvalidOptionError: STORE_DIR_EXISTS, naming the directory.
    """
    for _, _, task in task_dirs(app_dir):
        target = os.path.join(task, relative)
        if os.path.isdir(target) and os.listdir(target) or os.path.isfile(target):
            raise InvalidOptionError(
                f"{target} exists and is not empty: Kafka Streams state of store "
                f"{store_name!r} is there already; delete it (with the application "
                "stopped) or write to another state directory",
                code="STORE_DIR_EXISTS",
            )


def check_export(
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
        return {family: whole_family(db, family) for family in cache.families}


def _kafka_databases(spec: StoreSpec, store: str, rows: Runs) -> dict[str, Runs]:
    """Kafka's databases of one partition: relative path (``""``: the store's one database;
    else a segment's) -> rows by column family, only the families Kafka's store declares."""
    families = kafka_families(spec.kind, spec.params)
    kept = {f: r for f, r in rows.items() if f in families.accepted and len(r[0])}
    if spec.kind not in SEGMENT_TIME_FROM_END:
        return {"": kept}
    kept = _unexpired(spec, kept, _stream_time(spec, rows))
    interval = int(spec.params["segment_interval_ms"])
    databases: dict[str, Runs] = {}
    for family, (keys, values) in kept.items():
        column = ByteColumn(keys)
        segs = column.longs_at(column.starts)
        stripped = column.slices(column.starts + SEGMENT_PREFIX, column.lengths - SEGMENT_PREFIX)
        values = values.cast(_BYTES)
        bounds = np.flatnonzero(np.diff(segs)) + 1
        for start, stop in zip(np.append(0, bounds), np.append(bounds, len(segs))):
            name = segment_name(store, int(segs[start]), interval)
            databases.setdefault(name, {})[family] = (
                stripped.slice(start, stop - start),
                values.slice(start, stop - start),
            )
    return databases


def _stream_time(spec: StoreSpec, rows: Runs) -> int | None:
    """The stream time our rows of a store keep (``StoreKind.stream_time_row``), if any."""
    where = kind_of(spec.kind).stream_time_row
    if where is None or where[0] not in rows:
        return None
    keys, values = rows[where[0]]
    for key, value in zip(keys.to_pylist(), values.to_pylist(), strict=True):
        if key == where[1]:
            return int.from_bytes(value, "big", signed=True)
    return None


def _unexpired(spec: StoreSpec, rows: Runs, stream_time: int | None) -> Runs:
    """A window or session store's rows without those its reads have expired: a segment time
    (window start, session end) at or before ``stream_time`` minus the retention. Their
    segment is still live, so our rows keep them; but Kafka keeps no stream time, so an
    instance started on the directory would serve them, where a restore of the store's
    changelog would not (``AbstractRocksDBSegmentedBytesStore.fetch`` hides them once its
    stream time is known)."""
    if stream_time is None:
        return rows
    low = stream_time - int(spec.params["retention_ms"]) + 1
    at = SEGMENT_TIME_FROM_END[spec.kind]
    kept: Runs = {}
    for family, (keys, values) in rows.items():
        column = ByteColumn(keys)
        live = column.longs_at(column.starts + column.lengths - at) >= low
        if live.all():
            kept[family] = (keys, values)
        elif live.any():
            mask = pa.array(live)
            kept[family] = (keys.filter(mask), values.filter(mask))
    return kept


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
            db.ingest_sorted(family, row_slices(keys, values))
        if offsets:
            db.ingest_sorted(OFFSETS_CF, [offsets_rows(offsets)])
        db.flush()
    finally:
        db.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, "rocksdict-config.json"))


__all__ = ["check_export", "check_target", "partition_rows", "write_state_dir"]
