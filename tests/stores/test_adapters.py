"""The format adapters of ``stores.adapters`` (Kafka's ``*ToHeaders*Adapter`` and KIP-258's
``*ToTimestamped*ByteStoreAdapter``), over real stores.

Followed: Kafka's ``TimestampedToHeadersWindowStoreAdapterTest``,
``PlainToHeadersWindowStoreAdapterTest``, ``TimestampedToHeadersStoreAdapterTest`` and
``PlainToHeadersStoreAdapterTest``, ``SessionToHeadersStoreAdapterTest`` (strip on put, convert on every read, wrap every iterator,
refuse the wrong store, delegate lifecycle), plus a comparison of each adapter with the native
store of the format it serves, on everything the wrapped store can keep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stores.adapters import (
    KeyValueToTimestampedKeyValueByteStoreAdapter,
    MappingKeyValueIterator,
    PlainToHeadersStoreAdapter,
    PlainToHeadersWindowStoreAdapter,
    SessionToHeadersStoreAdapter,
    TimestampedToHeadersStoreAdapter,
    TimestampedToHeadersWindowStoreAdapter,
    WindowToTimestampedWindowByteStoreAdapter,
)
from stores.errors import InvalidOptionError, StoreClosedError
from stores.key_value.store import KeyValueStore
from stores.records import (
    UNKNOWN_TIMESTAMP,
    KeyValue,
    ValueAndHeaders,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    Window,
    Windowed,
)
from stores.session.store import SessionStore, SessionStoreWithHeaders
from stores.timestamped.store import TimestampedKeyValueStore, TimestampedKeyValueStoreWithHeaders
from stores.window.store import (
    TimestampedWindowStore,
    TimestampedWindowStoreWithHeaders,
    WindowStore,
    WindowStoreWithHeaders,
)

WINDOW_SIZE = 10_000
RETENTION = 60_000
SEGMENT_INTERVAL = 30_000
HEADERS = (("source", b"key1"), ("nil", None))
KEY = b"key"


def vth(value: bytes, ts: int, headers: Any = HEADERS) -> ValueTimestampHeaders[bytes]:
    return ValueTimestampHeaders(value, ts, headers)


def window_store(cls: type, path: Path) -> Any:
    return cls(path, RETENTION, WINDOW_SIZE, False, SEGMENT_INTERVAL)


# -- window adapters: what each keeps and what each gives back --------------------------------


@dataclass
class WindowCase:
    adapter: type
    inner: type
    keeps: Callable[[ValueTimestampHeaders[bytes]], Any]  # what the inner store holds
    reads: Callable[[ValueTimestampHeaders[bytes]], Any]  # what the adapter gives back
    record: Callable[[bytes, int], Any]  # a record of the type the adapter takes


WINDOW_CASES = {
    "timestamped_to_headers": WindowCase(
        TimestampedToHeadersWindowStoreAdapter,
        TimestampedWindowStore,
        lambda v: ValueAndTimestamp(v.value, v.timestamp),
        lambda v: ValueTimestampHeaders(v.value, v.timestamp, ()),
        lambda value, ts: vth(value, ts),
    ),
    "plain_to_headers": WindowCase(
        PlainToHeadersWindowStoreAdapter,
        WindowStore,
        lambda v: v.value,
        lambda v: ValueTimestampHeaders(v.value, UNKNOWN_TIMESTAMP, ()),
        lambda value, ts: vth(value, ts),
    ),
    "window_to_timestamped": WindowCase(
        WindowToTimestampedWindowByteStoreAdapter,
        WindowStore,
        lambda v: v.value,
        lambda v: ValueAndTimestamp(v.value, UNKNOWN_TIMESTAMP),
        lambda value, ts: ValueAndTimestamp(value, ts),
    ),
}


@pytest.fixture(params=list(WINDOW_CASES))
def wcase(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[WindowCase, Any]]:
    case = WINDOW_CASES[request.param]
    adapter = case.adapter(window_store(case.inner, tmp_path / "w"))
    yield case, adapter
    adapter.close()


def _as_vth(record: Any) -> ValueTimestampHeaders[bytes]:
    """The full record behind what a case's ``record`` built (for ``keeps``/``reads``)."""
    if isinstance(record, ValueTimestampHeaders):
        return record
    return ValueTimestampHeaders(record.value, record.timestamp, ())


def test_should_strip_headers_on_put(wcase: tuple[WindowCase, Any]) -> None:
    case, adapter = wcase
    record = case.record(b"val", 42)
    adapter.put(KEY, record, 5)
    assert adapter.store.fetch(KEY, 5) == case.keeps(_as_vth(record))


def test_should_convert_fetch_by_key_and_timestamp(wcase: tuple[WindowCase, Any]) -> None:
    case, adapter = wcase
    record = case.record(b"val", 42)
    adapter.put(KEY, record, 5)
    assert adapter.fetch(KEY, 5) == case.reads(_as_vth(record))


def test_should_return_null_when_fetch_by_key_and_timestamp_returns_null(
    wcase: tuple[WindowCase, Any],
) -> None:
    _, adapter = wcase
    assert adapter.fetch(KEY, 5) is None


def test_null_and_null_valued_records_delete(wcase: tuple[WindowCase, Any]) -> None:
    case, adapter = wcase
    adapter.put(KEY, case.record(b"a", 1), 5)
    adapter.put(KEY, None, 5)
    assert adapter.fetch(KEY, 5) is None
    adapter.put(KEY, case.record(b"a", 1), 5)
    null_record = type(case.record(b"a", 1))(None, 1)  # Kafka's serializers: null bytes
    adapter.put(KEY, null_record, 5)
    assert adapter.store.fetch(KEY, 5) is None


def test_should_wrap_every_iterator(wcase: tuple[WindowCase, Any]) -> None:
    case, adapter = wcase
    records = {
        (b"key1", 1000): case.record(b"value1", 1000),
        (b"key2", 5000): case.record(b"value2", 5000),
        (b"key3", 3000): case.record(b"value3", 3000),
    }
    for (key, start), record in records.items():
        adapter.put(key, record, start)

    def windowed(key: bytes, start: int) -> KeyValue:
        read = case.reads(_as_vth(records[(key, start)]))
        return KeyValue(Windowed(key, Window(start, start + WINDOW_SIZE)), read)

    by_key = [windowed(b"key1", 1000), windowed(b"key2", 5000), windowed(b"key3", 3000)]
    calls: dict[str, tuple[Callable[[], Any], list[KeyValue]]] = {
        "fetch_key": (
            lambda: adapter.fetch(b"key2", 0, 10_000),
            [KeyValue(5000, case.reads(_as_vth(records[(b"key2", 5000)])))],
        ),
        "backward_fetch_key": (
            lambda: adapter.backward_fetch(b"key1", 0, 10_000),
            [KeyValue(1000, case.reads(_as_vth(records[(b"key1", 1000)])))],
        ),
        "fetch_range": (lambda: adapter.fetch(b"key1", b"key2", 0, 10_000), by_key[:2]),
        "backward_fetch_range": (
            lambda: adapter.backward_fetch(None, b"key2", 0, 10_000), by_key[1::-1]
        ),
        "fetch_all": (lambda: adapter.fetch_all(0, 10_000), by_key),
        "backward_fetch_all": (lambda: adapter.backward_fetch_all(0, 10_000), by_key[::-1]),
        "all": (adapter.all, by_key),
        "backward_all": (adapter.backward_all, by_key[::-1]),
    }
    for name, (call, expected) in calls.items():
        iterator = call()
        assert isinstance(iterator, MappingKeyValueIterator), name
        with iterator:
            assert iterator.has_next(), name
            assert iterator.peek_next_key() == expected[0].key, name
            assert list(iterator) == expected, name
            assert not iterator.has_next(), name


def test_closed_adapter_iterator_refuses_use(wcase: tuple[WindowCase, Any]) -> None:
    case, adapter = wcase
    adapter.put(KEY, case.record(b"v", 1), 1)
    iterator = adapter.all()
    iterator.close()
    with pytest.raises(StoreClosedError):
        iterator.has_next()


def test_should_delegate_properties_and_lifecycle(wcase: tuple[WindowCase, Any]) -> None:
    case, adapter = wcase
    assert adapter.retention_ms == RETENTION
    assert adapter.window_size_ms == WINDOW_SIZE
    assert adapter.segment_interval_ms == SEGMENT_INTERVAL
    assert adapter.retain_duplicates is False
    assert adapter.observed_stream_time == -1
    adapter.put(KEY, case.record(b"v", 1), 7)
    assert adapter.observed_stream_time == 7
    assert adapter.wrapped is adapter.store.wrapped
    assert not adapter.closed
    with adapter:
        pass
    assert adapter.closed and adapter.store.closed
    with pytest.raises(StoreClosedError):
        adapter.fetch(KEY, 7)


def test_wrong_value_type_is_refused(wcase: tuple[WindowCase, Any]) -> None:
    _, adapter = wcase
    with pytest.raises(InvalidOptionError, match="value must be"):
        adapter.put(KEY, b"raw", 1)
    with pytest.raises(InvalidOptionError, match="key cannot be None"):
        adapter.fetch(None, 0, 1)


@pytest.mark.parametrize(
    ("adapter", "refused"),
    [
        (TimestampedToHeadersWindowStoreAdapter, WindowStore),
        (TimestampedToHeadersWindowStoreAdapter, TimestampedWindowStoreWithHeaders),
        (PlainToHeadersWindowStoreAdapter, TimestampedWindowStore),
        (PlainToHeadersWindowStoreAdapter, WindowStoreWithHeaders),
        (WindowToTimestampedWindowByteStoreAdapter, TimestampedWindowStore),
    ],
)
def test_should_refuse_a_store_of_the_wrong_format(
    tmp_path: Path, adapter: type, refused: type
) -> None:
    with window_store(refused, tmp_path / "w") as store:
        with pytest.raises(InvalidOptionError, match="provided store must be"):
            adapter(store)


@pytest.mark.parametrize("case_name", list(WINDOW_CASES))
def test_window_adapter_matches_native_store(tmp_path: Path, case_name: str) -> None:
    """Same operations on the adapter and on a native store of the served format: the same
    results once both are projected onto what the wrapped store keeps."""
    case = WINDOW_CASES[case_name]
    native_cls = (
        TimestampedWindowStore
        if case.adapter is WindowToTimestampedWindowByteStoreAdapter
        else TimestampedWindowStoreWithHeaders
    )
    adapter = case.adapter(window_store(case.inner, tmp_path / "a"))
    native = window_store(native_cls, tmp_path / "n")

    def project(value: Any) -> Any:
        return None if value is None else case.reads(_as_vth(value))

    ops = [(b"a", b"1", 0), (b"b", b"2", 10), (b"a", b"3", 40_000), (b"b", None, 10),
           (b"c", b"4", 70_000), (b"a", b"5", 95_000), (b"c", b"6", 20_000)]
    try:
        for key, value, start in ops:
            record = None if value is None else case.record(value, start + 1)
            adapter.put(key, record, start)
            native.put(key, record, start)
        for key, start in ((b"a", 0), (b"a", 40_000), (b"c", 70_000), (b"a", 95_000)):
            assert adapter.fetch(key, start) == project(native.fetch(key, start))
        for name, args in (("fetch", (b"a", 0, 100_000)), ("backward_fetch", (b"c", 0, 100_000)),
                           ("fetch", (None, None, 0, 100_000)), ("fetch_all", (30_000, 99_000)),
                           ("backward_fetch_all", (0, 99_000)), ("all", ()),
                           ("backward_all", ())):
            got = list(getattr(adapter, name)(*args))
            want = [KeyValue(kv.key, project(kv.value)) for kv in getattr(native, name)(*args)]
            assert got == want, (name, args)
    finally:
        adapter.close()
        native.close()


# -- key-value adapters ------------------------------------------------------------------------


@dataclass
class KeyValueCase:
    adapter: type
    inner: Callable[[Path], Any]
    keeps: Callable[[ValueTimestampHeaders[bytes]], Any]
    reads: Callable[[ValueTimestampHeaders[bytes]], Any]
    record: Callable[[bytes, int], Any]
    native: Callable[[Path], Any]


KV_CASES = {
    "timestamped_to_headers": KeyValueCase(
        TimestampedToHeadersStoreAdapter,
        TimestampedKeyValueStore,
        lambda v: ValueAndTimestamp(v.value, v.timestamp),
        lambda v: ValueTimestampHeaders(v.value, v.timestamp, ()),
        lambda value, ts: vth(value, ts),
        TimestampedKeyValueStoreWithHeaders,
    ),
    "plain_to_headers": KeyValueCase(
        PlainToHeadersStoreAdapter,
        KeyValueStore,
        lambda v: v.value,
        lambda v: ValueTimestampHeaders(v.value, UNKNOWN_TIMESTAMP, ()),
        lambda value, ts: vth(value, ts),
        TimestampedKeyValueStoreWithHeaders,
    ),
    "key_value_to_timestamped": KeyValueCase(
        KeyValueToTimestampedKeyValueByteStoreAdapter,
        KeyValueStore,
        lambda v: v.value,
        lambda v: ValueAndTimestamp(v.value, UNKNOWN_TIMESTAMP),
        lambda value, ts: ValueAndTimestamp(value, ts),
        TimestampedKeyValueStore,
    ),
}


@pytest.fixture(params=list(KV_CASES))
def kcase(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[KeyValueCase, Any]]:
    case = KV_CASES[request.param]
    adapter = case.adapter(case.inner(tmp_path / "kv"))
    yield case, adapter
    adapter.close()


def test_kv_should_strip_on_put_and_convert_on_get(kcase: tuple[KeyValueCase, Any]) -> None:
    case, adapter = kcase
    record = case.record(b"val", 42)
    adapter.put(KEY, record)
    assert adapter.store.get(KEY) == case.keeps(_as_vth(record))
    assert adapter.get(KEY) == case.reads(_as_vth(record))
    assert adapter.get(b"missing") is None


def test_kv_put_if_absent_and_delete_convert_the_old_value(
    kcase: tuple[KeyValueCase, Any],
) -> None:
    case, adapter = kcase
    first, second = case.record(b"first", 1), case.record(b"second", 2)
    assert adapter.put_if_absent(KEY, first) is None
    assert adapter.put_if_absent(KEY, second) == case.reads(_as_vth(first))
    assert adapter.get(KEY) == case.reads(_as_vth(first))
    assert adapter.delete(KEY) == case.reads(_as_vth(first))
    assert adapter.delete(KEY) is None
    assert adapter.get(KEY) is None


def test_kv_null_deletes(kcase: tuple[KeyValueCase, Any]) -> None:
    case, adapter = kcase
    adapter.put(KEY, case.record(b"v", 1))
    adapter.put(KEY, None)
    assert adapter.get(KEY) is None
    adapter.put(KEY, case.record(b"v", 1))
    adapter.put_all([(KEY, type(case.record(b"v", 1))(None, 1))])
    assert adapter.store.get(KEY) is None


def test_kv_should_wrap_every_iterator(kcase: tuple[KeyValueCase, Any]) -> None:
    case, adapter = kcase
    records = {key: case.record(b"v-" + key, i) for i, key in enumerate((b"a", b"ab", b"b", b"c"))}
    adapter.put_all(records.items())
    assert adapter.approximate_num_entries() == 4

    def rows(*keys: bytes) -> list[KeyValue]:
        return [KeyValue(key, case.reads(_as_vth(records[key]))) for key in keys]

    calls: dict[str, tuple[Callable[[], Any], list[KeyValue]]] = {
        "range": (lambda: adapter.range(b"ab", b"b"), rows(b"ab", b"b")),
        "range_open": (lambda: adapter.range(None, b"ab"), rows(b"a", b"ab")),
        "reverse_range": (lambda: adapter.reverse_range(b"a", b"b"), rows(b"b", b"ab", b"a")),
        "all": (adapter.all, rows(b"a", b"ab", b"b", b"c")),
        "reverse_all": (adapter.reverse_all, rows(b"c", b"b", b"ab", b"a")),
        "prefix_scan": (lambda: adapter.prefix_scan(b"a"), rows(b"a", b"ab")),
    }
    for name, (call, expected) in calls.items():
        with call() as iterator:
            assert isinstance(iterator, MappingKeyValueIterator), name
            assert iterator.has_next(), name
            assert iterator.peek_next_key() == expected[0].key, name
            assert list(iterator) == expected, name
            assert not iterator.has_next(), name
            with pytest.raises(StopIteration):
                iterator.peek_next_key()
    assert list(adapter.range(b"c", b"a")) == []  # inverted bounds: empty, as Kafka


def test_kv_refusals_and_lifecycle(kcase: tuple[KeyValueCase, Any], tmp_path: Path) -> None:
    case, adapter = kcase
    with pytest.raises(InvalidOptionError, match="value must be"):
        adapter.put(KEY, b"raw")
    with pytest.raises(InvalidOptionError):
        adapter.put(None, None)
    assert adapter.wrapped is adapter.store.wrapped
    assert not adapter.closed
    adapter.close()
    assert adapter.closed


@pytest.mark.parametrize(
    ("adapter", "refused"),
    [
        (TimestampedToHeadersStoreAdapter, KeyValueStore),
        (TimestampedToHeadersStoreAdapter, TimestampedKeyValueStoreWithHeaders),
        (PlainToHeadersStoreAdapter, TimestampedKeyValueStore),
        (KeyValueToTimestampedKeyValueByteStoreAdapter, TimestampedKeyValueStore),
    ],
)
def test_kv_should_refuse_a_store_of_the_wrong_format(
    tmp_path: Path, adapter: type, refused: type
) -> None:
    with refused(tmp_path / "kv") as store:
        with pytest.raises(InvalidOptionError, match="provided store must be"):
            adapter(store)


@pytest.mark.parametrize("case_name", list(KV_CASES))
def test_kv_adapter_matches_native_store(tmp_path: Path, case_name: str) -> None:
    case = KV_CASES[case_name]
    adapter = case.adapter(case.inner(tmp_path / "a"))
    native = case.native(tmp_path / "n")

    def project(value: Any) -> Any:
        return None if value is None else case.reads(_as_vth(value))

    try:
        ops = [(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"b", None), (b"c", b"4"), (b"ca", b"5")]
        for i, (key, value) in enumerate(ops):
            record = None if value is None else case.record(value, i)
            adapter.put(key, record)
            native.put(key, record)
        for key in (b"a", b"b", b"c", b"z"):
            assert adapter.get(key) == project(native.get(key))
        for name, args, kwargs in (("range", (b"a", b"c"), {}), ("range", (), {"reverse": True}),
                                   ("all", (), {}), ("reverse_all", (), {}),
                                   ("prefix_scan", (b"c",), {})):
            got = list(getattr(adapter, name)(*args, **kwargs))
            want = [
                KeyValue(kv.key, project(kv.value))
                for kv in getattr(native, name)(*args, **kwargs)
            ]
            assert got == want, name
        assert adapter.delete(b"c") == project(native.delete(b"c"))
    finally:
        adapter.close()
        native.close()


# -- SessionToHeadersStoreAdapter (Kafka's SessionToHeadersStoreAdapterTest) -----------------

SESSION_KEY = Windowed(KEY, Window(10, 20))


def vh(value: bytes, headers: Any = HEADERS) -> ValueAndHeaders[bytes]:
    return ValueAndHeaders(value, headers)


@pytest.fixture
def session_adapter(tmp_path: Path) -> Iterator[SessionToHeadersStoreAdapter]:
    adapter = SessionToHeadersStoreAdapter(SessionStore(tmp_path / "s", RETENTION, SEGMENT_INTERVAL))
    yield adapter
    adapter.close()


def test_session_should_put_without_headers(session_adapter: SessionToHeadersStoreAdapter) -> None:
    session_adapter.put(SESSION_KEY, vh(b"value"))
    assert session_adapter.store.fetch_session(KEY, 10, 20) == b"value"  # raw aggregate kept
    session_adapter.put(b"k2", 0, 5, vh(b"v2", ()))
    session_adapter.put(key=b"k3", start=1, end=2, value=vh(b"v3"))
    assert session_adapter.store.fetch_session(b"k2", 0, 5) == b"v2"
    assert session_adapter.store.fetch_session(b"k3", 1, 2) == b"v3"


def test_session_null_and_null_valued_aggregates_remove(
    session_adapter: SessionToHeadersStoreAdapter,
) -> None:
    session_adapter.put(SESSION_KEY, vh(b"value"))
    session_adapter.put(SESSION_KEY, None)
    assert session_adapter.fetch_session(KEY, 10, 20) is None
    session_adapter.put(SESSION_KEY, vh(b"value"))
    session_adapter.put(SESSION_KEY, ValueAndHeaders(None, HEADERS))  # type: ignore[arg-type]
    assert session_adapter.fetch_session(KEY, 10, 20) is None


def test_session_fetch_session_adds_empty_headers(
    session_adapter: SessionToHeadersStoreAdapter,
) -> None:
    session_adapter.put(SESSION_KEY, vh(b"value"))
    assert session_adapter.fetch_session(KEY, 10, 20) == ValueAndHeaders(b"value", ())
    assert session_adapter.fetch_session(KEY, 10, 21) is None


def test_session_remove_delegates(session_adapter: SessionToHeadersStoreAdapter) -> None:
    session_adapter.put(SESSION_KEY, vh(b"value"))
    session_adapter.put(b"k2", 0, 5, vh(b"v2"))
    session_adapter.remove(SESSION_KEY)
    session_adapter.remove(b"k2", 0, 5)
    assert list(session_adapter.store.all()) == []


def test_session_should_wrap_every_iterator(session_adapter: SessionToHeadersStoreAdapter) -> None:
    session_adapter.put(Windowed(b"a", Window(0, 5)), vh(b"1"))
    session_adapter.put(Windowed(b"a", Window(10, 20)), vh(b"2"))
    session_adapter.put(Windowed(b"b", Window(3, 8)), vh(b"3"))

    def rows(*entries: tuple[bytes, int, int, bytes]) -> list[KeyValue]:
        return [KeyValue(Windowed(k, Window(s, e)), ValueAndHeaders(v, ())) for k, s, e, v in entries]

    a1, a2, b1 = (b"a", 0, 5, b"1"), (b"a", 10, 20, b"2"), (b"b", 3, 8, b"3")
    calls: dict[str, tuple[Callable[[Any], Any], list[KeyValue]]] = {
        "find_sessions(key)": (lambda s: s.find_sessions(b"a", 0, 20), rows(a1, a2)),
        "find_sessions(key) narrowed": (lambda s: s.find_sessions(b"a", 6, 20), rows(a2)),
        "backward_find_sessions(key)": (lambda s: s.backward_find_sessions(b"a", 0, 20), rows(a2, a1)),
        "find_sessions(range)": (lambda s: s.find_sessions(b"a", b"z", 0, 20), rows(a1, a2, b1)),
        "backward_find_sessions(range)": (
            lambda s: s.backward_find_sessions(b"a", b"z", 0, 20), rows(a1, a2, b1)
        ),
        "fetch(key)": (lambda s: s.fetch(b"b"), rows(b1)),
        "backward_fetch(key)": (lambda s: s.backward_fetch(b"a"), rows(a2, a1)),
        "fetch(range)": (lambda s: s.fetch(b"a", b"b"), rows(a1, a2, b1)),
        "backward_fetch(range)": (lambda s: s.backward_fetch(b"a", b"b"), rows(a1, a2, b1)),
        "find_sessions_by_end": (lambda s: s.find_sessions_by_end(0, 8), rows(a1, b1)),
    }
    for name, (call, expected) in calls.items():
        iterator = call(session_adapter)
        assert isinstance(iterator, MappingKeyValueIterator), name
        got = list(iterator)
        # Same entries, in the plain store's own order, each with empty headers added.
        assert got == [KeyValue(kv.key, ValueAndHeaders(kv.value, ())) for kv in call(session_adapter.store)], name
        assert sorted(got, key=repr) == sorted(expected, key=repr), name
    everything = list(session_adapter.all())
    assert sorted(everything, key=repr) == sorted(rows(a1, a2, b1), key=repr)
    assert list(session_adapter.backward_all()) == list(reversed(everything))
    peeking = session_adapter.fetch(b"a")
    assert peeking.has_next() and peeking.peek_next_key() == Windowed(b"a", Window(0, 5))
    peeking.close()
    with pytest.raises(StoreClosedError):
        next(peeking)


def test_session_properties_lifecycle_and_refusals(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s", RETENTION, SEGMENT_INTERVAL)
    adapter = SessionToHeadersStoreAdapter(store)
    assert adapter.retention_ms == RETENTION and adapter.segment_interval_ms == SEGMENT_INTERVAL
    adapter.put(SESSION_KEY, vh(b"v"))
    assert adapter.observed_stream_time == 20
    assert adapter.wrapped is store.wrapped and adapter.store is store
    with pytest.raises(InvalidOptionError, match="ValueAndHeaders"):
        adapter.put(SESSION_KEY, b"raw")
    assert not adapter.closed
    with adapter:
        pass
    assert adapter.closed and store.closed
    with pytest.raises(InvalidOptionError, match="plain SessionStore"):
        SessionToHeadersStoreAdapter(SessionStoreWithHeaders(tmp_path / "h", RETENTION))
    with pytest.raises(InvalidOptionError, match="plain SessionStore"):
        SessionToHeadersStoreAdapter(KeyValueStore(tmp_path / "kv"))


def test_session_adapter_matches_native_headers_store(tmp_path: Path) -> None:
    adapter = SessionToHeadersStoreAdapter(SessionStore(tmp_path / "a", RETENTION, SEGMENT_INTERVAL))
    native = SessionStoreWithHeaders(tmp_path / "n", RETENTION, SEGMENT_INTERVAL)
    writes = [(b"a", 0, 5, vh(b"1", ())), (b"b", 3, 8, vh(b"2", ())), (b"a", 0, 5, None),
              (b"c", 40_000, 41_000, vh(b"3", ())), (b"a", 70_000, 70_500, vh(b"4", ()))]
    with adapter, native:
        for key, start, end, value in writes:
            adapter.put(key, start, end, value)
            native.put(key, start, end, value)
        assert list(adapter.all()) == list(native.all())
        assert list(adapter.find_sessions(None, None, 0, 100_000)) == list(
            native.find_sessions(None, None, 0, 100_000)
        )
        assert adapter.observed_stream_time == native.observed_stream_time
