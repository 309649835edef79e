"""What a window store and a session store share around their segmented layer: a bytes store
opened from a path (then owned) or given open (then its owner's), the
:class:`~stores.segments.store.SegmentedBytesStore` over it, and the store's life cycle.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from stores.bytes.protocol import BytesStore
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import StoreClosedError
from stores.segments.store import (
    SEGMENTS_META_CF,
    Converter,
    SegmentedBytesStore,
    column_families,
)

T = TypeVar("T", bound="SegmentedStoreBase")


class SegmentedStoreBase:
    """The base of the window and session stores (each kind's folder builds its store on it).

    Subclasses read ``_db`` (the bytes store) and ``_segments`` (the segmented layer), both set
    here and never rebound.

    Args:
        path: directory of the RocksDB database (None with ``db``); the store owns it.
        db: an open bytes store to wrap instead (opened with ``column_families(data_cf,
            legacy_cfs)``); its owner commits and closes it.
        retention_ms: checked retention.
        segment_interval_ms: checked segment interval.
        data_cf: column family of the current value layout.
        legacy_cfs: older layouts read lazily, with their converters.

    Raises:
        TypeError: both or neither of ``path`` and ``db`` are given.
    """

    #: The kind, as messages name it ("window", "session").
    kind: ClassVar[str]

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        db: BytesStore | None,
        *,
        retention_ms: int,
        segment_interval_ms: int,
        data_cf: str,
        legacy_cfs: Sequence[tuple[str, Converter]],
        expire_on_every_put: bool = False,
    ) -> None:
        if (path is None) == (db is None):
            raise TypeError(f"{type(self).__name__}() takes a path or db=, not both or neither")
        self._owns_db = db is None
        if db is None:
            assert path is not None
            db = RocksDBBytesStore(path, column_families(data_cf, legacy_cfs))
        self._db = db
        self._closed = False
        try:
            self._segments = SegmentedBytesStore(
                db,
                retention_ms=retention_ms,
                segment_interval_ms=segment_interval_ms,
                data_cf=data_cf,
                meta_cf=SEGMENTS_META_CF,
                legacy_cfs=legacy_cfs,
                expire_on_every_put=expire_on_every_put,
            )
        except BaseException:
            if self._owns_db:
                db.close()
            raise

    # -- properties ----------------------------------------------------------------------------

    @property
    def wrapped(self) -> BytesStore:
        """The bytes layer underneath."""
        return self._db

    @property
    def segments(self) -> SegmentedBytesStore:
        """The segmented layer underneath (stream time, segment ids)."""
        return self._segments

    @property
    def retention_ms(self) -> int:
        """How long entries stay readable, relative to the observed stream time."""
        return self._segments.retention_ms

    @property
    def segment_interval_ms(self) -> int:
        """Width of a segment in ms."""
        return self._segments.segment_interval_ms

    @property
    def observed_stream_time(self) -> int:
        """The largest segment time ever put (a window's start, a session's end; sessions'
        removes count too), -1 before any.

        Raises:
            StoreClosedError: the store is closed.
        """
        self._check_open()
        return self._segments.observed_stream_time

    # -- restore -------------------------------------------------------------------------------

    def restore_batch(
        self, rows: Sequence[tuple[bytes, int, Any]], encode: Callable[[Any], bytes | None]
    ) -> int:
        """Kafka's restore of one changelog batch (``AbstractRocksDBSegmentedBytesStore.
        getWriteBatches``): stream time jumps to the batch's latest segment time first, then
        each row ``(key, segment time, record)`` whose segment is live at it is written with
        ``encode(record)`` (None deletes), in order.

        Returns:
            How many rows were dropped as expired.
        """
        if not rows:
            return 0
        segments = self._segments
        batch_time = max(segments.observed_stream_time, max(time for _, time, _ in rows))
        min_live = segments.min_live_segment_id(batch_time)
        dropped = 0
        with self._db.operation():
            for key, time, record in rows:
                if segments.segment_id(time) < min_live:
                    dropped += 1
                    continue
                segments.put(key, encode(record), time)
        return dropped

    # -- lifecycle -----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self.closed:
            raise StoreClosedError(f"the {self.kind} store at {self._db.path} is closed")

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called (or the bytes store underneath was closed)."""
        return self._closed or self._db.closed

    def close(self) -> None:
        """Close the store (and its bytes layer, if this store opened it)."""
        self._closed = True
        if self._owns_db:
            self._db.close()

    def __enter__(self: T) -> T:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["SegmentedStoreBase"]
