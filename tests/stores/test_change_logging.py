"""Kafka's change-logging layer and restore, per store kind (``stores.change_logging`` and
``stores/<kind>/changelog.py``).

Expected records follow Kafka 4.3.1's ``ChangeLogging*BytesStore`` classes (cited per test);
the property tests restore what a store logged into a fresh store and compare contents, which
Kafka's restore preserves (``AbstractRocksDBSegmentedBytesStore.getWriteBatches``,
``RocksDBVersionedStore.restoreBatch``) except where a test says otherwise.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stores.change_logging import ChangeLoggingStore, restore, snake_case
from stores.errors import InvalidOptionError
from stores.key_value.store import KeyValueStore
from stores.records import (
    ChangelogRecord,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
    Windowed,
)
from stores.session.store import SessionStore, SessionStoreWithHeaders
from stores.timestamped.store import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders
from stores.versioned.put import NOT_PUT
from stores.versioned.store import VersionedKeyValueStore
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

R = ChangelogRecord
H1 = (("h", b"1"),)
CTX = (("ctx", b"c"),)


def wkey(key: bytes, start: int, seq: int = 0) -> bytes:
    """``WindowKeySchema.toStoreKeyBinary``: key ‖ BE64 start ‖ BE32 seq."""
    return key + struct.pack(">qi", start, seq)


def skey(key: bytes, start: int, end: int) -> bytes:
    """``SessionKeySchema.toBinary``: key ‖ BE64 end ‖ BE64 start."""
    return key + struct.pack(">qq", end, start)


def window(cls: type, path: Path, dups: bool = False) -> Any:
    return cls(
        path, retention_ms=100, window_size_ms=10, retain_duplicates=dups, segment_interval_ms=50
    )


# -- expected records, kind by kind ---------------------------------------------------------


def test_key_value_logs_every_put_and_delete_and_put_if_absent_only_when_absent(
    tmp_path: Path,
) -> None:
    """ChangeLoggingKeyValueBytesStore: put/putAll/delete log at context time, no headers;
    putIfAbsent logs only if there was no value; delete logs even an absent key."""
    with ChangeLoggingStore.open(KeyValueStore, tmp_path / "s") as s:
        s.call("put", [b"a", b"1"], 5)
        assert s.call("putIfAbsent", [b"a", b"2"], 6) == b"1"
        assert s.call("putIfAbsent", [b"b", b"2"], 7) is None
        s.call("putAll", [[(b"c", b"3"), (b"a", None)]], 8)
        assert s.call("delete", [b"zz"], 9) is None
        assert s.get(b"b") == b"2"  # reads pass through
        assert s.records == [
            R(b"a", b"1", 5),
            R(b"b", b"2", 7),
            R(b"c", b"3", 8),
            R(b"a", None, 8),
            R(b"zz", None, 9),
        ]


def test_timestamped_logs_the_plain_value_at_its_own_time(tmp_path: Path) -> None:
    """ChangeLoggingTimestampedKeyValueBytesStore: rawValue at the value's timestamp; a null
    put and a delete (not overridden) at the context time."""
    with ChangeLoggingStore.open(TimestampedKeyValueStore, tmp_path / "s") as s:
        s.record_headers = CTX  # ignored: this class always logs new RecordHeaders()
        s.call("put", [b"a", ValueAndTimestamp(b"v", 3)], 10)
        s.call("put", [b"a", None], 11)
        s.call("putIfAbsent", [b"b", ValueAndTimestamp(b"w", 4)], 12)
        s.call("delete", [b"b"], 13)
        assert s.records == [
            R(b"a", b"v", 3),
            R(b"a", None, 11),
            R(b"b", b"w", 4),
            R(b"b", None, 13),
        ]


def test_timestamped_with_headers_logs_headers_as_record_headers(tmp_path: Path) -> None:
    """ChangeLoggingTimestampedKeyValueBytesStoreWithHeaders: rawPlainValue, the value's time
    and headers; a null put and a delete take the processed record's time and headers."""
    with ChangeLoggingStore.open(TimestampedKeyValueStoreWithHeaders, tmp_path / "s") as s:
        s.record_headers = CTX
        s.call("put", [b"a", ValueTimestampHeaders(b"v", 3, H1)], 10)
        s.call("put", [b"a", None], 11)
        s.call("putAll", [[(b"b", ValueTimestampHeaders(b"w", 4))]], 12)
        s.call("delete", [b"b"], 13)
        assert s.records == [
            R(b"a", b"v", 3, H1),
            R(b"a", None, 11, CTX),
            R(b"b", b"w", 4),
            R(b"b", None, 13, CTX),
        ]


def test_versioned_logs_every_put_and_delete_at_their_version_time(tmp_path: Path) -> None:
    """ChangeLoggingVersionedKeyValueBytesStore: put logs (value, timestamp) even when the
    store answers NOT_PUT; delete logs null at the delete's timestamp, also when too old."""
    with ChangeLoggingStore.open(
        VersionedKeyValueStore, tmp_path / "s", history_retention_ms=10, segment_interval_ms=5
    ) as s:
        assert s.call("put", [b"a", b"v", 100], 1) == -1
        assert s.call("put", [b"a", b"w", 50], 2) == NOT_PUT
        assert s.call("delete", [b"a", 40], 3) is None
        s.call("delete", [b"a", 105], 4)
        assert s.records == [
            R(b"a", b"v", 100),
            R(b"a", b"w", 50),
            R(b"a", None, 40),
            R(b"a", None, 105),
        ]


def test_window_logs_store_keys_at_context_time_even_for_expired_windows(tmp_path: Path) -> None:
    """ChangeLoggingWindowBytesStore: key = WindowKeySchema.toStoreKeyBinary(key, start, 0),
    raw value, context time; it logs before knowing whether the segment is live."""
    with ChangeLoggingStore.open(window, WindowStore, tmp_path / "s") as s:
        s.call("put", [b"k", b"v", 500], 7)
        s.call("put", [b"k", b"old", 0], 8)  # expired: the store drops it, the log keeps it
        s.call("put", [b"k", None, 500], 9)
        assert list(s.fetch(b"k", 0, 1000)) == []
        assert s.records == [
            R(wkey(b"k", 500), b"v", 7),
            R(wkey(b"k", 0), b"old", 8),
            R(wkey(b"k", 500), None, 9),
        ]


def test_window_with_duplicates_counts_seqnums_in_the_logging_layer(tmp_path: Path) -> None:
    """ChangeLoggingWindowBytesStore.maybeUpdateSeqnumForDups increments on every put, null
    included, while RocksDBWindowStore.put skips a null put and its seqnum: after a null put
    the changelog's seqnums run ahead of the store's, and a restore keeps the changelog's."""
    with ChangeLoggingStore.open(window, WindowStore, tmp_path / "s", True) as s:
        for value, rt in ((b"1", 5), (None, 6), (b"2", 7)):
            s.call("put", [b"a", value, 0], rt)
        assert s.records == [
            R(wkey(b"a", 0, 1), b"1", 5),
            R(wkey(b"a", 0, 2), None, 6),
            R(wkey(b"a", 0, 3), b"2", 7),
        ]
        stored = [k[8:] for k, _ in s.wrapped.wrapped.items(s.wrapped.segments.data_cf)]
        assert stored == [wkey(b"a", 0, 1), wkey(b"a", 0, 2)]
        with window(WindowStore, tmp_path / "r", True) as restored:
            restore(restored, s.records)
            again = [k[8:] for k, _ in restored.wrapped.items(restored.segments.data_cf)]
            assert again == [wkey(b"a", 0, 1), wkey(b"a", 0, 3)]
            assert list(restored.all()) == list(s.all())


def test_window_with_duplicates_numbers_on_across_a_reopen(tmp_path: Path) -> None:
    """Kafka restarts a duplicates store's sequence number at 0 on every open (its store and its
    logging layer both), so a put after a restart can take the number of an older row; ours keeps
    the number with the data and the logging layer continues from it: the changelog still
    restores every duplicate."""
    records: list[Any] = []
    for value in (b"1", b"2"):
        with window(WindowStore, tmp_path / "s", True) as store:
            ChangeLoggingStore(store, records).call("put", [b"a", value, 0], 5)
    assert [r.key for r in records] == [wkey(b"a", 0, 1), wkey(b"a", 0, 2)]
    with window(WindowStore, tmp_path / "s", True) as store, window(
        WindowStore, tmp_path / "r", True
    ) as restored:
        restore(restored, records)
        assert list(restored.all()) == list(store.all())
        assert len(list(store.all())) == 2


def test_timestamped_windows_log_the_value_time_and_headers(tmp_path: Path) -> None:
    """ChangeLoggingTimestampedWindowBytesStore (rawValue, the value's time, no headers) and
    ChangeLoggingTimestampedWindowBytesStoreWithHeaders (rawPlainValue, the value's time and
    headers); a null put: the context's time (and headers)."""
    with ChangeLoggingStore.open(window, TimestampedWindowStore, tmp_path / "t") as s:
        s.record_headers = CTX
        s.call("put", [b"k", ValueAndTimestamp(b"v", 3), 100], 7)
        s.call("put", [b"k", None, 100], 8)
        assert s.records == [R(wkey(b"k", 100), b"v", 3), R(wkey(b"k", 100), None, 8)]
    with ChangeLoggingStore.open(window, TimestampedWindowStoreWithHeaders, tmp_path / "h") as s:
        s.record_headers = CTX
        s.call("put", [b"k", ValueTimestampHeaders(b"v", 3, H1), 100], 7)
        s.call("put", [b"k", ValueTimestampHeaders(None, 3, H1), 100], 8)  # serializes to null
        assert s.records == [R(wkey(b"k", 100), b"v", 3, H1), R(wkey(b"k", 100), None, 8, CTX)]


def test_plain_window_with_headers_logs_at_context_time_with_value_headers(tmp_path: Path) -> None:
    """Ours (Kafka 4.3 has no public builder for it): as ChangeLoggingSessionBytesStoreWithHeaders,
    the plain value, the context's time, the value's headers (null: the context's)."""
    with ChangeLoggingStore.open(window, WindowStoreWithHeaders, tmp_path / "s") as s:
        s.record_headers = CTX
        s.call("put", [b"k", ValueAndHeaders(b"v", H1), 100], 7)
        s.call("put", [b"k", None, 100], 8)
        assert s.records == [R(wkey(b"k", 100), b"v", 7, H1), R(wkey(b"k", 100), None, 8, CTX)]


def test_session_logs_session_keys_at_context_time(tmp_path: Path) -> None:
    """ChangeLoggingSessionBytesStore: key = SessionKeySchema.toBinary (key ‖ end ‖ start),
    context time, no headers; remove logs null, whether or not the session existed."""
    with ChangeLoggingStore.open(SessionStore, tmp_path / "s", retention_ms=100) as s:
        s.record_headers = CTX
        s.call("put", [Windowed(b"k", Window(1, 5)), b"agg"], 9)
        s.call("put", [b"k", 2, 6, b"agg2"], 10)
        s.call("remove", [Windowed(b"k", Window(1, 5))], 11)
        s.call("remove", [b"x", 0, 0], 12)
        assert s.records == [
            R(skey(b"k", 1, 5), b"agg", 9),
            R(skey(b"k", 2, 6), b"agg2", 10),
            R(skey(b"k", 1, 5), None, 11),
            R(skey(b"x", 0, 0), None, 12),
        ]


def test_session_with_headers_logs_aggregate_headers(tmp_path: Path) -> None:
    """ChangeLoggingSessionBytesStoreWithHeaders: rawAggregation, context time, the
    aggregate's headers; remove and a null put: the context's headers."""
    with ChangeLoggingStore.open(SessionStoreWithHeaders, tmp_path / "s", retention_ms=100) as s:
        s.record_headers = CTX
        s.call("put", [b"k", 1, 5, ValueAndHeaders(b"agg", H1)], 9)
        s.call("put", [b"k", 1, 5, None], 10)
        s.call("remove", [b"k", 1, 5], 11)
        assert s.records == [
            R(skey(b"k", 1, 5), b"agg", 9, H1),
            R(skey(b"k", 1, 5), None, 10, CTX),
            R(skey(b"k", 1, 5), None, 11, CTX),
        ]


# -- restore rules ----------------------------------------------------------------------------


def test_restore_skips_null_keys_and_converts_timestamped_values(tmp_path: Path) -> None:
    """StoreChangelogReader skips null keys; RecordConverters.rawValueToTimestampedValue and
    rawValueToHeadersValue take the record's time (and headers) into the value."""
    records = [R(None, b"x", 1), R(b"a", b"v", 7, H1), {"k": "62", "v": "77", "t": 8, "h": []}]
    with TimestampedKeyValueStore(tmp_path / "t") as store:
        counts = restore(store, records)
        assert (counts.records, counts.null_keys, counts.dropped, counts.applied) == (3, 1, 0, 2)
        assert store.get(b"a") == ValueAndTimestamp(b"v", 7)
        assert store.get(b"b") == ValueAndTimestamp(b"w", 8)
    with TimestampedKeyValueStoreWithHeaders(tmp_path / "h") as hstore:
        restore(hstore, records)
        assert hstore.get(b"a") == ValueTimestampHeaders(b"v", 7, H1)


def test_versioned_restore_drops_records_older_than_the_grace_period(tmp_path: Path) -> None:
    """RocksDBVersionedStore.restoreBatch: skip a record older than observed stream time −
    history retention, the stream time advancing record by record."""
    with VersionedKeyValueStore(
        tmp_path / "s", history_retention_ms=10, segment_interval_ms=5
    ) as store:
        counts = restore(store, [R(b"a", b"v", 100), R(b"a", b"old", 89), R(b"a", b"ok", 90)])
        assert counts.dropped == 1
        assert [(r.value, r.timestamp) for r in store.versions(b"a")] == [(b"v", 100), (b"ok", 90)]


def test_window_restore_expires_by_the_largest_time_of_the_batch(tmp_path: Path) -> None:
    """AbstractRocksDBSegmentedBytesStore.getWriteBatches advances stream time to the batch's
    largest window start before writing any record: a record live when processed, but
    expired by the end of its batch, is dropped (counted); in batches of one it is written and
    expired by the next record, with the same contents."""
    records = [R(wkey(b"k", 0), b"a", 1), R(wkey(b"k", 500), b"b", 2)]
    with window(WindowStore, tmp_path / "one") as one, window(WindowStore, tmp_path / "two") as two:
        assert restore(one, records).dropped == 1
        assert restore(two, records, batch_size=1).dropped == 0
        assert list(one.all()) == list(two.all()) == [(Windowed(b"k", Window(500, 510)), b"b")]
        assert one.observed_stream_time == two.observed_stream_time == 500


def test_session_restore_takes_the_segment_from_the_session_end(tmp_path: Path) -> None:
    """SessionKeySchema.segmentTimestamp is the end: a session starting long ago but ending
    within retention is restored; rawValueToSessionHeadersValue keeps the record headers."""
    records = [R(skey(b"k", 0, 450), b"a", 1, H1), R(skey(b"k", 460, 500), b"b", 2)]
    with SessionStoreWithHeaders(tmp_path / "s", retention_ms=100, segment_interval_ms=50) as store:
        assert restore(store, records).dropped == 0
        assert store.fetch_session(b"k", 0, 450) == ValueAndHeaders(b"a", H1)


def test_bulk_writes_are_refused_through_the_logging_layer(tmp_path: Path) -> None:
    """Our bulk writes have no Kafka counterpart and would bypass the changelog."""
    with ChangeLoggingStore.open(KeyValueStore, tmp_path / "s") as s:
        with pytest.raises(InvalidOptionError, match=r"\[UNLOGGED_WRITE\] put_columns .*put_all"):
            s.put_columns([b"a"], [b"1"])
        assert s.get(b"a") is None and s.records == []


def test_call_names_json_and_errors(tmp_path: Path) -> None:
    assert snake_case("backwardFindSessions") == "backward_find_sessions"
    record = R(b"k", None, 3, (("a", None), ("b", b"\x01")))
    assert R.from_json(record.to_json()) == record
    with pytest.raises(InvalidOptionError, match="changelog record"):
        R.from_json({"k": "zz", "v": None, "t": 1})
    with ChangeLoggingStore.open(KeyValueStore, tmp_path / "s") as s:
        with pytest.raises(InvalidOptionError, match="UNKNOWN_OPERATION"):
            s.call("frobnicate", [])
        with pytest.raises(InvalidOptionError, match="record_timestamp"):
            s.record_timestamp = "5"  # type: ignore[assignment]
        sink: list[R] = []
        other = ChangeLoggingStore(s.wrapped, sink.append, record_timestamp=4)
        other.put(b"x", b"y")
        assert sink == [R(b"x", b"y", 4)] and s.records == []
    with pytest.raises(InvalidOptionError, match="UNSUPPORTED_STORE"):
        ChangeLoggingStore(object())
    with pytest.raises(InvalidOptionError, match="batch_size"):
        restore(KeyValueStore.__new__(KeyValueStore), [], batch_size=0)


# -- restoring what a store logged gives the same store ---------------------------------------

KEYS = st.sampled_from([b"a", b"b", b"c"])
BYTES = st.sampled_from([b"1", b"22", b""])
RT = st.integers(0, 400)
HEADERS = st.sampled_from([(), H1, (("x", None), ("x", b"2"))])


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def kv_ops(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[tuple[str, list[Any]]]]:
    op = st.one_of(
        st.tuples(st.just("put"), st.tuples(KEYS, _maybe(values)).map(list)),
        st.tuples(st.just("putIfAbsent"), st.tuples(KEYS, _maybe(values)).map(list)),
        st.tuples(
            st.just("putAll"),
            st.lists(st.tuples(KEYS, _maybe(values)), max_size=3).map(lambda e: [e]),
        ),
        st.tuples(st.just("delete"), KEYS.map(lambda k: [k])),
    )
    return st.lists(op, max_size=12)


VAT = st.builds(ValueAndTimestamp, BYTES, st.integers(0, 99))
VTH = st.builds(ValueTimestampHeaders, BYTES, st.integers(0, 99), HEADERS)
VAH = st.builds(ValueAndHeaders, BYTES, HEADERS)
STARTS = st.integers(0, 400)


def window_ops(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[tuple[str, list[Any]]]]:
    return st.lists(
        st.tuples(st.just("put"), st.tuples(KEYS, _maybe(values), STARTS).map(list)), max_size=12
    )


def session_ops(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[tuple[str, list[Any]]]]:
    session = st.tuples(KEYS, STARTS, st.integers(0, 30)).map(lambda t: [t[0], t[1], t[1] + t[2]])
    return st.lists(
        st.one_of(
            st.tuples(
                st.just("put"), st.tuples(session, _maybe(values)).map(lambda t: [*t[0], t[1]])
            ),
            st.tuples(st.just("remove"), session),
        ),
        max_size=12,
    )


def versioned_ops() -> st.SearchStrategy[list[tuple[str, list[Any]]]]:
    return st.lists(
        st.one_of(
            st.tuples(
                st.just("put"), st.tuples(KEYS, _maybe(BYTES), st.integers(0, 200)).map(list)
            ),
            st.tuples(st.just("delete"), st.tuples(KEYS, st.integers(0, 200)).map(list)),
        ),
        max_size=12,
    )


def _all(store: Any) -> Any:
    return list(store.all()), store.observed_stream_time


def _versions(store: Any) -> Any:
    return [store.versions(k) for k in (b"a", b"b", b"c")], store.observed_stream_time


def _segmented(cls: type, dups: bool = False) -> Callable[[Path], Any]:
    return lambda p: window(cls, p, dups)


VARIANTS: dict[str, tuple[Callable[[Path], Any], Any, Callable[[Any], Any]]] = {
    "key_value": (KeyValueStore, kv_ops(BYTES), lambda s: list(s.all())),
    "timestamped": (TimestampedKeyValueStore, kv_ops(VAT), lambda s: list(s.all())),
    "timestamped_headers": (
        TimestampedKeyValueStoreWithHeaders,
        kv_ops(VTH),
        lambda s: list(s.all()),
    ),
    "versioned": (
        lambda p: VersionedKeyValueStore(p, history_retention_ms=30, segment_interval_ms=10),
        versioned_ops(),
        _versions,
    ),
    "window": (_segmented(WindowStore), window_ops(BYTES), _all),
    "timestamped_window": (_segmented(TimestampedWindowStore), window_ops(VAT), _all),
    "window_headers": (_segmented(WindowStoreWithHeaders), window_ops(VAH), _all),
    "timestamped_window_headers": (
        _segmented(TimestampedWindowStoreWithHeaders),
        window_ops(VTH),
        _all,
    ),
    "window_duplicates": (_segmented(WindowStore, True), window_ops(BYTES), _all),
    "session": (
        lambda p: SessionStore(p, retention_ms=100, segment_interval_ms=50),
        session_ops(BYTES),
        _all,
    ),
    "session_headers": (
        lambda p: SessionStoreWithHeaders(p, retention_ms=100, segment_interval_ms=50),
        session_ops(VAH),
        _all,
    ),
}

_runs = itertools.count()


def _null_puts_advance_time(store: Any, records: list[R]) -> Any:
    """What Kafka's restore of a duplicates store gives: RocksDBWindowStore.put skips a null
    put (no stream time), but its changelog record (ChangeLoggingWindowBytesStore logs it)
    advances the restore's stream time (getWriteBatches), expiring what that time expires and
    hiding from reads what starts before it minus the retention (actualFrom)."""
    starts = [struct.unpack(">q", r.key[-12:-4])[0] for r in records if r.key is not None]
    time = max([store.observed_stream_time, *starts])
    live = store.segments.min_live_segment_id(time)
    items = [
        (w, v)
        for w, v in store.all()
        if store.segments.segment_id(w.start) >= live and w.start > time - store.retention_ms
    ]
    return items, time


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_restoring_the_changelog_gives_the_same_store(variant: str, tmp_path: Path) -> None:
    """For every kind: ops through the change-logging layer, then Kafka's restore of its
    records into a fresh store (in one batch, or batches of 1 or 3) reads the same. Window and
    session contents are equal because a record is restored only if its segment is live at
    its batch's end, and such a record was live when it was processed; duplicates keep the
    changelog's seqnums, which ``all()`` does not show."""
    make, ops, contents = VARIANTS[variant]

    @settings(max_examples=25, deadline=None)
    @given(
        ops=ops,
        rts=st.lists(RT, min_size=12, max_size=12),
        batch_size=st.sampled_from([None, 1, 3]),
        headers=HEADERS,
    )
    def check(
        ops: list[tuple[str, list[Any]]], rts: list[int], batch_size: int | None, headers: Any
    ) -> None:
        run = next(_runs)
        with ChangeLoggingStore(make(tmp_path / f"o{run}"), record_headers=headers) as logged:
            for (method, args), rt in zip(ops, rts):
                logged.call(method, args, rt)
            with make(tmp_path / f"r{run}") as fresh:
                restore(fresh, logged.records, batch_size=batch_size)
                expected = contents(logged.wrapped)
                if variant == "window_duplicates":
                    expected = _null_puts_advance_time(logged.wrapped, logged.records)
                assert contents(fresh) == expected

    check()
