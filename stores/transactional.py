"""Transactional stores, for every store kind: KIP-844 as Kafka shipped it (KIP-892, KIP-1035).

A ``TransactionalStore`` opens any store of ``stores`` over one RocksDB whose writes are
buffered, uncommitted, in an indexed write batch (``stores.bytes.rocksdb``): the store reads its
own uncommitted writes, other readers of the database do not see them, and closing or crashing
without ``commit`` loses them. ``commit(changelog_offset)`` applies the batch atomically
together with the offset, which is kept in the database itself, in column family ``offsets``
(KIP-1035: the committed offset can never disagree with the data). ``committed_offset()``
returns it.

Changelog. With a ``Changelog`` (``MemoryChangelog``, ``FileChangelog``: one writer at a time,
``stores.transaction_log``), the store logs what
each public operation wrote (its raw RocksDB writes, as one record: Kafka's change-logging
layer); ``commit()`` then commits at the changelog's end offset, and ``recover()`` restores the
records after the committed offset.

Restore is Kafka's (``StoreChangelogReader``), so the store always equals a fresh store
restored from its changelog at the same offset. ``processing_guarantee`` (Kafka's
``processing.guarantee``) decides what a restore reads; this is the one place that says it:

- ``"at_least_once"``, the default as in Kafka, and what ``recover()`` always did: no record is
  ever aborted, a restore replays every record to the end (``read_uncommitted``). Logged,
  uncommitted writes come back on ``recover()``; ``rollback()`` drops them from the store only.
- ``"exactly_once_v2"``: the store's records between two commits are one transaction;
  ``commit()`` appends a commit marker; ``rollback()``, ``close()`` without commit, and
  ``recover()`` after a crash (records after the last marker) append an abort marker, durably,
  before anything else is appended. A restore reads ``read_committed`` (``StreamsConfig`` sets
  ``isolation.level`` so under EOS): aborted transactions are skipped, plain records (files
  written before markers existed, or under at-least-once) are read, as Kafka reads
  non-transactional records. The guarantee is the reader's: restored under at-least-once, an
  exactly-once log replays its aborted records too, as ``read_uncommitted`` does.

Markers occupy offsets, as Kafka's control records do: an exactly-once commit is at its
marker's offset, which a fresh restore reaches too. A store behind its changelog (records it
has not applied that a restore would: a crash, ``rollback()`` under at-least-once, a partial
``recover(changelog_offset)``, a crashed writer's open transaction) refuses writes and commits
(``CommitConflictError`` ``STORE_BEHIND_CHANGELOG``) until ``recover()`` restores it to the
end, as a Kafka task restores before it processes; opening does not restore by itself, and
reads stay allowed.

Bounded transactions. Uncommitted writes live in memory until commit. Past
``max_uncommitted_bytes`` (KIP-892's ``statestore.uncommitted.max.bytes``) the store forces an
early commit at the end of the operation that crossed it (with a changelog: ``commit()``; else
the owner's ``request_commit``); with neither, it refuses to grow.

    with TransactionalStore.of(path, VersionedKeyValueStore, changelog=FileChangelog(p),
                               history_retention_ms=3_600_000) as tx:
        tx.recover(); tx.store.put(b"k", b"v", 1_000); tx.commit()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from stores.bytes.protocol import BytesStore, RawOp
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import (
    CommitConflictError,
    InvalidOptionError,
    StoreClosedError,
)
from stores.transaction_log import (
    ABORT,
    COMMIT,
    Changelog,
    FileChangelog,
    LogRecord,
    MemoryChangelog,
)

OFFSETS_CF = "offsets"
_OFFSET_KEY = b"changelogOffset"
#: KIP-892's default bound of uncommitted writes per store.
DEFAULT_MAX_UNCOMMITTED_BYTES = 64 << 20
#: Kafka's ``processing.guarantee`` values (``StreamsConfig``), and its default.
AT_LEAST_ONCE = "at_least_once"
EXACTLY_ONCE_V2 = "exactly_once_v2"
PROCESSING_GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE_V2)
DEFAULT_PROCESSING_GUARANTEE = AT_LEAST_ONCE
S = TypeVar("S")


def committed_offset_of(db: BytesStore) -> int | None:
    """The offset a transactional store committed last, read from any handle of its database
    (a read-only one too); None if it never committed."""
    raw = db.get(_OFFSET_KEY, OFFSETS_CF)
    return None if raw is None else int.from_bytes(raw, "big")


def restored_records(
    records: Iterable[LogRecord],
    processing_guarantee: str,
    abort_open: Callable[[], None] | None = None,
) -> Iterator[LogRecord]:
    """The data records a restore applies, in offset order, as Kafka's restore consumer reads
    them: under at-least-once all (``read_uncommitted``); under exactly-once those outside
    aborted transactions, up to the last stable offset (``read_committed``). A transaction open
    at the end is not read; ``abort_open`` (which logs its abort), if given, is called, and the
    plain records behind it are read."""
    held: list[LogRecord] = []  # behind an undecided transaction (the last stable offset)
    exactly_once = processing_guarantee == EXACTLY_ONCE_V2
    for record in records:
        if record.control is not None:
            yield from (r for r in held if record.control == COMMIT or not r.transactional)
            held = []
        elif exactly_once and (held or record.transactional):
            held.append(record)
        else:
            yield record
    if held and abort_open is not None:
        abort_open()
        yield from (r for r in held if not r.transactional)


class _Recorder(list[RawOp]):
    """The operation's writes, to be logged; refuses them while the store is behind its log."""

    def __init__(self, check: Callable[[], None]) -> None:
        super().__init__()
        self._check = check

    def append(self, op: RawOp) -> None:
        self._check()
        super().append(op)


class TransactionalStore(Generic[S]):
    """A store of any kind whose writes commit together with a changelog offset (module doc).

    Args:
        path: the RocksDB directory.
        column_families: the store's families (``StoreClass.column_families()``).
        open_store: builds the typed store over the RocksDB store this opens (``StoreClass.over``,
            which takes any ``BytesStore``).
        changelog: where operations are logged; enables ``commit()`` without an offset,
            ``recover()`` and early commits. The store owns it: ``close`` closes it.
        processing_guarantee: ``"at_least_once"`` (default) or ``"exactly_once_v2"``: what
            the changelog's records mean and what a restore reads (module doc).
        max_uncommitted_bytes: the bound of a transaction (see module doc).
        request_commit: called when the bound is crossed and there is no changelog; it must
            call ``commit(offset)``.
        sealed: seal the database (``stores.bytes.rocksdb``): report a damaged MANIFEST.

    Raises:
        InvalidOptionError: a bound below 1, or an unknown processing guarantee.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        column_families: Sequence[str],
        open_store: Callable[[BytesStore], S],
        *,
        changelog: Changelog | None = None,
        processing_guarantee: str = DEFAULT_PROCESSING_GUARANTEE,
        max_uncommitted_bytes: int = DEFAULT_MAX_UNCOMMITTED_BYTES,
        request_commit: Callable[[], None] | None = None,
        sealed: bool = False,
    ) -> None:
        if max_uncommitted_bytes < 1:
            raise InvalidOptionError(
                f"max_uncommitted_bytes is {max_uncommitted_bytes}; accepted: at least 1"
            )
        if processing_guarantee not in PROCESSING_GUARANTEES:
            raise InvalidOptionError(
                f"processing_guarantee is {processing_guarantee!r}; accepted: "
                + ", ".join(repr(g) for g in PROCESSING_GUARANTEES)
            )
        families = (*column_families, OFFSETS_CF)
        self.db = RocksDBBytesStore(path, families, autocommit=False, sealed=sealed)
        self.changelog = changelog
        self.processing_guarantee = processing_guarantee
        self.exactly_once = processing_guarantee == EXACTLY_ONCE_V2
        self.max_uncommitted_bytes = max_uncommitted_bytes
        self.request_commit = request_commit
        self._open_store = open_store
        self._operation = _Recorder(self._check_writable)
        self._in_transaction = False  # records of ours after the last marker (exactly-once)
        self.db.on_operation_end = self._operation_ended
        if changelog is not None:
            self.db.recorder = self._operation
        self._behind: int | None = self._lag()  # the store's offset while it is behind its log
        self.store: S = open_store(self.db)

    @classmethod
    def of(cls, path: str | os.PathLike[str], store_class: Any, **kwargs: Any) -> TransactionalStore[Any]:
        """Open ``store_class`` (any store of ``stores``) transactionally; ``kwargs`` are the
        store's parameters and this class's keyword arguments but ``sealed``."""
        names = ("changelog", "processing_guarantee", "max_uncommitted_bytes", "request_commit")
        own = {k: kwargs.pop(k) for k in names if k in kwargs}
        open_store = lambda db: store_class.over(db, **kwargs)
        return cls(path, store_class.column_families(), open_store, **own)

    # -- transactions ------------------------------------------------------------------------

    @property
    def uncommitted_bytes(self) -> int:
        """Bytes of keys and values written since the last commit."""
        return self.db.uncommitted_bytes

    @property
    def behind_changelog(self) -> bool:
        """Whether the changelog holds records the store has not applied (``recover()``)."""
        return self._behind is not None

    def committed_offset(self) -> int | None:
        """The changelog offset of the last commit (None: never committed)."""
        return committed_offset_of(self.db)  # written only inside commit()

    def commit(self, changelog_offset: int | None = None) -> None:
        """Make every uncommitted write durable, atomically with ``changelog_offset``. With a
        changelog the offset is the one the changelog reaches (under exactly-once, a commit
        marker's when there are writes); ``changelog_offset``, if given, must be that one.

        Raises:
            InvalidOptionError: no offset to take, one below the committed one or not the
                changelog's. CommitConflictError: STORE_BEHIND_CHANGELOG (module doc).
        """
        self._check_writable()
        self._log_operation()
        if self.changelog is not None:
            marker = self.exactly_once and self._in_transaction
            reached = self.changelog.end_offset() + marker
            if changelog_offset not in (None, reached):
                raise InvalidOptionError(
                    f"changelog_offset is {changelog_offset}; a store with a changelog commits "
                    f"at the offset its changelog reaches: {reached} (or pass none)"
                )
            if marker:
                self.changelog.append_marker(COMMIT)
                self._in_transaction = False
            self.changelog.flush()  # the log holds at least what the store claims
            changelog_offset = reached
        elif changelog_offset is None:
            raise InvalidOptionError("commit() needs a changelog_offset: this store has no changelog")
        committed = self.committed_offset()
        if committed is not None and changelog_offset < committed:
            raise InvalidOptionError(
                f"changelog_offset {changelog_offset} is below the committed offset {committed}"
            )
        self._commit_offset(changelog_offset)

    def rollback(self) -> None:
        """Discard every uncommitted write (the typed store is reopened over the data). Under
        exactly-once the transaction is aborted in the changelog; under at-least-once its
        records stay there, and the store is behind its changelog until ``recover()``."""
        self._discard()
        self._behind = self._lag()
        self.reopen()

    def reopen(self) -> None:
        """Build the typed store anew over the data as this transaction sees it (after raw
        writes such as clearing a family, which a store's cached bookkeeping did not see)."""
        self.store = self._open_store(self.db)

    def recover(self, changelog_offset: int | None = None) -> int:
        """Discard uncommitted writes (under exactly-once: abort them, and a crashed writer's
        open transaction) and restore the changelog after the committed offset, as Kafka's
        ``StoreChangelogReader`` does, up to ``changelog_offset`` (default: the end; below it,
        the store is behind its changelog, and refuses writes until it reaches the end).

        Returns:
            The number of data records applied.

        Raises:
            InvalidOptionError: no changelog.
        """
        changelog = self.changelog
        if changelog is None:
            raise InvalidOptionError("recover() needs a changelog: this store has none")
        self._discard()
        committed = self.committed_offset()
        start = committed or 0
        last = start  # the offset of the last record a restore to the end would apply
        self.db.recorder = None  # replayed writes are in the log already
        replayed = 0
        try:
            read = changelog.read(start)
            for record in restored_records(read, self.processing_guarantee, self._abort):
                last = record.offset
                if changelog_offset is not None and record.offset > changelog_offset:
                    continue  # read on: a later marker may still decide an earlier record
                self.db.apply(record.ops)
                replayed += 1
                if self.db.uncommitted_bytes > self.max_uncommitted_bytes:
                    self._commit_offset(record.offset)
            end = changelog.end_offset()
            reached = end if changelog_offset is None else min(changelog_offset, end)
            if reached > start or committed is None:  # restored: a store with an offset
                self._commit_offset(max(reached, start))
        finally:
            self.db.recorder = self._operation
        self._behind = max(reached, start) if last > max(reached, start) else None
        self.reopen()
        return replayed

    def _commit_offset(self, offset: int) -> None:
        self.db.put(_OFFSET_KEY, offset.to_bytes(8, "big"), OFFSETS_CF)
        self._operation.clear()  # the offset is bookkeeping, not an operation to log
        self.db.commit()

    def _discard(self) -> None:
        self.db.rollback()
        self._operation.clear()
        if self._in_transaction:
            self._abort()

    def _abort(self) -> None:
        assert self.changelog is not None
        self.changelog.append_marker(ABORT)
        self.changelog.flush()  # durable before anything else is appended or committed
        self._in_transaction = False

    def _lag(self) -> int | None:
        """The committed offset if a restore would apply records beyond it (or abort some)."""
        if self.changelog is None:
            return None
        committed = self.committed_offset() or 0
        if self.changelog.end_offset() <= committed:
            return None
        opened: list[bool] = []
        read = self.changelog.read(committed)
        pending = restored_records(read, self.processing_guarantee, lambda: opened.append(True))
        return committed if next(pending, None) is not None or opened else None

    def _check_writable(self) -> None:
        if self._behind is None:
            return
        self.db.rollback()  # what the refused operation staged
        self.reopen()
        assert self.changelog is not None
        raise CommitConflictError(
            f"the store at {self.db.path} is at changelog offset {self._behind}; its changelog "
            f"holds records up to {self.changelog.end_offset()} that a restore applies under "
            f"processing_guarantee={self.processing_guarantee!r}: call recover() first (a Kafka "
            "task restores to the changelog's end before it processes)",
            code="STORE_BEHIND_CHANGELOG",
        )

    def _log_operation(self) -> None:
        if self.changelog is not None and self._operation:
            self.changelog.append(self._operation, self.exactly_once)
            self._in_transaction = self.exactly_once
            self._operation.clear()

    def _operation_ended(self) -> None:
        self._log_operation()
        if self.db.uncommitted_bytes <= self.max_uncommitted_bytes:
            return
        if self.changelog is not None:
            self.commit()
        elif self.request_commit is not None:
            self.request_commit()
            if self.db.uncommitted_bytes > self.max_uncommitted_bytes:
                raise InvalidOptionError(
                    "request_commit() returned without committing; the uncommitted writes "
                    f"({self.db.uncommitted_bytes} bytes) exceed max_uncommitted_bytes "
                    f"({self.max_uncommitted_bytes})"
                )
        else:
            raise InvalidOptionError(
                f"uncommitted writes ({self.db.uncommitted_bytes} bytes) exceed "
                f"max_uncommitted_bytes ({self.max_uncommitted_bytes}); commit more often, "
                "raise the bound, or give the store a changelog or a request_commit callback"
            )

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close, losing uncommitted writes (logged ones: module doc)."""
        if self.db.closed:
            return
        if self.changelog is not None:
            try:
                if self.exactly_once:
                    self._discard()
                else:
                    self._log_operation()
            except CommitConflictError as error:
                if error.code != "CHANGELOG_FENCED":
                    raise
                # Fenced: the store that fenced this one has aborted its open transaction.
            self.changelog.flush()
            close = getattr(self.changelog, "close", None)
            if close is not None:
                close()
        self.db.close()

    def __enter__(self) -> TransactionalStore[S]:
        if self.db.closed:
            raise StoreClosedError(f"the transactional store at {self.db.path} is closed")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = [
    "ABORT", "AT_LEAST_ONCE", "COMMIT", "DEFAULT_MAX_UNCOMMITTED_BYTES",
    "DEFAULT_PROCESSING_GUARANTEE", "EXACTLY_ONCE_V2", "OFFSETS_CF", "PROCESSING_GUARANTEES",
    "Changelog", "FileChangelog", "LogRecord", "MemoryChangelog", "TransactionalStore",
    "committed_offset_of", "restored_records",
]  # fmt: skip
