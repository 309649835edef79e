"""The segmented engine under the window and session stores (Kafka's segmented bytes stores).

Below the two kinds and above the bytes backends: what a window store and a session store
share, written once. Neither kind imports the other; both import this package, which imports
neither.

- :mod:`~stores.segments.store`: ``SegmentedBytesStore``, rows filed in time segments with
  Kafka's retention and expiry (the layout table is at its top), and Kafka's warnings that both
  stores log.
- :mod:`~stores.segments.base`: ``SegmentedStoreBase``, the base of both stores: a bytes store
  opened from a path or wrapped (``db=``), the segmented layer over it, and the life cycle.
- :mod:`~stores.segments.lookups`: ``SegmentedLookups``, the bulk put and scan machinery that
  the window and session lookups (``stores.window.lookups``, ``stores.session.lookups``) build
  on.
- :mod:`~stores.segments.ordered`: Kafka's ``OrderedBytes``, the bounds both kinds scan for a
  key range (byte for byte, with the rows they leave out).
- :mod:`~stores.segments.columns`: ``SegmentedBase`` and the columnar state both kinds compute
  from their changelog with Arrow (``stores.window.columns``, ``stores.session.columns``).

Public API of ``stores.segments.store`` (stable)::

    SEGMENTS_META_CF, STREAM_TIME_KEY, NO_TIMESTAMP, MAX_TIMESTAMP, PREFIX_SIZE
    EXPIRED_SEGMENT_WARNING, INVALID_KEY_RANGE_WARNING    # Kafka's, logged by both stores
    segment_id(timestamp, segment_interval_ms) -> int
    segment_prefix(segment_id) -> bytes
    SegmentedBytesStore(db, *, retention_ms, segment_interval_ms, data_cf="default",
                        meta_cf=SEGMENTS_META_CF, legacy_cfs=())
        .db / .retention_ms / .segment_interval_ms / .data_cf / .meta_cf / .legacy_cfs
        .column_families -> tuple[str, ...]
        .observed_stream_time -> int                      # -1 before the first put
        .segment_id(timestamp) -> int
        .min_live_segment_id() -> int
        .actual_from(time_from) -> int                    # max(time_from, stream - retention + 1)
        .put(key, value | None, timestamp) -> bool
        .put_many(keys, values, timestamps) -> int       # bulk put; returns the rows dropped
        .remove(key, timestamp) -> None
        .get(key, timestamp) -> bytes | None
        .range(lower, upper, time_from, time_to, *, reverse=False) -> Iterator[(key, value)]
        .all(*, reverse=False) -> Iterator[(key, value)]
        .segment_ids() -> list[int]                       # ids holding rows, ascending
        .scan_columns(time_from, time_to, *, batch_rows, key_order=False, prefixed=False)
            -> Iterator[(keys, values)]                   # bulk range/all, as column lists
"""
