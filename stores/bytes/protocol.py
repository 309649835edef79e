"""What a store kind needs of the database under it: the ``BytesStore`` protocol.

A bytes store keeps named column families of bytes in byte order, and stages writes in an
uncommitted batch that its own reads see (``stores.bytes.rocksdb`` describes the one
implementation, RocksDB in an indexed write batch). The store kinds (``stores.key_value``,
``stores.versioned``, ...) and the transactional layer talk to it only through this protocol.

``generation`` is how a store above knows that nothing else touched the bytes: it changes
whenever what the handle reads may have changed (a staged write, a commit, a rollback, an
ingest, a close), so an unchanged generation means the bytes are as the store last saw them,
and whatever it derived from them (the versioned store's stream time) still holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

#: The column family every database has.
DEFAULT_CF = "default"

#: One staged write as the change-logging layer records it: ``("put", cf, key, value)``,
#: ``("delete", cf, key, None)`` or ``("delete_range", cf, start, end)``.
RawOp = tuple[str, str, bytes, bytes | None]


class BytesStore(Protocol):
    """A database of bytes in named column families, with an uncommitted write batch.

    Reads see the uncommitted writes of this handle. Writes are staged until ``commit``; a
    store kind ends each public operation in ``operation()`` (or ``maybe_commit``), which
    commits when the bytes store autocommits and leaves the commit to its owner otherwise.
    """

    #: Where the database lives (named in error messages).
    path: str
    #: Whether the handle refuses writes.
    read_only: bool
    #: Whether the stores above commit after every operation.
    autocommit: bool
    #: When set, every staged write is also appended here (the change-logging layer).
    recorder: list[RawOp] | None
    #: When set (and not autocommitting), called at the end of every public operation.
    on_operation_end: Callable[[], None] | None

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: bytes, cf: str = DEFAULT_CF) -> bytes | None:
        """Return the value of ``key`` (seeing uncommitted writes), or None."""
        ...

    def multi_get(self, keys: Sequence[bytes], cf: str = DEFAULT_CF) -> list[bytes | None]:
        """Return the values of ``keys`` in order (None where absent)."""
        ...

    def range(
        self,
        start: bytes | None = None,
        end: bytes | None = None,
        cf: str = DEFAULT_CF,
        *,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Iterate ``[start, end)`` in byte order (or reverse); a None bound is open."""
        ...

    def items(self, cf: str = DEFAULT_CF) -> Iterator[tuple[bytes, bytes]]:
        """Iterate a whole column family in byte order."""
        ...

    def scan_columns(
        self,
        start: bytes | None = None,
        end: bytes | None = None,
        cf: str = DEFAULT_CF,
        *,
        batch_rows: int = 1 << 16,
    ) -> Iterator[tuple[list[bytes], list[bytes]]]:
        """Iterate ``[start, end)`` in byte order as (keys, values) lists of up to
        ``batch_rows``: the full-scan path."""
        ...

    # -- writes ------------------------------------------------------------------------------

    def put(self, key: bytes, value: bytes, cf: str = DEFAULT_CF) -> None:
        """Stage ``key -> value``."""
        ...

    def put_many(
        self, keys: Iterable[bytes], values: Iterable[bytes | None], cf: str = DEFAULT_CF
    ) -> None:
        """Stage ``key -> value`` for each pair in order; a None value stages a deletion."""
        ...

    def delete(self, key: bytes, cf: str = DEFAULT_CF) -> None:
        """Stage the deletion of ``key``."""
        ...

    def delete_range(self, start: bytes, end: bytes, cf: str = DEFAULT_CF) -> None:
        """Stage the deletion of every key in ``[start, end)``."""
        ...

    def clear(self, cf: str = DEFAULT_CF) -> None:
        """Stage the deletion of every key of a column family."""
        ...

    def apply(self, ops: Iterable[RawOp]) -> None:
        """Stage recorded writes again (a changelog's replay)."""
        ...

    def ingest_sorted(
        self, cf: str, batches: Iterable[tuple[pa.Array, pa.Array]], deletions: bool = False
    ) -> None:
        """Load sorted ``(keys, values)`` batches into a column family at once, outside the
        uncommitted batch."""
        ...

    # -- transactions ------------------------------------------------------------------------

    @property
    def has_uncommitted(self) -> bool:
        """Whether writes are staged and not yet committed."""
        ...

    @property
    def uncommitted_bytes(self) -> int:
        """Key and value bytes staged since the last commit."""
        ...

    @property
    def generation(self) -> int:
        """A counter that changes whenever what this handle reads may have changed (see the
        module doc)."""
        ...

    def commit(self) -> None:
        """Apply every staged write atomically."""
        ...

    def rollback(self) -> None:
        """Discard every staged write."""
        ...

    def operation(self) -> AbstractContextManager[None]:
        """Scope one public store operation (commit on success if autocommitting)."""
        ...

    def maybe_commit(self) -> None:
        """Commit if this store autocommits; called by stores after each public operation."""
        ...

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        ...

    def flush(self) -> None:
        """Make committed data durable on disk."""
        ...

    def close(self) -> None:
        """Close the database, discarding uncommitted writes."""
        ...


__all__ = ["DEFAULT_CF", "BytesStore", "RawOp"]
