"""Model-based test of the session stores against a tiny pure-Python model.

The model is a dict of ``(key, start, end) -> value`` plus the observed stream time, with Kafka's
rules written out plainly: a put (or remove) advances stream time to the session end; a put whose
end lies in a segment older than ``segment_id(stream time - retention)`` is dropped; reads see only
sessions with ``end >= stream time - retention + 1``. Orders are Kafka's: ``find_sessions`` goes
segment by segment in binary-key order, ``all`` is binary-key order, ``find_sessions_by_end`` is
by end, key, start.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stores.bytes.rocksdb import RocksDBBytesStore
from stores.records import ValueAndHeaders, Window, Windowed
from stores.session.format import MAX_LONG, encode_session_key
from stores.session.store import SessionStore, SessionStoreWithHeaders

# Keys that share prefixes and bytes around the suffix's first byte (0x00 / 0x7f / 0xff).
KEYS = (b"", b"a", b"aa", b"a\x00", b"a\x7f", b"a\xff", b"b")
VALUES = st.sampled_from([None, b"", b"x", b"yy"])
CONFIGS = [(20, 7), (0, 5), (50, 100), (30, 1), (12, 4), (200, 40), (60, 9)]  # (retention, segment interval)
KEY_BOUND = st.one_of(st.none(), st.sampled_from(KEYS))
TIMES = st.integers(-70, 25)  # offsets from stream time; above 20 means Long.MAX_VALUE
# Put/remove ends relative to stream time: mostly recent, sometimes far behind (dropped).
OFFSETS = st.one_of(st.integers(-15, 6), st.integers(-250, 6))
_COUNTER = itertools.count()


class Model:
    def __init__(self, retention: int, interval: int) -> None:
        self.retention = retention
        self.interval = interval
        self.sessions: dict[tuple[bytes, int, int], bytes] = {}
        self.stream_time = -1

    def put(self, key: bytes, start: int, end: int, value: bytes | None) -> None:
        self.stream_time = max(self.stream_time, end)
        if end // self.interval < (self.stream_time - self.retention) // self.interval:
            return  # expired segment: dropped
        if value is None:
            self.sessions.pop((key, start, end), None)
        else:
            self.sessions[(key, start, end)] = value

    def remove(self, key: bytes, start: int, end: int) -> None:
        self.stream_time = max(self.stream_time, end)
        self.sessions.pop((key, start, end), None)

    def actual_from(self, earliest: int) -> int:
        return max(earliest, self.stream_time - self.retention + 1)

    def live(self) -> list[tuple[bytes, int, int, bytes]]:
        low = self.actual_from(0)
        return [(k, s, e, v) for (k, s, e), v in self.sessions.items() if e >= low]

    def get(self, key: bytes, start: int, end: int) -> bytes | None:
        if end < self.actual_from(0):
            return None
        return self.sessions.get((key, start, end))

    def find(
        self, key_from: bytes | None, key_to: bytes | None, earliest: int, latest: int,
        forward: bool,
    ) -> list[tuple[bytes, int, int, bytes]]:
        if key_from is not None and key_to is not None and key_from > key_to:
            return []
        low = self.actual_from(earliest)
        rows = [
            r for r in self.live()
            if (key_from is None or r[0] >= key_from) and (key_to is None or r[0] <= key_to)
            and r[2] >= low and r[1] <= latest
        ]
        rows.sort(key=lambda r: (r[2] // self.interval, encode_session_key(r[0], r[1], r[2])))
        return rows if forward else rows[::-1]

    def all(self) -> list[tuple[bytes, int, int, bytes]]:
        return sorted(self.live(), key=lambda r: encode_session_key(r[0], r[1], r[2]))

    def by_end(self, earliest: int, latest: int) -> list[tuple[bytes, int, int, bytes]]:
        low = self.actual_from(earliest)
        rows = [r for r in self.live() if low <= r[2] <= latest]
        return sorted(rows, key=lambda r: (r[2], r[0], r[1]))


class SessionMachine(RuleBasedStateMachine):
    root: Path
    with_headers: bool

    def __init__(self) -> None:
        super().__init__()
        self.store: Any = None
        self.db: RocksDBBytesStore | None = None

    @initialize(config=st.sampled_from(CONFIGS), wrapped=st.booleans())
    def start(self, config: tuple[int, int], wrapped: bool) -> None:
        self.retention, self.interval = config
        self.wrapped = wrapped
        self.path = self.root / f"store-{next(_COUNTER)}"
        self.model = Model(*config)
        self._open()

    @property
    def cls(self) -> Any:
        return SessionStoreWithHeaders if self.with_headers else SessionStore

    def _open(self) -> None:
        if self.wrapped:
            self.db = RocksDBBytesStore(self.path, self.cls.column_families(), autocommit=False)
            self.store = self.cls.over(self.db, self.retention, self.interval)
        else:
            self.store = self.cls(self.path, self.retention, self.interval)

    def _wrap(self, value: bytes | None) -> Any:
        if value is None or not self.with_headers:
            return value
        return ValueAndHeaders(value, (("v", value),))

    def _rows(self, it: Any) -> list[tuple[bytes, int, int, bytes]]:
        out = []
        for kv in it:
            value = kv.value
            if self.with_headers:
                assert value.headers == (("v", value.value),)
                value = value.value
            out.append((kv.key.key, kv.key.start, kv.key.end, value))
        return out

    def _window(self, offset: int, length: int) -> tuple[int, int]:
        end = max(0, self.model.stream_time + offset)
        return max(0, end - length), end

    @rule(key=st.sampled_from(KEYS), value=VALUES, offset=OFFSETS,
          length=st.integers(0, 15), windowed=st.booleans())
    def put(self, key: bytes, value: bytes | None, offset: int, length: int, windowed: bool) -> None:
        start, end = self._window(offset, length)
        if windowed:
            self.store.put(Windowed(key, Window(start, end)), self._wrap(value))
        else:
            self.store.put(key, start, end, self._wrap(value))
        self.model.put(key, start, end, value)

    @rule(data=st.data())
    def remove_existing(self, data: st.DataObject) -> None:
        if not self.model.sessions:
            return
        key, start, end = data.draw(st.sampled_from(sorted(self.model.sessions)))
        self.store.remove(key, start, end)
        self.model.remove(key, start, end)

    @rule(key=st.sampled_from(KEYS), offset=OFFSETS, length=st.integers(0, 15))
    def remove(self, key: bytes, offset: int, length: int) -> None:
        start, end = self._window(offset, length)
        self.store.remove(Windowed(key, Window(start, end)))
        self.model.remove(key, start, end)

    @precondition(lambda self: self.wrapped)
    @rule()
    def commit(self) -> None:
        assert self.db is not None
        self.db.commit()

    @rule()
    def reopen(self) -> None:
        self.store.close()
        if self.db is not None:
            self.db.commit()
            self.db.close()
        self._open()

    def _times(self, earliest: int, latest: int) -> tuple[int, int]:
        # Relative to stream time, where the live sessions are; may go below 0.
        now = self.model.stream_time
        return now + earliest, (MAX_LONG if latest > 20 else now + latest)

    @rule(key_from=KEY_BOUND, key_to=KEY_BOUND, earliest=TIMES, latest=TIMES,
          forward=st.booleans())
    def find_range(self, key_from: bytes | None, key_to: bytes | None, earliest: int,
                   latest: int, forward: bool) -> None:
        earliest, latest = self._times(earliest, latest)
        if key_from is not None and key_to is not None and key_from > key_to:
            key_from, key_to = key_to, key_from  # inverted ranges: see test_session.py
        find = self.store.find_sessions if forward else self.store.backward_find_sessions
        got = self._rows(find(key_from, key_to, earliest, latest))
        assert got == self.model.find(key_from, key_to, earliest, latest, forward)

    @rule(key=st.sampled_from(KEYS), earliest=TIMES, latest=TIMES, forward=st.booleans())
    def find_key(self, key: bytes, earliest: int, latest: int, forward: bool) -> None:
        earliest, latest = self._times(earliest, latest)
        find = self.store.find_sessions if forward else self.store.backward_find_sessions
        got = self._rows(find(key, earliest, latest))
        assert got == self.model.find(key, key, earliest, latest, forward)

    @rule(earliest=TIMES, latest=TIMES)
    def by_end(self, earliest: int, latest: int) -> None:
        earliest, latest = self._times(earliest, latest)
        got = self._rows(self.store.find_sessions(earliest, latest))
        assert got == self.model.by_end(earliest, latest)

    @invariant()
    def answers_match(self) -> None:
        if self.store is None:
            return
        model = self.model
        assert self.store.observed_stream_time == model.stream_time
        assert self._rows(self.store.all()) == model.all()
        assert self._rows(self.store.fetch(None, None)) == model.find(None, None, 0, MAX_LONG, True)
        assert self._rows(self.store.backward_fetch(None, None)) == model.find(
            None, None, 0, MAX_LONG, False
        )
        for lo, hi in ((b"a", b"a"), (b"", b""), (b"a", b"a\x7f"), (b"a\x00", b"b")):
            for forward in (True, False):
                fetch = self.store.fetch if forward else self.store.backward_fetch
                want = model.find(lo, hi, 0, MAX_LONG, forward)
                got = fetch(lo) if lo == hi else fetch(lo, hi)
                assert self._rows(got) == want, (lo, hi, forward)
        assert self._rows(self.store.find_sessions(-1, MAX_LONG)) == model.by_end(-1, MAX_LONG)
        for key, start, end in list(model.sessions)[:6]:
            got = self.store.fetch_session(key, start, end)
            want = model.get(key, start, end)
            if self.with_headers and got is not None:
                got = got.value
            assert got == want, (key, start, end)

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.db is not None:
            self.db.close()


@pytest.mark.parametrize("with_headers", [False, True], ids=["plain", "headers"])
def test_session_store_matches_model(tmp_path: Path, with_headers: bool) -> None:
    machine = type(
        "Machine", (SessionMachine,), {"root": tmp_path, "with_headers": with_headers}
    )
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=45,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
