"""The error family of state_store.

Every error carries a stable bracketed code (``[STORE_NOT_FOUND] ...``) at the start of its
message. The code survives Spark's exception wrapping, so callers and tests can match on it.
"""

from __future__ import annotations


class StateStoreError(Exception):
    """Root of every error raised by state_store."""

    code = "STATE_STORE_ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        if code is not None:
            self.code = code
        super().__init__(f"[{self.code}] {message}")


class StoreNotFoundError(StateStoreError, LookupError):
    """A store, or a file it needs, does not exist."""

    code = "STORE_NOT_FOUND"


class StoreAlreadyExistsError(StateStoreError):
    """A store of that name already exists."""

    code = "STORE_ALREADY_EXISTS"


class InvalidOptionError(StateStoreError, ValueError):
    """An option, column or argument has a value that cannot be accepted."""

    code = "INVALID_OPTION"


class CommitConflictError(StateStoreError):
    """Another writer committed first, or the store changed under the writer."""

    code = "COMMIT_CONFLICT"


class SerdeError(StateStoreError, ValueError):
    """A value cannot be serialized to, or deserialized from, its bytes."""

    code = "SERDE_ERROR"


class CorruptDataError(StateStoreError):
    """Stored bytes fail a checksum or do not follow their layout."""

    code = "CORRUPT_DATA"


class StoreClosedError(StateStoreError):
    """An operation was attempted on a closed store."""

    code = "STORE_CLOSED"


class QueryError(StateStoreError, ValueError):
    """A query API used the wrong way (Kafka's IllegalArgumentException / IllegalStateException)."""

    code = "QUERY_ERROR"


class UnsupportedQueryError(StateStoreError, NotImplementedError):
    """A store refuses a query outright (Kafka's UnsupportedOperationException)."""

    code = "UNSUPPORTED_QUERY"
