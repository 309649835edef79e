"""The commit log: numbered, immutable, checksummed commit records; the truth of a store.

Spark's two-phase write maps onto Kafka's changelog + ``commit(offset)``:

1. each writer task stages immutable changelog files (``catalog.log.changelog``), one per store
   partition it touched, named after the write: invisible to readers;
2. the driver publishes commit record N (``commits/<N, 20 digits>.json``) listing every staged
   file, created only if absent (atomic: see ``catalog.log.storage``). The record is the commit
   point: readers see exactly the files of existing records;
3. an abort deletes the write's staged files, unless the log shows it committed.

A commit id plays the role of Kafka's changelog offset: a partition's local cache records the
last id it applied, and catches up by replaying the files of newer records.

A record's fields and its checksummed JSON are in ``catalog.log.records``; how records make a
log:

A store exists once record 1 exists; a ``drop`` record as the newest record means it is gone.
A schema overwrite is an ``overwrite`` record with a ``spec`` of the same store id: it replaces
the contents and the types (and kind, parameters) at once; every later record names it in
``spec_commit``, and records before it keep naming the older spec, so time travel to them
reads with the spec they were written with. Every write states the ``spec_commit`` it was
planned against; a write planned against a replaced spec is refused (``SCHEMA_CHANGED``).
Ids run 1..N without gaps: a gap is corruption, never skipped.

A ``compact`` record changes no state: it says that its snapshots hold the state as of commit
``base`` (an earlier one: writers may have committed since the compaction started, and it
conflicts with none of them). A reader restores the newest snapshot at or below its target and
replays only the commits after its base (``restore_plan``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from catalog import faults
from catalog.log.erasures import Erasures
from catalog.log.paths import COMMITS_DIR, record_id, record_name
from catalog.log.records import ChangelogFile, CommitRecord, OffsetsUpdate, Replacement, Txn
from catalog.log.storage import Storage
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    StorageUnavailableError,
    StoreAlreadyExistsError,
    StoreNotFoundError,
)

_MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class RestorePlan:
    """See ``CommitLog.restore_plan``: empty the cache if ``reset``, load ``snapshot``'s files
    (if any), then apply the files of ``records`` in order."""

    reset: bool
    snapshot: CommitRecord | None
    records: list[CommitRecord]


# Commit records are immutable and verified, so a process keeps every one it has read.
_RECORDS: dict[tuple[str, int], CommitRecord] = {}


class CommitLog:
    """The commit records of one store, at ``<root>/<store>/commits/``.

    Args:
        storage: the warehouse.
        store_dir: the store's directory (its name).
        store_id: the store's id; None to take it from record 1 (``first``).
    """

    def __init__(self, storage: Storage, store_dir: str, store_id: str | None = None) -> None:
        self.storage = storage
        self.store_dir = store_dir
        self.store_id = store_id
        #: The erasures of the records read so far (``catalog.log.erasures``): every record
        #: ``read`` returns lists the pieces that replace those they erased.
        self.erased = Erasures()

    def _where(self, commit_id: int) -> str:
        return self.storage.url(self.store_dir, COMMITS_DIR, record_name(commit_id))

    def listed_ids(self) -> list[int]:
        """Ids of the record files present, ascending (no checks)."""
        return sorted(
            commit_id
            for name in self.storage.list(self.store_dir, COMMITS_DIR)
            if (commit_id := record_id(name)) is not None
        )

    def ids(self) -> list[int]:
        """Every published commit id, ascending: 1..N.

        Raises:
            StoreNotFoundError: the newest record drops the store.
            CorruptDataError: the ids have a gap (a record was deleted).
        """
        ids = self.listed_ids()
        if ids and ids != list(range(1, len(ids) + 1)):
            if self.read(ids[-1]).operation == "drop":
                raise StoreNotFoundError(f"store {self.store_dir!r} was dropped")
            missing = sorted(set(range(1, ids[-1] + 1)) - set(ids))
            shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
            raise CorruptDataError(
                f"commit log {self.storage.url(self.store_dir, COMMITS_DIR)} is missing "
                f"commit(s) {shown}; records are never deleted, so the log was damaged",
                code="COMMIT_LOG_GAP",
            )
        if ids:
            self.read(ids[-1])  # the newest record: the erasures every record is read through
        return ids

    def latest_id(self, known: int = 0) -> int:
        """The newest commit id, 0 if the store has none.

        ``known``: a commit id known to exist (a read's pinned commit). When no record follows
        it, it is the newest, found by one existence check instead of a listing of the whole
        log (which each partition of a read would pay; the pin's listing checked the ids).

        Raises:
            StoreNotFoundError: the newest record drops the store.
        """
        if known and not self.storage.exists(self.store_dir, COMMITS_DIR, record_name(known + 1)):
            if self.read(known).operation == "drop":
                raise StoreNotFoundError(f"store {self.store_dir!r} was dropped")
            return known
        ids = self.ids()
        if ids and self.read(ids[-1]).operation == "drop":
            raise StoreNotFoundError(f"store {self.store_dir!r} was dropped")
        return ids[-1] if ids else 0

    def first(self) -> CommitRecord:
        """Record 1, which creates the store; sets ``store_id`` if it was not known.

        Raises:
            StoreNotFoundError: there is no record 1.
        """
        if self.store_id is not None:
            return self.read(1)
        try:
            data = self.storage.read_bytes(self.store_dir, COMMITS_DIR, record_name(1))
        except FileNotFoundError:
            raise StoreNotFoundError(f"no store at {self.storage.url(self.store_dir)}") from None
        record = CommitRecord.from_json(data, self._where(1), 1, None)
        self.store_id = record.store_id
        _RECORDS[(record.store_id, 1)] = record
        return record

    def read(self, commit_id: int) -> CommitRecord:
        """Read and verify one commit record (cached: records never change), listing the
        pieces that replace those an erasure rewrote (``catalog.log.erasures``; the erasures
        are those of the records read so far, the newest among them: a reader reads the
        newest record before it plans).

        Raises:
            CorruptDataError: the record is missing or fails its checks.
        """
        record = self.read_raw(commit_id)
        for erasure in record.erasures:
            if erasure not in self.erased.ids:
                self.erased.add(self.read_raw(erasure))
        return self.erased.resolve(record)

    def read_raw(self, commit_id: int) -> CommitRecord:
        """Read and verify one commit record as written, its files as it lists them.

        Raises:
            CorruptDataError: the record is missing or fails its checks.
        """
        if self.store_id is None:
            self.first()
        assert self.store_id is not None
        cache_key = (self.store_id, commit_id)
        record = _RECORDS.get(cache_key)
        if record is None:
            try:
                data = self.storage.read_bytes(self.store_dir, COMMITS_DIR, record_name(commit_id))
            except FileNotFoundError as exc:
                raise CorruptDataError(f"commit record {self._where(commit_id)} is missing") from exc
            record = CommitRecord.from_json(data, self._where(commit_id), commit_id, self.store_id)
            _RECORDS[cache_key] = record
        return record

    def spec_record(self, commit_id: int) -> CommitRecord:
        """The record holding the spec in force at ``commit_id`` (1 unless a schema overwrite
        came at or before it).

        Raises:
            CorruptDataError: the record is missing or fails its checks.
        """
        return self.read(self.read(commit_id).spec_commit)

    def chain(self, start: int, end: int) -> list[CommitRecord]:
        """Records ``start..end``, each verified to follow its predecessor.

        Raises:
            CorruptDataError: a record does not name its predecessor's checksum.
        """
        records = [self.read(i) for i in range(max(start - 1, 1), end + 1)]
        for before, after in pairwise(records):
            if after.prev != before.checksum:
                raise CorruptDataError(
                    f"commit record {self._where(after.id)} does not follow record {before.id} "
                    f"(it names predecessor {after.prev!r}, which is {before.checksum!r}): a "
                    "record was replaced or reordered",
                    code="COMMIT_LOG_GAP",
                )
        return [r for r in records if r.id >= start]

    def replay_plan(self, applied: int, target: int) -> tuple[bool, list[CommitRecord]]:
        """The commits a cache at ``applied`` must apply to reach ``target``, from the log
        alone (snapshots unused; see ``restore_plan``).

        Returns (reset, records): ``reset`` is True when an overwrite lies in the range, in which
        case the cache must be emptied and ``records`` start at the newest such overwrite.
        ``compact`` records change no state and are left out.

        Raises:
            StoreNotFoundError: a record in the range drops the store.
            CorruptDataError: the records do not chain (see ``chain``).
        """
        plan = self.restore_plan(applied, target, use_snapshots=False)
        return plan.reset, plan.records

    def restore_plan(
        self,
        applied: int,
        target: int,
        partition: int | None = None,
        *,
        use_snapshots: bool = True,
    ) -> RestorePlan:
        """How a cache of ``partition`` at ``applied`` reaches ``target``: optionally load a
        snapshot, then apply the files of ``records`` in order.

        A snapshot is used when it holds a state newer than both ``applied`` and the newest
        overwrite in the range (an overwrite after its base resets anyway), and has a file for
        ``partition`` (a compaction may cover some partitions only).

        Raises:
            StoreNotFoundError: a record in the range drops the store.
            CorruptDataError: the records do not chain (see ``chain``).
        """
        if target <= applied:
            return RestorePlan(False, None, [])
        latest = self.latest_id(target)  # checks the store for a drop
        start = self.read(latest).history_start if latest else 1
        if target < start:
            raise self.expired(target)
        if applied < start:
            applied = 0  # its next files are gone: start over from a snapshot
        # Records are read from the newest down, only as far as the plan needs: a snapshot of
        # commit b is published after b, so none below the best base found can beat it, and
        # nothing before the newest overwrite in range matters. A fresh cache of a compacted
        # store reads the tail, not the whole log.
        best: CommitRecord | None = None
        reset_at: int | None = None
        for commit_id in range(max(latest, target), applied, -1):
            if best is not None and best.base is not None and commit_id <= best.base:
                break
            record = self.read(commit_id)
            if record.operation == "drop" and commit_id <= target:
                raise StoreNotFoundError(f"store {self.store_dir!r} was dropped")
            if (
                use_snapshots
                and record.compaction
                and record.base is not None
                and (partition is None or record.files_for(partition))
                and applied < record.base <= target
                # The newest state wins (compactions may publish out of their bases' order).
                and (best is None or (record.base, record.id) > (best.base or 0, best.id))
            ):
                best = record
            if record.overwrite and commit_id <= target:
                # The newest overwrite in range: a usable snapshot's base is at or after it, so
                # it was published after it and has been seen.
                reset_at = commit_id
                if best is not None and (best.base or 0) < reset_at:
                    best = None
                break
        first = (
            best.base + 1 if best is not None and best.base is not None
            else reset_at if reset_at is not None
            else applied + 1
        )  # fmt: skip
        changes = [r for r in self.chain(first, target) if not r.changes_nothing]
        if best is not None:
            return RestorePlan(True, best, changes)
        return RestorePlan(reset_at is not None, None, changes)

    def history_start(self) -> int:
        """The oldest commit whose state can still be read (1 unless history was expired by
        ``vacuum`` with a history retention): every record carries it forward, so the newest
        one says."""
        latest = self.latest_id()
        return self.read(latest).history_start if latest else 1

    def expired(self, version: int) -> InvalidOptionError:
        """The error for a read of a commit older than the retained history."""
        return InvalidOptionError(
            f"commit {version} of store {self.store_dir!r} is older than its retained history "
            f"(commits {self.history_start()} to {self.latest_id()} can be read; a vacuum with "
            "a history retention removed the rest)",
            code="HISTORY_EXPIRED",
        )

    def version_at(self, version: int | None = None, timestamp_ms: int | None = None) -> int:
        """The commit a read pins: ``version`` itself, or the newest commit made at or before
        ``timestamp_ms`` (Delta's ``versionAsOf`` / ``timestampAsOf``), else the latest.

        Raises:
            InvalidOptionError: the version does not exist yet, or the time is before the
                store's first commit (naming the range that exists).
        """
        latest = self.latest_id()
        if version is not None:
            if version < self.history_start():
                raise self.expired(version)
            if version > latest:
                raise InvalidOptionError(
                    f"option 'versionAsOf' is {version} but store {self.store_dir!r} has "
                    f"commits 1 to {latest}"
                )
            return version
        if timestamp_ms is None:
            return latest
        found = 0
        for commit_id in range(1, latest + 1):  # commit times grow with ids (one clock each)
            if self.read(commit_id).timestamp_ms <= timestamp_ms:
                found = commit_id
        if found and found < self.history_start():
            raise self.expired(found)
        if found == 0:
            first = self.read(1).timestamp_ms
            raise InvalidOptionError(
                f"option 'timestampAsOf' ({timestamp_ms} ms) is before store "
                f"{self.store_dir!r} was created ({first} ms, commit 1)"
            )
        return found

    def find_write(self, write_id: str, after: int = 0) -> CommitRecord | None:
        """The record that published ``write_id``, looking at ids above ``after``; None if the
        write has not committed."""
        for commit_id in self.listed_ids():
            if commit_id > after:
                record = self.read(commit_id)
                if record.write_id == write_id:
                    return record
        return None

    def _check_unchanged(self, read_version: int, latest: int) -> None:
        """Refuse a rewrite of the state at ``read_version`` once a later commit changed it.

        Raises:
            CommitConflictError: STORE_CHANGED, naming the commit.
        """
        for commit_id in range(read_version + 1, latest + 1):
            if not self.read(commit_id).changes_nothing:
                raise CommitConflictError(
                    f"store {self.store_dir!r} changed in commit {commit_id} after this "
                    f"rewrite read it at commit {read_version}; nothing was written: run it "
                    "again",
                    code="STORE_CHANGED",
                )

    def publish(
        self,
        operation: str,
        files: list[ChangelogFile],
        write_id: str,
        *,
        summary: dict[str, Any] | None = None,
        spec: dict[str, Any] | None = None,
        txn: Txn | None = None,
        base: int | None = None,
        new_spec: dict[str, Any] | None = None,
        spec_commit: int | None = None,
        kafka_offsets: OffsetsUpdate | None = None,
        read_version: int | None = None,
        planned_at: int | None = None,
        replaced: list[Replacement] | None = None,
        expect_latest: int | None = None,
    ) -> CommitRecord | None:
        """Publish the next commit record, retried on a lost race (appends commute).

        An unknown outcome (the create raised, or this process lost track of it) is resolved by
        reading the log: every attempt first looks for a record of ``write_id``, so a write is
        published at most once. With ``spec``, this creates the store as record 1. With
        ``new_spec`` (an ``overwrite``), the record replaces the store's spec from its own id on.
        With ``spec_commit``, the write was planned against the spec of that record: if another
        one is in force now, the write is refused. Every record carries the Kafka changelog
        offsets of its predecessor forward (``CommitRecord.kafka_offsets``); an ``overwrite``
        starts from none; ``kafka_offsets`` (a changelog import) sets those it applied, and
        is refused if another commit moved them since the import read them. With
        ``read_version``, the write rewrites the state it read at that commit (a rescale): it
        is refused if a commit that changes the state landed after it. With ``planned_at``
        (the newest commit when the write began), it is refused if an erasure landed since:
        its files may hold keys the erasure removed. An ``erase`` lists the pieces it
        ``replaced``, and is published only as the record after ``expect_latest``.

        Returns:
            The published record; None if ``txn`` was already committed (the write is skipped).

        Raises:
            StoreAlreadyExistsError: creating, and record 1 exists.
            StoreNotFoundError: the store does not exist or was dropped meanwhile.
            CommitConflictError: another committer won every one of many attempts, or the
                store's schema was replaced since ``spec_commit`` (SCHEMA_CHANGED), or
                another import applied records of the same Kafka partitions meanwhile
                (KAFKA_OFFSETS_MOVED), or the state changed after ``read_version``
                (STORE_CHANGED), or an erasure landed after ``planned_at``
                (ERASED_MEANWHILE), or a record landed after ``expect_latest`` (LOG_MOVED).
        """
        if new_spec is not None and operation != "overwrite":
            raise InvalidOptionError(
                f"a new spec comes with an overwrite only, not an {operation!r} commit",
                code="OVERWRITE_SCHEMA_NEEDS_OVERWRITE",
            )
        started_at = None
        for _ in range(_MAX_ATTEMPTS):
            latest = self._latest_for_publish(spec is not None)
            if started_at is None:
                started_at = latest
            mine = self.find_write(write_id, after=started_at) if latest > started_at else None
            if mine is not None:
                return mine
            previous = self.read(latest) if latest else None
            txns = dict(previous.txns) if previous else {}
            history_start = previous.history_start if previous else 1
            in_force = previous.spec_commit if previous else 1
            if spec_commit is not None and previous is not None and in_force != spec_commit:
                raise CommitConflictError(
                    f"the schema of store {self.store_dir!r} was replaced by commit {in_force} "
                    "(an overwrite with overwriteSchema) while this write ran against the "
                    "schema before it; nothing was written: plan the write again",
                    code="SCHEMA_CHANGED",
                )
            if read_version is not None:
                self._check_unchanged(read_version, latest)
            if expect_latest is not None and latest != expect_latest:
                raise CommitConflictError(
                    f"store {self.store_dir!r} has commits up to {latest}, not "
                    f"{expect_latest}: the erasure reads the new ones first",
                    code="LOG_MOVED",
                )
            erasures = previous.erasures if previous else ()
            if planned_at is not None and any(e > planned_at for e in erasures):
                erasure = max(erasures)
                raise CommitConflictError(
                    f"keys of store {self.store_dir!r} were erased by commit {erasure} while "
                    f"this write ran (it began at commit {planned_at}), and its rows may hold "
                    "them; nothing was written: run the write again",
                    code="ERASED_MEANWHILE",
                )
            if operation == "erase":
                erasures = (*erasures, latest + 1)
            offsets = _next_offsets(previous, operation, kafka_offsets, self.store_dir)
            if operation == "expire" and base is not None:
                history_start = max(history_start, base)
            if txn is not None:
                if txns.get(txn.app_id, -1) >= txn.version:
                    return None
                txns[txn.app_id] = txn.version
            record = CommitRecord(
                store_id=self.store_id or (spec or {}).get("store_id", ""),
                id=latest + 1,
                operation="create" if spec is not None else operation,
                files=tuple(files),
                write_id=write_id,
                prev=previous.checksum if previous else "",
                summary=summary or {},
                spec=spec if spec is not None else new_spec,
                txn=txn,
                txns=txns,
                kafka_offsets=offsets,
                base=base,
                history_start=history_start,
                spec_commit=latest + 1 if new_spec is not None else in_force,
                replaced=tuple(replaced or ()),
                erasures=erasures,
            )
            data = record.to_json()
            faults.point("commit.before_record")
            try:
                created = self.storage.write_if_absent(
                    data, self.store_dir, COMMITS_DIR, record_name(record.id)
                )
            except Exception as exc:
                # The record may have landed although the call failed (after the link, on the
                # directory fsync, an uncertain object-store put): the log decides.
                try:
                    created = self._holds(record.id, data)
                except StorageUnavailableError:
                    if isinstance(exc, StorageUnavailableError):
                        raise exc.of_commit(record.id, write_id, None) from None
                    raise
                if not created:
                    if isinstance(exc, StorageUnavailableError):
                        raise exc.of_commit(record.id, write_id, False) from None
                    raise
            if created:
                published = CommitRecord.from_json(
                    data, self._where(record.id), record.id, record.store_id
                )
                self.store_id = published.store_id
                _RECORDS[(published.store_id, published.id)] = published
                if published.operation == "erase":
                    self.erased.add(published)
                faults.point("commit.after_record")
                self._check_not_dropped(published)
                return published
            if spec is not None:
                raise StoreAlreadyExistsError(
                    f"store {self.store_dir!r} was created by another writer meanwhile"
                )
        raise CommitConflictError(
            f"could not publish a commit to {self.storage.url(self.store_dir)} after "
            f"{_MAX_ATTEMPTS} attempts: other writers keep committing; retry the write"
        )

    def _latest_for_publish(self, creating: bool) -> int:
        if creating:
            if self.listed_ids():
                raise StoreAlreadyExistsError(
                    f"store {self.store_dir!r} already exists under {self.storage.root} (or "
                    "holds what an unfinished drop left: drop it again)"
                )
            return 0
        if self.store_id is None:
            self.first()
        return self.latest_id()

    def _holds(self, commit_id: int, data: bytes) -> bool:
        try:
            return self.storage.read_bytes(self.store_dir, COMMITS_DIR, record_name(commit_id)) == data
        except FileNotFoundError:
            return False

    def _check_not_dropped(self, record: CommitRecord) -> None:
        """After publishing: if the store was dropped (and its files deleted) between reading
        the predecessor and creating this record, the record sits in a store that no longer
        exists; it is removed and the write fails, so no acknowledged write is lost."""
        if record.id == 1:
            return
        try:
            data = self.storage.read_bytes(self.store_dir, COMMITS_DIR, record_name(1))
            same = json.loads(data).get("store_id") == record.store_id
        except (FileNotFoundError, ValueError, AttributeError):
            same = False
        if not same:
            self.storage.delete(self.store_dir, COMMITS_DIR, record_name(record.id))
            raise StoreNotFoundError(
                f"store {self.store_dir!r} was dropped while this write committed; nothing "
                "was written"
            )


def _next_offsets(
    previous: CommitRecord | None,
    operation: str,
    update: OffsetsUpdate | None,
    store_dir: str,
) -> dict[str, int]:
    """The Kafka offsets the next record holds: its predecessor's (none after an overwrite),
    with ``update``'s applied.

    Raises:
        CommitConflictError: a partition of ``update`` moved since it was read
            (KAFKA_OFFSETS_MOVED).
    """
    held = dict(previous.kafka_offsets) if previous is not None else {}
    if operation == "overwrite":
        held = {}
    elif update is not None:
        moved = sorted(k for k in update.applied if held.get(k) != update.seen.get(k))
        if moved:
            raise CommitConflictError(
                f"another write to store {store_dir!r} applied changelog records of "
                f"{', '.join(moved[:5])} while this import ran (offsets now "
                f"{ {k: held.get(k) for k in moved[:5]} }, read as "
                f"{ {k: update.seen.get(k) for k in moved[:5]} }); nothing was written: run "
                "the import again, it skips what is applied",
                code="KAFKA_OFFSETS_MOVED",
            )
    if update is not None:
        held.update(update.applied)
    return held
