"""Timestamped key-value stores (Kafka's ``RocksDBTimestampedStore``, KIP-258, and
``RocksDBTimestampedStoreWithHeaders``, KIP-1271), with Kafka's lazy upgrade of older formats.

| store                                   | column family                       | value    |
|-----------------------------------------|-------------------------------------|----------|
| ``TimestampedKeyValueStore``            | ``keyValueWithTimestamp``           | ts v     |
| ``TimestampedKeyValueStoreWithHeaders`` | ``keyValueWithTimestampAndHeaders`` | n h ts v |

(``ts``: 8-byte big-endian timestamp; ``n``: varint size of the headers bytes ``h``; ``v``:
the value.)
Byte layouts: :mod:`stores.formats.timestamped` and :mod:`stores.formats.headers`.

Upgrade, as Kafka's ``DualColumnFamilyAccessor`` does it. When a store is opened, it looks at the
column family of the older format once: if it holds any entry the store runs in *upgrade mode*
until it is reopened, else in *regular mode* and the older column family is never read again.

* ``TimestampedKeyValueStore``: the older format is plain values in ``default``; they read with
  timestamp -1 ("unknown").
* ``TimestampedKeyValueStoreWithHeaders``: if ``keyValueWithTimestamp`` holds entries the store
  upgrades from it (empty headers in front); otherwise, if ``default`` holds entries, from plain
  values (empty headers, timestamp -1). Both at once is an inconsistent state Kafka refuses.
* Opening a store whose headers column family holds entries as a ``TimestampedKeyValueStore``
  is a downgrade, refused as in Kafka.

In upgrade mode ``get`` (and so ``put_if_absent``) of an entry found only in the older column
family writes it converted into the new one and deletes the old one, which is correct only
because the changelog already holds the same data; ``put`` and ``delete`` remove the key from
the older column family as well; iterators merge both column families (the new format wins on
equal keys) without migrating anything. A store over a read-only bytes store converts on read
and writes nothing. Both stores share the accessor
:class:`stores.timestamped.dual.DualFormatStore`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from stores.bytes.protocol import DEFAULT_CF
from stores.checks import checked_long, checked_optional_bytes
from stores.columns.arguments import check_same_length
from stores.errors import CorruptDataError, InvalidOptionError
from stores.formats.headers import (
    EMPTY_HEADERS_PREFIX,
    convert_from_plain_to_header_format,
    convert_to_header_format,
    decode_headers,
    encode_headers,
    split_headers,
    with_headers,
)
from stores.formats.timestamped import (
    TIMESTAMP_SIZE,
    TIMESTAMPED_CF,
    convert_to_timestamped,
    decode_timestamped,
    encode_timestamped,
    raw_timestamp,
)
from stores.iterators import KeyValueIterator
from stores.records import ValueAndTimestamp, ValueTimestampHeaders
from stores.timestamped.dual import DualFormatStore, Legacy

#: The column family of KIP-1271's key-value format (``RocksDBTimestampedStoreWithHeaders``).
TIMESTAMPED_WITH_HEADERS_CF = "keyValueWithTimestampAndHeaders"


class TimestampedKeyValueStore(DualFormatStore[ValueAndTimestamp[bytes]]):
    """A byte key-value store whose values carry a timestamp (Kafka's
    ``TimestampedKeyValueStore`` over ``RocksDBTimestampedStore``).

    Values are ``ValueAndTimestamp[bytes]``; iterators yield ``KeyValue(key, ValueAndTimestamp)``.

    Args:
        path: directory of the RocksDB database; created if missing, upgraded lazily if it holds
            plain values (a ``KeyValueStore``'s). None with ``db``.
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path; its owner commits and closes it (see :meth:`over`).

    Raises:
        CorruptDataError: the database holds a headers-aware store (a downgrade).
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    _NEW_CF = TIMESTAMPED_CF
    _KIND = "timestamped key-value"

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """``default`` (plain values to upgrade), ``keyValueWithTimestamp`` (the data), and the
        headers column family, read only to refuse a downgrade."""
        return (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_WITH_HEADERS_CF)

    def _detect_legacy(self) -> Legacy | None:
        if self._has_entries(TIMESTAMPED_WITH_HEADERS_CF):
            raise CorruptDataError(
                f"Store at {self._db.path} is a headers-aware store and cannot be opened as a "
                "timestamped store. Downgrade from headers-aware to timestamped store is not "
                "supported. To downgrade, delete the local state and rebuild the store as a "
                "timestamped store from its changelog."
            )
        if self._has_entries(DEFAULT_CF):
            return DEFAULT_CF, convert_to_timestamped
        return None

    def _encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, ValueAndTimestamp):
            raise InvalidOptionError(
                f"value must be a ValueAndTimestamp or None, got {type(value).__name__}"
            )
        payload = _checked_value(value.value)
        if payload is None:
            return None  # Kafka's serializer turns a null inner value into a delete
        return encode_timestamped(payload, _checked_timestamp(value.timestamp))

    def _decode(self, raw: bytes) -> ValueAndTimestamp[bytes]:
        return decode_timestamped(raw)

    def put_columns(
        self, keys: list[bytes], values: list[bytes | None], timestamps: list[int]
    ) -> None:
        """Put ``keys[i] -> ValueAndTimestamp(values[i], timestamps[i])`` in order, as one
        atomic batch (a None value deletes): the bulk-load path.

        Raises:
            InvalidOptionError: the lists differ in length, or hold a wrong key, value or
                timestamp (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        check_same_length("put_columns", (keys, values, timestamps))
        try:
            raws = [
                None if v is None else encode_timestamped(v, t)
                for v, t in zip(values, timestamps)
            ]
        except (TypeError, struct.error) as exc:
            raise InvalidOptionError(
                f"values must be bytes or None and timestamps 64-bit integers: {exc}"
            ) from None
        self._put_raw_columns(keys, raws)

    def scan_columns(
        self, batch_rows: int = 1 << 16
    ) -> Iterator[tuple[list[bytes], list[bytes], list[int]]]:
        """Every entry in key byte order, as (keys, values, timestamps) lists of up to
        ``batch_rows``, both column families merged: the full-scan path.

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer.
            StoreClosedError: the store is closed.
            CorruptDataError: a stored value is shorter than its timestamp.
        """
        return _timestamped_columns(self._scan_raw(batch_rows))


class TimestampedKeyValueStoreWithHeaders(DualFormatStore[ValueTimestampHeaders[bytes]]):
    """A byte key-value store whose values carry a timestamp and record headers (Kafka's
    ``TimestampedKeyValueStoreWithHeaders`` over ``RocksDBTimestampedStoreWithHeaders``).

    Values are ``ValueTimestampHeaders[bytes]``.

    Args:
        path: directory of the RocksDB database; created if missing, upgraded lazily if it holds
            timestamped values (a ``TimestampedKeyValueStore``'s) or plain ones. None with
            ``db``.
        db: an open bytes store (opened with :meth:`column_families`) to wrap instead of a
            path; its owner commits and closes it (see :meth:`over`).

    Raises:
        CorruptDataError: the database holds both plain and timestamped entries.
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    _NEW_CF = TIMESTAMPED_WITH_HEADERS_CF
    _KIND = "timestamped key-value with headers"

    @staticmethod
    def column_families() -> tuple[str, ...]:
        """``default`` and ``keyValueWithTimestamp`` (older formats to upgrade) and
        ``keyValueWithTimestampAndHeaders`` (the data)."""
        return (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_WITH_HEADERS_CF)

    def _detect_legacy(self) -> Legacy | None:
        plain = self._has_entries(DEFAULT_CF)
        if self._has_entries(TIMESTAMPED_CF):
            if plain:
                raise CorruptDataError(
                    f"Inconsistent store state for the store at {self._db.path}. Cannot have "
                    "both plain (DEFAULT) and timestamped data simultaneously. Headers store "
                    "can upgrade from either plain or timestamped format, but not both."
                )
            return TIMESTAMPED_CF, convert_to_header_format
        if plain:
            return DEFAULT_CF, convert_from_plain_to_header_format
        return None

    def _encode(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, ValueTimestampHeaders):
            raise InvalidOptionError(
                f"value must be a ValueTimestampHeaders or None, got {type(value).__name__}"
            )
        payload = _checked_value(value.value)
        if payload is None:
            return None  # Kafka's serializer turns a null inner value into a delete
        headers_bytes = encode_headers(value.headers)  # refuses keys that are not UTF-8
        return with_headers(
            headers_bytes, encode_timestamped(payload, _checked_timestamp(value.timestamp))
        )

    def _decode(self, raw: bytes) -> ValueTimestampHeaders[bytes]:
        headers_bytes, payload = split_headers(raw)
        record = decode_timestamped(payload)
        return ValueTimestampHeaders(record.value, record.timestamp, decode_headers(headers_bytes))

    def put_columns(
        self,
        keys: list[bytes],
        values: list[bytes | None],
        timestamps: list[int],
        headers: list[bytes] | None = None,
    ) -> None:
        """Put ``keys[i] -> (values[i], timestamps[i], headers[i])`` in order, as one atomic
        batch (a None value deletes): the bulk-load path.

        ``headers`` are already encoded ``headersBytes`` (see :mod:`stores.formats.headers`),
        stored as given, not parsed; an empty or None item means no headers, and so does
        ``headers=None`` for every row.

        Raises:
            InvalidOptionError: the lists differ in length, or hold a wrong key, value,
                timestamp or headers (nothing is written).
            StoreClosedError: the store is closed.
        """
        self._check_open()
        check_same_length(
            "put_columns", (keys, values, timestamps, *(() if headers is None else (headers,)))
        )
        try:
            if headers is None:
                raws = [
                    None if v is None else EMPTY_HEADERS_PREFIX + encode_timestamped(v, t)
                    for v, t in zip(values, timestamps)
                ]
            else:
                raws = [
                    None if v is None else _headed(h, encode_timestamped(v, t))
                    for v, t, h in zip(values, timestamps, headers)
                ]
        except (TypeError, struct.error) as exc:
            raise InvalidOptionError(
                "values must be bytes or None, timestamps 64-bit integers and headers "
                f"bytes: {exc}"
            ) from None
        self._put_raw_columns(keys, raws)

    def scan_columns(
        self, batch_rows: int = 1 << 16
    ) -> Iterator[tuple[list[bytes], list[bytes], list[int], list[bytes]]]:
        """Every entry in key byte order, as (keys, values, timestamps, headersBytes) lists of
        up to ``batch_rows``, all column families merged: the full-scan path.

        Raises:
            InvalidOptionError: ``batch_rows`` is not a positive integer.
            StoreClosedError: the store is closed.
            CorruptDataError: a stored value does not follow the layout.
        """
        return _headers_columns(self._scan_raw(batch_rows))




def _timestamped_columns(
    batches: Iterator[tuple[list[bytes], list[bytes]]],
) -> Iterator[tuple[list[bytes], list[bytes], list[int]]]:
    for keys, raws in batches:
        timestamps = [raw_timestamp(raw) for raw in raws]
        yield keys, [raw[TIMESTAMP_SIZE:] for raw in raws], timestamps


def _headers_columns(
    batches: Iterator[tuple[list[bytes], list[bytes]]],
) -> Iterator[tuple[list[bytes], list[bytes], list[int], list[bytes]]]:
    for keys, raws in batches:
        headers: list[bytes] = []
        payloads: list[bytes] = []
        add_headers, add_payload = headers.append, payloads.append
        for raw in raws:
            if raw[:1] == EMPTY_HEADERS_PREFIX:  # the common case: no headers, no parsing
                add_headers(b"")
                add_payload(raw[1:])
            else:
                h, p = split_headers(raw)
                add_headers(h)
                add_payload(p)
        timestamps = [raw_timestamp(p) for p in payloads]
        yield keys, [p[TIMESTAMP_SIZE:] for p in payloads], timestamps, headers


def _headed(headers_bytes: bytes | None, payload: bytes) -> bytes:
    """``with_headers``, with None or empty headers as the one-byte prefix ``00``."""
    if not headers_bytes:
        return EMPTY_HEADERS_PREFIX + payload
    return with_headers(headers_bytes, payload)


# -- argument checks ----------------------------------------------------------------------------


def _checked_value(value: Any) -> bytes | None:
    return checked_optional_bytes(value, "the record's value")


def _checked_timestamp(value: Any) -> int:
    return checked_long(value, "timestamp")


__all__ = [
    "TIMESTAMPED_WITH_HEADERS_CF",
    "KeyValueIterator",
    "TimestampedKeyValueStore",
    "TimestampedKeyValueStoreWithHeaders",
]
