"""Writes without Spark: ``StoreTable.append``, ``overwrite`` and ``delete``.

A Python write is a Spark write with one writer: the same column rules and time columns
(``catalog.operations.write.check_columns``), the same staging as the rows stream in
(``stage_batches``: checked, serialized and cut by partition batch by batch, one Arrow IPC
file per ``FLUSH_BYTES``), the same commit (one record, conflicts retried or refused with
their codes, a transaction id skipping a version already committed, an erasure landed since
the write began refusing it: ERASED_MEANWHILE) and the same clean-up: a failed write deletes
every file it staged unless a published record lists it. The rows come from Arrow, pandas or
polars (``catalog.operations.arrow_input``).

``delete`` writes the tombstones a Spark write of null values would, per kind: one per key (at
``timestamp`` for the kinds that keep a time: Kafka's ``VersionedKeyValueStore.delete(key,
timestamp)``), or, where a window or a session is part of the key (window and session stores),
one per live window or session of the key, read at the latest commit, as Kafka's
``WindowStore.put(key, null, windowStart)`` and ``SessionStore.remove(sessionKey)`` do.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.log.records import ChangelogFile, CommitRecord, Txn
from catalog.operations.arrow_input import arrow_rows, typed_keys
from catalog.operations.write import (
    WriteColumns,
    check_columns,
    cleanup,
    commit_write,
    epoch_millis,
    stage_batches,
)
from catalog.partitioner import partitions_of
from catalog.table import Table
from stores.errors import InvalidOptionError
from stores.serdes import serde_for
from stores.time import instant_ms
from stores.types import to_arrow


def _txn(txn_app_id: str | None, txn_version: int | None) -> Txn | None:
    """A write's transaction id, both parts or neither.

    Raises:
        InvalidOptionError: one part without the other, or a negative version.
    """
    if txn_app_id is None and txn_version is None:
        return None
    if txn_app_id is None or txn_version is None:
        given, missing = (
            ("txn_app_id", "txn_version")
            if txn_app_id is not None
            else ("txn_version", "txn_app_id")
        )
        raise InvalidOptionError(
            f"{given} is given without {missing}; a transaction id is both (txn_app_id names "
            "the writer, txn_version counts its writes up)",
            code="MISSING_OPTION",
        )
    if not txn_app_id or not isinstance(txn_version, int) or txn_version < 0:
        raise InvalidOptionError(
            f"txn_app_id={txn_app_id!r}, txn_version={txn_version!r}; accepted: a non-empty "
            "string and an integer >= 0",
            code="INVALID_OPTION",
        )
    return Txn(txn_app_id, txn_version)


#: Bytes of consecutive rows a Python write stages as one file, by one of its threads.
RUN_BYTES = 32 << 20
#: Threads a Python write stages its runs with (each releases the GIL for most of its work:
#: Arrow's and numpy's kernels, LZ4, the file's writes).
THREADS = max(1, min(4, os.cpu_count() or 1))


def _runs(batches: Iterator[pa.RecordBatch]) -> Iterator[list[pa.RecordBatch]]:
    """The batches as runs of consecutive rows of about ``RUN_BYTES`` (a larger batch is cut)."""
    run: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        per_row = max(1, batch.nbytes // batch.num_rows)
        start = 0
        while start < batch.num_rows:
            take = max(1, min(batch.num_rows - start, (RUN_BYTES - size) // per_row))
            run.append(batch.slice(start, take))
            size += take * per_row
            start += take
            if size >= RUN_BYTES:
                yield run
                run, size = [], 0
    if run:
        yield run


def _stage_runs(
    table: Table, checked: WriteColumns, batches: Iterator[pa.RecordBatch], write_id: str
) -> list[ChangelogFile]:
    """Stage the rows as runs (``_runs``), each its own file ``<write_id>-<run>-<seq>``
    staged by one of ``THREADS`` threads, at most two runs per thread in memory. A commit
    applies a partition's files in name order, so the runs' rows apply in the order given.
    A failure deletes every file the write staged."""
    staged: list[ChangelogFile] = []
    pending: deque[Future[list[ChangelogFile]]] = deque()
    try:
        with ThreadPoolExecutor(THREADS, thread_name_prefix="state-store-write") as pool:
            for i, run in enumerate(_runs(batches)):
                if len(pending) >= 2 * THREADS:
                    staged += pending.popleft().result()
                pending.append(
                    pool.submit(stage_batches, table, checked, run, write_id, f"{i:08d}")
                )
            while pending:
                staged += pending.popleft().result()
    except BaseException:
        for future in pending:  # each failed run deleted its own files; the others' go here
            if not future.cancel() and future.exception() is None:
                staged += future.result()
        cleanup(lambda: table.abort(staged))
        raise
    return staged


def write_rows(
    table: Table,
    data: Any,
    *,
    overwrite: bool = False,
    txn_app_id: str | None = None,
    txn_version: int | None = None,
) -> CommitRecord | None:
    """Write ``data``'s rows to ``table`` in one commit (replacing its contents with
    ``overwrite``); see the module doc.

    Returns:
        The commit; None if the transaction id was committed already (nothing is written).

    Raises:
        InvalidOptionError, SerdeError: data or rows the store refuses, with their codes;
            nothing is written.
        CommitConflictError: as ``Table.commit``; nothing is written.
    """
    txn = _txn(txn_app_id, txn_version)
    base_id = table.log.latest_id()
    columns, batches = arrow_rows(table, data)
    checked = check_columns(
        table, columns, replace_schema="drop and re-create the store (Catalog.drop, create_store)"
    )
    write_id = uuid.uuid4().hex
    files = _stage_runs(table, checked, batches, write_id)
    return commit_write(
        table, files, write_id=write_id, base_id=base_id, intervals=checked.intervals,
        overwrite=overwrite, txn=txn, spec_commit=table.spec_commit,
    )  # fmt: skip


def _live_rows(table: Table, keys: pa.Array) -> pa.Table:
    """The latest rows (typed reads) of ``keys``, read from their partitions only."""
    serde = serde_for(table.spec.key_type, column="key")
    wanted = serde.encode(keys).cast(pa.binary())
    spec = table.spec
    parts = np.unique(partitions_of(wanted, spec.num_partitions, spec.partitioner))
    snapshot = table.log.latest_id()
    found = []
    for partition in parts.tolist():
        for batch in table.read_partition(partition, snapshot):
            held = serde.encode(batch.column("key")).cast(pa.binary())
            mask = pc.is_in(held, value_set=wanted)
            if pc.any(mask).as_py():
                found.append(batch.filter(mask))
    return pa.Table.from_batches(found, schema=table.arrow_schema())


def tombstones(table: Table, keys: Any, timestamp: Any = None) -> pa.Table:
    """The rows of a write that deletes ``keys`` (see the module doc).

    Raises:
        InvalidOptionError: bad keys (INVALID_KEYS), a bad ``timestamp``.
    """
    typed = pc.unique(typed_keys(table, keys, "to delete"))
    layout = table.layout
    at = int(time.time() * 1000) if timestamp is None else instant_ms(timestamp, "timestamp")
    if at < 0:
        raise InvalidOptionError(
            f"timestamp is {at} ms; accepted: an instant at or after 1970-01-01 (epoch ms >= 0, "
            "an aware datetime or an ISO-8601 string with a zone)",
            code="INVALID_TIMESTAMP",
        )
    identity = [t.name for t in layout.write_times if t.name in layout.before_value]
    value_type = to_arrow(table.spec.value_type)
    if identity:  # a window or session is part of the key: each live one
        live = _live_rows(table, typed)
        rows = {"key": live.column("key"), "value": pa.nulls(live.num_rows, value_type)}
        rows.update({name: epoch_millis(live.column(name)) for name in identity})
    else:
        rows = {"key": typed, "value": pa.nulls(len(typed), value_type)}
        rows.update({t.name: pa.array(np.full(len(typed), at), pa.int64())
                     for t in layout.write_times})  # fmt: skip
    return pa.table(rows)


def delete_keys(
    table: Table,
    keys: Any,
    *,
    timestamp: Any = None,
    txn_app_id: str | None = None,
    txn_version: int | None = None,
) -> CommitRecord | None:
    """Delete ``keys`` from ``table`` in one commit of tombstones (``tombstones``).

    Returns:
        The commit; None if the transaction id was committed already, or no window or
        session of the keys is live (nothing is written).

    Raises:
        InvalidOptionError: bad keys or ``timestamp``; CommitConflictError as
            ``Table.commit``.
    """
    rows = tombstones(table, keys, timestamp)
    if not rows.num_rows:
        _txn(txn_app_id, txn_version)  # still refused when malformed
        return None
    return write_rows(table, rows, txn_app_id=txn_app_id, txn_version=txn_version)


__all__ = ["delete_keys", "tombstones", "write_rows"]
