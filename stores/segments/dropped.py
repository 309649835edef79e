"""Records a window or session store drops because their segment has expired.

Kafka's ``AbstractRocksDBSegmentedBytesStore.put`` logs "Skipping record for expired segment."
at WARN for each such record and counts it in its ``dropped-records`` sensor. Dropping late
records is what the store is for, and a write of many late records printed a line each on the
console; here they are counted, and told at INFO (no line on a console without logging
configured): one line per call of a store's ``put`` or ``put_columns``, or one for a whole
``counted`` block (a partition cache catching up over many commits), with the count.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar

from stores.segments.store import EXPIRED_SEGMENT_WARNING

#: The records dropped inside the innermost ``counted`` block (None: none open).
_TALLY: ContextVar[list[int] | None] = ContextVar("expired_segment_tally", default=None)


def dropped(log: logging.Logger, count: int, *, bulk: bool = True) -> None:
    """Tell of ``count`` records dropped as expired: to the open ``counted`` block, else in
    one INFO line (Kafka's message, with the count when ``bulk``)."""
    if count <= 0:
        return
    tally = _TALLY.get()
    if tally is not None:
        tally[0] += count
    elif bulk:
        log.info("%s (%d records)", EXPIRED_SEGMENT_WARNING, count)
    else:
        log.info(EXPIRED_SEGMENT_WARNING)


@contextlib.contextmanager
def counted(log: logging.Logger, what: str) -> Iterator[None]:
    """Count the records dropped inside the block; one INFO line at its end if any were."""
    tally = [0]
    token = _TALLY.set(tally)
    try:
        yield
    finally:
        _TALLY.reset(token)
        if tally[0]:
            log.info("%s (%d records, %s)", EXPIRED_SEGMENT_WARNING, tally[0], what)


__all__ = ["counted", "dropped"]
