"""A query's outcome: ``QueryResult`` and its ``FailureReason``."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from stores.errors import QueryError
from stores.query._text import java, java_class
from stores.query.position import Position, PositionBound

if TYPE_CHECKING:
    from stores.query.queries import Query


class FailureReason(Enum):
    """Why one store partition failed a query (Kafka's ``FailureReason``)."""

    UNKNOWN_QUERY_TYPE = "UNKNOWN_QUERY_TYPE"
    NOT_ACTIVE = "NOT_ACTIVE"
    NOT_UP_TO_BOUND = "NOT_UP_TO_BOUND"
    NOT_PRESENT = "NOT_PRESENT"
    DOES_NOT_EXIST = "DOES_NOT_EXIST"
    STORE_EXCEPTION = "STORE_EXCEPTION"


class QueryResult:
    """One partition's answer (Kafka's ``QueryResult``): a result or a failure, plus position."""

    def __init__(
        self, result: Any = None, failure: tuple[FailureReason, str] | None = None
    ) -> None:
        self._result = result
        self._failure = failure
        self._execution_info: list[str] = []
        self._position: Position | None = None

    @staticmethod
    def for_result(result: Any) -> QueryResult:
        """A successful result (which may be None)."""
        return QueryResult(result)

    @staticmethod
    def for_failure(reason: FailureReason, message: str) -> QueryResult:
        """A failed result."""
        return QueryResult(failure=(reason, message))

    @staticmethod
    def for_unknown_query_type(query: Query, store: Any, why: str = "") -> QueryResult:
        """The store does not know how to run ``query`` (Kafka's message, word for word).

        ``store`` is a store or a store class; ``why`` (``" because ..."``) is Kafka's reason
        for the query forms a store refuses.
        """
        return QueryResult.for_failure(
            FailureReason.UNKNOWN_QUERY_TYPE,
            f"This store ({_class_name(store)}) doesn't know how to execute the given query "
            f"({query!r}){why}. Contact the store maintainer if you need support for a new "
            "query type.",
        )

    @staticmethod
    def not_up_to_bound(
        position: Position, bound: PositionBound, partition: int | None
    ) -> QueryResult:
        """The store has not reached ``bound`` (Kafka's ``QueryResult.notUpToBound``).

        With a ``partition``, Kafka's "For store partition ..." message. Without one Kafka's store
        has no context yet ("not initialized"); here a store-level query without a partition
        compares every bounded partition, so the message names the position as well.
        """
        if partition is None:
            return QueryResult.for_failure(
                FailureReason.NOT_UP_TO_BOUND,
                f"The store's current position {position!r} is not yet up to the bound "
                f"{bound!r}",
            )
        return QueryResult.for_failure(
            FailureReason.NOT_UP_TO_BOUND,
            f"For store partition {partition}, the current position {position!r} is not yet up "
            f"to the bound {bound!r}",
        )

    def add_execution_info(self, message: str) -> None:
        """Record how the query was executed (kept only when execution info is enabled)."""
        self._execution_info.append(message)

    def set_position(self, position: Position | None) -> None:
        """Record the position the store was at when it ran the query."""
        self._position = position

    def is_success(self) -> bool:
        """Whether the query succeeded (``get_result`` has the answer)."""
        return self._failure is None

    def is_failure(self) -> bool:
        """Whether the query failed (see ``get_failure_reason``)."""
        return self._failure is not None

    def get_result(self) -> Any:
        """The answer: a value, a record, None, or an iterator, depending on the query.

        Raises:
            QueryError: the query failed.
        """
        if self._failure is not None:
            raise QueryError(
                f"Cannot get result for failed query. Failure is {self._failure[0].name}: "
                f"{self._failure[1]}"
            )
        return self._result

    def get_failure_reason(self) -> FailureReason:
        """Why the query failed.

        Raises:
            QueryError: the query succeeded.
        """
        if self._failure is None:
            raise QueryError("Cannot get failure reason because this query did not fail.")
        return self._failure[0]

    def get_failure_message(self) -> str:
        """The failure's message.

        Raises:
            QueryError: the query succeeded.
        """
        if self._failure is None:
            raise QueryError("Cannot get failure message because this query did not fail.")
        return self._failure[1]

    def get_execution_info(self) -> list[str]:
        """Execution details, if requested."""
        return list(self._execution_info)

    def get_position(self) -> Position | None:
        """The store partition's position when it ran the query."""
        return self._position

    def with_result(self, result: Any) -> QueryResult:
        """A copy with another result, same execution info and position (Kafka's
        ``InternalQueryResultUtil.copyAndSubstituteDeserializedResult``)."""
        copy = QueryResult(result, self._failure)
        copy._execution_info = list(self._execution_info)
        copy._position = self._position
        return copy

    def __repr__(self) -> str:
        # Kafka's FailedQueryResult / SucceededQueryResult toString.
        tail = f"executionInfo={java(self._execution_info)}, position={java(self._position)}}}"
        if self._failure is not None:
            return (
                f"FailedQueryResult{{failureReason={self._failure[0].name}, "
                f"failure='{self._failure[1]}', {tail}"
            )
        return f"SucceededQueryResult{{result={java(self._result)}, {tail}"


class _Placeholder:
    """Stands for a store of a class in messages, when no store is open."""

    def __init__(self, cls: type) -> None:
        self.cls = cls


def _class_name(store: Any) -> str:
    """Java's ``store.getClass()`` in messages: ``class stores.window.store.WindowStore``."""
    if isinstance(store, _Placeholder):
        return java_class(store.cls)
    return java_class(store if isinstance(store, type) else type(store))


__all__ = ["FailureReason", "QueryResult"]
