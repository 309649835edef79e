"""Interactive Queries v2 over one store (Kafka's KIP-796 family), bytes in, bytes out.

Query objects carry Kafka's names in snake_case and are built with Kafka's static factories
(``KeyQuery.with_key(k)``, ``RangeQuery.with_range(lo, hi).with_descending_keys()``, ...). The
store-level :func:`query` answers one of them from one open store exactly as the store's layers
do in Kafka Streams (the metered store's query handlers, then
``StoreQueryUtils.handleBasicQueries``; checked against Kafka's own stores by
``tests/kafka/test_queries_kafka.py``): the stores without headers as Kafka Streams 4.3.1 (4.4.0
answers them the same), the KIP-1271 header-aware stores as Kafka Streams 4.4.0, the first release
that serves them (4.3.1's ``RocksDB*WithHeaders`` stores refused every query; KAFKA-20703) and
the one with KIP-1356's header queries:

| store                              | answers (result)                                            |
|------------------------------------|-------------------------------------------------------------|
| KeyValueStore                      | KeyQuery (value), RangeQuery (iterator of KeyValue)         |
| TimestampedKeyValueStore           | + TimestampedKeyQuery (ValueAndTimestamp), Timestamped-     |
|                                    | RangeQuery; KeyQuery / RangeQuery: plain values (KIP-992)   |
| TimestampedKeyValueStoreWithHeaders| the same (header-stripped), + TimestampedKeyWithHeadersQuery|
| (Kafka 4.4.0)                      | (ReadOnlyRecord), TimestampedRangeWithHeadersQuery (iterator|
|                                    | of ReadOnlyRecord)                                          |
| VersionedKeyValueStore             | VersionedKeyQuery (VersionedRecord), MultiVersionedKeyQuery |
|                                    | (iterator); KeyQuery / RangeQuery *raise* (Kafka throws     |
|                                    | UnsupportedOperationException)                              |
| WindowStore, TimestampedWindowStore| WindowKeyQuery (iterator of KeyValue(window start, value)), |
|                                    | WindowRangeQuery.with_window_start_range (KeyValue(Windowed,|
|                                    | value))                                                     |
| TimestampedWindowStoreWithHeaders  | the same (ValueAndTimestamp values), + TimestampedWindowKey-|
| (Kafka 4.4.0)                      | WithHeadersQuery, TimestampedWindowRangeWithHeadersQuery.   |
|                                    | with_window_start_range (ReadOnlyRecord, key Windowed)      |
| WindowStoreWithHeaders (no Kafka   | WindowKeyQuery, WindowRangeQuery.with_window_start_range    |
| store keeps these values)          | (plain values)                                              |
| SessionStore                       | WindowRangeQuery.with_key (KeyValue(Windowed, value))       |
| SessionStoreWithHeaders (4.4.0)    | the same (plain aggregates), + TimestampedWindowRangeWith-  |
|                                    | HeadersQuery.with_key (ReadOnlyRecord stamped with the      |
|                                    | session end)                                                |
| an adapter (``stores.adapters``)   | what the header-aware store it is served as answers (values |
| serving an older store as a header-| as Kafka's metered store gives them: over a plain window    |
| aware one                          | store plain values; records get empty headers, and a -1     |
|                                    | timestamp cannot become a record)                           |

Everything else is ``UNKNOWN_QUERY_TYPE``. A record that cannot become Kafka's ``Record`` (a
negative stored timestamp) fails a ``TimestampedKeyWithHeadersQuery`` with ``STORE_EXCEPTION``
and makes a record iterator raise ``CorruptDataError`` (Kafka: ``StreamsException``). As in
Kafka, a query type the basic layer knows (key, range, window, versioned queries, and the header
queries a store translates into them) is checked against the position bound before the store
finds out it cannot answer it, so it may fail ``NOT_UP_TO_BOUND`` first; other types fail
``UNKNOWN_QUERY_TYPE`` at once, and so does a window range query (plain or with headers) of the
form a window or session store does not take.
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
