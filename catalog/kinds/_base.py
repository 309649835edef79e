"""What every store kind is: its parameters (``Param``), their checks, and the link to its
engine (``stores.engine.StoreEngine``: how its stores are built, fed and read). One subclass
per kind, one module each; the registry in ``catalog.kinds`` lists them, and the connector
derives its options from their parameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pyarrow as pa

from stores.bytes.rocksdb import RocksDBBytesStore
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


class StoreKind:
    """One kind of store: its parameters, their checks, and its engine.

    ``params`` declares the kind's parameters; ``make_params`` checks given values against
    them once (unknown ones refused by option name, required ones named, ``check`` for the
    rest). ``engine`` builds, feeds and reads the kind's stores; the methods below it hand
    the catalog's calls to the engine (see ``StoreEngine`` for what each does).
    """

    name: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
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

    # The engine's side, as the catalog calls it.

    def layout(self, params: dict[str, Any]) -> Layout:
        """The columns of the store's writes, changelog files and reads."""
        return self.engine.layout(params)

    def column_families(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The RocksDB column families of the store (the first holds its data)."""
        return self.engine.column_families(params)

    def open(self, db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
        """The typed store over an open bytes store."""
        return self.engine.open(db, params)

    def apply(self, store: Any, table: pa.Table, params: dict[str, Any]) -> None:
        """Apply one commit's changelog rows to ``store``."""
        self.engine.apply(store, table, params)

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
        self, runs: Runs, commits: list[pa.Table], params: dict[str, Any], scan: Scan
    ) -> pa.Table | StoreMustAnswer:
        """``scan`` computed from a snapshot's ``runs`` and the ``commits`` after it, or
        ``STORE_MUST_ANSWER``."""
        return self.engine.scan_columns(runs, commits, params, scan)

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
