"""A write's end: its staged changelog files published as the store's next commit, or deleted.

A write's tasks stage changelog files (``catalog.staging``); the driver publishes them all in
one commit record (``catalog.log.commits``), or aborts the write: an abort marker
``<root>/<store>/aborted/<write id>`` first, then every file of the write that no record lists
(see ``abort_write``). Functions over a store's log and storage, for ``catalog.table``.
"""

from __future__ import annotations

from collections.abc import Iterator

from catalog import faults
from catalog.log.commits import CommitLog
from catalog.log.paths import ABORTED_DIR, CHANGELOG_DIR, check_write_id
from catalog.log.records import ChangelogFile, CommitRecord, OffsetsUpdate, Txn
from catalog.log.spec import StoreSpec
from catalog.log.storage import Storage
from stores.errors import StoreNotFoundError


def publish_files(
    log: CommitLog,
    files: list[ChangelogFile],
    write_id: str,
    *,
    overwrite: bool = False,
    txn: Txn | None = None,
    spec: StoreSpec | None = None,
    new_spec: StoreSpec | None = None,
    spec_commit: int | None = None,
    kafka_offsets: OffsetsUpdate | None = None,
    read_version: int | None = None,
    planned_at: int | None = None,
) -> CommitRecord | None:
    """Publish staged ``files`` as the next ``append`` (or ``overwrite``) record of ``log``:
    listed by partition and path, with the rows, files and bytes they hold as its summary.

    Args:
        spec: the spec of a store this write creates (record 1 holds it).
        new_spec: with ``overwrite``: the store's new spec (``overwriteSchema``).
        Others: as ``CommitLog.publish``.

    Returns:
        The record; None if ``txn`` was committed already.

    Raises:
        As ``CommitLog.publish``.
    """
    ordered = sorted(files, key=lambda f: (f.partition, f.path))
    summary = {"rows": sum(f.rows for f in files), "files": len({f.path for f in files}),
               "bytes": sum(f.size for f in files)}  # fmt: skip
    return log.publish(
        "overwrite" if overwrite else "append", ordered, write_id, summary=summary, txn=txn,
        spec=None if spec is None else spec.to_dict(),
        new_spec=None if new_spec is None else new_spec.to_dict(), spec_commit=spec_commit,
        kafka_offsets=kafka_offsets, read_version=read_version, planned_at=planned_at,
    )  # fmt: skip


def delete_staged(storage: Storage, store_dir: str, files: list[ChangelogFile]) -> None:
    """Delete staged files that no commit lists (a failed task's own files)."""
    for path in {ref.path for ref in files}:
        storage.delete(store_dir, path)


def abort_write(
    storage: Storage, store_dir: str, write_id: str, files: list[ChangelogFile], after: int = 0
) -> None:
    """Abort a whole write: its reported files and any other file it staged, unless the log
    shows that it committed.

    Spark calls abort when ``commit`` failed, and the commit may have published its record
    before failing (a process killed after the record, an interrupt): the log is read, and
    a committed write keeps every file its record lists. Spark also aborts a job while some
    of its tasks may still run, and a task's result can be lost: the abort marker is written
    first; a task checks it after staging its files (``was_aborted``) and deletes its own
    files if it is there. Either the listing below sees a task's file, or the task sees the
    marker.

    Args:
        storage: the warehouse's storage.
        store_dir: the store's folder (its name).
        write_id: the write's id.
        files: the files its tasks reported.
        after: the newest commit id when the write was planned (its record, if any, is
            newer).
    """
    storage.write_bytes(b"", store_dir, ABORTED_DIR, check_write_id(write_id))
    try:
        committed = CommitLog(storage, store_dir).find_write(write_id, after)
    except StoreNotFoundError:
        committed = None  # a first write that never created its store
    listed = {f.path for f in committed.files} if committed else set()
    faults.point("abort.before_delete")
    for path in {ref.path for ref in files} - listed:  # (a task file holds several)
        storage.delete(store_dir, path)
    for partition_dir, name in changelog_files(storage, store_dir):
        path = f"{CHANGELOG_DIR}/{partition_dir}/{name}"
        if name.startswith(write_id) and path not in listed:
            storage.delete(store_dir, CHANGELOG_DIR, partition_dir, name)


def was_aborted(storage: Storage, store_dir: str, write_id: str) -> bool:
    """Whether ``abort_write`` has begun for ``write_id``."""
    return storage.exists(store_dir, ABORTED_DIR, write_id)


def changelog_files(storage: Storage, store_dir: str) -> Iterator[tuple[str, str]]:
    """``(partition folder, file name)`` of every changelog file under a store, staged or
    committed."""
    for partition_dir in storage.list(store_dir, CHANGELOG_DIR):
        for name in storage.list(store_dir, CHANGELOG_DIR, partition_dir):
            yield partition_dir, name
