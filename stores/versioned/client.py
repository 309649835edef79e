"""What the versioned store's algorithms need of the store: the bytes store, which segments may
hold rows and which of them are live, and the observed stream time (Kafka's
``VersionedStoreClient``, which ``RocksDBVersionedStore`` hands to its put algorithm).

One client serves one store: its put (``stores.versioned.put``), its reads
(``stores.versioned.store``) and its bulk lookups (``stores.versioned.lookups``) all ask it,
and none of them reaches into another.

Stream time. Kafka rebuilds the observed stream time by restoring its changelog; the store
persists it in the column family ``versionedStoreMetadata``, in the same atomic batch as the data
it describes. The client keeps a copy in memory for as long as the bytes store provably holds the
same value: it remembers the bytes store's ``generation`` with it, which changes on every staged
write, commit, rollback, ingest and close, and re-remembers it after each write of the store. So
an unchanged generation means that nothing else has touched the bytes: not a rollback (of an
error, or the owner's: ``TransactionalStore.rollback``, ``recover``), not a raw write of the
metadata family (a catch-up clearing it, a changelog replay), not a commit of someone else's
writes, not an SST ingest.
"""

from __future__ import annotations

import contextlib
from bisect import bisect_left, insort
from collections.abc import Iterator

from stores.bytes.protocol import BytesStore
from stores.errors import CorruptDataError
from stores.versioned.format import (
    METADATA_CF,
    NO_TIMESTAMP,
    STREAM_TIME_KEY,
    TIMESTAMP_SIZE,
    decode_long,
    encode_long,
    segment_id,
    segment_prefix,
)

_MAX_LONG = 2**63 - 1
# Regular segment ids are >= 0, so their keys start below 0x80.
_SEGMENTS_END = b"\x80"


class VersionedStoreClient:
    """The segments and stream time of one versioned store over a bytes store.

    Args:
        db: the bytes store holding the store's rows (``default``) and stream time (metadata).
        retention: the history retention (and grace period) in ms, checked by the store.
        interval: the segment interval in ms, checked by the store.

    Raises:
        CorruptDataError: a row of a segment has a key shorter than its segment prefix.
    """

    def __init__(self, db: BytesStore, retention: int, interval: int) -> None:
        self.db = db
        self.retention = retention
        self.interval = interval
        # The observed stream time as last read or written, and the bytes store's state it is
        # valid for (see the module doc).
        self._time = NO_TIMESTAMP
        self._time_generation = -1
        self._live_for: int | None = None  # stream time whose first live segment is cached
        self._live_from = 0
        #: Ids of the segments that may hold rows, ascending: found by a skip scan, then grown
        #: by writes (``add_segment``), never shrunk nor replaced: reads filter by liveness, so
        #: ids of expired (or rolled-back) segments only cost a lookup, while a missing id
        #: would hide data.
        self.segments: list[int] = []
        start = segment_prefix(0)
        while True:
            first = next(iter(db.range(start, _SEGMENTS_END)), None)
            if first is None:
                break
            if len(first[0]) < TIMESTAMP_SIZE:
                raise CorruptDataError(f"key {first[0]!r} has no segment prefix")
            sid = decode_long(first[0][:TIMESTAMP_SIZE])
            self.segments.append(sid)
            if sid == _MAX_LONG:
                break
            start = segment_prefix(sid + 1)

    # -- segments ----------------------------------------------------------------------------

    def segment_id(self, timestamp: int) -> int:
        """The id of the segment that files a row whose newest version ends at ``timestamp``."""
        return segment_id(timestamp, self.interval)

    def min_live(self, stream_time: int) -> int:
        """The lowest id of a segment still live at ``stream_time``."""
        # Asked several times per put with the same stream time: remember the last answer.
        if stream_time != self._live_for:
            self._live_for = stream_time
            self._live_from = segment_id(stream_time - self.retention, self.interval)
        return self._live_from

    def is_live(self, sid: int, stream_time: int) -> bool:
        """Whether segment ``sid`` is live at ``stream_time``."""
        return sid >= self.min_live(stream_time)

    def live_segments(self, lowest: int, stream_time: int) -> list[int]:
        """Known segment ids ``>= lowest`` that are live at ``stream_time``, newest first."""
        start = bisect_left(self.segments, max(lowest, self.min_live(stream_time)))
        return self.segments[start:][::-1]

    def add_segment(self, sid: int) -> None:
        """Note that segment ``sid`` holds a row (from now on it is searched)."""
        segments = self.segments
        index = bisect_left(segments, sid)
        if index == len(segments) or segments[index] != sid:
            insort(segments, sid)

    # -- stream time -------------------------------------------------------------------------

    def stream_time(self) -> int:
        """The observed stream time (-1 before the first put): from memory while the bytes
        store is provably unchanged (see the module doc), else read from it."""
        db = self.db
        if self._time_generation != db.generation:
            raw = db.get(STREAM_TIME_KEY, METADATA_CF)
            self._remember(NO_TIMESTAMP if raw is None else decode_long(raw))
        return self._time

    def save_stream_time(self, previous: int, current: int) -> None:
        """Stage the stream time ``current`` if it moved from ``previous``, and remember it.

        Every write operation of the store ends here, after its last staged write, so that the
        time in memory is remembered with the bytes it was staged in.
        """
        if current != previous:
            self.db.put(STREAM_TIME_KEY, encode_long(current), METADATA_CF)
        self._remember(current)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Scope one write operation of the store: the bytes store's ``operation()``, after
        which a stream time that was current before its commit still is."""
        db = self.db
        with db.operation():
            yield
            known = self._time_generation == db.generation
        # A commit (if the bytes store autocommits) keeps what the operation wrote: a stream
        # time that was current before it still is. A rollback (an error) leaves it stale.
        if known:
            self._remember(self._time)

    def _remember(self, stream_time: int) -> None:
        self._time = stream_time
        self._time_generation = self.db.generation


__all__ = ["VersionedStoreClient"]
