"""The bytes layer: RocksDB through rocksdict in raw mode, and the only module that imports it.

Everything above this module is bytes in, bytes out. rocksdict runs in raw mode only: its default
mode pickles values, which is slow and unsafe on data written by anyone else.

Writes are buffered in an *indexed write batch*, the mechanism Kafka Streams adopted for
transactional stores (KIP-892): a RocksDB ``WriteBatch`` that is applied atomically on ``commit()``,
plus an in-memory index of the same writes (``stores.bytes.pending``) so that reads through this
object see its own uncommitted writes. With ``autocommit=True`` (the default) every public write
method of a store built on top ends in ``commit()``, so a standalone store behaves like a plain
RocksDB store whose compound operations are each atomic; with ``autocommit=False`` the owner decides
when a group of writes becomes durable (the catalog commits one changelog file and its bookkeeping
in a single batch).

Damage. RocksDB checks block checksums on reads and table files on open; rocksdict reports what it
finds as a plain ``Exception`` (see ``is_rocksdb_failure``). For a ``sealed`` database, two kinds of
damage RocksDB cannot tell from a crash are checked here: a directory of RocksDB files without
``CURRENT`` (RocksDB would refuse, or start a new, empty database over it), and a ``MANIFEST`` that
is not the one of the last clean close: RocksDB reads a truncated ``MANIFEST`` as the torn tail of a
crash and silently opens the older state it describes, which can pair a newer committed offset with
older data. A read-write handle of a sealed database removes the seal (``STATE_STORE_SEAL``: the
name and size of the ``MANIFEST``) when it opens and writes it again when it closes; a crash in
between leaves it unsealed, and RocksDB's own recovery applies.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, cast

from rocksdict import (
    AccessType,
    BlockBasedOptions,
    DBCompressionType,
    IngestExternalFileOptions,
    Options,
    Rdict,
    ReadOptions,
    WriteBatch,
)

from stores.bytes.pending import PendingWrites, merge_pending
from stores.bytes.protocol import DEFAULT_CF, RawOp
from stores.columns.arguments import chunked
from stores.errors import (
    CorruptDataError,
    InvalidOptionError,
    StoreClosedError,
    StoreNotFoundError,
)

if TYPE_CHECKING:
    import pyarrow as pa

SEAL = "STATE_STORE_SEAL"


class RocksDBDamageError(CorruptDataError):
    """A database's files are visibly damaged before RocksDB opens them (see module doc)."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        super().__init__(f"the RocksDB database at {path} is damaged: {detail}")


def is_rocksdb_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is RocksDB reporting a damaged or missing database file (rocksdict raises
    a plain ``Exception`` carrying RocksDB's status text), as opposed to an error of ours."""
    if isinstance(exc, RocksDBDamageError):
        return True
    if type(exc) is not Exception:
        return False
    text = str(exc)
    # Not every "IO error": a full disk is no reason to rebuild. A missing table file is.
    return "Corruption" in text or "No such file or directory" in text


def _manifest_state(path: str) -> str | None:
    """The name of the MANIFEST that CURRENT names, and its size: what a seal records."""
    try:
        with open(os.path.join(path, "CURRENT")) as f:
            manifest = f.read().strip()
        return f"{manifest} {os.path.getsize(os.path.join(path, manifest))}"
    except FileNotFoundError:
        return None


def _check_files(path: str, sealed: bool) -> None:
    """Refuse a database directory that is visibly damaged (see module doc).

    Raises:
        RocksDBDamageError: RocksDB files without CURRENT, or a broken seal.
    """
    if not sealed:
        return
    if not os.path.exists(os.path.join(path, "CURRENT")):
        try:
            names = os.listdir(path)
        except FileNotFoundError:
            return
        found = sorted(n for n in names if n.startswith("MANIFEST-") or n.endswith((".sst", ".log")))
        if found:
            raise RocksDBDamageError(path, f"CURRENT is missing beside {', '.join(found[:3])}")
        return
    try:
        with open(os.path.join(path, SEAL)) as f:
            seal = f.read().strip()
    except FileNotFoundError:
        return  # not closed cleanly since its last read-write open: RocksDB recovers it
    state = _manifest_state(path)
    if state != seal:
        raise RocksDBDamageError(
            path, f"its MANIFEST is {state or 'missing'}, but was {seal} when last closed"
        )


def _write_seal(path: str) -> None:
    state = _manifest_state(path)
    if state is None:
        return
    tmp = os.path.join(path, SEAL + ".tmp")
    with open(tmp, "w") as f:
        f.write(state + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(path, SEAL))


def _options(table_format_version: int | None = None) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_compression_type(DBCompressionType.lz4())
    # Materializing a changelog writes in large batches; a bigger memtable means fewer flushes.
    options.set_write_buffer_size(64 * 1024 * 1024)
    if table_format_version is not None:
        table = BlockBasedOptions()
        table.set_format_version(table_format_version)
        options.set_block_based_table_factory(table)
    return options


def column_families_at(path: str | os.PathLike[str]) -> list[str]:
    """The column families of the database at ``path``, read from its MANIFEST without
    opening it (RocksDB's ``ListColumnFamilies``: nothing is written).

    Raises:
        StoreNotFoundError: no database at ``path``.
    """
    path = os.fspath(path)
    if not os.path.exists(os.path.join(path, "CURRENT")):
        raise StoreNotFoundError(f"no RocksDB database at {path}")
    return list(Rdict.list_cf(path, Options(raw_mode=True)))


class RocksDBBytesStore:
    """A RocksDB database of bytes with named column families and atomic write batches: the
    :class:`stores.bytes.protocol.BytesStore` the store kinds run on.

    Args:
        path: directory of the database; created if missing (unless ``read_only``).
        column_families: names of the column families to open (``default`` always exists).
        read_only: open without RocksDB's lock, so many processes may read at once.
        autocommit: whether callers above commit after every operation (see module doc).
        sealed: check the database's seal on opening, and seal it on closing a read-write
            handle (see module doc).
        table_format_version: the block-based table ``format_version`` of the table files
            RocksDB writes (flushes, compactions) in every column family; None: this RocksDB's
            default (6). A database another RocksDB must read sets what that one reads (5 for
            RocksDB < 8.6, Kafka Streams <= 3.9).

    Raises:
        StoreNotFoundError: ``read_only`` and no database at ``path``.
        RocksDBDamageError: the directory is visibly damaged (see module doc).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        column_families: Sequence[str] = (DEFAULT_CF,),
        *,
        read_only: bool = False,
        autocommit: bool = True,
        sealed: bool = False,
        table_format_version: int | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.read_only = read_only
        self.autocommit = autocommit
        self.sealed = sealed
        names = list(dict.fromkeys([DEFAULT_CF, *column_families]))
        options = _options(table_format_version)
        _check_files(self.path, sealed)
        if sealed and not read_only:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.path, SEAL))  # this handle writes a new MANIFEST
        if read_only:
            if not os.path.exists(os.path.join(self.path, "CURRENT")):
                raise StoreNotFoundError(f"no RocksDB database at {self.path}")
            existing = set(Rdict.list_cf(self.path, options))
            cfs = {name: _options(table_format_version) for name in names if name in existing}
            self._db = Rdict(
                self.path, options, column_families=cfs, access_type=AccessType.read_only()
            )
            self._missing_cfs = {name for name in names if name not in existing}
        else:
            os.makedirs(self.path, exist_ok=True)
            cfs = {name: _options(table_format_version) for name in names}
            self._db = Rdict(self.path, options, column_families=cfs)
            self._missing_cfs = set()
        self._cfs = {
            name: (self._db if name == DEFAULT_CF else self._db.get_column_family(name))
            for name in names
            if name not in self._missing_cfs
        }
        self._handles = {
            name: self._db.get_column_family_handle(name)
            for name in names
            if name not in self._missing_cfs
        }
        self._batch = WriteBatch(raw_mode=True)
        self._generation = 0
        self._pending: dict[str, PendingWrites] = {}
        self._closed = False
        self._uncommitted_bytes = 0
        #: When set, every staged write is also appended here (see ``stores.transactional``).
        self.recorder: list[RawOp] | None = None
        #: When set (and not autocommitting), called at the end of every public operation of
        #: the stores above: a point where the staged writes form a consistent state.
        self.on_operation_end: Callable[[], None] | None = None

    # -- reads -------------------------------------------------------------------------------

    def _cf(self, cf: str) -> Rdict | None:
        if self._closed:
            raise StoreClosedError(f"the RocksDB store at {self.path} is closed")
        if cf in self._cfs:
            return self._cfs[cf]
        if cf in self._missing_cfs:
            return None
        raise CorruptDataError(f"column family {cf!r} was not opened in {self.path}")

    def get(self, key: bytes, cf: str = DEFAULT_CF) -> bytes | None:
        """Return the value of ``key`` (seeing uncommitted writes), or None."""
        pending = self._pending.get(cf)
        if pending is not None:
            known, value = pending.lookup(key)
            if known:
                return value
        db = self._cf(cf)
        if db is None:
            return None
        result: bytes | None = db.get(key)
        return result

    def multi_get(self, keys: Sequence[bytes], cf: str = DEFAULT_CF) -> list[bytes | None]:
        """Return the values of ``keys`` in order; committed data is read in one call."""
        db = self._cf(cf)
        committed: list[bytes | None] = [None] * len(keys)
        if db is not None and keys:
            # rocksdict returns a list for a list of keys; its stub says Any | None.
            committed = cast("list[bytes | None]", db.get(list(keys)))
        pending = self._pending.get(cf)
        if pending is None:
            return committed
        out = []
        for key, value in zip(keys, committed):
            known, mine = pending.lookup(key)
            out.append(mine if known else value)
        return out

    def range(
        self,
        start: bytes | None = None,
        end: bytes | None = None,
        cf: str = DEFAULT_CF,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Iterate ``[start, end)`` in byte order (or reverse), merging uncommitted writes."""
        db = self._cf(cf)
        committed: Iterable[tuple[bytes, bytes]] = (
            self._committed_range(db, start, end, reverse) if db is not None else ()
        )
        pending = self._pending.get(cf)
        if pending is None or (not pending.writes and not pending.ranges):
            yield from committed
            return
        mine = sorted(
            (k, v)
            for k, v in pending.writes.items()
            if (start is None or k >= start) and (end is None or k < end)
        )
        if reverse:
            mine.reverse()
        committed = ((k, v) for k, v in committed if not pending.masks(k))
        yield from merge_pending(committed, mine, reverse)

    @staticmethod
    def _committed_range(
        db: Rdict, start: bytes | None, end: bytes | None, reverse: bool
    ) -> Iterator[tuple[bytes, bytes]]:
        read_opt = ReadOptions()
        if end is not None:
            read_opt.set_iterate_upper_bound(end)
        it = db.iter(read_opt)
        if reverse:
            if end is not None:
                it.seek_for_prev(end)
                if it.valid() and it.key() == end:
                    it.prev()
            else:
                it.seek_to_last()
            while it.valid():
                key = it.key()
                if start is not None and key < start:
                    return
                yield key, it.value()
                it.prev()
        else:
            if start is not None:
                it.seek(start)
            else:
                it.seek_to_first()
            while it.valid():
                yield it.key(), it.value()
                it.next()
        # An iterator that meets a damaged block just stops being valid: ask why, so that a
        # corrupt database raises instead of looking shorter.
        it.status()

    def items(self, cf: str = DEFAULT_CF) -> Iterator[tuple[bytes, bytes]]:
        """Iterate a whole column family in byte order, merging uncommitted writes."""
        # Not rocksdict's items(): it ends silently at a damaged block (see _committed_range).
        yield from self.range(cf=cf)

    def scan_columns(
        self,
        start: bytes | None = None,
        end: bytes | None = None,
        cf: str = DEFAULT_CF,
        *,
        batch_rows: int = 1 << 16,
    ) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """Iterate ``[start, end)`` in byte order as (keys, values) lists of up to ``batch_rows``.

        The full-scan path of Spark reads: a bare RocksDB iterator loop is several times faster
        than a generator of pairs. Uncommitted writes are merged (on the slower path).
        """
        db = self._cf(cf)
        pending = self._pending.get(cf)
        if pending is not None and (pending.writes or pending.ranges):
            yield from chunked(self.range(start, end, cf), batch_rows)
            return
        if db is None:
            return
        read_opt = ReadOptions()
        if end is not None:
            read_opt.set_iterate_upper_bound(end)
        it = db.iter(read_opt)
        if start is None:
            it.seek_to_first()
        else:
            it.seek(start)
        valid, key, value, step = it.valid, it.key, it.value, it.next
        while valid():
            keys: list[bytes] = []
            values: list[bytes] = []
            add_key, add_value = keys.append, values.append
            for _ in range(batch_rows):
                if not valid():
                    break
                add_key(key())
                add_value(value())
                step()
            if not valid():
                it.status()  # a damaged block ends the iteration: raise, never truncate
            yield keys, values
        it.status()

    # -- writes ------------------------------------------------------------------------------

    def _writable(self, cf: str) -> PendingWrites:
        if self.read_only:
            raise StoreClosedError(f"the RocksDB store at {self.path} is open read-only")
        self._cf(cf)
        pending = self._pending.get(cf)
        if pending is None:
            pending = self._pending[cf] = PendingWrites()
        return pending

    def put(self, key: bytes, value: bytes, cf: str = DEFAULT_CF) -> None:
        """Stage ``key -> value``."""
        self._writable(cf).writes[key] = value
        self._batch.put(key, value, self._handles[cf])
        self._uncommitted_bytes += len(key) + len(value)
        self._generation += 1
        if self.recorder is not None:
            self.recorder.append(("put", cf, key, value))

    def put_many(
        self, keys: Iterable[bytes], values: Iterable[bytes | None], cf: str = DEFAULT_CF
    ) -> None:
        """Stage ``key -> value`` for each pair in order; a None value stages a deletion."""
        writes = self._writable(cf).writes
        handle = self._handles[cf]
        put, delete = self._batch.put, self._batch.delete
        size = 0
        recorder = self.recorder
        for key, value in zip(keys, values):
            writes[key] = value
            if value is None:
                delete(key, handle)
                size += len(key)
            else:
                put(key, value, handle)
                size += len(key) + len(value)
            if recorder is not None:
                recorder.append(("delete", cf, key, None) if value is None else ("put", cf, key, value))
        self._uncommitted_bytes += size
        self._generation += 1

    def delete(self, key: bytes, cf: str = DEFAULT_CF) -> None:
        """Stage the deletion of ``key``."""
        self._writable(cf).writes[key] = None
        self._batch.delete(key, self._handles[cf])
        self._uncommitted_bytes += len(key)
        self._generation += 1
        if self.recorder is not None:
            self.recorder.append(("delete", cf, key, None))

    def delete_range(self, start: bytes, end: bytes, cf: str = DEFAULT_CF) -> None:
        """Stage the deletion of every key in ``[start, end)`` (empty if ``end <= start``)."""
        pending = self._writable(cf)
        if end <= start:
            return  # RocksDB rejects an inverted range when the batch is written
        for key in [k for k in pending.writes if start <= k < end]:
            del pending.writes[key]
        pending.ranges.append((start, end))
        self._batch.delete_range(start, end, self._handles[cf])
        self._uncommitted_bytes += len(start) + len(end)
        self._generation += 1
        if self.recorder is not None:
            self.recorder.append(("delete_range", cf, start, end))

    def clear(self, cf: str = DEFAULT_CF) -> None:
        """Stage the deletion of every key of a column family."""
        first = next(iter(self.range(cf=cf)), None)
        last = next(iter(self.range(cf=cf, reverse=True)), None)
        if first is None or last is None:
            return
        self.delete_range(first[0], last[0] + b"\x00", cf)

    @property
    def has_uncommitted(self) -> bool:
        """Whether writes are staged and not yet committed."""
        return bool(self._pending)

    @property
    def uncommitted_bytes(self) -> int:
        """Key and value bytes staged since the last commit (KIP-892's measure of a transaction)."""
        return self._uncommitted_bytes

    @property
    def generation(self) -> int:
        """A counter that changes whenever what this handle reads may have changed: on every
        staged write, commit, rollback, ingest and close (see :mod:`stores.bytes.protocol`)."""
        return self._generation

    def commit(self) -> None:
        """Apply every staged write atomically."""
        if not self._pending:
            return
        self._db.write(self._batch)
        self._discard()

    def ingest_sorted(
        self, cf: str, batches: Iterable[tuple[pa.Array, pa.Array]], deletions: bool = False
    ) -> None:
        """Load ``(keys, values)`` batches (binary; keys strictly ascending across batches)
        into a column family by writing one SST file from the columns (``stores.bytes.sst``) and
        ingesting it: far cheaper than puts, and applied at once, outside the uncommitted
        batch (the family must have no uncommitted writes). The file's rows override what the
        family holds; with ``deletions``, a null value deletes its key.

        Raises:
            StoreClosedError: a read-only store.
            InvalidOptionError: the family has uncommitted writes.
        """
        from stores.bytes.sst import write_sst

        target = self._cf(cf)
        if self.read_only or target is None:
            raise StoreClosedError(f"the RocksDB store at {self.path} is open read-only")
        if cf in self._pending:
            raise InvalidOptionError(f"column family {cf!r} has uncommitted writes; commit first")
        path = os.path.join(self.path, f"ingest-{uuid.uuid4().hex}.sst")
        try:
            if not write_sst(path, batches, allow_empty=True, deletions=deletions):
                return
            options = IngestExternalFileOptions()
            options.set_move_files(True)
            target.ingest_external_file([path], options)
            self._generation += 1
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def apply(self, ops: Iterable[RawOp]) -> None:
        """Stage recorded writes again (a changelog's replay)."""
        for op, cf, a, b in ops:
            if op == "put":
                self.put(a, cast(bytes, b), cf)
            elif op == "delete":
                self.delete(a, cf)
            elif op == "delete_range":
                self.delete_range(a, cast(bytes, b), cf)
            else:
                raise CorruptDataError(f"unknown changelog operation {op!r}")

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """Scope one public store operation: on success commit if autocommitting; on an error an
        autocommitting store discards what the operation staged, so that a failed call is not
        committed by the next one (an owner-committed store leaves both to its owner).
        """
        try:
            yield
        except BaseException:
            if self.autocommit:
                self.rollback()
            raise
        self.maybe_commit()

    def maybe_commit(self) -> None:
        """Commit if this store autocommits; called by stores after each public operation."""
        if self.autocommit:
            self.commit()
        elif self.on_operation_end is not None:
            self.on_operation_end()

    def rollback(self) -> None:
        """Discard every staged write."""
        self._discard()

    def _discard(self) -> None:
        self._batch = WriteBatch(raw_mode=True)
        self._generation += 1
        self._pending = {}
        self._uncommitted_bytes = 0

    def flush(self) -> None:
        """Flush memtables to disk (committed data only)."""
        if not self.read_only:
            self._db.flush()

    def close(self) -> None:
        """Close the database, discarding uncommitted writes (committed data is durable)."""
        if self._closed:
            return
        self._discard()
        self._closed = True
        self._cfs = {}
        self._handles = {}
        self._db.close()
        if self.sealed and not self.read_only:
            _write_seal(self.path)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def __enter__(self) -> RocksDBBytesStore:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None and self.autocommit:
            self.commit()
        self.close()


__all__ = [
    "SEAL",
    "RocksDBBytesStore",
    "RocksDBDamageError",
    "column_families_at",
    "is_rocksdb_failure",
]
