"""What a store kind's engine is: how its stores are built, fed and read, by column.

Each kind has one engine, in its own folder (``stores.<kind>.engine``), and a catalog kind
(``catalog.kinds``) links to it. An engine works on whole Arrow columns and has two ways to
answer:

- **The store**: ``open`` a typed store over a RocksDB bytes store, ``apply`` each commit's
  changelog table to it (Kafka's put algorithm, row by row), ``scan`` it into raw batches.
- **Columns alone**: ``scan_columns``, ``store_rows`` and ``overlay_rows`` compute the same
  from a snapshot's rows and the changelog tables after it, with no RocksDB built. Where they
  cannot (a legacy layout, records whose effect depends on an order the columns do not tell),
  they return ``STORE_MUST_ANSWER`` and the caller asks the store.

The vocabulary both sides share is here too: ``Layout`` (a store's columns), ``Scan`` (what a
read asks), ``Runs``/``Rows`` (RocksDB rows by column family), and the helpers several kinds
use. This module imports nothing of any kind, so every kind's engine can import it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import islice
from typing import Any, Final, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.bytes.protocol import BytesStore
from stores.columns.encode import in_order, taken, whole
from stores.columns.key_sort import distinct, key_runs, run_lasts
from stores.query.queries import Query
from stores.records import UNKNOWN_TIMESTAMP

#: Rows per record batch of a scan.
BATCH_ROWS = 1 << 16
TIME = pa.int64()
#: The name of the headers column (KIP-1271's ``headersBytes``; typed when read).
HEADERS = "headers"
#: Snapshot rows of a partition by column family: (RocksDB keys, RocksDB values).
Runs = dict[str, tuple[pa.Array, pa.Array]]
#: A store's RocksDB rows by column family: binary keys strictly ascending, their values.
Rows = dict[str, tuple[pa.Array, pa.Array]]


class Answer(Enum):
    """Who answers where columns alone cannot."""

    STORE = "store"


#: What ``scan_columns``, ``store_rows`` and ``overlay_rows`` return where columns alone
#: cannot answer: the store must, built by ``apply`` and read by ``scan``.
STORE_MUST_ANSWER: Final = Answer.STORE
#: The type of ``STORE_MUST_ANSWER``.
StoreMustAnswer = Literal[Answer.STORE]


@dataclass(frozen=True)
class TimeColumn:
    """A time column of a write: epoch ms in changelog files, ``TIMESTAMP``/``BIGINT`` in Spark.

    ``unknown_if_null``: a null becomes Kafka's unknown timestamp -1 (and reads back as null).
    """

    name: str
    unknown_if_null: bool = False


@dataclass(frozen=True)
class Layout:
    """The columns of one store's writes, changelog files and reads (beyond key and value)."""

    write_times: tuple[TimeColumn, ...] = ()
    read_times: tuple[str, ...] = ()
    headers: bool = False
    #: Columns a write may carry that are derived from others and checked, never stored.
    derived: tuple[str, ...] = ()
    #: Read time columns that a typed read shows between key and value (window bounds).
    before_value: tuple[str, ...] = ()

    def read_order(self) -> list[str]:
        """Column names of a typed read, in order."""
        after = [c for c in self.read_times if c not in self.before_value]
        return ["key", *self.before_value, "value", *after] + ([HEADERS] if self.headers else [])

    def raw_schema(self) -> pa.Schema:
        """Schema of the raw batches a scan yields."""
        fields = [pa.field("key", pa.binary()), pa.field("value", pa.binary())]
        fields += [pa.field(c, TIME) for c in self.read_times]
        if self.headers:
            fields.append(pa.field(HEADERS, pa.binary()))
        return pa.schema(fields)

    def changelog_schema(self) -> pa.Schema:
        """Schema of a changelog file (see ``catalog.log.changelog``)."""
        fields = [pa.field("key", pa.binary(), nullable=False), pa.field("value", pa.binary())]
        fields += [pa.field(c.name, TIME, nullable=False) for c in self.write_times]
        if self.headers:
            fields.append(pa.field(HEADERS, pa.binary(), nullable=False))
        return pa.schema(fields)


@dataclass(frozen=True)
class Scan:
    """What a read asks of a partition: everything (latest), or a versioned store as of an
    instant, or windows/sessions whose start lies in ``[time_from, time_to]``."""

    as_of: int | None = None
    time_from: int | None = None
    time_to: int | None = None
    #: Versioned stores: every version held (``time_from``/``time_to`` then bound the record
    #: time, KIP-968's way), instead of one per key.
    all_versions: bool = False

    @property
    def is_full(self) -> bool:
        return (
            self.as_of is None
            and self.time_from is None
            and self.time_to is None
            and not self.all_versions
        )


class StoreEngine(ABC):
    """How one kind's stores are built, fed and read, for the spec parameters ``params``.

    An engine holds no state: every method takes the store's parameters (as its catalog kind
    checked them). The store side (``open``, ``apply``, ``scan``) always answers; the column
    side (``scan_columns``, ``store_rows``, ``overlay_rows``) answers where it can and
    otherwise returns ``STORE_MUST_ANSWER`` (the defaults here always do).
    """

    @abstractmethod
    def layout(self, params: dict[str, Any]) -> Layout:
        """The columns of the store's writes, changelog files and reads."""

    @abstractmethod
    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The RocksDB column families of the store (the first holds its data)."""

    @abstractmethod
    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
        """The typed store over an open bytes store."""

    @abstractmethod
    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        """Apply one commit's changelog rows (``Layout.changelog_schema``) to ``store``."""

    @abstractmethod
    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        """Raw batches (``Layout.raw_schema``) of what ``scan`` reads from ``store``."""

    @abstractmethod
    def key_query(
        self,
        key: Any,
        *,
        as_of: int | None = None,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Query:
        """The Interactive Queries v2 query for one key: ``as_of`` and the time range apply
        where the kind has them."""

    def record_keys(self, family: str, keys: pa.Array, params: dict[str, Any]) -> pa.Array | None:
        """The serialized record keys of RocksDB keys of ``family`` (what an erasure of a key
        finds in a snapshot); None where the family holds bookkeeping, no record's key. A
        key-value store's RocksDB keys are its record keys."""
        return keys

    def scan_columns(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        scan: Scan,
        *,
        key_order: bool = True,
    ) -> pa.Table | StoreMustAnswer:
        """What ``scan`` reads of a store built from a snapshot's ``runs`` (possibly none) and
        the changelog tables of the ``commits`` after it, computed from columns: the raw
        schema in the store's scan order (Kafka's, by key bytes), or, without ``key_order``,
        in the order the rows read were written (the snapshot's, then each commit's): the
        same rows, without gathering them into key order (``in_order``);
        ``STORE_MUST_ANSWER`` where it cannot."""
        return STORE_MUST_ANSWER

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        """The store's RocksDB rows after the ``commits`` over a snapshot's ``runs``, computed
        from columns, in Kafka's layout; a partition cache ingests them as SST files into an
        empty database. ``STORE_MUST_ANSWER`` where the store must apply the rows itself."""
        return STORE_MUST_ANSWER

    def overlay_rows(
        self, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        """The RocksDB rows that ``commits`` leave whatever the store held before them, per
        column family, null values where a key is deleted; a partition cache ingests them as
        SST files over a loaded snapshot (``RocksDBBytesStore.ingest_sorted`` with deletions)
        instead of applying the tail row by row. ``STORE_MUST_ANSWER`` where the commits'
        effect depends on the earlier state (stream time, segments, versions)."""
        return STORE_MUST_ANSWER


def last_per_key(
    table: pa.Table,
    after: Sequence[tuple[Any, bool]] = (),
    tombstones: bool = False,
    key_order: bool = True,
) -> pa.Table:
    """The last row of each key (rows in write order, or in ``after`` order, then write order,
    among a key's rows), sorted by key bytes (in ``table``'s order without ``key_order``),
    tombstones dropped (kept: ``tombstones``): a key-value store's state, computed with one
    sort instead of a RocksDB round trip."""
    n = table.num_rows
    if n == 0:
        return table
    keys = whole(table.column("key"))  # joined once, for distinct and the sort alike
    if not key_order and distinct(keys):
        # Every key written once (a store loaded in one go): every row is its key's last
        # write, and no order is asked for, so no row is ordered.
        winners = np.arange(n)
    else:
        # Stable: a key's rows stay in write order, so the last of each run of equal keys wins.
        order, first = key_runs(keys, after=after)
        winners = in_order(order[run_lasts(first)], key_order)
    if not tombstones:
        live = pc.is_valid(table.column("value")).to_numpy(zero_copy_only=False)
        winners = winners[live[winners]]
    return taken(table, winners)  # one copy (none where every row wins, in order)


def row_batches(rows: Iterator[tuple[Any, ...]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Chunk an iterator of row tuples into record batches of ``schema``."""
    while True:
        chunk = list(islice(rows, BATCH_ROWS))
        if not chunk:
            return
        columns = list(zip(*chunk))
        yield pa.RecordBatch.from_arrays(
            [pa.array(col, f.type) for col, f in zip(columns, schema)], schema=schema
        )


def known(millis: list[int] | pa.Array) -> pa.Array:
    """Timestamps with Kafka's unknown (-1) as null."""
    array = millis if isinstance(millis, pa.Array) else pa.array(millis, TIME)
    return pc.if_else(pc.equal(array, UNKNOWN_TIMESTAMP), pa.scalar(None, TIME), array)


def time_order(table: pa.Table, column: str) -> pa.Table:
    """Rows in ``column`` order, stable: a DataFrame has no order, so a commit's rows are applied
    in time order and the result does not depend on how Spark split them into tasks."""
    return table.take(pc.sort_indices(table.column(column)))
