"""Removing what failed and crashed writes left behind, without touching what anyone may need.

A write that dies leaves staged changelog files that no commit lists, temporary files of
records or changelog files it was writing, and abort markers (``aborted/<write id>``); a
compaction that dies leaves snapshot files no record lists. None of
them is ever read, but they take space. ``vacuum`` deletes them when they are older than a
safety window, and only then:

- a changelog file is deleted only if no commit record of the store lists it (the log is read
  after the listing, so a write committed meanwhile keeps its files);
- everything younger than the window is kept: a write still running may commit its staged
  files, and a task may still check its abort marker. The window must be longer than your
  longest write (Delta's vacuum asks the same of its retention);
- commit records are never deleted, and nothing a published record lists is deleted, so a
  reader pinned to an older commit keeps working; a file that an erasure replaced
  (``catalog.log.erasures``) is listed by none any more, and is deleted once the erasure is
  older than the window (the window counts from the erasure, as Delta's from a file's
  removal: 0 deletes it at once).

What a store directory holds without a commit 1 (a first write that failed) is deleted whole
once every file in it is older than the window.

History. Commit records are kept forever, but the files of old commits need not be: with a
history retention (``retain_history_ms``), ``expire_history`` drops, per partition, the
changelog files and older snapshots that its newest snapshot older than the retention makes
unnecessary. An ``expire`` record names the oldest commit that stays readable
(``CommitLog.history_start``); reading an older one (``versionAsOf``, a change feed) fails with
``HISTORY_EXPIRED``, naming the commits that remain. The record is published before anything is
deleted, so a crash in between leaves a smaller history, never a broken one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from catalog import faults
from catalog.log.commits import CommitLog
from catalog.log.paths import (
    ABORTED_DIR,
    CHANGELOG_DIR,
    COMMITS_DIR,
    SNAPSHOT_DIR,
    check_store_name,
    record_name,
)
from catalog.log.storage import Storage
from stores.errors import InvalidOptionError, StoreNotFoundError

#: Default safety window: a week, as Delta's default retention.
DEFAULT_OLDER_THAN_MS = 7 * 24 * 3600 * 1000


@dataclass
class VacuumReport:
    """What ``vacuum`` deleted (or would delete, with ``dry_run``) and what it kept."""

    store: str
    dry_run: bool
    deleted: list[str] = field(default_factory=list)  # paths relative to the store
    deleted_bytes: int = 0
    kept_young: int = 0  # leftovers younger than the safety window
    history_start: int | None = None  # the oldest readable commit, with a history retention

    def to_dict(self) -> dict[str, object]:
        return {
            "store": self.store,
            "dry_run": self.dry_run,
            "deleted": self.deleted,
            "deleted_files": len(self.deleted),
            "deleted_bytes": self.deleted_bytes,
            "kept_young": self.kept_young,
            "history_start": self.history_start,
        }


def _entries(storage: Storage, *parts: str) -> list[tuple[str, float, int]]:
    return list(storage.list_with_times(*parts))


def vacuum(
    storage: Storage,
    store: str,
    *,
    older_than_ms: int = DEFAULT_OLDER_THAN_MS,
    dry_run: bool = False,
    now_ms: int | None = None,
    progress: Callable[[int], None] | None = None,
    retain_history_ms: int | None = None,
) -> VacuumReport:
    """Delete the leftovers of failed writes in one store directory (see module doc).

    Args:
        storage: the warehouse.
        store: the store's name (a store, or what a failed first write left).
        older_than_ms: the safety window; only leftovers older than this are deleted.
        dry_run: report what would be deleted, delete nothing.
        now_ms: the current time (for tests); defaults to the clock.
        progress: called with the number of entries examined so far, for long listings.
        retain_history_ms: also expire history older than this (see module doc).

    Raises:
        InvalidOptionError: a negative window.
        StoreNotFoundError: nothing of that name exists.
    """
    check_store_name(store)
    if older_than_ms < 0:
        raise InvalidOptionError(
            f"option 'olderThan' is {older_than_ms} ms; accepted: a duration >= 0"
        )
    if not storage.list(store):
        raise StoreNotFoundError(f"nothing named {store!r} under {storage.root}")
    cutoff_s = ((now_ms if now_ms is not None else int(time.time() * 1000)) - older_than_ms) / 1000
    report = VacuumReport(store, dry_run)
    log = CommitLog(storage, store)
    has_store = storage.exists(store, COMMITS_DIR, record_name(1))
    candidates: list[tuple[str, int]] = []  # (relative path, size) of old leftovers
    seen = 0

    def consider(rel: str, mtime: float, size: int, leftover: bool) -> None:
        nonlocal seen
        seen += 1
        if progress is not None and seen % 1000 == 0:
            progress(seen)
        if not leftover:
            return
        if mtime <= cutoff_s:
            candidates.append((rel, size))
        else:
            report.kept_young += 1

    staged: list[tuple[str, float, int]] = []
    for folder in (CHANGELOG_DIR, SNAPSHOT_DIR):  # a failed compaction leaves snapshots
        for partition_dir, _, _ in _entries(storage, store, folder):
            for name, mtime, size in _entries(storage, store, folder, partition_dir):
                staged.append((f"{folder}/{partition_dir}/{name}", mtime, size))
    for name, mtime, size in _entries(storage, store, ABORTED_DIR):
        consider(f"{ABORTED_DIR}/{name}", mtime, size, leftover=True)
    for name, mtime, size in _entries(storage, store, COMMITS_DIR):
        consider(f"{COMMITS_DIR}/{name}", mtime, size, leftover=name.endswith(".tmp"))
    # The log is read after the listing: a file committed meanwhile is listed by its record.
    listed = _listed_files(log) if has_store else set()
    # A file an erasure replaced is as old as the erasure: it left the log then.
    superseded = log.erased.superseded()
    for rel, mtime, size in staged:
        erased_at = superseded.get(rel)
        at = mtime if erased_at is None else erased_at / 1000
        consider(rel, at, size, leftover=rel not in listed)
    if not has_store and report.kept_young == 0 and not dry_run:
        # A failed first write: nothing here is read; the directory goes once all of it is old.
        _delete(storage, store, candidates, report)
        storage.delete(store, recursive=True)
        return report
    _delete(storage, store, candidates, report, dry_run=dry_run)
    if retain_history_ms is not None and has_store:
        expire_history(storage, store, retain_history_ms, report, now_ms=now_ms)
    return report


def expire_history(
    storage: Storage,
    store: str,
    retain_ms: int,
    report: VacuumReport,
    *,
    now_ms: int | None = None,
) -> None:
    """Drop what no commit within ``retain_ms`` (or newer) needs (see module doc)."""
    import uuid

    if retain_ms < 0:
        raise InvalidOptionError(
            f"the history retention is {retain_ms} ms; accepted: a duration >= 0"
        )
    log = CommitLog(storage, store)
    log.first()
    cutoff = (now_ms if now_ms is not None else int(time.time() * 1000)) - retain_ms
    records = [log.read(i) for i in log.ids()]
    keep: dict[int, int] = {}  # partition -> base of its newest snapshot older than the cutoff
    for record in records:
        if record.compaction and record.base is not None and record.timestamp_ms <= cutoff:
            for ref in record.files:
                keep[ref.partition] = max(keep.get(ref.partition, 1), record.base)
    start = log.history_start()
    report.history_start = start
    if not keep:
        return
    boundary = max(keep.values())
    # A file goes when every piece of it is old: a writer task's file holds pieces of several
    # partitions, whose snapshots may be of different ages.
    old_pieces: dict[str, list[bool]] = {}
    sizes: dict[str, int] = {}
    for record in records:
        for ref in record.files:
            kept_from = keep.get(ref.partition, 0)  # (a partition with no snapshot: nothing)
            old = record.base < kept_from if record.compaction and record.base else record.id <= kept_from
            old_pieces.setdefault(ref.path, []).append(old)
            sizes[ref.path] = sizes.get(ref.path, 0) + ref.size
    doomed = [
        (path, sizes[path])
        for path, old in old_pieces.items()
        if all(old) and storage.exists(store, path)
    ]
    report.history_start = max(start, boundary)
    if report.dry_run:
        _delete(storage, store, doomed, report, dry_run=True)
        return
    if boundary > start:
        log.publish("expire", [], f"expire-{uuid.uuid4().hex}", base=boundary)
    _delete(storage, store, doomed, report)


def _listed_files(log: CommitLog) -> set[str]:
    return {f.path for commit_id in log.ids() for f in log.read(commit_id).files}


def _delete(
    storage: Storage,
    store: str,
    candidates: Iterable[tuple[str, int]],
    report: VacuumReport,
    *,
    dry_run: bool = False,
) -> None:
    for rel, size in candidates:
        report.deleted.append(rel)
        report.deleted_bytes += size
        if not dry_run:
            faults.point("vacuum.deleting")
            storage.delete(store, *rel.split("/"))


def vacuum_all(
    storage: Storage,
    *,
    older_than_ms: int = DEFAULT_OLDER_THAN_MS,
    dry_run: bool = False,
    retain_history_ms: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[VacuumReport]:
    """``vacuum`` every store directory under the warehouse.

    Args:
        progress: called after each store with (stores done, stores in all).
    """
    names = []
    for name in storage.list():
        try:
            names.append(check_store_name(name))
        except InvalidOptionError:
            continue  # not ours
    reports = []
    for name in names:
        report = vacuum(
            storage, name, older_than_ms=older_than_ms, dry_run=dry_run,
            retain_history_ms=retain_history_ms,
        )  # fmt: skip
        reports.append(report)
        if progress is not None:
            progress(len(reports), len(names))
    return reports
