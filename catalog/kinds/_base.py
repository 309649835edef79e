"""What every store kind is: its parameters (``Param``) and read options (``ReadParam``), their
checks, and the link to its engine (``stores.engine.StoreEngine``: how its stores are built, fed
and read). One subclass per kind, one module each; the registry in ``catalog.kinds`` lists
them, and the connector derives its creation and read options from them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pyarrow as pa

from stores.bytes.protocol import BytesStore
from stores.engine import Layout, Rows, Runs, Scan, StoreEngine, StoreMustAnswer
from stores.errors import InvalidOptionError
from stores.query import Query


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
    #: Parameters whose value sets this one's default: a store whose spec is replaced with
    #: one of them given, and this one not, derives this one again (``replaced_params``).
    default_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReadParam:
    """One read option of a kind (Spark's spelling), and how its string is read: an
    ``instant`` (epoch ms, or ISO-8601 with a zone), or a ``choice`` of ``choices`` (the first
    the default; ``choices_note`` says what each means, for the message refusing another)."""

    option: str
    type: Literal["instant", "choice"]
    choices: tuple[str, ...] = ()
    choices_note: str = ""
    #: It picks the instant a read sees, as ``versionAsOf`` picks the commit: a change feed,
    #: which reads a range of commits, refuses it.
    picks_instant: bool = False
    #: A write given it fails ("applies to reads only"); False where writes ignore it.
    refused_by_writes: bool = True


#: Whether a store keeps record headers (KIP-1271), for the kinds whose Kafka stores have them.
HEADERS_PARAM = Param("headers", "headers", "boolean")


class StoreKind:
    """One kind of store: its parameters, their checks, and its engine.

    ``params`` declares the kind's parameters; ``make_params`` checks given values against
    them once (unknown ones refused by option name, required ones named, ``check`` for the
    rest). ``engine`` builds, feeds and reads the kind's stores; the methods below it hand
    the catalog's calls to the engine (see ``StoreEngine`` for what each does).
    """

    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    #: The options of a read that this kind takes (``check_reads`` and ``scan_fields`` read
    #: them; the connector parses them as declared).
    read_params: ClassVar[tuple[ReadParam, ...]] = ()
    engine: ClassVar[StoreEngine]
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
    #: The (column family, key) under which the kind's stores keep their stream time (Kafka's
    #: keep none: ours do, so that a reopened store expires what Kafka's restore would); none:
    #: the kind keeps none, or its engine derives it from its rows (a versioned store).
    stream_time_row: ClassVar[tuple[str, bytes] | None] = None

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

    def replaced_params(self, current: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
        """The parameters of a store of this kind whose spec is replaced: ``current``, with
        those ``given`` instead; one whose default derives from a given one (``default_from``)
        and that is not given itself is derived again (by ``make_params``)."""
        params = {k: v for k, v in current.items() if v is not None}
        for param in self.params:
            if param.key not in given and given.keys() & set(param.default_from):
                params.pop(param.key, None)
        params.update(given)
        return params

    def check_reads(self, reads: Mapping[str, Any]) -> None:
        """Refuse this kind's read options given in a combination that asks for nothing
        (``reads``: every kind's read options given, parsed, by option name)."""

    def scan_fields(self, reads: Mapping[str, Any]) -> dict[str, Any]:
        """The ``Scan`` fields this kind's read options ask for (see ``read_scan``).

        Raises:
            InvalidOptionError: options of this kind that contradict each other.
        """
        return {}

    def check_write(
        self, columns: Mapping[str, pa.Array], params: dict[str, Any], store: str
    ) -> None:
        """Refuse a write whose derived columns (``Layout.derived``, given alongside the time
        columns they derive from, all as epoch ms in ``columns``) disagree with them.

        Raises:
            InvalidOptionError: a derived column that does not match.
        """

    # The engine's side, as the catalog calls it.

    def layout(self, params: dict[str, Any]) -> Layout:
        """The columns of the store's writes, changelog files and reads."""
        return self.engine.layout(params)

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The RocksDB column families of the store (the first holds its data)."""
        return self.engine.column_families(params)

    def open(self, db: BytesStore, params: dict[str, Any]) -> Any:
        """The typed store over an open bytes store."""
        return self.engine.open(db, params)

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        """Apply one commit's changelog rows to ``store``."""
        self.engine.apply(store, table, params)

    def record_keys(self, family: str, keys: pa.Array, params: dict[str, Any]) -> pa.Array | None:
        """The record keys of RocksDB keys of ``family``; None for bookkeeping rows."""
        return self.engine.record_keys(family, keys, params)

    def scan(self, store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        """Raw batches (``Layout.raw_schema``) of what ``scan`` reads from ``store``."""
        return self.engine.scan(store, scan, params)

    def key_query(
        self,
        key: Any,
        *,
        as_of: int | None = None,
        time_from: int | None = None,
        time_to: int | None = None,
    ) -> Query:
        """The Interactive Queries v2 query for one key (the command line's ``query``)."""
        return self.engine.key_query(key, as_of=as_of, time_from=time_from, time_to=time_to)

    def scan_columns(
        self,
        runs: Runs,
        commits: list[pa.Table],
        params: dict[str, Any],
        scan: Scan,
        *,
        key_order: bool = True,
    ) -> pa.Table | StoreMustAnswer:
        """``scan`` computed from a snapshot's ``runs`` and the ``commits`` after it (in key
        order, or in write order: ``StoreEngine.scan_columns``), or ``STORE_MUST_ANSWER``.
        An engine whose ``scan_columns`` predates ``key_order`` (a kind registered by other
        code) is called without it: its rows come in key order, which a table read allows."""
        if key_order or not _takes_key_order(type(self.engine)):
            return self.engine.scan_columns(runs, commits, params, scan)
        return self.engine.scan_columns(runs, commits, params, scan, key_order=False)

    def store_rows(
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        """The store's RocksDB rows computed from columns, or ``STORE_MUST_ANSWER``."""
        return self.engine.store_rows(runs, commits, params)

    def overlay_rows(
        self, commits: list[pa.Table], params: dict[str, Any]
    ) -> Rows | StoreMustAnswer:
        """The rows ``commits`` leave over any state, or ``STORE_MUST_ANSWER``."""
        return self.engine.overlay_rows(commits, params)


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


def all_read_params() -> tuple[ReadParam, ...]:
    """Every kind's read options, each once, in the order the kinds declare them."""
    seen: dict[str, ReadParam] = {}
    for kind in KINDS.values():
        for param in kind.read_params:
            seen.setdefault(param.option, param)
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


@functools.cache
def _takes_key_order(engine: type[StoreEngine]) -> bool:
    """Whether ``engine.scan_columns`` takes ``key_order`` (every engine of this package)."""
    parameters = inspect.signature(engine.scan_columns).parameters
    return "key_order" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
