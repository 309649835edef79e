"""Commit records: the value types of the log and their sealed JSON.

A commit record says what one commit published; ``catalog.log.commits`` reads them in order
and publishes the next. Records are immutable: a file written once, never changed, verified
on every read (``CommitRecord.from_json``).

A record (JSON, keys sorted; ``checksum`` covers every other field):

| field          | meaning                                                                  |
|----------------|--------------------------------------------------------------------------|
| ``format``       | 3 (``FORMAT``; 4 once a store has an erasure, so that releases that do not  |
|                | know erasures refuse it; records of 2, which list whole files, are read) |
| ``store_id``     | the store's id (so a record copied from another store is refused)        |
| ``id``           | its own commit id, checked against its file name                         |
| ``prev``         | the checksum of record ``id - 1`` ("" for 1): a deleted, reordered or     |
|                | replaced record breaks the chain                                         |
| ``operation``    | ``create`` (record 1, with ``spec``), ``append``, ``overwrite``, ``drop``,       |
|                | ``compact`` (a snapshot of every partition as of commit ``base``),         |
|                | ``expire`` (history before commit ``base`` is gone: see ``history_start``), |
|                | ``erase`` (keys erased from every commit: ``replaced``)                   |
| ``write_id``     | the write that published it (an abort asks the log whether it committed) |
| ``files``        | the changelog files: partition, path, rows, size, crc32 (``compact``:      |
|                | the snapshot files, ``snapshot/<partition>/<name>.arrow``)               |
| ``base``         | ``compact``: the commit whose state the snapshots hold; ``expire``: the    |
|                | oldest commit still readable                                             |
| ``history_start``| the oldest readable commit, carried forward record to record (absent: 1) |
| ``spec``         | the store's spec: record 1 (a store exists once its first record does),  |
|                | and an ``overwrite`` that replaces the schema (``overwriteSchema``)        |
| ``spec_commit``  | the record holding the spec in force, carried forward (absent: 1); a     |
|                | reader pinned to commit v reads with the spec that record v names        |
| ``txn``          | the writer's (app_id, version), for idempotent writes                    |
| ``txns``         | the newest committed version per app id, carried forward record to record |
| ``kafka_offsets``| the offset of the last Kafka changelog record applied, per partition    |
|                | (``"<topic>-<partition>"``, Kafka's ``TopicPartition`` string), carried    |
|                | forward; an overwrite replaces it (absent: none)                          |
| ``replaced``     | ``erase``: each piece of an earlier record's file that held an erased key, |
|                | and the piece, without those keys, that every record now reads instead  |
| ``erasures``     | the ids of the ``erase`` records so far, carried forward (absent: none)   |
| ``checksum``     | ``crc32:<8 hex>`` of the canonical JSON of the other fields (``seal``)    |
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from catalog.log.paths import check_changelog_path, check_store_id, is_snapshot
from stores.errors import CorruptDataError

#: The commit record format written: 3 lists pieces of files (``offset``); 2 (still read)
#: listed whole files. A release that knows only 2 refuses a log with records of 3.
FORMAT = 3
#: The format of records of a store with erasures: a release that knows only 3 would read an
#: erased key's old files where they are still there.
ERASED_FORMAT = 4
_READ_FORMATS = (2, 3, 4)
OPERATIONS = ("create", "append", "overwrite", "drop", "compact", "expire", "erase")


@dataclass(frozen=True)
class ChangelogFile:
    """A staged changelog file: one store partition's rows from one writer task, as an Arrow
    IPC file of ``size`` bytes at ``offset`` in the file at ``path`` (a writer task's file
    holds one such piece per partition it wrote; a file of earlier releases, one)."""

    partition: int
    path: str  # relative to the store's directory
    rows: int
    size: int
    crc32: int
    offset: int = 0


@dataclass(frozen=True)
class Replacement:
    """What an ``erase`` record says of one piece of an earlier record: the piece at
    ``offset`` in ``path`` (of ``partition``) is read as ``file`` from then on, in every
    commit that lists it (``catalog.log.erasures``)."""

    partition: int
    path: str
    offset: int
    file: ChangelogFile


@dataclass(frozen=True)
class OffsetsUpdate:
    """What a changelog import (``catalog.kafka.restore``) commits about Kafka offsets:
    ``applied`` the last offset it applied per ``"<topic>-<partition>"``, ``seen`` what the
    store held for those partitions when the import was planned (absent: nothing). The
    commit is refused if another one moved them meanwhile: both would apply the same
    records."""

    applied: dict[str, int]
    seen: dict[str, int] = field(default_factory=dict)


def offsets_key(topic: str, partition: int) -> str:
    """``"<topic>-<partition>"``: Kafka's ``TopicPartition.toString``, the key of
    ``CommitRecord.kafka_offsets``."""
    return f"{topic}-{partition}"


def parse_offsets_key(key: str) -> tuple[str, int]:
    """``(topic, partition)`` of an ``offsets_key`` (the partition follows the last ``-``).

    Raises:
        ValueError: no ``-<partition>`` at the end.
    """
    topic, dash, partition = key.rpartition("-")
    if not dash or not topic or not partition.isdigit():
        raise ValueError(f"{key!r} is not '<topic>-<partition>'")
    return topic, int(partition)


@dataclass(frozen=True)
class Txn:
    """An idempotent write's identity (Delta's ``txnAppId`` / ``txnVersion``)."""

    app_id: str
    version: int


def _natural(value: object, name: str, where: str) -> int:
    """A file's size or offset from a record: an integer >= 0."""
    number = int(value)  # type: ignore[call-overload]
    if number < 0:
        raise CorruptDataError(f"{where} lists a file with {name} {number}")
    return number


def seal(body: Mapping[str, Any]) -> bytes:
    """JSON of ``body`` plus a ``checksum`` field over its canonical form."""
    return json.dumps({**body, "checksum": checksum_of(body)}, indent=1, sort_keys=True).encode()


def checksum_of(body: Mapping[str, Any]) -> str:
    """``crc32:<8 hex>`` of the canonical JSON of ``body`` (keys sorted, no spaces)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return f"crc32:{zlib.crc32(canonical):08x}"


def unseal(data: bytes, where: str) -> dict[str, Any]:
    """Parse sealed JSON and verify its checksum.

    Raises:
        CorruptDataError: not JSON, no checksum, or a checksum that does not match.
    """
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise CorruptDataError(f"{where} is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("checksum"), str):
        raise CorruptDataError(f"{where} has no checksum; it was not written by state-store 0.2+")
    stored = raw.pop("checksum")
    actual = checksum_of(raw)
    if stored != actual:
        raise CorruptDataError(
            f"{where} fails its checksum ({actual}, recorded {stored}): it was changed after "
            "it was written"
        )
    return raw


@dataclass(frozen=True)
class CommitRecord:
    """A published commit. ``overwrite`` commits replace every partition's contents."""

    store_id: str
    id: int
    operation: str
    files: tuple[ChangelogFile, ...]
    write_id: str
    prev: str = ""
    timestamp_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    summary: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] | None = None
    txn: Txn | None = None
    txns: dict[str, int] = field(default_factory=dict)
    kafka_offsets: dict[str, int] = field(default_factory=dict)
    base: int | None = None
    history_start: int = 1  # the oldest readable commit, carried forward (see ``expire``)
    spec_commit: int = 1  # the record holding the spec in force, carried forward
    replaced: tuple[Replacement, ...] = ()  # ``erase``: the pieces it rewrote
    erasures: tuple[int, ...] = ()  # the ids of the erase records so far, carried forward
    checksum: str = ""

    @property
    def overwrite(self) -> bool:
        """Whether this commit replaces every partition's contents."""
        return self.operation == "overwrite"

    @property
    def compaction(self) -> bool:
        """Whether this record publishes snapshots (``compact``)."""
        return self.operation == "compact"

    @property
    def changes_nothing(self) -> bool:
        """Compactions and expiries: bookkeeping records that leave the state as it was."""
        return self.operation in ("compact", "expire")

    def files_for(self, partition: int) -> list[ChangelogFile]:
        """The files (pieces) of one partition, in the record's order."""
        return [f for f in self.files if f.partition == partition]

    def body(self) -> dict[str, Any]:
        """The record's fields as JSON-able data, without its checksum."""
        return {
            "format": ERASED_FORMAT if self.erasures else FORMAT,
            "store_id": self.store_id,
            "id": self.id,
            "prev": self.prev,
            "operation": self.operation,
            "write_id": self.write_id,
            "timestamp_ms": self.timestamp_ms,
            "files": [_file_json(f) for f in self.files],
            "summary": self.summary,
            "spec": self.spec,
            "txn": None if self.txn is None else {"app_id": self.txn.app_id,
                                                  "version": self.txn.version},
            "txns": self.txns,
            **({"kafka_offsets": self.kafka_offsets} if self.kafka_offsets else {}),
            **({"base": self.base} if self.base is not None else {}),
            **({"history_start": self.history_start} if self.history_start != 1 else {}),
            **({"spec_commit": self.spec_commit} if self.spec_commit != 1 else {}),
            **({"replaced": [
                {"partition": r.partition, "path": r.path, "offset": r.offset,
                 "file": _file_json(r.file)}
                for r in self.replaced
            ]} if self.replaced else {}),
            **({"erasures": list(self.erasures)} if self.erasures else {}),
        }  # fmt: skip

    def to_json(self) -> bytes:
        """The record as written: its body sealed with its checksum."""
        return seal(self.body())

    @classmethod
    def from_json(
        cls, data: bytes, where: str, commit_id: int, store_id: str | None
    ) -> CommitRecord:
        """Parse and verify a record read from ``where``, which must be record ``commit_id``
        of store ``store_id`` (None: not known yet, when record 1 introduces the store).

        Raises:
            CorruptDataError: a failed checksum, another id or store than its name and place
                say, an unknown operation, or a file path that leaves the store (UNSAFE_PATH).
        """
        raw = unseal(data, where)
        try:
            if raw["format"] not in _READ_FORMATS:
                raise CorruptDataError(
                    f"{where} has format {raw['format']!r}; this release reads formats "
                    f"{', '.join(map(str, _READ_FORMATS))}"
                )
            snapshot = raw["operation"] == "compact"
            record = cls(
                store_id=check_store_id(raw["store_id"], where),
                id=int(raw["id"]),
                operation=str(raw["operation"]),
                files=tuple(_file_of(f, where, snapshot) for f in raw["files"]),
                write_id=str(raw["write_id"]),
                prev=str(raw["prev"]),
                timestamp_ms=int(raw["timestamp_ms"]),
                summary=dict(raw["summary"]),
                spec=None if raw["spec"] is None else dict(raw["spec"]),
                txn=None if raw["txn"] is None else Txn(str(raw["txn"]["app_id"]),
                                                        int(raw["txn"]["version"])),
                txns={str(k): int(v) for k, v in dict(raw["txns"]).items()},
                kafka_offsets={
                    str(k): int(v) for k, v in dict(raw.get("kafka_offsets", {})).items()
                },
                base=None if raw.get("base") is None else int(raw["base"]),
                history_start=int(raw.get("history_start", 1)),
                spec_commit=int(raw.get("spec_commit", 1)),
                replaced=tuple(_replacement_of(r, where) for r in raw.get("replaced", ())),
                erasures=tuple(int(i) for i in raw.get("erasures", ())),
                checksum=checksum_of(raw),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptDataError(f"{where} is not a commit record: {exc!r}") from exc
        if record.id != commit_id:
            raise CorruptDataError(f"{where} holds commit {record.id}, not {commit_id}")
        if store_id is not None and record.store_id != store_id:
            raise CorruptDataError(
                f"{where} belongs to store id {record.store_id}, not this store's {store_id}"
            )
        if record.operation not in OPERATIONS:
            raise CorruptDataError(f"{where} has unknown operation {record.operation!r}")
        replaces_spec = record.overwrite and record.spec_commit == record.id
        if (
            (record.id == 1) != (record.operation == "create")
            or (record.id == 1 or replaces_spec) != (record.spec is not None)
            or not 1 <= record.spec_commit <= record.id
        ):
            raise CorruptDataError(
                f"{where}: only commit 1 creates the store and holds its spec, and only an "
                "overwrite that replaces the schema holds a new one (operation "
                f"{record.operation!r}, spec_commit {record.spec_commit})"
            )
        if record.changes_nothing != (record.base is not None) or (
            record.base is not None and not 1 <= record.base < record.id
        ):
            raise CorruptDataError(
                f"{where}: a compact or expire record, and only one, names an earlier commit as "
                f"its base (operation {record.operation!r}, base {record.base!r})"
            )
        if record.operation in ("expire", "erase") and record.files:
            raise CorruptDataError(f"{where}: an {record.operation} record lists no files")
        if (record.operation == "erase") != (record.id in record.erasures) or (
            record.replaced and record.operation != "erase"
        ) or any(not 1 <= i <= record.id for i in record.erasures):
            raise CorruptDataError(
                f"{where}: only an erase record replaces pieces and names itself among the "
                f"erasures (operation {record.operation!r}, erasures {list(record.erasures)})"
            )
        return record


def _file_json(f: ChangelogFile) -> dict[str, Any]:
    return {"partition": f.partition, "path": f.path, "rows": f.rows, "size": f.size,
            "crc32": f.crc32, **({"offset": f.offset} if f.offset else {})}  # fmt: skip


def _file_of(f: Mapping[str, Any], where: str, snapshot: bool) -> ChangelogFile:
    """A file (piece) listed by a record, its path confined to the store (UNSAFE_PATH)."""
    return ChangelogFile(
        partition=int(f["partition"]),
        path=check_changelog_path(f["path"], f["partition"], where, snapshot=snapshot),
        rows=int(f["rows"]),
        size=_natural(f["size"], "size", where),
        crc32=int(f["crc32"]),
        offset=_natural(f.get("offset", 0), "offset", where),
    )


def _replacement_of(r: Mapping[str, Any], where: str) -> Replacement:
    """A piece an erase replaced: both its paths confined to the store, of one kind (a
    snapshot's piece is replaced by a snapshot) and one partition."""
    snapshot = is_snapshot(str(r["path"]))
    new = _file_of(r["file"], where, snapshot)
    path = check_changelog_path(r["path"], r["partition"], where, snapshot=snapshot)
    if new.partition != int(r["partition"]):
        raise CorruptDataError(f"{where} replaces a piece of partition {r['partition']} with "
                               f"one of partition {new.partition}")  # fmt: skip
    return Replacement(int(r["partition"]), path, _natural(r["offset"], "offset", where), new)
