"""The changelogs of transactional stores: where a ``TransactionalStore`` logs its operations.

A record is one operation's raw RocksDB writes (``LogRecord``), or a transaction marker
(``COMMIT``, ``ABORT``: Kafka's control records, which take offsets of their own). Two logs:
``MemoryChangelog`` and ``FileChangelog`` (an append-only file, each record framed with its
length and CRC-32; a torn last record, what a crash mid-append leaves, is cut off; a bad record
before the end is corruption). A log has one writer at a time: a ``recover()`` of the same log
by another store fences the first (its next append fails with ``CHANGELOG_FENCED``), as
Kafka's ``initTransactions`` fences a producer. What a restore reads of a log under each
processing guarantee is ``stores.transactional``'s.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, Protocol

from stores.bytes.protocol import RawOp
from stores.errors import CommitConflictError, CorruptDataError, InvalidOptionError

#: The control records (Kafka's transaction markers) a changelog carries.
COMMIT = "commit"
ABORT = "abort"


class LogRecord(NamedTuple):
    """One changelog record: an operation's writes, or a transaction marker."""

    offset: int
    ops: list[RawOp]
    control: str | None = None  # COMMIT or ABORT for a marker (no ops); None for data
    transactional: bool = False  # written inside a transaction (exactly-once)


class Changelog(Protocol):
    """Where a transactional store logs its operations (Kafka's changelog topic)."""

    def append(self, ops: Sequence[RawOp], transactional: bool = False) -> int:
        """Log one operation's writes; return its offset (1, 2, ...)."""
        ...

    def append_marker(self, control: str) -> int:
        """Log a transaction marker (``COMMIT`` or ``ABORT``); return its offset."""
        ...

    def end_offset(self) -> int:
        """The offset of the last record (0 if none)."""
        ...

    def read(self, after: int) -> Iterator[LogRecord]:
        """Records with an offset above ``after``, in order, markers included."""
        ...

    def flush(self) -> None:
        """Make every appended record durable."""
        ...


def _marker(offset: int, control: str) -> LogRecord:
    if control not in (COMMIT, ABORT):
        raise InvalidOptionError(f"marker is {control!r}; accepted: {COMMIT!r}, {ABORT!r}")
    return LogRecord(offset, [], control)


class MemoryChangelog:
    """A changelog in memory (tests, and stores whose durability lies elsewhere)."""

    def __init__(self, records: Iterable[LogRecord] = ()) -> None:
        self.records: list[LogRecord] = list(records)

    def append(self, ops: Sequence[RawOp], transactional: bool = False) -> int:
        self.records.append(LogRecord(len(self.records) + 1, list(ops), None, transactional))
        return len(self.records)

    def append_marker(self, control: str) -> int:
        self.records.append(_marker(len(self.records) + 1, control))
        return len(self.records)

    def end_offset(self) -> int:
        return len(self.records)

    def read(self, after: int) -> Iterator[LogRecord]:
        yield from self.records[max(after, 0) :]

    def flush(self) -> None:
        pass


_FRAME = struct.Struct(">II")  # payload length, crc32 of the payload
_OPS = {"put": 0, "delete": 1, "delete_range": 2}
_OP_NAMES = {code: name for name, code in _OPS.items()}
# The payload's count field: below 2**31 the op count of a plain record (the only kind files
# written before markers hold); with the top bit, of a transactional one; two values are markers.
_TRANSACTIONAL = 0x8000_0000
_MARKERS = {COMMIT: 0xFFFF_FFFF, ABORT: 0xFFFF_FFFE}
_MARKER_NAMES = {count: name for name, count in _MARKERS.items()}


def _encode(record: LogRecord) -> bytes:
    if record.control is not None:
        return struct.pack(">QI", record.offset, _MARKERS[record.control])
    flag = _TRANSACTIONAL if record.transactional else 0
    parts = [struct.pack(">QI", record.offset, len(record.ops) | flag)]
    for op, cf, a, b in record.ops:
        family = cf.encode()
        parts += [struct.pack(">BH", _OPS[op], len(family)), family, struct.pack(">I", len(a)), a]
        parts.append(struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b)
    return b"".join(parts)


def _decode(payload: bytes) -> LogRecord:
    offset, count = struct.unpack_from(">QI", payload, 0)
    at = 12
    if count in _MARKER_NAMES:
        if at != len(payload):
            raise ValueError("trailing bytes")
        return LogRecord(offset, [], _MARKER_NAMES[count])
    ops: list[RawOp] = []
    for _ in range(count & ~_TRANSACTIONAL):
        code, family_size = struct.unpack_from(">BH", payload, at)
        family, at = payload[at + 3 : at + 3 + family_size].decode(), at + 3 + family_size
        (a_size,) = struct.unpack_from(">I", payload, at)
        a, at = payload[at + 4 : at + 4 + a_size], at + 4 + a_size
        (b_size,) = struct.unpack_from(">i", payload, at)
        b, at = (None, at + 4) if b_size < 0 else (payload[at + 4 : at + 4 + b_size], at + 4 + b_size)
        ops.append((_OP_NAMES[code], family, a, b))
    if at != len(payload):
        raise ValueError("trailing bytes")
    return LogRecord(offset, ops, None, bool(count & _TRANSACTIONAL))


class FileChangelog:
    """An append-only changelog file: records ``[length][crc32][offset, count, ops]``.

    A marker's count is ``0xFFFFFFFF`` (commit) or ``0xFFFFFFFE`` (abort), without ops; the top
    bit of another count flags a transactional record. Older files hold plain records only, and
    read as such (module doc). Opening scans the file: a torn last record (shorter than its
    frame says, or failing its checksum at the very end) is what a crash mid-append leaves, and
    is cut off; a record that fails its checksum with records after it is corruption.

    Raises:
        CorruptDataError: code CHANGELOG_CORRUPT, naming the file and the byte position.
    """

    def __init__(self, path: str | os.PathLike[str], *, sync: bool = False) -> None:
        self.path = os.fspath(path)
        self.sync = sync  # fsync every append (else at ``flush``)
        self._end = 0
        self._size = self._scan()
        self._file = open(self.path, "ab")  # noqa: SIM115 - kept open for appends
        if self._file.tell() != self._size:
            self._file.truncate(self._size)

    def _scan(self) -> int:
        """Find the end offset and the length of the valid prefix of the file."""
        if not os.path.exists(self.path):
            return 0
        with open(self.path, "rb") as f:
            data = f.read()
        size = 0
        for size, record in self._records(data, 0, opening=True):
            if record.offset != self._end + 1:
                raise CorruptDataError(
                    f"changelog {self.path} has offset {record.offset} after {self._end} at "
                    f"byte {size}",
                    code="CHANGELOG_CORRUPT",
                )
            self._end = record.offset
        return size

    def _records(self, data: bytes, after: int, opening: bool) -> Iterator[tuple[int, LogRecord]]:
        """The records of ``data`` above ``after``, each with the byte where it ends. Opening,
        a torn last record ends them (class doc); reading, a bad record is an error."""
        at = 0
        while at < len(data):
            whole = at + _FRAME.size <= len(data)
            length, crc = _FRAME.unpack_from(data, at) if whole else (0, 0)
            end = at + _FRAME.size + length
            payload = data[at + _FRAME.size : end]
            if not whole or end > len(data) or zlib.crc32(payload) != crc:
                if opening and end >= len(data):
                    return  # torn mid-append by a crash
                problem = "has a corrupt record at byte {} followed by more records"
                raise CorruptDataError(
                    f"changelog {self.path} "
                    + (problem if opening else "changed under its reader at byte {}").format(at),
                    code="CHANGELOG_CORRUPT",
                )
            record = _decode(payload)
            if record.offset > after:
                yield end, record
            at = end

    def _write(self, record: LogRecord) -> int:
        # One writer per log: another's append (a recover() that fenced this writer, Kafka's
        # initTransactions) would make this record's offset a duplicate.
        self._file.flush()
        if os.fstat(self._file.fileno()).st_size != self._size:
            raise CommitConflictError(
                f"changelog {self.path} was appended to by another writer (a recover() of the "
                "same log fences this one, as Kafka's initTransactions fences a producer); "
                "reopen the store and recover() to continue",
                code="CHANGELOG_FENCED",
            )
        payload = _encode(record)
        frame = _FRAME.pack(len(payload), zlib.crc32(payload)) + payload
        self._file.write(frame)
        self._size += len(frame)
        if self.sync:
            self.flush()
        self._end = record.offset
        return record.offset

    def append(self, ops: Sequence[RawOp], transactional: bool = False) -> int:
        return self._write(LogRecord(self._end + 1, list(ops), None, transactional))

    def append_marker(self, control: str) -> int:
        return self._write(_marker(self._end + 1, control))

    def end_offset(self) -> int:
        return self._end

    def read(self, after: int) -> Iterator[LogRecord]:
        self._file.flush()
        with open(self.path, "rb") as f:
            data = f.read()
        for _, record in self._records(data, after, opening=False):
            yield record

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()


__all__ = ["ABORT", "COMMIT", "Changelog", "FileChangelog", "LogRecord", "MemoryChangelog"]
