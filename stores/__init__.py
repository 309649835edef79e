"""Store engines: Kafka Streams' state stores over RocksDB, bytes in, bytes out.

| store                                     | module                       |
|-------------------------------------------|------------------------------|
| ``KeyValueStore``                         | ``stores.key_value.store``   |
| ``TimestampedKeyValueStore[WithHeaders]`` | ``stores.timestamped.store`` |
| ``VersionedKeyValueStore``                | ``stores.versioned.store``   |
| ``[Timestamped]WindowStore[WithHeaders]`` | ``stores.window.store``      |
| ``SessionStore[WithHeaders]``             | ``stores.session.store``     |

Adapters that serve a store of an older format as a newer one (Kafka's
``TimestampedToHeadersStoreAdapter`` ...) are in ``stores.adapters``. Interactive Queries v2
(query objects, results, positions) live in ``stores.query``; run one against a store with
``stores.query.query(store, query)``. Any store opens transactionally (KIP-892: uncommitted
writes, ``commit(changelog_offset)``, ``recover``) through
``stores.transactional.TransactionalStore``. Any store logs Kafka's changelog records (Kafka's
``ChangeLogging*BytesStore``) through ``stores.change_logging.ChangeLoggingStore``, and
``stores.change_logging.restore`` applies such records as Kafka's restore does.

Import direction: each layer imports only the layers after it, and no kind imports another.

1. ``stores.query`` (IQv2), ``stores.adapters`` and ``stores.change_logging``: over the kinds;
2. the kinds, one folder each (``key_value``, ``timestamped``, ``versioned``, ``window``,
   ``session``): store, format, lookups, columns, changelog (the kind's change-logging and
   restore rules) and the kind's engine, which the catalog's kinds link to; and ``stores.transactional``, which opens any of them;
3. ``stores.segments``: the segmented engine under window and session stores, and what their
   kind engines share;
   ``stores.engine``: what a kind's engine is (``StoreEngine``), the vocabulary of scans;
4. ``stores.bytes``: the ``BytesStore`` protocol the kinds use, RocksDB behind it, SST files;
5. ``stores.columns``, ``stores.formats``, ``stores.iterators``: columnar helpers, byte layouts
   shared by kinds, store iterators;
6. ``stores.protocols``, ``stores.records``, ``stores.serdes``, ``stores.types``,
   ``stores.checks``, ``stores.time``, ``stores.query.queries`` (the query classes a kind's
   engine builds), ``stores.errors``.

Names load on first use (PEP 562): Spark imports ``stores.errors`` in every Python worker that
plans or commits a query, and the engines behind this package (RocksDB, pyarrow) are not needed
there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stores.adapters import (
        KeyValueToTimestampedKeyValueByteStoreAdapter,
        PlainToHeadersStoreAdapter,
        PlainToHeadersWindowStoreAdapter,
        SessionToHeadersStoreAdapter,
        TimestampedToHeadersStoreAdapter,
        TimestampedToHeadersWindowStoreAdapter,
        WindowToTimestampedWindowByteStoreAdapter,
    )
    from stores.change_logging import ChangeLoggingStore, RestoreCounts, restore
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
    from stores.key_value.store import KeyValueStore
    from stores.protocols import (
        KeyValueStoreProtocol,
        VersionedKeyValueStoreProtocol,
        VersionedRecord,
    )
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
        ChangelogRecord,
        KeyValue,
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
    from stores.transaction_log import FileChangelog, MemoryChangelog
    from stores.transactional import TransactionalStore
    from stores.versioned.put import NOT_PUT
    from stores.versioned.store import VersionedKeyValueStore
    from stores.window.store import (
        TimestampedWindowStore,
        TimestampedWindowStoreWithHeaders,
        WindowStore,
        WindowStoreWithHeaders,
    )

_MODULE_OF = {
    "ChangeLoggingStore": "stores.change_logging",
    "ChangelogRecord": "stores.records",
    "CommitConflictError": "stores.errors",
    "CorruptDataError": "stores.errors",
    "FailureReason": "stores.query",
    "FileChangelog": "stores.transaction_log",
    "InvalidOptionError": "stores.errors",
    "KeyQuery": "stores.query",
    "KeyValue": "stores.records",
    "KeyValueIterator": "stores.iterators",
    "KeyValueStore": "stores.key_value.store",
    "KeyValueStoreProtocol": "stores.protocols",
    "KeyValueToTimestampedKeyValueByteStoreAdapter": "stores.adapters",
    "MemoryChangelog": "stores.transaction_log",
    "MultiVersionedKeyQuery": "stores.query",
    "NOT_PUT": "stores.versioned.put",
    "PlainToHeadersStoreAdapter": "stores.adapters",
    "PlainToHeadersWindowStoreAdapter": "stores.adapters",
    "Position": "stores.query",
    "PositionBound": "stores.query",
    "QueryResult": "stores.query",
    "RestoreCounts": "stores.change_logging",
    "RangeQuery": "stores.query",
    "ResultOrder": "stores.query",
    "SerdeError": "stores.errors",
    "SessionStore": "stores.session.store",
    "SessionStoreWithHeaders": "stores.session.store",
    "SessionToHeadersStoreAdapter": "stores.adapters",
    "StateStoreError": "stores.errors",
    "StoreAlreadyExistsError": "stores.errors",
    "StoreClosedError": "stores.errors",
    "StoreNotFoundError": "stores.errors",
    "TimestampedKeyQuery": "stores.query",
    "TimestampedKeyValueStore": "stores.timestamped.store",
    "TimestampedKeyValueStoreWithHeaders": "stores.timestamped.store",
    "TimestampedKeyWithHeadersQuery": "stores.query",
    "TimestampedRangeQuery": "stores.query",
    "TimestampedRangeWithHeadersQuery": "stores.query",
    "TimestampedToHeadersStoreAdapter": "stores.adapters",
    "TimestampedToHeadersWindowStoreAdapter": "stores.adapters",
    "TimestampedWindowKeyWithHeadersQuery": "stores.query",
    "TimestampedWindowRangeWithHeadersQuery": "stores.query",
    "TimestampedWindowStore": "stores.window.store",
    "TimestampedWindowStoreWithHeaders": "stores.window.store",
    "TransactionalStore": "stores.transactional",
    "UNKNOWN_TIMESTAMP": "stores.records",
    "ValueAndHeaders": "stores.records",
    "ValueAndTimestamp": "stores.records",
    "ValueTimestampHeaders": "stores.records",
    "VersionedKeyQuery": "stores.query",
    "VersionedKeyValueStore": "stores.versioned.store",
    "VersionedKeyValueStoreProtocol": "stores.protocols",
    "VersionedRecord": "stores.protocols",
    "Window": "stores.records",
    "WindowKeyQuery": "stores.query",
    "WindowRangeQuery": "stores.query",
    "WindowStore": "stores.window.store",
    "WindowStoreWithHeaders": "stores.window.store",
    "WindowToTimestampedWindowByteStoreAdapter": "stores.adapters",
    "Windowed": "stores.records",
    "restore": "stores.change_logging",
}

__all__ = [
    "NOT_PUT",
    "UNKNOWN_TIMESTAMP",
    "ChangeLoggingStore",
    "ChangelogRecord",
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
    "RestoreCounts",
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
    "restore",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'stores' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
