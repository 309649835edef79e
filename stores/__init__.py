"""Store engines: Kafka Streams' state stores over RocksDB, bytes in, bytes out."""

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
from stores.key_value import KeyValueStore
from stores.protocols import KeyValueStoreProtocol, VersionedKeyValueStoreProtocol
from stores.versioned import NOT_PUT, VersionedKeyValueStore, VersionedRecord

__all__ = [
    "NOT_PUT",
    "CommitConflictError",
    "CorruptDataError",
    "InvalidOptionError",
    "KeyValueStore",
    "KeyValueStoreProtocol",
    "SerdeError",
    "StateStoreError",
    "StoreAlreadyExistsError",
    "StoreClosedError",
    "StoreNotFoundError",
    "VersionedKeyValueStore",
    "VersionedKeyValueStoreProtocol",
    "VersionedRecord",
]
