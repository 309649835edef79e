"""Erasure: keys removed from every version, every commit's files and every snapshot, in one
``erase`` commit with an audit record.

How (``catalog.log.erasures`` has the log's side):

1. The keys are serialized with the store's key serde; each is audited as a keyed hash
   (HMAC-SHA256 with the audit key, else with the store id: see ``key_hashes``), never as the
   key itself.
2. Every file that a commit lists (changelog pieces and compaction snapshots, as the log reads
   them now) is read once and checked for the keys; a snapshot's RocksDB keys are turned into
   record keys by the kind (``StoreKind.record_keys``). Files that hold none are left as
   they are: the cost follows the files that hold a key.
3. Each file that holds one is written anew, each piece without the keys' rows (the other
   pieces copied byte for byte), under the erasure's write id: invisible until published.
4. One ``erase`` record names, per piece, the piece that replaces it, and is published only
   right after the newest record the erasure read (``expect_latest``): when another commit
   landed meanwhile, its files are read too, and the publish tried again (another erasure
   meanwhile: everything is read again). A crash before the record leaves staged files that
   ``vacuum`` deletes; after it, the erasure is whole.
5. From then on every commit reads the new pieces (time travel, change feeds, restores, Kafka
   exports). Local caches built before it are deleted: this machine's at once, every other's
   on its next use of the store or its next ``Catalog.vacuum``; ``vacuum`` deletes the old
   files once the erasure is older than its window (0: at once).

A write that began before the erasure and commits after it is refused (ERASED_MEANWHILE): its
rows may hold the keys. A write that begins after it is a new write, kept as any other.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import uuid
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog import faults
from catalog.caches.partitions import default_cache_root, purge_erased
from catalog.commit import delete_staged
from catalog.log.changelog import FILE_BATCH_ROWS, IPC_OPTIONS
from catalog.log.paths import is_snapshot, snapshot_path, task_changelog_path
from catalog.log.records import ChangelogFile, Replacement
from catalog.operations.arrow_input import typed_keys
from stores.columns.encode import exact, whole
from stores.errors import CommitConflictError, CorruptDataError, InvalidOptionError
from stores.serdes import serde_for

if TYPE_CHECKING:
    from catalog.table import Table

#: Where the audit key comes from when none is given (see ``key_hashes``).
AUDIT_KEY_ENV = "STATE_STORE_AUDIT_KEY"
#: How often an erasure reads the commits that landed while it ran before it gives up.
_ROUNDS = 20


@dataclass
class ErasureReport:
    """What an erasure did (or, with ``dry_run``, would do)."""

    store: str
    dry_run: bool
    keys: int  # distinct keys asked for
    key_hashes: list[str]
    hash_keyed_by: str  # "audit key" or "store id"
    reason: str
    found: int = 0  # of them, those some file held
    rows: int = 0  # rows removed: changelog rows and snapshot rows
    files: list[str] = field(default_factory=list)  # files rewritten (paths in the store)
    commits: list[int] = field(default_factory=list)  # commits whose reads it changed
    commit: int | None = None  # the erase commit
    tombstones: pa.Table | None = None  # Kafka changelog tombstones, where asked for

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data (the command line's output)."""
        return {
            "store": self.store, "dry_run": self.dry_run, "keys": self.keys,
            "found": self.found, "rows": self.rows, "files_rewritten": self.files,
            "commits_changed": self.commits, "commit": self.commit,
            "key_hash": f"hmac-sha256 keyed by the {self.hash_keyed_by}",
            "key_hashes": self.key_hashes, "reason": self.reason,
            "tombstones": None if self.tombstones is None else self.tombstones.num_rows,
        }  # fmt: skip


def audit_secret(table: Table, audit_key: str | bytes | None) -> tuple[bytes, str]:
    """The HMAC key of an erasure's key hashes, and what it is: ``audit_key``, else
    ``$STATE_STORE_AUDIT_KEY``, else the store id (then anyone who reads the log can test a
    guessed key against the hashes; an audit key kept apart from the warehouse prevents it)."""
    given = audit_key if audit_key is not None else os.environ.get(AUDIT_KEY_ENV)
    if given:
        return (given.encode() if isinstance(given, str) else bytes(given)), "audit key"
    return table.spec.store_id.encode(), "store id"


def key_hashes(serialized: Iterable[bytes], secret: bytes) -> list[str]:
    """``hmac-sha256:<hex>`` of each serialized key, sorted (the order tells nothing)."""
    return sorted(
        "hmac-sha256:" + hmac.new(secret, key, hashlib.sha256).hexdigest() for key in serialized
    )


def serialized_keys(table: Table, keys: Any) -> pa.Array:
    """The distinct serialized keys of ``keys`` (a list, an Arrow array, a pandas or polars
    Series of the store's key type).

    Raises:
        InvalidOptionError: no keys, a null key, or keys not of the store's key type.
    """
    keys = typed_keys(table, keys, "to erase")
    encoded = serde_for(table.spec.key_type, column="key").encode(keys)
    return pc.unique(encoded.cast(pa.binary()))


def erasures_of(table: Table, key: Any, audit_key: str | bytes | None = None) -> list[int]:
    """The erase commits whose audit record holds ``key``'s keyed hash (with the audit key
    those erasures used: ``audit_key``, ``$STATE_STORE_AUDIT_KEY`` or the store id): an
    auditor's check that a key was erased, without the log ever holding the key.

    Raises:
        InvalidOptionError: a key not of the store's key type (INVALID_KEYS).
    """
    secret, _ = audit_secret(table, audit_key)
    (digest,) = key_hashes(serialized_keys(table, [key]).to_pylist(), secret)
    log = table.log
    latest = log.latest_id()
    return [
        commit_id
        for commit_id in (log.read(latest).erasures if latest else ())
        if digest in log.read(commit_id).summary.get("key_hashes", ())
    ]


@dataclass
class _Rewrite:
    """The erasure's files so far: what each staged piece replaces."""

    write_id: str
    keys: Any = None  # the keys as given: serialized per spec (``for_spec``)
    views: dict[int, tuple[Table, pa.Array | None]] = field(default_factory=dict)
    replaced: list[Replacement] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commits: set[int] = field(default_factory=set)
    found: set[bytes] = field(default_factory=set)
    rows: int = 0
    bytes: int = 0

    def for_spec(self, table: Table, spec_commit: int) -> tuple[Table, pa.Array | None]:
        """The store as the spec of record ``spec_commit`` has it (commits before a schema
        overwrite were written with theirs: another kind, another key type), and the keys
        serialized for it (None: they are not of its key type, so none of its files holds
        them)."""
        if spec_commit not in self.views:
            at = table.at(table.catalog, table.log, spec_commit)
            try:
                keys = serialized_keys(at, self.keys)
            except InvalidOptionError:
                keys = None
            self.views[spec_commit] = (at, keys)
        return self.views[spec_commit]


def erase(
    table: Table,
    keys: Any,
    *,
    reason: str,
    audit_key: str | bytes | None = None,
    dry_run: bool = False,
    before_publish: Callable[[int, pa.Array], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ErasureReport:
    """Erase ``keys`` from every commit of ``table`` (see the module doc).

    Args:
        reason: why (kept in the audit record): required.
        audit_key: the HMAC key of the audit's key hashes (see ``audit_secret``).
        dry_run: find what would be rewritten; write nothing.
        before_publish: called with the commit read and the serialized keys once the new
            files are staged, before the record is published (the Kafka tombstones).
        progress: told of each commit read and of the publish.

    Raises:
        InvalidOptionError: no reason, bad keys (INVALID_KEYS).
        CommitConflictError: other writers kept committing (ERASE_CONFLICT); nothing erased.
        CorruptDataError: a file a readable commit lists is missing or damaged.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidOptionError(
            "an erasure needs a reason (kept in its audit record), e.g. reason='GDPR request "
            "1234'",
            code="MISSING_OPTION",
        )
    erased = serialized_keys(table, keys)
    secret, keyed_by = audit_secret(table, audit_key)
    report = ErasureReport(
        table.spec.name, dry_run, len(erased), key_hashes(erased.to_pylist(), secret),
        keyed_by, reason,
    )  # fmt: skip
    log = table.log
    work = _Rewrite(f"erase-{uuid.uuid4().hex}", keys)
    latest, first = log.latest_id(), 1
    called = False
    try:
        for _ in range(_ROUNDS):
            _rewrite(table, first, latest, work, dry_run, progress)
            report.found, report.rows = len(work.found), work.rows
            report.files, report.commits = sorted(work.files), sorted(work.commits)
            if dry_run:
                return report
            if before_publish is not None and not called:
                before_publish(latest, erased)
                called = True
            if progress is not None:
                progress("commit")
            summary = {
                "reason": reason, "keys": len(erased), "found": report.found,
                "rows": work.rows, "bytes": work.bytes, "key_hash": "hmac-sha256",
                "hash_keyed_by": keyed_by, "key_hashes": report.key_hashes,
                "files_rewritten": report.files, "commits_changed": report.commits,
            }  # fmt: skip
            try:
                record = log.publish(
                    "erase", [], work.write_id, summary=summary, replaced=work.replaced,
                    expect_latest=latest,
                )  # fmt: skip
            except CommitConflictError as exc:
                if exc.code != "LOG_MOVED":
                    raise
                newest = log.latest_id()
                if any(log.read_raw(i).operation == "erase" for i in range(latest + 1, newest + 1)):
                    _delete_staged(table, work)  # another erasure: everything is read again
                    work = _Rewrite(work.write_id + "x", keys)
                    first = 1
                else:
                    first = latest + 1
                latest = newest
                continue
            assert record is not None
            report.commit = record.id
            faults.point("erase.published")
            purge_erased(log.storage, table.spec, log.store_dir,
                         table.catalog.cache_dir or default_cache_root())  # fmt: skip
            return report
        raise CommitConflictError(
            f"other writers kept committing to store {table.spec.name!r} while the erasure "
            f"read their files ({_ROUNDS} rounds); nothing was erased: run it again",
            code="ERASE_CONFLICT",
        )
    except BaseException:
        if not dry_run and report.commit is None:
            _delete_staged(table, work)
        raise


def _delete_staged(table: Table, work: _Rewrite) -> None:
    delete_staged(table.log.storage, table.log.store_dir, [r.file for r in work.replaced])


def _rewrite(
    table: Table,
    first: int,
    last: int,
    work: _Rewrite,
    dry_run: bool,
    progress: Callable[[str], None] | None,
) -> None:
    """Read the files of commits ``first..last``; stage (unless ``dry_run``) each that holds
    an erased key anew, and note what it replaces in ``work``."""
    log, storage, store = table.log, table.log.storage, table.log.store_dir
    start = log.history_start() if last else 1
    pieces: dict[str, list[ChangelogFile]] = {}
    listed_by: dict[str, set[int]] = {}
    spec_of: dict[str, int] = {}
    for commit_id in range(first, last + 1):
        record = log.read(commit_id)
        for ref in record.files:
            pieces.setdefault(ref.path, []).append(ref)
            listed_by.setdefault(ref.path, set()).add(commit_id)
            spec_of[ref.path] = record.spec_commit
    for n, (path, refs) in enumerate(sorted(pieces.items())):
        if progress is not None and n % 100 == 0:
            progress(f"files {n}/{len(pieces)}")
        at, erased = work.for_spec(table, spec_of[path])
        if erased is None:
            continue
        try:
            data = storage.read_bytes(store, *path.split("/"))
        except FileNotFoundError:
            if max(listed_by[path]) < start:
                continue  # history that vacuum expired: no commit that lists it is readable
            raise CorruptDataError(
                f"file {storage.url(store, path)} of store {store!r} is missing; commits "
                f"{sorted(listed_by[path])} list it"
            ) from None
        refs = sorted(set(refs), key=lambda r: r.offset)
        pieces_read = [_piece(at, data, ref, erased) for ref in refs]
        if not any(len(found) for _, _, found in pieces_read):
            continue
        work.files.append(path)
        work.commits |= listed_by[path]
        for rows, hits, found in pieces_read:
            work.found.update(pc.unique(found).to_pylist())
            work.rows += pc.sum(hits).as_py() or 0
        if dry_run:
            continue
        seq = len(work.files)
        snapshot = is_snapshot(path)
        rel = (
            snapshot_path(refs[0].partition, f"{work.write_id}-{seq:05d}") if snapshot
            else task_changelog_path(f"{work.write_id}-{seq:05d}")
        )  # fmt: skip
        if snapshot and len(refs) > 1:
            raise CorruptDataError(f"snapshot {path} of store {store!r} is listed in pieces")
        blobs, offset = [], 0
        for ref, (rows, hits, _) in zip(refs, pieces_read, strict=True):
            # Every piece of the file is written anew, those without a key too: a piece cut
            # from a writer's batch carries its neighbours' bytes (``exact``).
            kept = rows.filter(pc.invert(hits))
            piece = _encoded(kept)
            new = ChangelogFile(
                partition=ref.partition, path=rel, rows=kept.num_rows, size=len(piece),
                crc32=zlib.crc32(piece), offset=0 if snapshot else offset,
            )  # fmt: skip
            work.replaced.append(Replacement(ref.partition, ref.path, ref.offset, new))
            blobs.append(piece)
            offset += len(piece)
        storage.write_bytes(b"".join(blobs), store, *rel.split("/"))
        work.bytes += offset
        faults.point("erase.staged")


def _piece(
    table: Table, data: bytes, ref: ChangelogFile, erased: pa.Array
) -> tuple[pa.Table, pa.ChunkedArray, pa.Array]:
    """The rows of piece ``ref`` of ``data``, which of them are of an erased key, and those
    rows' record keys.

    Raises:
        CorruptDataError: the piece fails its size or checksum.
    """
    piece = data[ref.offset : ref.offset + ref.size]
    if len(piece) != ref.size or zlib.crc32(piece) != ref.crc32:
        raise CorruptDataError(
            f"file {ref.path} (partition {ref.partition}: {ref.size} bytes at {ref.offset}) "
            f"of store {table.spec.name!r} does not match its commit record"
        )
    rows = pa.ipc.open_file(pa.py_buffer(piece)).read_all()
    return rows, *_hits(table, rows, is_snapshot(ref.path), erased)


def _encoded(rows: pa.Table) -> bytes:
    """``rows`` as an Arrow IPC file (LZ4, as changelog and snapshot files are), each column
    in buffers of its own values only (``exact``)."""
    columns = [exact(whole(column)) if len(column) else column.combine_chunks()
               for column in rows.columns]  # fmt: skip
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, rows.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(pa.table(columns, schema=rows.schema), max_chunksize=FILE_BATCH_ROWS)
    return sink.getvalue().to_pybytes()


def _hits(
    table: Table, rows: pa.Table, snapshot: bool, erased: pa.Array
) -> tuple[pa.ChunkedArray, pa.Array]:
    """Which rows are of an erased key, and those rows' record keys: a changelog row's key is
    one; a snapshot row's RocksDB key holds one (``StoreKind.record_keys``), or none in a
    bookkeeping family."""
    if not snapshot:
        hits = pc.is_in(rows.column("key"), value_set=erased)
        return hits, pc.filter(rows.column("key"), hits).combine_chunks()
    chunks, found = [], []
    for batch in rows.to_batches():
        hits = np.zeros(batch.num_rows, bool)
        families = batch.column("cf")
        for family in pc.unique(families).to_pylist():
            of_family = pc.equal(families, family).to_numpy(zero_copy_only=False)
            keys = table.kind.record_keys(family, batch.column("key").filter(of_family),
                                          table.spec.params)  # fmt: skip
            if keys is None:
                continue
            erased_rows = pc.is_in(keys, value_set=erased)
            found.append(keys.filter(erased_rows))
            hits[np.flatnonzero(of_family)] = erased_rows.to_numpy(zero_copy_only=False)
        chunks.append(pa.array(hits))
    keys_found = pa.concat_arrays(found) if found else pa.array([], pa.binary())
    return pa.chunked_array(chunks, pa.bool_()), keys_found


__all__ = ["AUDIT_KEY_ENV", "ErasureReport", "audit_secret", "erase", "erasures_of",
           "key_hashes", "serialized_keys"]  # fmt: skip
