"""Store engines: Kafka Streams' state stores over RocksDB, bytes in, bytes out.

| store                                   | module                |
|-----------------------------------------|-----------------------|
| ``KeyValueStore``                         | ``stores.key_value``    |
| ``TimestampedKeyValueStore[WithHeaders]`` | ``stores.timestamped``  |
| ``VersionedKeyValueStore``                | ``stores.versioned``    |
| ``[Timestamped]WindowStore[WithHeaders]`` | ``stores.window``       |
| ``SessionStore[WithHeaders]``             | ``stores.session``      |

Adapters that serve a store of an older format as a newer one (Kafka's
``TimestampedToHeadersStoreAdapter`` ...) are in ``stores.adapters``. Interactive Queries v2 (query objects, results, positions) live in ``stores.query``; run one
against a store with ``stores.query.query(store, query)``. Any store opens transactionally
(KIP-892: uncommitted writes, ``commit(changelog_offset)``, ``recover``) through
``stores.transactional.TransactionalStore``.
"""

from stores.adapters import (
    KeyValueToTimestampedKeyValueByteStoreAdapter,
    PlainToHeadersStoreAdapter,
    PlainToHeadersWindowStoreAdapter,
    SessionToHeadersStoreAdapter,
    TimestampedToHeadersStoreAdapter,
    TimestampedToHeadersWindowStoreAdapter,
    WindowToTimestampedWindowByteStoreAdapter,
)
from stores.errors import (
    CommitConflictError,
    CorruptDataError,
    InvalidOptionError,
    SerdeError,
    StateStoreError,
    StoreAlreadyExistsError,
    StoreClosedError,
    StoreNotFoundError,
)
from stores.iterators import KeyValueIterator
from stores.key_value import KeyValueStore
from stores.protocols import KeyValueStoreProtocol, VersionedKeyValueStoreProtocol
from stores.query import (
    FailureReason,
    KeyQuery,
    MultiVersionedKeyQuery,
    Position,
    PositionBound,
    QueryResult,
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
from stores.records import (
    UNKNOWN_TIMESTAMP,
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
    Windowed,
)
from stores.session import SessionStore, SessionStoreWithHeaders
from stores.timestamped import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders
from stores.transactional import FileChangelog, MemoryChangelog, TransactionalStore
from stores.versioned import NOT_PUT, VersionedKeyValueStore, VersionedRecord
from stores.window import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

__all__ = [
    "NOT_PUT",
    "UNKNOWN_TIMESTAMP",
    "CommitConflictError",
    "CorruptDataError",
    "FailureReason",
    "FileChangelog",
    "InvalidOptionError",
    "KeyQuery",
    "KeyValue",
    "KeyValueIterator",
    "KeyValueStore",
    "KeyValueStoreProtocol",
    "KeyValueToTimestampedKeyValueByteStoreAdapter",
    "MemoryChangelog",
    "MultiVersionedKeyQuery",
    "PlainToHeadersStoreAdapter",
    "PlainToHeadersWindowStoreAdapter",
    "Position",
    "PositionBound",
    "QueryResult",
    "RangeQuery",
    "ResultOrder",
    "SerdeError",
    "SessionStore",
    "SessionStoreWithHeaders",
    "SessionToHeadersStoreAdapter",
    "StateStoreError",
    "StoreAlreadyExistsError",
    "StoreClosedError",
    "StoreNotFoundError",
    "TimestampedKeyQuery",
    "TimestampedKeyValueStore",
    "TimestampedKeyValueStoreWithHeaders",
    "TimestampedKeyWithHeadersQuery",
    "TimestampedRangeQuery",
    "TimestampedRangeWithHeadersQuery",
    "TimestampedToHeadersStoreAdapter",
    "TimestampedToHeadersWindowStoreAdapter",
    "TimestampedWindowKeyWithHeadersQuery",
    "TimestampedWindowRangeWithHeadersQuery",
    "TimestampedWindowStore",
    "TimestampedWindowStoreWithHeaders",
    "TransactionalStore",
    "ValueAndHeaders",
    "ValueAndTimestamp",
    "ValueTimestampHeaders",
    "VersionedKeyQuery",
    "VersionedKeyValueStore",
    "VersionedKeyValueStoreProtocol",
    "VersionedRecord",
    "Window",
    "WindowKeyQuery",
    "WindowRangeQuery",
    "WindowStore",
    "WindowStoreWithHeaders",
    "WindowToTimestampedWindowByteStoreAdapter",
    "Windowed",
]
