"""Store kinds: each one class in its own module, declaring the kind's parameters, their
checks, and its engine (``_base.StoreKind``); the engine, in ``stores.<kind>.engine``, builds,
feeds and reads the kind's stores (``stores.engine.StoreEngine``). The rest of the catalog and
the connector look kinds up here and know none by name: the connector's creation options are
the kinds' parameters (``all_params``), its read options the kinds' read options
(``all_read_params``, checked by ``check_reads`` and turned into a ``Scan`` by ``read_scan``).
Adding a kind is one engine, one module here and one ``register`` call.

| kind          | module          | Kafka store (by params)                       | time columns written / read |
|---------------|-----------------|-----------------------------------------------|-----------------------------|
| ``keyvalue``    | ``keyvalue``      | ``KeyValueStore``                               | - / -                       |
| ``timestamped`` | ``timestamped``   | ``TimestampedKeyValueStore[WithHeaders]``       | timestamp / timestamp       |
| ``versioned``   | ``versioned``     | ``VersionedKeyValueStore``                      | timestamp / valid_from, valid_to |
| ``window``      | ``window``        | ``[Timestamped]WindowStore[WithHeaders]``       | window_start [, timestamp] / window_start, window_end [, timestamp] |
| ``session``     | ``session``       | ``SessionStore[WithHeaders]``                   | session_start, session_end / the same |

Stores with ``headers`` also carry a ``headers`` column: KIP-1271's ``headersBytes`` in
changelog files and raw scans, ``array<struct<key: string, value: binary>>`` when typed.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from catalog.kinds._base import (
    HEADERS_PARAM,
    KINDS,
    Param,
    ReadParam,
    StoreKind,
    all_params,
    all_read_params,
)
from catalog.kinds.keyvalue import KEYVALUE
from catalog.kinds.session import SESSION
from catalog.kinds.timestamped import TIMESTAMPED
from catalog.kinds.versioned import VERSIONED
from catalog.kinds.window import WINDOW
from stores.engine import (
    BATCH_ROWS,
    HEADERS,
    STORE_MUST_ANSWER,
    Layout,
    Rows,
    Runs,
    Scan,
    StoreEngine,
    StoreMustAnswer,
    TimeColumn,
    last_per_key,
)
from stores.errors import InvalidOptionError


def register(kind: StoreKind) -> StoreKind:
    """Add a kind (its parameters must agree with those of the same key in other kinds).

    Raises:
        InvalidOptionError: a kind of that name exists, or a parameter disagrees.
    """
    if kind.name in KINDS:
        raise InvalidOptionError(f"a store kind named {kind.name!r} is already registered")
    known = {p.key: p for k in KINDS.values() for p in k.params}
    for param in kind.params:
        other = known.get(param.key)
        if other is not None and (other.option, other.type) != (param.option, param.type):
            raise InvalidOptionError(
                f"kind {kind.name!r} declares parameter {param.key!r} as option "
                f"{param.option!r} ({param.type}); another kind has {other.option!r} ({other.type})"
            )
    reads = {p.option: p for k in KINDS.values() for p in k.read_params}
    for read in kind.read_params:
        if reads.get(read.option, read) != read:
            raise InvalidOptionError(
                f"kind {kind.name!r} declares read option {read.option!r} unlike another kind"
            )
    KINDS[kind.name] = kind
    return kind


for _kind in (KEYVALUE, TIMESTAMPED, VERSIONED, WINDOW, SESSION):
    register(_kind)

#: The kind of a store that a write creates without option ``kind``.
DEFAULT_KIND = KEYVALUE.name


def kind_of(name: str) -> StoreKind:
    """Look a kind up by name.

    Raises:
        InvalidOptionError: no such kind (names the accepted ones).
    """
    try:
        return KINDS[name]
    except KeyError:
        close = difflib.get_close_matches(str(name).lower(), list(KINDS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InvalidOptionError(
            f"option 'kind' is {name!r}{hint} Accepted: {' | '.join(KINDS)}",
            code="UNKNOWN_KIND",
        ) from None


def check_reads(reads: Mapping[str, Any]) -> None:
    """Refuse read options given in a combination that asks for nothing (``reads``: the
    kinds' read options given, parsed, by option name; see ``StoreKind.check_reads``).

    Raises:
        InvalidOptionError: names the options and what to give instead.
    """
    for kind in KINDS.values():
        kind.check_reads(reads)


def read_scan(reads: Mapping[str, Any]) -> Scan:
    """What a read with the kinds' read options ``reads`` (parsed, by option name) asks of a
    partition. Each kind sets the fields its own options ask for (``StoreKind.scan_fields``);
    a field a kind registered earlier set is kept, so a history read's record-time bounds
    are not taken for a window start range.

    Raises:
        InvalidOptionError: options that contradict each other.
    """
    fields: dict[str, Any] = {}
    for kind in KINDS.values():
        for name, value in kind.scan_fields(reads).items():
            fields.setdefault(name, value)
    return Scan(**fields)


def write_time_columns() -> list[str]:
    """The first time column a write of each kind takes, each once (for messages)."""
    names: dict[str, None] = {}
    for kind in KINDS.values():
        times = kind.layout({}).write_times
        if times:
            names.setdefault(times[0].name)
    return list(names)


def option_names() -> dict[str, str]:
    """The option that sets each parameter key, for messages."""
    return {p.key: p.option for p in all_params()}


#: The option that sets each parameter key (of the kinds registered at import).
OPTION_NAMES = option_names()

__all__ = [
    "BATCH_ROWS",
    "DEFAULT_KIND",
    "HEADERS",
    "HEADERS_PARAM",
    "KEYVALUE",
    "KINDS",
    "OPTION_NAMES",
    "SESSION",
    "STORE_MUST_ANSWER",
    "TIMESTAMPED",
    "VERSIONED",
    "WINDOW",
    "Layout",
    "Param",
    "ReadParam",
    "Rows",
    "Runs",
    "Scan",
    "StoreEngine",
    "StoreKind",
    "StoreMustAnswer",
    "TimeColumn",
    "all_params",
    "all_read_params",
    "check_reads",
    "kind_of",
    "last_per_key",
    "option_names",
    "read_scan",
    "register",
    "write_time_columns",
]
