"""The commit log: numbered, immutable commit records that publish staged changelog files.

Spark's two-phase write maps onto Kafka's changelog + ``commit(offset)``:

1. each writer task stages immutable changelog files (``catalog.changelog``), one per store
   partition it touched, under unique names: invisible to readers;
2. the driver publishes commit record N (``commits/<N, 20 digits>.json``) listing every staged
   file, created only if absent (atomic on the local filesystem, see ``catalog.storage``). The
   record is the commit point: readers see exactly the files of existing records;
3. on abort, the driver deletes the staged files; no record is written.

A commit id plays the role of Kafka's changelog offset: a partition's local cache records the
last id it applied, and catches up by replaying the files of newer records.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from catalog.storage import Storage
from stores.errors import CommitConflictError, CorruptDataError

COMMITS_DIR = "commits"
_MAX_ATTEMPTS = 20


@dataclass(frozen=True)
class ChangelogFile:
    """A staged changelog file: one store partition's rows from one writer task."""

    partition: int
    path: str  # relative to the store's directory
    rows: int
    size: int
    crc32: int


@dataclass(frozen=True)
class CommitRecord:
    """A published commit. ``overwrite`` commits replace every partition's contents."""

    id: int
    operation: str  # "append" | "overwrite"
    files: tuple[ChangelogFile, ...]
    timestamp_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def overwrite(self) -> bool:
        return self.operation == "overwrite"

    def files_for(self, partition: int) -> list[ChangelogFile]:
        return [f for f in self.files if f.partition == partition]

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> CommitRecord:
        try:
            raw = json.loads(data)
            raw["files"] = tuple(ChangelogFile(**f) for f in raw["files"])
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise CorruptDataError(f"commit record {where} cannot be read: {exc}") from exc


def _name(commit_id: int) -> str:
    return f"{commit_id:020d}.json"


# Commit records are immutable, so a process may keep every one it has read.
_RECORDS: dict[tuple[str, int], CommitRecord] = {}


class CommitLog:
    """The commit records of one store, at ``<root>/<store>/commits/``."""

    def __init__(self, storage: Storage, store_dir: str, store_id: str) -> None:
        self.storage = storage
        self.store_dir = store_dir
        self.store_id = store_id

    def ids(self) -> list[int]:
        """Every published commit id, ascending."""
        return sorted(
            int(n[:-5])
            for n in self.storage.list(self.store_dir, COMMITS_DIR)
            if n.endswith(".json") and n[:-5].isdigit()
        )

    def latest_id(self) -> int:
        """The newest commit id, 0 if the store has none."""
        ids = self.ids()
        return ids[-1] if ids else 0

    def read(self, commit_id: int) -> CommitRecord:
        """Read one commit record (cached: records never change)."""
        cache_key = (self.store_id, commit_id)
        record = _RECORDS.get(cache_key)
        if record is None:
            where = self.storage.url(self.store_dir, COMMITS_DIR, _name(commit_id))
            try:
                data = self.storage.read_bytes(self.store_dir, COMMITS_DIR, _name(commit_id))
            except FileNotFoundError as exc:
                raise CorruptDataError(f"commit record {where} is missing") from exc
            record = CommitRecord.from_json(data, where)
            _RECORDS[cache_key] = record
        return record

    def replay_plan(self, applied: int, target: int) -> tuple[bool, list[CommitRecord]]:
        """The commits a cache at ``applied`` must apply to reach ``target``.

        Returns (reset, records): ``reset`` is True when an overwrite lies in the range, in which
        case the cache must be emptied and ``records`` start at the newest such overwrite.
        """
        ids = [i for i in self.ids() if applied < i <= target]
        records = [self.read(i) for i in ids]
        for index in range(len(records) - 1, -1, -1):
            if records[index].overwrite:
                return True, records[index:]
        return False, records

    def _holds(self, commit_id: int, data: bytes) -> bool:
        try:
            return self.storage.read_bytes(self.store_dir, COMMITS_DIR, _name(commit_id)) == data
        except FileNotFoundError:
            return False

    def publish(
        self, operation: str, files: list[ChangelogFile], summary: dict[str, Any] | None = None
    ) -> CommitRecord:
        """Publish the next commit record; retried on a lost race, as appends commute.

        Raises:
            CommitConflictError: another committer won every one of many attempts.
        """
        for _ in range(_MAX_ATTEMPTS):
            record = CommitRecord(
                id=self.latest_id() + 1,
                operation=operation,
                files=tuple(files),
                summary=summary or {},
            )
            data = record.to_json()
            try:
                created = self.storage.write_if_absent(
                    data, self.store_dir, COMMITS_DIR, _name(record.id)
                )
            except Exception:
                # The record may be visible although the call failed (after the link, on the
                # directory fsync, or an uncertain object-store put): then it is published,
                # and its files must not be deleted as those of a failed write.
                if self._holds(record.id, data):
                    return record
                raise
            if created:
                return record
        raise CommitConflictError(
            f"could not publish a commit to {self.storage.url(self.store_dir)} after "
            f"{_MAX_ATTEMPTS} attempts: other writers keep committing; retry the write"
        )
