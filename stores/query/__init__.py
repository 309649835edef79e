"""Interactive Queries v2 over one store (Kafka's KIP-796 family), bytes in, bytes out.

Query objects carry Kafka's names in snake_case and are built with Kafka's static factories
(``KeyQuery.with_key(k)``, ``RangeQuery.with_range(lo, hi).with_descending_keys()``, ...). The
store-level :func:`query` answers one of them from one open store exactly as the store's layers
do in Kafka (the metered store's query handlers, then ``StoreQueryUtils.handleBasicQueries``):

| store                              | answers (result)                                            |
|------------------------------------|-------------------------------------------------------------|
| KeyValueStore                      | KeyQuery (value), RangeQuery (iterator of KeyValue)         |
| TimestampedKeyValueStore           | + TimestampedKeyQuery (ValueAndTimestamp), Timestamped-     |
|                                    | RangeQuery; KeyQuery / RangeQuery: plain values (KIP-992)   |
| TimestampedKeyValueStoreWithHeaders| + TimestampedKeyWithHeadersQuery (ReadOnlyRecord),          |
|                                    | TimestampedRangeWithHeadersQuery (iterator of records)      |
| VersionedKeyValueStore             | VersionedKeyQuery (VersionedRecord), MultiVersionedKeyQuery |
|                                    | (iterator); KeyQuery / RangeQuery *raise* (Kafka throws     |
|                                    | UnsupportedOperationException)                              |
| WindowStore (+ timestamped,        | WindowKeyQuery (iterator of KeyValue(window start, value)), |
| headers)                           | WindowRangeQuery.with_window_start_range (KeyValue(Windowed,|
|                                    | value)); header-aware stores give header-stripped values    |
| TimestampedWindowStoreWithHeaders  | + TimestampedWindowKeyWithHeadersQuery, TimestampedWindow-  |
|                                    | RangeWithHeadersQuery.with_window_start_range (records)     |
| SessionStore (+ headers)           | WindowRangeQuery.with_key (KeyValue(Windowed, value)); with |
|                                    | headers also TimestampedWindowRangeWithHeadersQuery.with_key|
|                                    | (records stamped with the session end)                      |

Everything else is ``UNKNOWN_QUERY_TYPE``. As in Kafka, a query type the basic layer knows
(key, range, window, versioned queries) is checked against the position bound before the store
finds out it cannot answer it, so it may fail ``NOT_UP_TO_BOUND`` first; other types fail
``UNKNOWN_QUERY_TYPE`` at once. Timestamps are epoch ms (an aware ``datetime`` is accepted).

Modules: :mod:`~stores.query.position` (``Position``, ``PositionBound``, ``is_permitted``),
:mod:`~stores.query.results` (``QueryResult``, ``FailureReason``),
:mod:`~stores.query.queries` (the query classes and ``ResultOrder``),
:mod:`~stores.query.dispatch` (``query``, ``absent_result``, ``store_family`` and the
per-store handlers). ``QueryError`` and ``UnsupportedQueryError`` live in
:mod:`stores.errors`, ``ReadOnlyRecord`` in :mod:`stores.records`; all are re-exported here.
"""

from stores.errors import QueryError, UnsupportedQueryError
from stores.query.dispatch import absent_result, query, store_family
from stores.query.position import Position, PositionBound, is_permitted
from stores.query.queries import (
    KeyQuery,
    MultiVersionedKeyQuery,
    Query,
    RangeQuery,
    ResultOrder,
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
from stores.query.results import FailureReason, QueryResult
from stores.records import ReadOnlyRecord

__all__ = [
    "FailureReason",
    "KeyQuery",
    "MultiVersionedKeyQuery",
    "Position",
    "PositionBound",
    "Query",
    "QueryError",
    "QueryResult",
    "RangeQuery",
    "ReadOnlyRecord",
    "ResultOrder",
    "TimestampedKeyQuery",
    "TimestampedKeyWithHeadersQuery",
    "TimestampedRangeQuery",
    "TimestampedRangeWithHeadersQuery",
    "TimestampedWindowKeyWithHeadersQuery",
    "TimestampedWindowRangeWithHeadersQuery",
    "UnsupportedQueryError",
    "VersionedKeyQuery",
    "WindowKeyQuery",
    "WindowRangeQuery",
    "absent_result",
    "is_permitted",
    "query",
    "store_family",
]
