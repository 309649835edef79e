"""Store kinds: the one place that decides, per kind, how a store is stacked and fed.

A kind says which parameters it takes, which columns its changelog files and scans carry, which
RocksDB column families it needs, how it is opened over the bytes layer, how a changelog table is
applied to it, and how it is scanned into raw Arrow batches. The rest of the catalog and the
connector only look kinds up here: adding a kind is adding an entry.

| kind          | Kafka store (by params)                                   | time columns written / read                          |
|---------------|-----------------------------------------------------------|------------------------------------------------------|
| ``keyvalue``    | ``KeyValueStore``                                          | - / -                                                |
| ``timestamped`` | ``TimestampedKeyValueStore[WithHeaders]``                  | timestamp / timestamp                                |
| ``versioned``   | ``VersionedKeyValueStore``                                 | timestamp / valid_from, valid_to                     |
| ``window``      | ``[Timestamped]WindowStore[WithHeaders]``                  | window_start [, timestamp] / window_start, window_end [, timestamp] |
| ``session``     | ``SessionStore[WithHeaders]``                              | session_start, session_end / the same                |

Stores with ``headers`` also carry a ``headers`` column: KIP-1271's ``headersBytes`` in
changelog files and raw scans, ``array<struct<key: string, value: binary>>`` when typed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.span_columns import session_base, session_read, window_base, window_read
from catalog.versioned_columns import snapshot_records, versioned_read
from stores.errors import InvalidOptionError
from stores.key_value import KeyValueStore
from stores.records import UNKNOWN_TIMESTAMP
from stores.rocksdb_bytes import RocksDBBytesStore
from stores.session import SessionStore, SessionStoreWithHeaders
from stores.session import default_segment_interval_ms as session_segment_interval
from stores.timestamped import (
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
)
from stores.versioned import VersionedKeyValueStore
from stores.versioned import default_segment_interval_ms as versioned_segment_interval
from stores.window import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)
from stores.window import default_segment_interval_ms as window_segment_interval

BATCH_ROWS = 1 << 16
_TIME = pa.int64()
HEADERS = "headers"


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
        fields += [pa.field(c, _TIME) for c in self.read_times]
        if self.headers:
            fields.append(pa.field(HEADERS, pa.binary()))
        return pa.schema(fields)

    def changelog_schema(self) -> pa.Schema:
        """Schema of a changelog file (see ``catalog.changelog``)."""
        fields = [pa.field("key", pa.binary(), nullable=False), pa.field("value", pa.binary())]
        fields += [pa.field(c.name, _TIME, nullable=False) for c in self.write_times]
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


@dataclass(frozen=True)
class StoreKind:
    """How one kind of store is built, fed and scanned."""

    name: str
    make_params: Callable[[dict[str, Any]], dict[str, Any]]
    layout: Callable[[dict[str, Any]], Layout]
    column_families: Callable[[dict[str, Any]], tuple[str, ...]]
    open: Callable[[RocksDBBytesStore, dict[str, Any]], Any]
    apply: Callable[[Any, pa.Table, dict[str, Any]], None]
    scan: Callable[[Any, Scan, dict[str, Any]], Iterator[pa.RecordBatch]]
    supports_as_of: bool = False
    supports_time_range: bool = False
    #: A scan computed from columns alone, without RocksDB (see ``ScanColumns``); None where
    #: a kind has no such path.
    scan_columns: ScanColumns | None = None


#: ``(snapshot runs by column family, each commit's changelog rows in commit order, params,
#: scan)`` to what ``scan`` reads (``Layout.raw_schema``, in the store's scan order), or None
#: when the scan or the data needs the store itself (for example rows of a legacy format in the
#: snapshot, or a scan the kind does not compute).
ScanColumns = Callable[
    [dict[str, tuple[pa.Array, pa.Array]], list[pa.Table], dict[str, Any], Scan],
    "pa.Table | None",
]


def last_per_key(table: pa.Table) -> pa.Table:
    """The last row of each key (rows in write order), tombstones dropped, sorted by key bytes:
    a key-value store's state, computed with one sort instead of a RocksDB round trip."""
    n = table.num_rows
    if n == 0:
        return table
    numbered = table.append_column("__seq", pa.array(np.arange(n, dtype=np.int64)))
    order = pc.sort_indices(numbered, sort_keys=[("key", "ascending"), ("__seq", "descending")])
    keys = pc.take(table.column("key"), order).combine_chunks()
    first = np.ones(n, dtype=bool)
    if n > 1:
        first[1:] = pc.not_equal(keys.slice(1), keys.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    latest = table.take(pc.filter(order, pa.array(first)))
    return latest.filter(pc.is_valid(latest.column("value")))


def _batches(rows: Iterator[tuple[Any, ...]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Chunk an iterator of row tuples into record batches of ``schema``."""
    while True:
        chunk = list(islice(rows, BATCH_ROWS))
        if not chunk:
            return
        columns = list(zip(*chunk))
        yield pa.RecordBatch.from_arrays(
            [pa.array(col, f.type) for col, f in zip(columns, schema)], schema=schema
        )


def _known(millis: list[int]) -> pa.Array:
    """Timestamps with Kafka's unknown (-1) as null."""
    array = pa.array(millis, _TIME)
    return pc.if_else(pc.equal(array, UNKNOWN_TIMESTAMP), pa.scalar(None, _TIME), array)


def _time_order(table: pa.Table, column: str) -> pa.Table:
    """Rows in ``column`` order, stable: a DataFrame has no order, so a commit's rows are applied
    in time order and the result does not depend on how Spark split them into tasks."""
    return table.take(pc.sort_indices(table.column(column)))


# -- parameters ----------------------------------------------------------------------------------

#: The option name users give for each kind parameter, for messages.
OPTION_NAMES = {
    "history_retention_ms": "historyRetention",
    "segment_interval_ms": "segmentInterval",
    "retention_ms": "retention",
    "window_size_ms": "windowSize",
    "retain_duplicates": "retainDuplicates",
    "timestamped": "timestamped",
    "headers": "headers",
}


def _refuse_unknown(kind: str, given: dict[str, Any], accepted: tuple[str, ...]) -> None:
    # A boolean option given as false asks for nothing, so any kind accepts it.
    extra = sorted(
        OPTION_NAMES.get(k, k)
        for k, v in given.items()
        if v is not None and v is not False and k not in accepted
    )
    if extra:
        names = ", ".join(repr(OPTION_NAMES.get(k, k)) for k in accepted) or "none"
        raise InvalidOptionError(
            f"a {kind} store takes no option {', '.join(map(repr, extra))}; "
            f"its options: {names}"
        )


def _required(kind: str, given: dict[str, Any], name: str, example: str) -> int:
    value = given.get(name)
    if value is None:
        raise InvalidOptionError(
            f"a {kind} store needs option {OPTION_NAMES[name]!r} (e.g. {example})",
            code="MISSING_OPTION",
        )
    return int(value)


def _segment_interval(given: dict[str, Any], default: int) -> int:
    segment = given.get("segment_interval_ms")
    segment = default if segment is None else int(segment)
    if segment < 1:
        raise InvalidOptionError(f"option 'segmentInterval' must be at least 1 ms, got {segment}")
    return segment


# -- keyvalue ------------------------------------------------------------------------------------


def _kv_params(given: dict[str, Any]) -> dict[str, Any]:
    if given.get("headers"):
        raise InvalidOptionError(
            "option 'headers' is true but Kafka has no header-aware plain key-value store; "
            "use kind 'timestamped' with headers=true (TimestampedKeyValueStoreWithHeaders)"
        )
    _refuse_unknown("keyvalue", {k: v for k, v in given.items() if k != "headers"}, ())
    return {}


def _kv_apply(store: Any, table: pa.Table, params: dict[str, Any]) -> None:
    store.put_columns(table.column("key").to_pylist(), table.column("value").to_pylist())


def _kv_scan(store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    schema = Layout().raw_schema()
    for keys, values in store.scan_columns(BATCH_ROWS):
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys, pa.binary()), pa.array(values, pa.binary())], schema=schema
        )


def _kv_scan_columns(
    runs: dict[str, tuple[pa.Array, pa.Array]],
    commits: list[pa.Table],
    params: dict[str, Any],
    scan: Scan,
) -> pa.Table | None:
    if not scan.is_full:
        return None
    wide = pa.schema([pa.field("key", pa.large_binary()), pa.field("value", pa.large_binary())])
    parts = []
    if "default" in runs:
        keys, values = runs["default"]
        parts.append(pa.table([keys, values], names=["key", "value"]).cast(wide))
    # A commit's rows apply in order, later commits after earlier ones: the last write wins.
    parts += [t.select(["key", "value"]).cast(wide) for t in commits]
    if not parts:
        return None
    return last_per_key(pa.concat_tables(parts))


KEYVALUE = StoreKind(
    name="keyvalue",
    make_params=_kv_params,
    layout=lambda params: Layout(),
    column_families=lambda params: KeyValueStore.column_families(),
    open=lambda db, params: KeyValueStore.over(db),
    apply=_kv_apply,
    scan=_kv_scan,
    scan_columns=_kv_scan_columns,
)


# -- timestamped key-value -----------------------------------------------------------------------


def _ts_params(given: dict[str, Any]) -> dict[str, Any]:
    _refuse_unknown("timestamped", given, ("headers",))
    return {"headers": bool(given.get("headers"))}


def _ts_class(params: dict[str, Any]) -> Any:
    return TimestampedKeyValueStoreWithHeaders if params.get("headers") else TimestampedKeyValueStore


def _ts_apply(store: Any, table: pa.Table, params: dict[str, Any]) -> None:
    layout = _ts_layout(params)
    table = _time_order(table, "timestamp")  # the newest record of a key wins (unknown -1 first)
    args = [
        table.column("key").to_pylist(),
        table.column("value").to_pylist(),
        table.column("timestamp").to_pylist(),
    ]
    if layout.headers:
        args.append(table.column(HEADERS).to_pylist())
    store.put_columns(*args)


def _ts_scan(store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    layout = _ts_layout(params)
    schema = layout.raw_schema()
    for chunk in store.scan_columns(BATCH_ROWS):
        columns = [pa.array(chunk[0], pa.binary()), pa.array(chunk[1], pa.binary()), _known(chunk[2])]
        if layout.headers:
            columns.append(pa.array(chunk[3], pa.binary()))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _ts_layout(params: dict[str, Any]) -> Layout:
    return Layout(
        write_times=(TimeColumn("timestamp", unknown_if_null=True),),
        read_times=("timestamp",),
        headers=bool(params.get("headers")),
    )


def _ts_scan_columns(
    runs: dict[str, tuple[pa.Array, pa.Array]],
    commits: list[pa.Table],
    params: dict[str, Any],
    scan: Scan,
) -> pa.Table | None:
    # A snapshot's rows are Kafka's values (and maybe the pre-KIP-258 format): RocksDB reads them.
    if not scan.is_full or runs:
        return None
    names = _ts_layout(params).changelog_schema().names
    wide = pa.schema([pa.field(n, _TIME if n == "timestamp" else pa.large_binary()) for n in names])
    parts = [_time_order(t.select(names), "timestamp").cast(wide) for t in commits]
    if not parts:
        return _ts_layout(params).raw_schema().empty_table()
    # Kafka's timestamped store overwrites on every put: in apply order, the last write wins.
    latest = last_per_key(pa.concat_tables(parts))
    stamps = latest.column("timestamp")
    unknown = pc.equal(stamps, UNKNOWN_TIMESTAMP)
    return latest.set_column(
        names.index("timestamp"), "timestamp", pc.if_else(unknown, pa.scalar(None, _TIME), stamps)
    )


TIMESTAMPED = StoreKind(
    name="timestamped",
    make_params=_ts_params,
    layout=_ts_layout,
    column_families=lambda params: _ts_class(params).column_families(),
    open=lambda db, params: _ts_class(params).over(db),
    apply=_ts_apply,
    scan=_ts_scan,
    scan_columns=_ts_scan_columns,
)


# -- versioned -----------------------------------------------------------------------------------


def _versioned_params(given: dict[str, Any]) -> dict[str, Any]:
    if given.get("headers"):
        raise InvalidOptionError(
            "option 'headers' is true but Kafka has not shipped a versioned store with headers "
            "(KIP-1271's VersionedKeyValueStoreWithHeaders is still an open pull request); "
            "headers are available for kinds 'timestamped', 'window' and 'session'"
        )
    given = {k: v for k, v in given.items() if k != "headers"}
    _refuse_unknown("versioned", given, ("history_retention_ms", "segment_interval_ms"))
    retention = given.get("history_retention_ms")
    if retention is None:
        raise InvalidOptionError(
            "a versioned store needs option 'historyRetention' (e.g. '1 day' or ms), "
            "which is also its grace period",
            code="MISSING_OPTION",
        )
    segment = _segment_interval(given, versioned_segment_interval(retention))
    return {"history_retention_ms": int(retention), "segment_interval_ms": segment}


def _versioned_open(db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
    return VersionedKeyValueStore.over(
        db, params["history_retention_ms"], params["segment_interval_ms"]
    )


def _versioned_apply(store: Any, table: pa.Table, params: dict[str, Any]) -> None:
    # Time order; at one time, deletes before puts: the tombstone that ends a history-shaped
    # row's interval is replaced by the row of the same key that starts there.
    puts = pc.is_valid(table.column("value"))
    table = table.take(
        pc.sort_indices(
            table.append_column("__put", puts),
            sort_keys=[("timestamp", "ascending"), ("__put", "ascending")],
        )
    )
    store.put_many(
        zip(
            table.column("key").to_pylist(),
            table.column("value").to_pylist(),
            table.column("timestamp").to_pylist(),
        ),
        validate=False,  # checked by StoreTable.stage; the file by its CRC-32
    )


def _versioned_scan(store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    schema = _versioned_layout(params).raw_schema()
    if scan.all_versions:
        yield from _batches(store.scan_versions(scan.time_from, scan.time_to), schema)
        return
    if scan.as_of is not None:
        yield from _batches(store.scan_as_of(scan.as_of), schema)
        return
    for keys, values, stamps in store.scan_latest_columns(BATCH_ROWS):
        latest = pa.nulls(len(keys), pa.int64())
        yield pa.RecordBatch.from_arrays([keys, values, stamps, latest], schema=schema)


def _versioned_layout(params: dict[str, Any]) -> Layout:
    return Layout(write_times=(TimeColumn("timestamp"),), read_times=("valid_from", "valid_to"))


def _versioned_scan_columns(
    runs: dict[str, tuple[pa.Array, pa.Array]],
    commits: list[pa.Table],
    params: dict[str, Any],
    scan: Scan,
) -> pa.Table | None:
    base = snapshot_records(runs) if runs else None
    if runs and base is None:
        return None
    return versioned_read(
        commits,
        params["history_retention_ms"],
        params["segment_interval_ms"],
        base=base,
        as_of=scan.as_of,
        all_versions=scan.all_versions,
        time_from=scan.time_from,
        time_to=scan.time_to,
    )


VERSIONED = StoreKind(
    name="versioned",
    make_params=_versioned_params,
    layout=_versioned_layout,
    column_families=lambda params: VersionedKeyValueStore.column_families(),
    open=_versioned_open,
    apply=_versioned_apply,
    scan=_versioned_scan,
    supports_as_of=True,
    scan_columns=_versioned_scan_columns,
)


# -- window --------------------------------------------------------------------------------------


def _window_params(given: dict[str, Any]) -> dict[str, Any]:
    _refuse_unknown(
        "window",
        given,
        ("retention_ms", "window_size_ms", "retain_duplicates", "segment_interval_ms",
         "timestamped", "headers"),
    )
    retention = _required("window", given, "retention_ms", "'1 day' or ms")
    size = _required("window", given, "window_size_ms", "'5 minutes' or ms")
    if size < 1:
        raise InvalidOptionError(f"option 'windowSize' must be at least 1 ms, got {size}")
    if retention < size:
        raise InvalidOptionError(
            f"option 'retention' ({retention} ms) must be at least option 'windowSize' "
            f"({size} ms), as Kafka requires"
        )
    return {
        "retention_ms": retention,
        "window_size_ms": size,
        "retain_duplicates": bool(given.get("retain_duplicates")),
        "segment_interval_ms": _segment_interval(given, window_segment_interval(retention)),
        "timestamped": bool(given.get("timestamped")),
        "headers": bool(given.get("headers")),
    }


def _window_class(params: dict[str, Any]) -> Any:
    if params.get("timestamped"):
        if params.get("headers"):
            return TimestampedWindowStoreWithHeaders
        return TimestampedWindowStore
    return WindowStoreWithHeaders if params.get("headers") else WindowStore


def _window_open(db: RocksDBBytesStore, params: dict[str, Any]) -> Any:
    return _window_class(params).over(
        db,
        params["retention_ms"],
        params["window_size_ms"],
        params["retain_duplicates"],
        params["segment_interval_ms"],
    )


def _window_layout(params: dict[str, Any]) -> Layout:
    timestamped = bool(params.get("timestamped"))
    return Layout(
        write_times=(TimeColumn("window_start"),)
        + ((TimeColumn("timestamp", unknown_if_null=True),) if timestamped else ()),
        read_times=("window_start", "window_end") + (("timestamp",) if timestamped else ()),
        headers=bool(params.get("headers")),
        derived=("window_end",),
        before_value=("window_start", "window_end"),
    )


def _window_apply(store: Any, table: pa.Table, params: dict[str, Any]) -> None:
    table = _time_order(table, "window_start")
    store.put_columns(
        table.column("key").to_pylist(),
        table.column("value").to_pylist(),
        table.column("window_start").to_pylist(),
        table.column("timestamp").to_pylist() if params.get("timestamped") else None,
        table.column(HEADERS).to_pylist() if params.get("headers") else None,
    )


def _spans(store: Any, scan: Scan, layout: Layout) -> Iterator[pa.RecordBatch]:
    """Raw batches of a window or session store's ``scan_columns``: key, value, start, end,
    then the record timestamp (timestamped windows) and headersBytes, as the layout has them."""
    schema = layout.raw_schema()
    timestamped = "timestamp" in layout.read_times
    for chunk in store.scan_columns(BATCH_ROWS, scan.time_from, scan.time_to):
        columns = [
            pa.array(chunk[0], pa.binary()),
            pa.array(chunk[1], pa.binary()),
            pa.array(chunk[2], _TIME),
            pa.array(chunk[3], _TIME),
        ]
        if timestamped:
            columns.append(_known(chunk[4]))
        if layout.headers:
            columns.append(pa.array(chunk[-1], pa.binary()))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def _window_scan(store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    return _spans(store, scan, _window_layout(params))


def _window_scan_columns(
    runs: dict[str, tuple[pa.Array, pa.Array]],
    commits: list[pa.Table],
    params: dict[str, Any],
    scan: Scan,
) -> pa.Table | None:
    base = window_base(runs, params, _window_class(params).column_families()) if runs else None
    if runs and base is None:
        return None
    return window_read(commits, params, scan.time_from, scan.time_to, base)


WINDOW = StoreKind(
    name="window",
    make_params=_window_params,
    layout=_window_layout,
    column_families=lambda params: _window_class(params).column_families(),
    open=_window_open,
    apply=_window_apply,
    scan=_window_scan,
    supports_time_range=True,
    scan_columns=_window_scan_columns,
)


# -- session -------------------------------------------------------------------------------------


def _session_params(given: dict[str, Any]) -> dict[str, Any]:
    _refuse_unknown("session", given, ("retention_ms", "segment_interval_ms", "headers"))
    retention = _required("session", given, "retention_ms", "'1 day' or ms")
    return {
        "retention_ms": retention,
        "segment_interval_ms": _segment_interval(given, session_segment_interval(retention)),
        "headers": bool(given.get("headers")),
    }


def _session_class(params: dict[str, Any]) -> Any:
    return SessionStoreWithHeaders if params.get("headers") else SessionStore


def _session_layout(params: dict[str, Any]) -> Layout:
    return Layout(
        write_times=(TimeColumn("session_start"), TimeColumn("session_end")),
        read_times=("session_start", "session_end"),
        headers=bool(params.get("headers")),
        before_value=("session_start", "session_end"),
    )


def _session_apply(store: Any, table: pa.Table, params: dict[str, Any]) -> None:
    table = _time_order(table, "session_end")
    store.put_columns(
        table.column("key").to_pylist(),
        table.column("value").to_pylist(),
        table.column("session_start").to_pylist(),
        table.column("session_end").to_pylist(),
        table.column(HEADERS).to_pylist() if params.get("headers") else None,
    )


def _session_scan(store: Any, scan: Scan, params: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    return _spans(store, scan, _session_layout(params))


def _session_scan_columns(
    runs: dict[str, tuple[pa.Array, pa.Array]],
    commits: list[pa.Table],
    params: dict[str, Any],
    scan: Scan,
) -> pa.Table | None:
    base = session_base(runs, params, _session_class(params).column_families()) if runs else None
    if runs and base is None:
        return None
    return session_read(commits, params, scan.time_from, scan.time_to, base)


SESSION = StoreKind(
    name="session",
    make_params=_session_params,
    layout=_session_layout,
    column_families=lambda params: _session_class(params).column_families(),
    open=lambda db, params: _session_class(params).over(
        db, params["retention_ms"], params["segment_interval_ms"]
    ),
    apply=_session_apply,
    scan=_session_scan,
    supports_time_range=True,
    scan_columns=_session_scan_columns,
)


KINDS: dict[str, StoreKind] = {k.name: k for k in (KEYVALUE, TIMESTAMPED, VERSIONED, WINDOW, SESSION)}


def kind_of(name: str) -> StoreKind:
    """Look a kind up by name.

    Raises:
        InvalidOptionError: no such kind (names the accepted ones).
    """
    try:
        return KINDS[name]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(str(name).lower(), list(KINDS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise InvalidOptionError(
            f"option 'kind' is {name!r}{hint} Accepted: {' | '.join(KINDS)}",
            code="UNKNOWN_KIND",
        ) from None


__all__ = ["BATCH_ROWS", "HEADERS", "KINDS", "Layout", "Scan", "StoreKind", "TimeColumn", "kind_of"]
