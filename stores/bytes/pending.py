"""The index of a bytes store's uncommitted writes (KIP-892's indexed write batch): what reads
through the store see of its own writes before ``commit()``, and the merge of those writes into
a committed range.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class PendingWrites:
    """The uncommitted writes of one column family: point writes plus deleted ranges."""

    __slots__ = ("writes", "ranges")

    def __init__(self) -> None:
        self.writes: dict[bytes, bytes | None] = {}
        self.ranges: list[tuple[bytes, bytes]] = []

    def lookup(self, key: bytes) -> tuple[bool, bytes | None]:
        """Return (known, value): known is False where the committed data decides."""
        if key in self.writes:
            return True, self.writes[key]
        for start, end in self.ranges:
            if start <= key < end:
                return True, None
        return False, None

    def masks(self, key: bytes) -> bool:
        """Whether the uncommitted writes hide the committed value of ``key``."""
        if key in self.writes:
            return True
        return any(start <= key < end for start, end in self.ranges)


def merge_pending(
    committed: Iterable[tuple[bytes, bytes]],
    mine: list[tuple[bytes, bytes | None]],
    reverse: bool,
) -> Iterator[tuple[bytes, bytes]]:
    """Merge two sorted streams; ``mine`` wins on equal keys and drops its deletions."""
    keys = [k for k, _ in mine]
    i = 0
    n = len(mine)

    def before(a: bytes, b: bytes) -> bool:
        return a > b if reverse else a < b

    for key, value in committed:
        while i < n and before(keys[i], key):
            if mine[i][1] is not None:
                yield keys[i], mine[i][1]  # type: ignore[misc]
            i += 1
        yield key, value
    while i < n:
        if mine[i][1] is not None:
            yield keys[i], mine[i][1]  # type: ignore[misc]
        i += 1


__all__ = ["PendingWrites", "merge_pending"]
