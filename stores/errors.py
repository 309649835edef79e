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


class StorageUnavailableError(StateStoreError):
    """The storage under a warehouse failed a request after its library's retries (a 5xx, a
    throttle, a connection lost mid-request): ``operation`` is what failed (read, list,
    write, delete, create, commit), ``committed`` whether the commit it belonged to was
    published (False: checked, it was not; None: no commit, or it could not be checked)."""

    code = "STORAGE_UNAVAILABLE"

    def __init__(
        self, where: str, operation: str, why: str, outcome: str, advice: str,
        committed: bool | None = None,
    ) -> None:  # fmt: skip
        self.where, self.operation, self.why = where, operation, why
        self.outcome, self.advice, self.committed = outcome, advice, committed
        super().__init__(f"{where} failed a {operation} ({why}); {outcome}; {advice}")

    def of_commit(self, commit_id: int, write_id: str, published: bool | None) -> StorageUnavailableError:
        """This failure as the commit's it was part of: ``published`` False if the log was
        read and does not hold the commit, None if that read failed too."""
        if published is False:
            outcome = f"commit {commit_id} was not published (checked: the log does not hold it)"
        else:
            outcome = (
                f"whether commit {commit_id} (write {write_id}) was published could not be "
                "checked, the storage failing that read too: when it answers, the store's "
                f"history shows it if it was"
            )
        error = StorageUnavailableError(self.where, "commit", self.why, outcome, self.advice,
                                        committed=published)  # fmt: skip
        error.__cause__ = self.__cause__
        return error
