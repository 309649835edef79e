"""Interactive Queries v2 over one store (Kafka's KIP-796 family), bytes in, bytes out.

Query objects carry Kafka's names in snake_case and are built with Kafka's static factories
(``KeyQuery.with_key(k)``, ``RangeQuery.with_range(lo, hi).with_descending_keys()``, ...). The
store-level :func:`query` answers one of them from one open store exactly as the store's layers
do in Kafka Streams 4.3.1 (the metered store's query handlers, then
``StoreQueryUtils.handleBasicQueries``; checked against Kafka's own stores by
``tests/kafka/test_queries_kafka.py``):

| store                              | answers (result)                                            |
|------------------------------------|-------------------------------------------------------------|
| KeyValueStore                      | KeyQuery (value), RangeQuery (iterator of KeyValue)         |
| TimestampedKeyValueStore           | + TimestampedKeyQuery (ValueAndTimestamp), Timestamped-     |
|                                    | RangeQuery; KeyQuery / RangeQuery: plain values (KIP-992)   |
| VersionedKeyValueStore             | VersionedKeyQuery (VersionedRecord), MultiVersionedKeyQuery |
|                                    | (iterator); KeyQuery / RangeQuery *raise* (Kafka throws     |
|                                    | UnsupportedOperationException)                              |
| WindowStore, TimestampedWindowStore| WindowKeyQuery (iterator of KeyValue(window start, value)), |
|                                    | WindowRangeQuery.with_window_start_range (KeyValue(Windowed,|
|                                    | value))                                                     |
| SessionStore                       | WindowRangeQuery.with_key (KeyValue(Windowed, value))       |
| the header-aware stores (Timestamp-| nothing: Kafka 4.3.1's ``RocksDBTimestampedStoreWithHeaders``|
| edKeyValueStoreWithHeaders, [Time- | ``RocksDBTimestampedWindowStoreWithHeaders`` and ``RocksDB- |
| stamped]WindowStoreWithHeaders,    | SessionStoreWithHeaders`` answer every query UNKNOWN_QUERY_ |
| SessionStoreWithHeaders)           | TYPE, whatever the position bound (Kafka 4.4 serves them)   |
| an adapter (``stores.adapters``)   | what the store it wraps answers, with the values Kafka's    |
| serving an older store as a header-| metered store of the served type gives (header-stripped;    |
| aware one                          | over a plain window store, plain values)                    |

Everything else is ``UNKNOWN_QUERY_TYPE``, including KIP-1356's header queries
(``TimestampedKeyWithHeadersQuery``, ``TimestampedRangeWithHeadersQuery``,
``TimestampedWindowKeyWithHeadersQuery``, ``TimestampedWindowRangeWithHeadersQuery``): they come
with Kafka 4.4 and 4.3.1 has no such classes, so its stores refuse them as any query class they
have no handler for. As in Kafka, a query type the basic layer knows (key, range, window,
versioned queries) is checked against the position bound before the store finds out it cannot
answer it, so it may fail ``NOT_UP_TO_BOUND`` first; other types fail ``UNKNOWN_QUERY_TYPE`` at
once, and so does a window range query of the form a window or session store does not take.
Timestamps are epoch ms (an aware ``datetime`` is accepted).

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
