"""Transactional stores, for every store kind: KIP-844 as Kafka shipped it (KIP-892, KIP-1035).

A ``TransactionalStore`` opens any store of ``stores`` over one RocksDB whose writes are
buffered, uncommitted, in an indexed write batch (``stores.bytes.rocksdb``): the store reads its
own uncommitted writes, other readers of the database do not see them, and closing or crashing
without ``commit`` loses them. ``commit(changelog_offset)`` applies the batch atomically
together with the offset, which is kept in the database itself, in column family ``offsets``
(KIP-1035: the committed offset can never disagree with the data). ``committed_offset()``
returns it.

Changelog. With a ``Changelog``, the store logs what each public operation wrote (the raw
RocksDB writes of the operation, as one record: Kafka's change-logging layer); ``commit()``
then commits at the changelog's end offset, and ``recover()`` after a crash discards what was
uncommitted and replays the records after the committed offset. Two changelogs are provided:
``MemoryChangelog`` and ``FileChangelog`` (an append-only file, each record framed with its
length and CRC-32; a torn last record, what a crash mid-append leaves, is cut off; a bad record
before the end is corruption).

Bounded transactions. Uncommitted writes live in memory until commit. Past
``max_uncommitted_bytes`` (KIP-892's ``statestore.uncommitted.max.bytes``) the store forces an
early commit at the end of the operation that crossed it: at the changelog's end offset (every
write is in the changelog, so recovery is unaffected), or, without a changelog, by calling
``request_commit`` (the owner commits with its own offset); with neither, it refuses to grow.

    with TransactionalStore.of("/tmp/v", VersionedKeyValueStore, changelog=FileChangelog(p),
                               history_retention_ms=3_600_000) as tx:
        tx.store.put(b"k", b"v", 1_000)      # uncommitted: read back by tx.store only
        tx.commit()                          # data and offset, atomically
    tx = TransactionalStore.of(...); tx.recover()   # after a crash
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

from stores.bytes.protocol import BytesStore, RawOp
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import CorruptDataError, InvalidOptionError, StoreClosedError

OFFSETS_CF = "offsets"
_OFFSET_KEY = b"changelogOffset"
#: KIP-892's default bound of uncommitted writes per store.
DEFAULT_MAX_UNCOMMITTED_BYTES = 64 << 20

S = TypeVar("S")


def committed_offset_of(db: BytesStore) -> int | None:
    """The offset a transactional store committed last, read from any handle of its database
    (a read-only one too); None if it never committed."""
    raw = db.get(_OFFSET_KEY, OFFSETS_CF)
    return None if raw is None else int.from_bytes(raw, "big")


class Changelog(Protocol):
    """Where a transactional store logs its operations (Kafka's changelog topic)."""

    def append(self, ops: Sequence[RawOp]) -> int:
        """Log one operation's writes; return its offset (1, 2, ...)."""
        ...

    def end_offset(self) -> int:
        """The offset of the last record (0 if none)."""
        ...

    def read(self, after: int) -> Iterator[tuple[int, list[RawOp]]]:
        """Records with an offset above ``after``, in order."""
        ...

    def flush(self) -> None:
        """Make every appended record durable."""
        ...


class MemoryChangelog:
    """A changelog in memory (tests, and stores whose durability lies elsewhere)."""

    def __init__(self) -> None:
        self.records: list[list[RawOp]] = []

    def append(self, ops: Sequence[RawOp]) -> int:
        self.records.append(list(ops))
        return len(self.records)

    def end_offset(self) -> int:
        return len(self.records)

    def read(self, after: int) -> Iterator[tuple[int, list[RawOp]]]:
        for index in range(max(after, 0), len(self.records)):
            yield index + 1, self.records[index]

    def flush(self) -> None:
        pass


_FRAME = struct.Struct(">II")  # payload length, crc32 of the payload
_OPS = {"put": 0, "delete": 1, "delete_range": 2}
_OP_NAMES = {code: name for name, code in _OPS.items()}


def _encode(offset: int, ops: Sequence[RawOp]) -> bytes:
    parts = [struct.pack(">QI", offset, len(ops))]
    for op, cf, a, b in ops:
        family = cf.encode()
        parts.append(struct.pack(">BH", _OPS[op], len(family)))
        parts.append(family)
        parts.append(struct.pack(">I", len(a)))
        parts.append(a)
        parts.append(struct.pack(">i", -1 if b is None else len(b)))
        if b is not None:
            parts.append(b)
    return b"".join(parts)


def _decode(payload: bytes) -> tuple[int, list[RawOp]]:
    offset, count = struct.unpack_from(">QI", payload, 0)
    at = 12
    ops: list[RawOp] = []
    for _ in range(count):
        code, family_size = struct.unpack_from(">BH", payload, at)
        at += 3
        family = payload[at : at + family_size].decode()
        at += family_size
        (a_size,) = struct.unpack_from(">I", payload, at)
        at += 4
        a = payload[at : at + a_size]
        at += a_size
        (b_size,) = struct.unpack_from(">i", payload, at)
        at += 4
        b = None
        if b_size >= 0:
            b = payload[at : at + b_size]
            at += b_size
        ops.append((_OP_NAMES[code], family, a, b))
    if at != len(payload):
        raise ValueError("trailing bytes")
    return offset, ops


class FileChangelog:
    """An append-only changelog file: records ``[length][crc32][offset, ops]``.

    Opening it scans the file: a torn last record (shorter than its frame says, or failing its
    checksum at the very end) is what a crash mid-append leaves, and is cut off; a record that
    fails its checksum with records after it is corruption.

    Raises:
        CorruptDataError: code CHANGELOG_CORRUPT, naming the file and the byte position.
    """

    def __init__(self, path: str | os.PathLike[str], *, sync: bool = False) -> None:
        self.path = os.fspath(path)
        self.sync = sync  # fsync every append (else at ``flush``)
        self._end = 0
        size = self._scan()
        self._file = open(self.path, "ab")  # noqa: SIM115 - kept open for appends
        if self._file.tell() != size:
            self._file.truncate(size)

    def _scan(self) -> int:
        """Find the end offset and the length of the valid prefix of the file."""
        if not os.path.exists(self.path):
            return 0
        with open(self.path, "rb") as f:
            data = f.read()
        at = 0
        while at < len(data):
            if at + _FRAME.size > len(data):
                break  # torn frame header
            length, crc = _FRAME.unpack_from(data, at)
            start = at + _FRAME.size
            payload = data[start : start + length]
            if len(payload) < length:
                break  # torn payload
            if zlib.crc32(payload) != crc:
                if start + length == len(data):
                    break  # the last record, torn mid-write
                raise CorruptDataError(
                    f"changelog {self.path} has a corrupt record at byte {at} followed by "
                    "more records",
                    code="CHANGELOG_CORRUPT",
                )
            offset, _ = _decode(payload)
            if offset != self._end + 1:
                raise CorruptDataError(
                    f"changelog {self.path} has offset {offset} after {self._end} at byte {at}",
                    code="CHANGELOG_CORRUPT",
                )
            self._end = offset
            at = start + length
        return at

    def append(self, ops: Sequence[RawOp]) -> int:
        offset = self._end + 1
        payload = _encode(offset, ops)
        self._file.write(_FRAME.pack(len(payload), zlib.crc32(payload)) + payload)
        if self.sync:
            self.flush()
        self._end = offset
        return offset

    def end_offset(self) -> int:
        return self._end

    def read(self, after: int) -> Iterator[tuple[int, list[RawOp]]]:
        self._file.flush()
        with open(self.path, "rb") as f:
            data = f.read()
        at = 0
        while at + _FRAME.size <= len(data):
            length, crc = _FRAME.unpack_from(data, at)
            payload = data[at + _FRAME.size : at + _FRAME.size + length]
            if len(payload) < length or zlib.crc32(payload) != crc:
                raise CorruptDataError(
                    f"changelog {self.path} changed under its reader at byte {at}",
                    code="CHANGELOG_CORRUPT",
                )
            offset, ops = _decode(payload)
            if offset > after:
                yield offset, ops
            at += _FRAME.size + length

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()


class TransactionalStore(Generic[S]):
    """A store of any kind whose writes commit together with a changelog offset (module doc).

    Args:
        path: the RocksDB directory.
        column_families: the store's families (``StoreClass.column_families()``).
        open_store: builds the typed store over the RocksDB store this opens (``StoreClass.over``,
            which takes any ``BytesStore``).
        changelog: where operations are logged; enables ``commit()`` without an offset,
            ``recover()`` and early commits. The store owns it: ``close`` closes it.
        max_uncommitted_bytes: the bound of a transaction (see module doc).
        request_commit: called when the bound is crossed and there is no changelog; it must
            call ``commit(offset)``.
        sealed: seal the database (``stores.bytes.rocksdb``): a damaged MANIFEST is reported
            instead of read as an older state.

    Raises:
        InvalidOptionError: a bound below 1.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        column_families: Sequence[str],
        open_store: Callable[[BytesStore], S],
        *,
        changelog: Changelog | None = None,
        max_uncommitted_bytes: int = DEFAULT_MAX_UNCOMMITTED_BYTES,
        request_commit: Callable[[], None] | None = None,
        sealed: bool = False,
    ) -> None:
        if max_uncommitted_bytes < 1:
            raise InvalidOptionError(
                f"max_uncommitted_bytes is {max_uncommitted_bytes}; accepted: at least 1"
            )
        self.db = RocksDBBytesStore(
            path, (*column_families, OFFSETS_CF), autocommit=False, sealed=sealed
        )
        self.changelog = changelog
        self.max_uncommitted_bytes = max_uncommitted_bytes
        self.request_commit = request_commit
        self._open_store = open_store
        self._operation: list[RawOp] = []
        self.db.on_operation_end = self._operation_ended
        if changelog is not None:
            self.db.recorder = self._operation
        self.store: S = open_store(self.db)

    @classmethod
    def of(cls, path: str | os.PathLike[str], store_class: Any, **kwargs: Any) -> TransactionalStore[Any]:
        """Open ``store_class`` (any store of ``stores``) transactionally; ``kwargs`` are the
        store's parameters plus ``changelog``, ``max_uncommitted_bytes``, ``request_commit``."""
        own = {k: kwargs.pop(k) for k in ("changelog", "max_uncommitted_bytes", "request_commit")
               if k in kwargs}  # fmt: skip
        return cls(
            path,
            store_class.column_families(),
            lambda db: store_class.over(db, **kwargs),
            **own,
        )

    # -- transactions ------------------------------------------------------------------------

    @property
    def uncommitted_bytes(self) -> int:
        """Bytes of keys and values written since the last commit."""
        return self.db.uncommitted_bytes

    def committed_offset(self) -> int | None:
        """The changelog offset of the last commit (None: never committed)."""
        return committed_offset_of(self.db)  # written only inside commit()

    def commit(self, changelog_offset: int | None = None) -> None:
        """Make every uncommitted write durable, atomically with ``changelog_offset``.

        Raises:
            InvalidOptionError: no offset and no changelog to take it from, or an offset
                below the committed one.
        """
        self._log_operation()
        if changelog_offset is None:
            if self.changelog is None:
                raise InvalidOptionError(
                    "commit() needs a changelog_offset: this store has no changelog"
                )
            changelog_offset = self.changelog.end_offset()
        committed = self.committed_offset()
        if committed is not None and changelog_offset < committed:
            raise InvalidOptionError(
                f"changelog_offset {changelog_offset} is below the committed offset {committed}"
            )
        if self.changelog is not None:
            self.changelog.flush()  # the log holds at least what the store claims
        self.db.put(_OFFSET_KEY, changelog_offset.to_bytes(8, "big"), OFFSETS_CF)
        self._operation.clear()  # the offset is bookkeeping, not an operation to log
        self.db.commit()

    def rollback(self) -> None:
        """Discard every uncommitted write (the typed store is reopened over the data)."""
        self.db.rollback()
        self._operation.clear()
        self.reopen()

    def reopen(self) -> None:
        """Build the typed store anew over the data as this transaction sees it (after raw
        writes such as clearing a family, which a store's cached bookkeeping did not see)."""
        self.store = self._open_store(self.db)

    def recover(self, changelog_offset: int | None = None) -> int:
        """After a crash (or to catch up): discard uncommitted writes and replay the changelog
        records after the committed offset, up to ``changelog_offset`` (default: its end).

        Returns:
            The number of records replayed.

        Raises:
            InvalidOptionError: no changelog.
        """
        if self.changelog is None:
            raise InvalidOptionError("recover() needs a changelog: this store has none")
        self.rollback()
        start = self.committed_offset() or 0
        end = self.changelog.end_offset() if changelog_offset is None else changelog_offset
        self.db.recorder = None  # replayed writes are in the log already
        replayed = 0
        try:
            for offset, ops in self.changelog.read(start):
                if offset > end:
                    break
                self.db.apply(ops)
                replayed += 1
                if self.db.uncommitted_bytes > self.max_uncommitted_bytes:
                    self._commit_replayed(offset)
            if replayed:
                self._commit_replayed(min(end, self.changelog.end_offset()))
        finally:
            self.db.recorder = self._operation
        self.store = self._open_store(self.db)
        return replayed

    def _commit_replayed(self, offset: int) -> None:
        self.db.put(_OFFSET_KEY, offset.to_bytes(8, "big"), OFFSETS_CF)
        self.db.commit()

    def _log_operation(self) -> None:
        if self.changelog is not None and self._operation:
            self.changelog.append(self._operation)
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
        """Close; uncommitted writes are lost (logged ones come back through ``recover``)."""
        if self.db.closed:
            return
        self._log_operation()
        if self.changelog is not None:
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
    "DEFAULT_MAX_UNCOMMITTED_BYTES",
    "OFFSETS_CF",
    "Changelog",
    "FileChangelog",
    "MemoryChangelog",
    "TransactionalStore",
    "committed_offset_of",
]
