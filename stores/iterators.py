"""Kafka's ``KeyValueIterator`` (and ``WindowStoreIterator``): the iterator every store returns.

A Python iterator of ``KeyValue(key, value)`` with Kafka's extra methods:

=====================  =========================================================================
Kafka                  here
=====================  =========================================================================
``hasNext()``          ``has_next()``: whether another entry follows (fetches it, keeps it)
``next()``             ``next(it)`` / ``for kv in it``; ``StopIteration`` at the end (Kafka's
                       ``NoSuchElementException``)
``peekNextKey()``      ``peek_next_key()``: the next entry's key, without consuming it
``close()``            ``close()`` and the context manager (``try``-with-resources)
=====================  =========================================================================

Two ways an iterator ends early, kept apart as Kafka keeps them:

- the *iterator* was closed: using it raises ``StoreClosedError`` (Kafka's
  ``InvalidStateStoreException`` from a closed ``RocksDbIterator``);
- its *store* was closed and the store passed ``alive``: the iterator is simply exhausted,
  ``has_next()`` is False even for an entry already peeked (Kafka's
  ``shouldCloseOpenIteratorsWhenStoreIsClosedAndNotThrowInvalidStateStoreExceptionOnHasNext``).

Window stores use this class; ``stores.timestamped.store`` still has its own copy of the same API
(to be switched over by its owner).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from stores.errors import StoreClosedError
from stores.records import KeyValue


class KeyValueIterator:
    """Kafka's ``KeyValueIterator`` over ``KeyValue`` entries.

    Args:
        entries: the entries, produced lazily.
        name: what to name in errors (the store's path).
        alive: called before every step; once it returns False the iterator is exhausted.
    """

    __slots__ = ("_entries", "_name", "_peeked", "_open", "_alive", "__weakref__")

    def __init__(
        self,
        entries: Iterator[KeyValue],
        name: str,
        *,
        alive: Callable[[], bool] | None = None,
    ) -> None:
        self._entries = entries
        self._name = name
        self._peeked: KeyValue | None = None
        self._open = True
        self._alive = alive

    def __iter__(self) -> KeyValueIterator:
        return self

    def __next__(self) -> KeyValue:
        if not self._open:
            raise StoreClosedError(f"the iterator of the store at {self._name} is closed")
        if self._alive is not None and not self._alive():
            self._peeked = None
            raise StopIteration
        if self._peeked is not None:
            entry, self._peeked = self._peeked, None
            return entry
        return next(self._entries)

    def has_next(self) -> bool:
        """Whether another entry follows.

        Raises:
            StoreClosedError: the iterator is closed.
        """
        if self._peeked is None or (self._alive is not None and not self._alive()):
            try:
                self._peeked = next(self)
            except StopIteration:
                return False
        return True

    def peek_next_key(self) -> Any:
        """The key of the next entry, without consuming it.

        Raises:
            StopIteration: no entry follows (Kafka's ``NoSuchElementException``).
            StoreClosedError: the iterator is closed.
        """
        if not self.has_next():
            raise StopIteration
        assert self._peeked is not None
        return self._peeked.key

    def close(self) -> None:
        """Release the iterator; idempotent."""
        if self._open:
            self._open = False
            self._peeked = None
            close = getattr(self._entries, "close", None)
            if close is not None:
                close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return not self._open

    def __enter__(self) -> KeyValueIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def empty_iterator(name: str) -> KeyValueIterator:
    """An iterator with no entries (Kafka's ``KeyValueIterators.emptyIterator()``)."""
    return KeyValueIterator(iter(()), name)


__all__ = ["KeyValueIterator", "empty_iterator"]
