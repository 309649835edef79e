"""Adapters that let a store of an older value format serve where a newer one is expected.

Kafka wraps a user-supplied store of an older format in an adapter when a newer store type is
asked for (KIP-258 for timestamps; KIP-1271 / KIP-1285 for headers): the adapter strips what the
older store cannot keep on write and fills in defaults on read. Kafka's adapters work on bytes;
ours sit on the typed stores, through their public API only, with the same effect.

========================================================  =================================
adapter (Kafka's name): store wrapped -> served as        write keeps -> read gives
========================================================  =================================
``KeyValueToTimestampedKeyValueByteStoreAdapter``:        value -> timestamp -1
``KeyValueStore`` -> ``TimestampedKeyValueStore``
``TimestampedToHeadersStoreAdapter``:                     value, timestamp -> empty headers
``TimestampedKeyValueStore`` -> ``...WithHeaders``
``PlainToHeadersStoreAdapter``:                           value -> timestamp -1, empty
``KeyValueStore`` -> ``TimestampedKeyValueStoreWithHeaders``  headers
``WindowToTimestampedWindowByteStoreAdapter``:            value -> timestamp -1
``WindowStore`` -> ``TimestampedWindowStore``
``TimestampedToHeadersWindowStoreAdapter``:               value, timestamp -> empty headers
``TimestampedWindowStore`` -> ``...WithHeaders``
``PlainToHeadersWindowStoreAdapter``:                     value -> timestamp -1, empty
``WindowStore`` -> ``TimestampedWindowStoreWithHeaders``  headers
``SessionToHeadersStoreAdapter``:                         aggregate -> empty headers
``SessionStore`` -> ``SessionStoreWithHeaders``
========================================================  =================================

Kafka has no adapter in the other direction (a header store served as a plain one) and none for
the plain-value-with-headers ``WindowStoreWithHeaders`` (KIP-1300, still a draft).
``SessionToHeadersStoreAdapter`` (KIP-1271, with its iterator ``SessionToHeadersIteratorAdapter``,
here :class:`MappingKeyValueIterator`) strips the headers of the ``ValueAndHeaders`` aggregate on
``put`` and gives ``ValueAndHeaders(aggregate, ())`` on ``fetch_session`` and every iterator;
``remove`` and lifecycle go straight to the store. (Kafka also refuses a non-persistent store;
every store here is persistent.)

Every adapter names the store family it serves (``query_family``), so IQv2
(:func:`stores.query.query`) answers it as that store type, through the adapter's API; Kafka's
adapters likewise sit under the metered store of the newer type, which handles the queries.

Rules, as Kafka's:

- A None value, or a record whose value is None, deletes (Kafka's serializers turn both into
  null bytes). Headers given on write are dropped; so is the timestamp for a plain store.
- Reads, ``put_if_absent`` and ``delete`` return the newer record type with the defaults:
  timestamp ``-1`` (``UNKNOWN_TIMESTAMP``) and empty headers.
- Iterators keep ``has_next`` / ``peek_next_key`` / ``close`` of the store's iterator and map
  each value (Kafka's ``MappingKeyValueIteratorAdapter``).
- The constructor refuses a store of the wrong format (Kafka: ``IllegalArgumentException``,
  "Provided store must be a timestamped store, but it is not."); closing the adapter closes the
  store. Window properties (retention, size, ...) are the store's (Kafka's
  ``WithRetentionPeriod`` on the adapters).
"""

from stores.adapters._base import MappingKeyValueIterator
from stores.adapters.key_value import (
    KeyValueToTimestampedKeyValueByteStoreAdapter,
    PlainToHeadersStoreAdapter,
    TimestampedToHeadersStoreAdapter,
)
from stores.adapters.session import SessionToHeadersStoreAdapter
from stores.adapters.window import (
    PlainToHeadersWindowStoreAdapter,
    TimestampedToHeadersWindowStoreAdapter,
    WindowToTimestampedWindowByteStoreAdapter,
)

# The public classes keep this package as their module, as before the split: Java-style class
# names in IQv2 messages (``class stores.adapters.…``), reprs and pickles are unchanged.
for _cls in (
    KeyValueToTimestampedKeyValueByteStoreAdapter,
    MappingKeyValueIterator,
    PlainToHeadersStoreAdapter,
    PlainToHeadersWindowStoreAdapter,
    SessionToHeadersStoreAdapter,
    TimestampedToHeadersStoreAdapter,
    TimestampedToHeadersWindowStoreAdapter,
    WindowToTimestampedWindowByteStoreAdapter,
):
    _cls.__module__ = __name__
del _cls

__all__ = [
    "KeyValueToTimestampedKeyValueByteStoreAdapter",
    "MappingKeyValueIterator",
    "PlainToHeadersStoreAdapter",
    "PlainToHeadersWindowStoreAdapter",
    "SessionToHeadersStoreAdapter",
    "TimestampedToHeadersStoreAdapter",
    "TimestampedToHeadersWindowStoreAdapter",
    "WindowToTimestampedWindowByteStoreAdapter",
]
