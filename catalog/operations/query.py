"""Interactive Queries v2 over a catalog store: Kafka's ``KafkaStreams#query`` for our stores.

A request names a store, a query (of :mod:`stores.query`) with *typed* keys, the partitions to
ask and an optional position bound::

    request = StateQueryRequest.in_store("fx").with_query(KeyQuery.with_key("EUR"))
    value = query(catalog, request).get_only_partition_result().get_result()

Every partition is answered from its local cache at the store's latest commit (one snapshot for
the whole request), opened as ``Table.read_partition`` opens it. A partition's position is
``{store name: {partition: commit id}}``: the commit id plays the role of Kafka's changelog
offset, so the merged position of one answer can bound the next query
(``with_position_bound(PositionBound.at(result.get_position()))``).

Kafka's semantics, kept here:

- an unknown store raises (Kafka throws ``UnknownStateStoreException``): ``StoreNotFoundError``;
- a requested partition the store does not have fails ``DOES_NOT_EXIST`` (the failure Kafka
  documents for it; a Kafka instance, which cannot tell "not here" from "nowhere", reports
  ``NOT_PRESENT``). Every partition of a catalog store is present: the durable files are the truth;
- ``require_active()`` runs the query unbounded, as Kafka does; every partition here is active;
- a query about one key (key, versioned, window-key, session queries) only reads the partition
  the key maps to; the other requested partitions answer as a store without the key would (None
  or an empty iterator, or the same failure), without being opened;
- iterator results are read while the partition is open and handed back as iterators over
  the rows read; keys, values and records come back typed (the store's key and value types).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from catalog.partitioner import partition_of
from catalog.table import Table, Warehouse
from stores.bytes.rocksdb import is_rocksdb_failure
from stores.errors import InvalidOptionError
from stores.iterators import KeyValueIterator
from stores.protocols import VersionedRecord
from stores.query import (
    FailureReason,
    Position,
    PositionBound,
    Query,
    QueryError,
    QueryResult,
    ReadOnlyRecord,
    absent_result,
)
from stores.query import query as store_query
from stores.records import (
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Windowed,
)
from stores.serdes import Serde, serde_for


@dataclass(frozen=True)
class StateQueryRequest:
    """What to query (Kafka's ``StateQueryRequest``): immutable, built step by step."""

    _store_name: str
    _query: Query
    _position_bound: PositionBound = dataclasses.field(default_factory=PositionBound.unbounded)
    _partitions: frozenset[int] | None = None
    _execution_info: bool = False
    _require_active: bool = False

    @dataclass(frozen=True)
    class InStore:
        """The first step of a request: the store is named, the query not yet given."""

        name: str

        def with_query(self, query: Query) -> StateQueryRequest:
            """The request to run ``query`` on every partition, unbounded.

            Raises:
                InvalidOptionError: ``query`` is not a query of ``stores.query``.
            """
            if not isinstance(query, Query):
                raise InvalidOptionError(
                    f"with_query needs a query of stores.query, got {type(query).__name__}"
                )
            return StateQueryRequest(self.name, query)

    @staticmethod
    def in_store(name: str) -> StateQueryRequest.InStore:
        """Start a request on the store ``name``.

        Raises:
            InvalidOptionError: ``name`` is not a str.
        """
        if not isinstance(name, str):
            raise InvalidOptionError(f"store name must be a str, got {type(name).__name__}")
        return StateQueryRequest.InStore(name)

    def with_position_bound(self, position_bound: PositionBound) -> StateQueryRequest:
        """Only answer from partitions that have reached ``position_bound``.

        Raises:
            InvalidOptionError: ``position_bound`` is not a PositionBound.
        """
        if not isinstance(position_bound, PositionBound):
            raise InvalidOptionError(
                f"position_bound must be a PositionBound, got {type(position_bound).__name__}"
            )
        return dataclasses.replace(self, _position_bound=position_bound)

    def with_all_partitions(self) -> StateQueryRequest:
        """Ask every partition (the default)."""
        return dataclasses.replace(self, _partitions=None)

    def with_partitions(self, partitions: Iterable[int]) -> StateQueryRequest:
        """Ask these partitions only.

        Raises:
            InvalidOptionError: a partition is not an int.
        """
        chosen = frozenset(partitions)
        for partition in chosen:
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise InvalidOptionError(
                    f"partitions must be ints, got {type(partition).__name__}"
                )
        return dataclasses.replace(self, _partitions=chosen)

    def enable_execution_info(self) -> StateQueryRequest:
        """Record how each partition ran the query."""
        return dataclasses.replace(self, _execution_info=True)

    def require_active(self) -> StateQueryRequest:
        """Answer from active partitions only (all are, here); runs the query unbounded."""
        return dataclasses.replace(self, _require_active=True)

    def get_store_name(self) -> str:
        """The store's name."""
        return self._store_name

    def get_position_bound(self) -> PositionBound:
        """The position bound."""
        return self._position_bound

    def get_query(self) -> Query:
        """The query."""
        return self._query

    def is_all_partitions(self) -> bool:
        """Whether every partition is asked."""
        return self._partitions is None

    def get_partitions(self) -> frozenset[int]:
        """The partitions asked.

        Raises:
            QueryError: the request is for all partitions.
        """
        if self._partitions is None:
            raise QueryError("Cannot list partitions of an 'all partitions' request")
        return self._partitions

    def execution_info_enabled(self) -> bool:
        """Whether execution info is recorded."""
        return self._execution_info

    def is_require_active(self) -> bool:
        """Whether only active partitions may answer."""
        return self._require_active


class StateQueryResult:
    """The answer to a request (Kafka's ``StateQueryResult``): one result per partition."""

    def __init__(self) -> None:
        self._partition_results: dict[int, QueryResult] = {}
        self._global_result: QueryResult | None = None

    def set_global_result(self, result: QueryResult) -> None:
        """Set the result of a global store (catalog stores are never global)."""
        self._global_result = result

    def add_result(self, partition: int, result: QueryResult) -> None:
        """Set one partition's result."""
        self._partition_results[partition] = result

    def get_partition_results(self) -> dict[int, QueryResult]:
        """``{partition: result}`` of every partition asked, in partition order."""
        return dict(sorted(self._partition_results.items()))

    def get_only_partition_result(self) -> QueryResult | None:
        """The one successful, non-None partition result; None if there is none.

        Raises:
            QueryError: more than one partition has a non-None result.
        """
        found = [
            r for r in self._partition_results.values()
            if r.is_success() and r.get_result() is not None
        ]
        if len(found) > 1:
            raise QueryError(
                f"The query did not return exactly one partition result: {self._results_text()}"
            )
        return found[0] if found else None

    def get_global_result(self) -> QueryResult | None:
        """The global store's result: always None for a catalog store."""
        return self._global_result

    def get_position(self) -> Position:
        """Every partition's position, merged."""
        if self._global_result is not None:
            return self._global_result.get_position() or Position.empty()
        merged = Position.empty()
        for result in self._partition_results.values():
            merged.merge(result.get_position())
        return merged

    def _results_text(self) -> str:
        # Java's Map.toString: {0=SucceededQueryResult{...}, 1=...}
        inner = ", ".join(f"{p}={r!r}" for p, r in self.get_partition_results().items())
        return f"{{{inner}}}"

    def __repr__(self) -> str:
        glob = "null" if self._global_result is None else repr(self._global_result)
        return f"StateQueryResult{{partitionResults={self._results_text()}, globalResult={glob}}}"


def query(catalog: Warehouse, request: StateQueryRequest) -> StateQueryResult:
    """Run ``request`` over its catalog store, at the store's latest commit.

    Raises:
        StoreNotFoundError: the store does not exist (Kafka's UnknownStateStoreException).
        InvalidOptionError: a key of the query does not fit the store's key type, or the
            query's arguments are invalid for the store (multi-versioned from > to).
        UnsupportedQueryError: a KeyQuery or RangeQuery on a versioned store (Kafka throws).
    """
    table = catalog.load(request.get_store_name())
    spec = table.spec
    snapshot = table.log.latest_id()
    key_serde = serde_for(spec.key_type, column="key")
    value_serde = serde_for(spec.value_type, column="value")
    raw_query = request.get_query().map_keys(lambda key: _serialize_key(key_serde, key))
    # Kafka's KafkaStreams#query runs a require-active request unbounded.
    bound = (
        PositionBound.unbounded() if request.is_require_active() else request.get_position_bound()
    )
    info = request.execution_info_enabled()
    asked = (
        range(spec.num_partitions) if request.is_all_partitions()
        else sorted(request.get_partitions())
    )
    result = StateQueryResult()
    present = [p for p in asked if 0 <= p < spec.num_partitions]
    for partition in asked:
        if partition not in present:
            result.add_result(partition, QueryResult.for_failure(
                FailureReason.DOES_NOT_EXIST,
                f"store {spec.name!r} has partitions 0 to {spec.num_partitions - 1}; "
                f"partition {partition} does not exist",
            ))
    if not present:
        return result
    routing = raw_query.routing_key()
    owner = (
        None if routing is None
        else partition_of(routing, spec.num_partitions, spec.partitioner)
    )
    if owner is None:
        to_open = present
    else:
        # One partition opened: the key's own, or (if not asked) any, to learn the store's class.
        to_open = [owner if owner in present else present[0]]
    store_class: type | None = None
    for partition in to_open:
        answer, store_class = _query_partition(
            table, partition, snapshot, request.get_query(), raw_query, bound, info, key_serde,
            value_serde,
        )
        result.add_result(partition, answer)
    assert store_class is not None
    for partition in present:
        if partition not in to_open:
            answer = absent_result(
                store_class, raw_query, bound,
                position=_position(spec.name, partition, snapshot), partition=partition,
                collect_execution_info=info, described_as=request.get_query(),
            )
            result.add_result(partition, answer)
    return result


def _position(store: str, partition: int, snapshot: int) -> Position:
    return Position.empty().with_component(store, partition, snapshot)


def _query_partition(
    table: Table,
    partition: int,
    snapshot: int,
    typed_query: Query,
    raw_query: Query,
    bound: PositionBound,
    info: bool,
    key_serde: Serde,
    value_serde: Serde,
) -> tuple[QueryResult, type]:
    """One partition's typed result (iterators read while it is open) and its store's class."""
    cache = table.partition_cache(partition)

    def ask() -> tuple[QueryResult, type, bool]:
        with cache.open_at(snapshot) as (store, shared):
            raw = store_query(
                store, raw_query, bound,
                position=_position(table.spec.name, partition, snapshot),
                partition=partition, collect_execution_info=info, described_as=typed_query,
            )
            name = f"{table.spec.name}[{partition}]@{snapshot}"
            typed = _Typed(key_serde, value_serde, name)
            if raw.is_success():
                raw = raw.with_result(typed.result(raw.get_result()))
            return raw, type(store), shared

    # Damaged while queried (iterators are read here): rebuilt from the log, asked again.
    raw, store_class, shared = cache.repairing(ask)
    if info:
        where = "this machine's cache" if shared else "a private snapshot"
        raw.add_execution_info(
            f"Read partition {partition} of store {table.spec.name!r} at commit {snapshot} "
            f"from {where}"
        )
    return raw, store_class


def _replay(rows: list[Any], failure: Exception | None) -> Iterator[Any]:
    """The rows read, then the error the store's iterator raised there (Kafka's iterator throws
    at the entry it cannot return, e.g. a record with a negative timestamp)."""
    yield from rows
    if failure is not None:
        raise failure


def _serialize_key(serde: Serde, key: Any) -> bytes:
    """A typed key as the store's bytes (bytes given for a binary key pass through)."""
    return serde.serialize(key)


@dataclass(frozen=True)
class _Typed:
    """Turns a store-level result (bytes) into the store's key and value types."""

    keys: Serde
    values: Serde
    name: str  # names the partition snapshot in the iterator's errors

    def result(self, raw: Any) -> Any:
        if isinstance(raw, Iterator):
            # Read while the partition is open; handed back as Kafka's KeyValueIterator.
            rows: list[Any] = []
            failure: Exception | None = None
            try:
                for item in raw:
                    rows.append(self.element(item))
            except Exception as exc:  # re-raised where Kafka's iterator throws
                if is_rocksdb_failure(exc):
                    raise  # the partition's cache is damaged: repaired by _query_partition
                failure = exc
            finally:
                close = getattr(raw, "close", None)
                if close is not None:
                    close()
            return KeyValueIterator(_replay(rows, failure), self.name)
        return self.element(raw)

    def element(self, item: Any) -> Any:
        if isinstance(item, KeyValue):
            return KeyValue(self.key(item.key), self.value(item.value))
        if isinstance(item, ReadOnlyRecord):
            return ReadOnlyRecord(
                self.key(item.key), self.plain(item.value), item.timestamp, item.headers
            )
        return self.value(item)

    def key(self, key: Any) -> Any:
        if isinstance(key, bytes):
            return self.keys.deserialize(key)
        if isinstance(key, Windowed):
            return Windowed(self.key(key.key), key.window)
        return key  # a window start time

    def plain(self, value: Any) -> Any:
        return None if value is None else self.values.deserialize(value)

    def value(self, value: Any) -> Any:
        if isinstance(value, (bytes, type(None))):
            return self.plain(value)
        if isinstance(value, (ValueAndTimestamp, ValueAndHeaders, ValueTimestampHeaders,
                              VersionedRecord)):
            return dataclasses.replace(value, value=self.plain(value.value))
        return value


__all__ = ["StateQueryRequest", "StateQueryResult", "query"]
