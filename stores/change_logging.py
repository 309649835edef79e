"""Kafka's change-logging layer over any typed store, and Kafka's restore from a changelog.

Kafka composes metered → caching → change-logging → RocksDB in one builder; here
:class:`ChangeLoggingStore` is that change-logging layer: it wraps one of our typed stores,
passes reads through, and makes every write also send the :class:`~stores.records.ChangelogRecord`
Kafka's ``ChangeLogging*BytesStore`` of the kind sends, in order, to a sink. Which records a
kind's write sends, and how a restore applies them, is the kind's own
(``stores/<kind>/changelog.py``); this module only picks the kind's rules from
:data:`CHANGE_LOGGING` and holds the record context.

The record context is Kafka's ``context.timestamp()`` and ``context.headers()``: the time and
headers of the input record being processed, which a kind logs where the value carries none
(a plain store's puts, every delete of a key-value store, window and session stores). Set
``record_timestamp`` (and ``record_headers``) before each write, or pass them to :meth:`call`::

    logged = ChangeLoggingStore(TimestampedKeyValueStore(path))
    logged.record_timestamp = 42
    logged.put(b"k", ValueAndTimestamp(b"v", 7))   # logs (b"k", b"v", 7, ())
    logged.delete(b"k")                              # logs (b"k", None, 42, ())
    logged.records                                   # both, in order
    restore(TimestampedKeyValueStore(other), logged.records)

:meth:`ChangeLoggingStore.call` runs one operation named as Kafka names it (``putIfAbsent``,
``backwardFetch``), the shape of the Kafka harness's ops ``{"m", "a", "rt"}``.

Restore (:func:`restore`) is Kafka's: records with a None key are skipped
(``StoreChangelogReader``), the rest applied batch by batch through the kind's record
converter (``StateManagerUtil.converterForStore``) and restore rules (segmented and versioned
stores drop records expired as of the batch, so the batch size matters there).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from stores.errors import InvalidOptionError
from stores.key_value import changelog as key_value
from stores.key_value.store import KeyValueStore
from stores.records import ChangelogRecord, Headers, to_headers
from stores.session import changelog as session
from stores.session.store import SessionStore, SessionStoreWithHeaders
from stores.timestamped import changelog as timestamped
from stores.timestamped.store import (
    TimestampedKeyValueStore,
    TimestampedKeyValueStoreWithHeaders,
)
from stores.versioned import changelog as versioned
from stores.versioned.store import VersionedKeyValueStore
from stores.window import changelog as window
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)


@dataclass(frozen=True)
class KindChangelog:
    """A kind's change-logging rules: its logged writes (a class built over the store and a
    :class:`~stores.records.ChangeLogContext`) and its restore of one batch."""

    logging: Callable[[Any, Any], Any]
    restore_batch: Callable[[Any, Sequence[ChangelogRecord]], int]


#: Each store class and its kind's rules (Kafka's builders pick the change-logging class the
#: same way: one per store builder).
CHANGE_LOGGING: dict[type, KindChangelog] = {
    KeyValueStore: KindChangelog(key_value.KeyValueChangeLogging, key_value.restore_batch),
    **{
        cls: KindChangelog(timestamped.TimestampedChangeLogging, timestamped.restore_batch)
        for cls in (TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders)
    },
    VersionedKeyValueStore: KindChangelog(
        versioned.VersionedChangeLogging, versioned.restore_batch
    ),
    **{
        cls: KindChangelog(window.WindowChangeLogging, window.restore_batch)
        for cls in (
            WindowStore,
            TimestampedWindowStore,
            WindowStoreWithHeaders,
            TimestampedWindowStoreWithHeaders,
        )
    },
    **{
        cls: KindChangelog(session.SessionChangeLogging, session.restore_batch)
        for cls in (SessionStore, SessionStoreWithHeaders)
    },
}


def rules_for(store: Any) -> KindChangelog:
    """The change-logging rules of ``store``'s class (or of its nearest listed base).

    Raises:
        InvalidOptionError: the store is of no kind listed in :data:`CHANGE_LOGGING`.
    """
    for cls in type(store).__mro__:
        found = CHANGE_LOGGING.get(cls)
        if found is not None:
            return found
    names = ", ".join(sorted(c.__name__ for c in CHANGE_LOGGING))
    raise InvalidOptionError(
        f"no change logging for a {type(store).__name__}; accepted: {names}",
        code="UNSUPPORTED_STORE",
    )


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def snake_case(kafka_method: str) -> str:
    """Our name of a Kafka method: ``putIfAbsent`` -> ``put_if_absent``."""
    return _CAMEL.sub("_", kafka_method).lower()


Sink = Callable[[ChangelogRecord], None]
#: Our stores' bulk writes, which no Kafka store has: refused through the logging layer, whose
#: changelog would silently miss them.
UNLOGGED_WRITES = frozenset({"put_columns", "put_many"})
T = TypeVar("T", bound="ChangeLoggingStore")


class ChangeLoggingStore:
    """A typed store whose writes also log Kafka's changelog records (Kafka's
    ``ChangeLogging*BytesStore`` of the store's kind).

    Writes (the kind's ``WRITES``: ``put``, ``put_if_absent``, ``put_all``, ``delete``,
    ``remove``) go to the store, then log; everything else is the store's own attribute.

    Args:
        store: one of our typed stores (see :data:`CHANGE_LOGGING`); closing this closes it.
        sink: where records go: a callable taking each record, or a list to append to;
            None: :attr:`records`, a list kept here.
        record_timestamp: Kafka's ``context.timestamp()`` for the next writes (settable).
        record_headers: the processed record's headers (settable).

    Raises:
        InvalidOptionError: ``store`` is of no supported class, or ``record_timestamp`` is
            not an int.
    """

    def __init__(
        self,
        store: Any,
        sink: Sink | list[ChangelogRecord] | None = None,
        *,
        record_timestamp: int = 0,
        record_headers: Iterable[Any] | None = (),
    ) -> None:
        self.records: list[ChangelogRecord] = sink if isinstance(sink, list) else []
        self._sink: Sink = self.records.append if sink is None or isinstance(sink, list) else sink
        self._store = store
        self._rules = rules_for(store).logging(store, self)
        self._writes = frozenset(self._rules.WRITES)
        self.record_timestamp = record_timestamp
        self.record_headers = record_headers

    @classmethod
    def open(
        cls,
        store_class: type,
        *args: Any,
        sink: Sink | list[ChangelogRecord] | None = None,
        **kwargs: Any,
    ) -> ChangeLoggingStore:
        """Open ``store_class(*args, **kwargs)`` with change logging.

        Raises:
            InvalidOptionError: as the store's constructor, or an unsupported class.
        """
        store = store_class(*args, **kwargs)
        try:
            return cls(store, sink)
        except BaseException:
            store.close()
            raise

    # -- the record context (ChangeLogContext) -----------------------------------------------

    @property
    def record_timestamp(self) -> int:
        """Kafka's ``context.timestamp()``: the time of the record being processed."""
        return self._record_timestamp

    @record_timestamp.setter
    def record_timestamp(self, value: int) -> None:
        if type(value) is not int:
            raise InvalidOptionError(
                f"record_timestamp must be an int (epoch ms), got {type(value).__name__}"
            )
        self._record_timestamp = value

    @property
    def record_headers(self) -> Headers:
        """The headers of the record being processed (Kafka's ``context.headers()``)."""
        return self._record_headers

    @record_headers.setter
    def record_headers(self, value: Iterable[Any] | None) -> None:
        self._record_headers = to_headers(value)

    def log(self, key: bytes, value: bytes | None, timestamp: int, headers: Headers) -> None:
        """Send one record to the sink (Kafka's ``logChange``)."""
        self._sink(ChangelogRecord(key, value, timestamp, headers))

    # -- the store ---------------------------------------------------------------------------

    @property
    def wrapped(self) -> Any:
        """The store underneath."""
        return self._store

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._writes:
            return getattr(self._rules, name)
        if name in UNLOGGED_WRITES:
            raise InvalidOptionError(
                f"{name} writes without Kafka's changelog records (Kafka has no bulk write); "
                f"use the logged writes ({', '.join(sorted(self._writes))}), or the store "
                "itself (.wrapped) where nothing needs logging",
                code="UNLOGGED_WRITE",
            )
        return getattr(self._store, name)

    def call(
        self,
        method: str,
        args: Sequence[Any] = (),
        record_timestamp: int | None = None,
        record_headers: Iterable[Any] | None = None,
    ) -> Any:
        """Run one operation by Kafka's method name (``putIfAbsent``) or ours, after setting
        the record context (when given): the harness's op ``{"m": method, "a": args, "rt":
        record_timestamp}``, its arguments already our objects.

        Raises:
            InvalidOptionError: no such operation, or what the operation raises.
        """
        if record_timestamp is not None:
            self.record_timestamp = record_timestamp
        if record_headers is not None:
            self.record_headers = record_headers
        name = snake_case(method)
        target = getattr(self, name, None) if not name.startswith("_") else None
        if target is None or not callable(target):
            raise InvalidOptionError(
                f"{method!r} is no operation of a {type(self._store).__name__}",
                code="UNKNOWN_OPERATION",
            )
        return target(*args)

    def drain(self) -> list[ChangelogRecord]:
        """The records kept in :attr:`records` so far, emptying it."""
        out = list(self.records)
        self.records.clear()
        return out

    def close(self) -> None:
        """Close the store underneath."""
        self._store.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class RestoreCounts:
    """What a :func:`restore` did: records read, skipped for a None key, and dropped by the
    kind's restore rule (expired segments, versions older than the grace period)."""

    records: int
    null_keys: int
    dropped: int

    @property
    def applied(self) -> int:
        """Records written to the store."""
        return self.records - self.null_keys - self.dropped


def restore(
    store: Any,
    records: Iterable[ChangelogRecord | dict[str, Any]],
    *,
    batch_size: int | None = None,
) -> RestoreCounts:
    """Apply changelog records to ``store`` as Kafka's restore does.

    Args:
        store: one of our typed stores (a :class:`ChangeLoggingStore`'s store is restored
            without logging).
        records: in offset order; a dict is the harness's JSON shape
            (:meth:`ChangelogRecord.from_json`).
        batch_size: records per restore batch (Kafka: one consumer poll, ``max.poll.records``,
            default 1000); None: all in one batch. Window and session stores expire by the
            largest time of a batch, versioned stores write as of its end.

    Raises:
        InvalidOptionError: ``store`` is of no supported class, a record is malformed, or
            ``batch_size`` is not a positive int.
        CorruptDataError: a window or session key is too short for its suffix.
    """
    if isinstance(store, ChangeLoggingStore):
        store = store.wrapped
    if batch_size is not None and (type(batch_size) is not int or batch_size < 1):
        raise InvalidOptionError(f"batch_size must be a positive int or None, got {batch_size!r}")
    restore_batch = rules_for(store).restore_batch
    total = null_keys = dropped = 0
    batch: list[ChangelogRecord] = []
    for item in records:
        record = item if isinstance(item, ChangelogRecord) else ChangelogRecord.from_json(item)
        total += 1
        if record.key is None:
            null_keys += 1  # StoreChangelogReader: "Read changelog record with null key ..."
            continue
        batch.append(record)
        if batch_size is not None and len(batch) == batch_size:
            dropped += restore_batch(store, batch)
            batch = []
    if batch:
        dropped += restore_batch(store, batch)
    return RestoreCounts(total, null_keys, dropped)


__all__ = [
    "CHANGE_LOGGING",
    "ChangeLoggingStore",
    "KindChangelog",
    "RestoreCounts",
    "restore",
    "rules_for",
    "snake_case",
]
