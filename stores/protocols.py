"""Store capabilities as Protocols (Kafka's ``KeyValueStore``, ``VersionedKeyValueStore``),
and the record a versioned store answers with (Kafka's ``VersionedRecord``, which sits beside
those interfaces in ``org.apache.kafka.streams.state``).

Below every kind: the kinds implement these, none is imported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class VersionedRecord:
    """One version of a key: its value, ``validFrom`` timestamp and ``validTo`` (None: latest)."""

    value: bytes
    timestamp: int
    valid_to: int | None = None


@runtime_checkable
class KeyValueStoreProtocol(Protocol):
    """A byte key-value store: put/get/delete/put_if_absent/range/all in key byte order."""

    def put(self, key: bytes, value: bytes | None) -> None: ...
    def put_if_absent(self, key: bytes, value: bytes | None) -> bytes | None: ...
    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None: ...
    def get(self, key: bytes) -> bytes | None: ...
    def delete(self, key: bytes) -> bytes | None: ...
    def range(
        self, start: bytes | None = None, end: bytes | None = None, *, reverse: bool = False
    ) -> Iterator[tuple[bytes, bytes]]: ...
    def all(self, *, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...
    def close(self) -> None: ...


@runtime_checkable
class VersionedKeyValueStoreProtocol(Protocol):
    """A versioned byte store with Kafka's KIP-889/960/968 semantics."""

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int: ...
    def get(self, key: bytes, as_of: int | None = None) -> VersionedRecord | None: ...
    def delete(self, key: bytes, timestamp: int) -> VersionedRecord | None: ...
    def versions(
        self,
        key: bytes,
        from_ts: int | None = None,
        to_ts: int | None = None,
        ascending: bool = False,
    ) -> list[VersionedRecord]: ...
    def close(self) -> None: ...


__all__ = ["KeyValueStoreProtocol", "VersionedKeyValueStoreProtocol", "VersionedRecord"]
