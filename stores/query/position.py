"""Kafka's ``Position`` and ``PositionBound``, and the bound check ``is_permitted``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stores.errors import InvalidOptionError
from stores.query._checks import as_int, as_topic
from stores.query._text import java


class Position:
    """Kafka's ``Position``: topic -> partition -> offset, mutable, monotonic per component."""

    __hash__ = None  # type: ignore[assignment]  # mutable, as Kafka's hashCode() refuses

    def __init__(self, components: dict[str, dict[int, int]] | None = None) -> None:
        self._position: dict[str, dict[int, int]] = components or {}

    @staticmethod
    def empty() -> Position:
        """A new, empty position (Kafka's ``emptyPosition``)."""
        return Position()

    @staticmethod
    def from_map(mapping: Mapping[str, Mapping[int, int]] | None) -> Position:
        """A position holding a deep copy of ``{topic: {partition: offset}}``; None gives an
        empty position (as Kafka's ``fromMap(null)``).

        Raises:
            InvalidOptionError: a topic is not a str, or a partition or offset not an int.
        """
        position = Position()
        if mapping is None:
            return position
        for topic, partitions in mapping.items():
            position._position.setdefault(as_topic(topic), {})
            for partition, offset in partitions.items():
                position.with_component(topic, partition, offset)
        return position

    def with_component(self, topic: str, partition: int, offset: int) -> Position:
        """Set ``topic``/``partition`` to ``offset`` unless it holds a larger one; returns self.

        Raises:
            InvalidOptionError: a topic is not a str, or a partition or offset not an int.
        """
        partitions = self._position.setdefault(as_topic(topic), {})
        partition = as_int(partition, "partition")
        offset = as_int(offset, "offset")
        prior = partitions.get(partition)
        if prior is None or offset > prior:
            partitions[partition] = offset
        return self

    def copy(self) -> Position:
        """A deep copy."""
        return Position({t: dict(p) for t, p in self._position.items()})

    def merge(self, other: Position | None) -> Position:
        """Merge ``other`` into this position (the larger offset wins); returns self."""
        if other is not None:
            for topic, partitions in other._position.items():
                self._position.setdefault(topic, {})
                for partition, offset in partitions.items():
                    self.with_component(topic, partition, offset)
        return self

    def get_topics(self) -> frozenset[str]:
        """The topics this position has components for."""
        return frozenset(self._position)

    def get_partition_positions(self, topic: str) -> dict[int, int]:
        """A copy of ``{partition: offset}`` for ``topic`` (empty if unknown)."""
        return dict(self._position.get(topic, {}))

    def is_empty(self) -> bool:
        """Whether the position has no topic at all."""
        return not self._position

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Position) and self._position == other._position

    def __repr__(self) -> str:
        # Kafka's toString: Position{position={topic={0=5}}}
        return f"Position{{position={java(self._position)}}}"


@dataclass(frozen=True, eq=False)
class PositionBound:
    """Kafka's ``PositionBound``: the position a store must have reached; empty is unbounded."""

    _position: Position

    @staticmethod
    def unbounded() -> PositionBound:
        """No bound."""
        return PositionBound(Position.empty())

    @staticmethod
    def at(position: Position) -> PositionBound:
        """A bound at (a copy of) ``position``.

        Raises:
            InvalidOptionError: ``position`` is not a Position.
        """
        if not isinstance(position, Position):
            raise InvalidOptionError(f"position must be a Position, got {type(position).__name__}")
        return PositionBound(position.copy())

    def is_unbounded(self) -> bool:
        """Whether this bound places no restriction (its position is empty)."""
        return self._position.is_empty()

    def position(self) -> Position:
        """The bound's position (empty when unbounded)."""
        return self._position

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PositionBound) and self._position == other._position

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PositionBound{{position={self._position}}}"


def is_permitted(position: Position, bound: PositionBound, partition: int | None = None) -> bool:
    """Whether ``position`` has reached ``bound`` (Kafka's ``StoreQueryUtils.isPermitted``).

    With a ``partition`` (a store partition's own number), only that partition of each bounded
    topic is compared, as Kafka compares a task's partition. Without one, every bounded
    topic/partition must be reached.
    """
    bound_position = bound.position()
    for topic in bound_position.get_topics():
        wanted = bound_position.get_partition_positions(topic)
        seen = position.get_partition_positions(topic)
        checks = wanted.items() if partition is None else (
            [(partition, wanted[partition])] if partition in wanted else []
        )
        for part, offset in checks:
            if part not in seen or seen[part] < offset:
                return False
    return True


__all__ = ["Position", "PositionBound", "is_permitted"]
