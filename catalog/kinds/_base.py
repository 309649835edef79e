"""What every store kind is: typed parameters, a column layout, and the store engine's
columnar interface (``apply`` a changelog table, ``scan`` into record batches, or compute a
scan from columns alone). One subclass per kind, one module each; the registry in
``catalog.kinds`` lists them, and the connector derives its options from their parameters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, ClassVar, Literal

import pyarrow as pa
import pyarrow.compute as pc

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.columns.key_sort import key_runs, run_lasts
from stores.errors import InvalidOptionError
from stores.query import Query
from stores.records import UNKNOWN_TIMESTAMP

BATCH_ROWS = 1 << 16
TIME = pa.int64()
HEADERS = "headers"
#: Snapshot rows of a partition by column family: (RocksDB keys, RocksDB values).
Runs = dict[str, tuple[pa.Array, pa.Array]]


@dataclass(frozen=True)
class Param:
    """One parameter of a kind: its key in ``StoreSpec.params``, the option that sets it (in
    Spark's spelling), how that option's string is read, and whether a store needs it."""

    key: str
    option: str
    type: Literal["duration", "boolean"]
    required: bool = False
    #: An accepted value, for messages (``'1 day' or ms``).
    example: str = ""
    #: What else the parameter means, for the message that asks for it.
    note: str = ""


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


class StoreKind(ABC):
    """How one kind of store is configured, built, fed and scanned.

    ``params`` declares the kind's parameters; ``make_params`` checks given values against
    them once (unknown ones refused by option name, required ones named, ``check`` for the
    rest). The engine methods work on whole columns: ``apply`` a commit's changelog table to an
    open store, ``scan`` it into raw batches (``Layout.raw_schema``), and ``scan_columns``,
    which computes a scan from a snapshot's rows and the changelog alone (None: not for this
    scan or these rows, the store answers).
    """

    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    #: Reads as of a record time (``asOfTimestamp``) and whole histories (``versions``).
    supports_as_of: ClassVar[bool] = False
    #: Reads of the entries whose start lies in a range (``windowStartFrom`` / ``To``).
    supports_time_range: ClassVar[bool] = False
    #: A write may give the kind's read schema back: ``valid_from`` (and ``valid_to``) rows,
    #: each an interval, instead of one record time per row.
    writes_intervals: ClassVar[bool] = False
    #: A key's answer to ``key_query`` is a list of entries (windows, sessions), gathered
    #: from every partition, rather than one value from the key's partition.
    entries_per_key: ClassVar[bool] = False

    def make_params(self, given: dict[str, Any]) -> dict[str, Any]:
        """The spec parameters of a new store from ``given`` (keys of ``Param.key``; a None
        value is not given).

        Raises:
            InvalidOptionError: a parameter the kind does not take (by its option name), a
                required one missing (MISSING_OPTION), or a value out of range.
        """
        self.refuse(given)
        # A boolean option given as false asks for nothing, so any kind accepts it.
        accepted = {p.key for p in self.params}
        extra = sorted(
            option_name(k) for k, v in given.items()
            if v is not None and v is not False and k not in accepted
        )  # fmt: skip
        if extra:
            names = ", ".join(repr(p.option) for p in self.params) or "none"
            raise InvalidOptionError(
                f"a {self.name} store takes no option {', '.join(map(repr, extra))}; "
                f"its options: {names}"
            )
        for param in self.params:
            if param.required and given.get(param.key) is None:
                note = f", {param.note}" if param.note else ""
                raise InvalidOptionError(
                    f"a {self.name} store needs option {param.option!r} (e.g. {param.example})"
                    f"{note}",
                    code="MISSING_OPTION",
                )
        return self.check({k: v for k, v in given.items() if k in accepted})

    def refuse(self, given: dict[str, Any]) -> None:
        """Refuse, with a message of its own, a parameter this kind lacks for a reason (before
        the generic refusal of unknown ones)."""

    def check(self, given: dict[str, Any]) -> dict[str, Any]:
        """The parameters with defaults filled in, checked against each other."""
        return {p.key: bool(given.get(p.key)) for p in self.params if p.type == "boolean"}

    @abstractmethod
    def layout(self, params: dict[str, Any]) -> Layout:
        """The columns of the store's writes, changelog files and reads."""
        ...

    @abstractmethod
    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The RocksDB column families of the store (the first holds its data)."""
        ...

    @abstractmethod
    def open(self, db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
        """The typed store over an open bytes store."""
        ...

    @abstractmethod
    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        """Apply one commit's changelog rows (``Layout.changelog_schema``) to ``store``."""
        ...

    @abstractmethod
    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        """Raw batches (``Layout.raw_schema``) of what ``scan`` reads from ``store``."""
        ...

    @abstractmethod
    def key_query(
        self,
        key: Any,
        *,
        as_of: int | None = None,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Query:
        """The Interactive Queries v2 query for one key (the command line's ``query``):
        ``as_of`` and the time range apply where the kind has them."""
        ...

    def scan_columns(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any], scan: Scan
    ) -> pa.Table | None:
        """What ``scan`` reads of a store built from a snapshot's ``runs`` (possibly none) and
        the changelog tables of the ``commits`` after it, computed from columns: the raw
        schema in the store's scan order; None where the store must answer."""
        return None

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> dict[str, tuple[pa.Array, pa.Array]] | None:
        """The store's RocksDB rows after the ``commits`` over a snapshot's ``runs``, computed
        from columns: per column family, binary keys strictly ascending and their values, in
        Kafka's layout; a partition cache ingests them as SST files into an empty database.
        None where the store must apply the rows itself (``apply``)."""
        return None

    def overlay_rows(
        self, commits: list[pa.Table], params: dict[str, Any]
    ) -> dict[str, tuple[pa.Array, pa.Array]] | None:
        """The RocksDB rows that ``commits`` leave whatever the store held before them, per
        column family: binary keys strictly ascending, their values in Kafka's layout, null
        where the key is deleted. A partition cache ingests them as SST files over a loaded
        snapshot (``RocksDBBytesStore.ingest_sorted`` with deletions) instead of applying the
        tail row by row. None where the commits' effect depends on the earlier state (stream
        time, segments, versions): the store applies them (``apply``)."""
        return None


#: Every registered kind by name (``catalog.kinds.register`` adds them): kept here, beside
#: ``StoreKind``, because a kind's ``make_params`` names other kinds' options in its messages.
KINDS: dict[str, StoreKind] = {}


def all_params() -> tuple[Param, ...]:
    """Every kind's parameters, each once (by key), in the order the kinds declare them."""
    seen: dict[str, Param] = {}
    for kind in KINDS.values():
        for param in kind.params:
            seen.setdefault(param.key, param)
    return tuple(seen.values())


def option_name(key: str) -> str:
    """The option that sets parameter ``key`` in any kind (the key itself if none does)."""
    return next((p.option for p in all_params() if p.key == key), key)


def segment_interval(given: dict[str, Any], default: int) -> int:
    """``segment_interval_ms`` as given, else ``default``; at least 1 ms.

    Raises:
        InvalidOptionError: below 1 ms.
    """
    segment = given.get("segment_interval_ms")
    segment = default if segment is None else int(segment)
    if segment < 1:
        raise InvalidOptionError(f"option 'segmentInterval' must be at least 1 ms, got {segment}")
    return segment


def last_per_key(
    table: pa.Table, after: Sequence[tuple[Any, bool]] = (), tombstones: bool = False
) -> pa.Table:
    """The last row of each key (rows in write order, or in ``after`` order, then write order,
    among a key's rows), sorted by key bytes, tombstones dropped (kept: ``tombstones``): a
    key-value store's state, computed with one sort instead of a RocksDB round trip."""
    n = table.num_rows
    if n == 0:
        return table
    # Stable: a key's rows stay in write order, so the last of each run of equal keys wins.
    order, first = key_runs(table.column("key"), after=after)
    winners = order[run_lasts(first)]
    if not tombstones:
        live = pc.is_valid(table.column("value")).to_numpy(zero_copy_only=False)
        winners = winners[live[winners]]
    return table.take(pa.array(winners))  # one copy


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
