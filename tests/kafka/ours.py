"""Our side of the differential tests: the harness's op lists run against our stores.

An op is ``{"m": <Kafka method name>, "a": [args], "rt": <record time>}`` in the harness's JSON
encoding (``tests/kafka/harness.py``): bytes are hex, a value with a timestamp or headers is an
object, a session key is ``{"k", "s", "e"}``. ``run`` opens the store of a variant, runs every
op through our change-logging layer (Kafka's ``context.timestamp()`` is the op's ``rt``) and
answers in the harness's encoding: every query's answer, the changelog records, and the
contents of each column family Kafka writes (our own bookkeeping families aside).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from stores.change_logging import ChangeLoggingStore
from stores.errors import StateStoreError
from stores.key_value.store import KeyValueStore
from stores.protocols import VersionedRecord
from stores.query import (
    KeyQuery,
    MultiVersionedKeyQuery,
    QueryResult,
    RangeQuery,
    TimestampedKeyQuery,
    TimestampedKeyWithHeadersQuery,
    TimestampedRangeQuery,
    TimestampedRangeWithHeadersQuery,
    TimestampedWindowKeyWithHeadersQuery,
    TimestampedWindowRangeWithHeadersQuery,
    VersionedKeyQuery,
    WindowKeyQuery,
    WindowRangeQuery,
)
from stores.query import query as run_query
from stores.query.queries import Query
from stores.records import (
    KeyValue,
    ReadOnlyRecord,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
    Windowed,
)
from stores.session.store import SessionStore, SessionStoreWithHeaders
from stores.timestamped.store import (
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
)
from stores.versioned.store import VersionedKeyValueStore
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)
from tests.kafka.harness import VARIANTS

#: Column families of ours that Kafka has no counterpart of (bookkeeping, not data).
OURS_ONLY = frozenset({"segmentsMetadata", "versionedStoreMetadata", "offsets"})

#: The variants whose stores are segmented (Kafka: a RocksDB per segment).
SEGMENTED = frozenset(v for v in VARIANTS if v.startswith(("window", "timestamped_window", "session")))


def open_store(variant: str, params: dict[str, Any], path: Path) -> Any:
    """Our store of ``variant`` with the harness's ``params`` (Kafka's names)."""
    if variant == "key_value":
        return KeyValueStore(path)
    if variant == "timestamped":
        return TimestampedKeyValueStore(path)
    if variant == "timestamped_headers":
        return TimestampedKeyValueStoreWithHeaders(path)
    if variant == "versioned":
        return VersionedKeyValueStore(
            path, params["historyRetentionMs"], params.get("segmentIntervalMs")
        )
    if variant.startswith("session"):
        cls = SessionStoreWithHeaders if variant == "session_headers" else SessionStore
        return cls(path, params["retentionMs"], params.get("segmentIntervalMs"))
    window_classes = {
        "window": WindowStore,
        "window_duplicates": WindowStore,
        "timestamped_window": TimestampedWindowStore,
        "window_headers": WindowStoreWithHeaders,
        "timestamped_window_headers": TimestampedWindowStoreWithHeaders,
    }
    return window_classes[variant](
        path,
        params["retentionMs"],
        params["windowSizeMs"],
        variant == "window_duplicates" or bool(params.get("retainDuplicates")),
        params.get("segmentIntervalMs"),
    )


# -- the harness's JSON encoding, both ways ---------------------------------------------------


def _headers(raw: list[list[Any]]) -> tuple[tuple[str, bytes | None], ...]:
    return tuple((k, None if v is None else bytes.fromhex(v)) for k, v in raw)


def decode_arg(arg: Any) -> Any:
    """An op argument in the harness encoding as our stores take it."""
    if isinstance(arg, str):
        return bytes.fromhex(arg)
    if isinstance(arg, list):
        return [decode_arg(a) for a in arg]
    if isinstance(arg, dict):
        if "k" in arg:
            return Windowed(bytes.fromhex(arg["k"]), Window(arg["s"], arg["e"]))
        value = bytes.fromhex(arg["v"])
        if "t" in arg and "h" in arg:
            return ValueTimestampHeaders(value, arg["t"], _headers(arg["h"]))
        if "t" in arg:
            return ValueAndTimestamp(value, arg["t"])
        return ValueAndHeaders(value, _headers(arg["h"]))
    return arg


def _hex_headers(headers: Any) -> list[list[Any]]:
    return [[k, None if v is None else v.hex()] for k, v in headers]


def encode(answer: Any) -> Any:
    """One of our answers in the harness encoding (iterators drained)."""
    if answer is None or isinstance(answer, (bool, int)):
        return answer
    if isinstance(answer, (bytes, bytearray)):
        return bytes(answer).hex()
    if isinstance(answer, ReadOnlyRecord):  # Kafka 4.4's KIP-1356 query results
        return {"key": encode(answer.key), "v": encode(answer.value), "t": answer.timestamp,
                "h": _hex_headers(answer.headers)}  # fmt: skip
    if isinstance(answer, ValueTimestampHeaders):
        return {"v": answer.value.hex(), "t": answer.timestamp, "h": _hex_headers(answer.headers)}
    if isinstance(answer, ValueAndTimestamp):
        return {"v": answer.value.hex(), "t": answer.timestamp}
    if isinstance(answer, ValueAndHeaders):
        return {"v": answer.value.hex(), "h": _hex_headers(answer.headers)}
    if isinstance(answer, Windowed):
        return {"k": answer.key.hex(), "s": answer.start, "e": answer.end}
    if isinstance(answer, VersionedRecord):
        return {"v": answer.value.hex(), "t": answer.timestamp, "to": answer.valid_to}
    if isinstance(answer, (KeyValue, tuple)) and len(answer) == 2:
        return [encode(answer[0]), encode(answer[1])]
    if isinstance(answer, (list, Iterator)) or hasattr(answer, "__next__"):
        return [encode(item) for item in answer]
    raise TypeError(f"no harness encoding for {type(answer).__name__}")


def build_query(spec: dict[str, Any]) -> Query:
    """Our IQv2 query of the harness's query spec (Kafka's factories, snake_case). The KIP-1356
    header query types come with Kafka 4.4: a 4.3.1 or 3.9.1 harness sends a stand-in class."""
    kind = spec["type"]

    def key(field: str) -> bytes | None:
        return None if spec.get(field) is None else bytes.fromhex(spec[field])

    ordered = spec.get("ascending")
    if kind in ("KeyQuery", "TimestampedKeyQuery", "VersionedKeyQuery",
                "TimestampedKeyWithHeadersQuery"):  # fmt: skip
        query: Any = {"KeyQuery": KeyQuery, "TimestampedKeyQuery": TimestampedKeyQuery,
                      "VersionedKeyQuery": VersionedKeyQuery,
                      "TimestampedKeyWithHeadersQuery": TimestampedKeyWithHeadersQuery,
                      }[kind].with_key(key("key"))  # fmt: skip
        return query if spec.get("asOf") is None else query.as_of(spec["asOf"])
    if kind in ("RangeQuery", "TimestampedRangeQuery", "TimestampedRangeWithHeadersQuery"):
        cls: Any = {"RangeQuery": RangeQuery, "TimestampedRangeQuery": TimestampedRangeQuery,
                    "TimestampedRangeWithHeadersQuery": TimestampedRangeWithHeadersQuery}[kind]  # fmt: skip
        lower, upper = key("lower"), key("upper")
        if lower is not None and upper is not None:
            query = cls.with_range(lower, upper)
        elif lower is not None:
            query = cls.with_lower_bound(lower)
        elif upper is not None:
            query = cls.with_upper_bound(upper)
        else:
            query = cls.with_no_bounds()
        if ordered is not None:
            query = query.with_ascending_keys() if ordered else query.with_descending_keys()
        return cast(Query, query)
    if kind == "MultiVersionedKeyQuery":
        query = MultiVersionedKeyQuery.with_key(key("key"))
        if spec.get("fromTime") is not None:
            query = query.from_time(spec["fromTime"])
        if spec.get("toTime") is not None:
            query = query.to_time(spec["toTime"])
        if ordered is not None:
            query = (query.with_ascending_timestamps() if ordered
                     else query.with_descending_timestamps())  # fmt: skip
        return cast(Query, query)
    if kind in ("WindowKeyQuery", "TimestampedWindowKeyWithHeadersQuery"):
        window_key: Any = (WindowKeyQuery if kind == "WindowKeyQuery"
                           else TimestampedWindowKeyWithHeadersQuery)  # fmt: skip
        return cast(Query, window_key.with_key_and_window_start_range(
            key("key"), spec["fromTime"], spec["toTime"]
        ))  # fmt: skip
    window_range: Any = {"WindowRangeQuery": WindowRangeQuery,
                         "TimestampedWindowRangeWithHeadersQuery":
                             TimestampedWindowRangeWithHeadersQuery}[kind]  # fmt: skip
    if spec.get("key") is not None:
        return cast(Query, window_range.with_key(key("key")))
    return cast(Query, window_range.with_window_start_range(spec["fromTime"], spec["toTime"]))


def encode_result(result: QueryResult) -> dict[str, Any]:
    """A query result as the harness encodes Kafka's ``QueryResult``."""
    if result.is_success():
        return {"ok": True, "failure": None, "result": encode(result.get_result())}
    return {"ok": False, "failure": result.get_failure_reason().name,
            "msg": result.get_failure_message(), "result": None}  # fmt: skip


def call(store: ChangeLoggingStore, op: dict[str, Any]) -> Any:
    """Run one op against our store at the op's record time (and headers, ``rh``); an error
    becomes ``{"error": ...}`` as in the harness. ``query`` runs IQv2 (``stores.query``)."""
    try:
        if op["m"] == "query":
            return encode_result(run_query(store.wrapped, build_query(op["a"][0])))
        args = [decode_arg(a) for a in op["a"]]
        return encode(store.call(op["m"], args, op["rt"], _headers(op.get("rh", []))))
    except StateStoreError as error:
        return {"error": type(error).__name__, "msg": str(error)}


# -- column families ---------------------------------------------------------------------------


def column_families(store: Any, variant: str) -> list[list[Any]]:
    """Every entry of every column family of ours that Kafka also writes, as the harness
    lists Kafka's: ``[segment id | None, family, key hex, value hex]``, sorted. A segmented
    store of ours keeps one database whose keys carry an 8-byte segment id (Kafka: one
    database per segment), which is split off here."""
    db = store.wrapped
    rows: list[list[Any]] = []
    for family in type(store).column_families():
        if family in OURS_ONLY:
            continue
        for key, value in db.items(family):
            if variant in SEGMENTED:
                rows.append(
                    [int.from_bytes(key[:8], "big", signed=True), family, key[8:].hex(), value.hex()]
                )
            else:
                rows.append([None, family, key.hex(), value.hex()])
    rows.sort(key=lambda row: (-1 if row[0] is None else row[0], row[1], row[2]))
    return rows


@dataclass
class OurRun:
    """What one op list did to our store (the harness's ``RunResult`` shape)."""

    answers: list[Any]
    changelog: list[dict[str, Any]]
    cfs: list[list[Any]]


def run(variant: str, params: dict[str, Any], ops: list[dict[str, Any]], path: Path) -> OurRun:
    """Run ``ops`` on a new store of ours at ``path``, as the harness runs them on Kafka's."""
    store = ChangeLoggingStore(open_store(variant, params, path))
    try:
        answers = [call(store, op) for op in ops]
        changelog = [record.to_json() for record in store.records]
        return OurRun(answers, changelog, column_families(store.wrapped, variant))
    finally:
        store.close()
