"""Model-based test of the window stores against a tiny pure-Python model of Kafka's rules.

The model keeps ``(key, window start, seqnum) -> value`` and the observed stream time, and
applies Kafka's rules directly: a put advances stream time, is dropped if its segment is older
than the first live one, and then every segment before the first live one is forgotten; reads
see only windows from ``stream time - retention + 1`` on; iteration goes segment by segment
(oldest first), then by store-key bytes within a segment.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from stores.records import ValueTimestampHeaders
from stores.segments.ordered import upper_range
from stores.window.format import encode_window_key, time_window_for_size
from stores.window.store import TimestampedWindowStoreWithHeaders, WindowStore

KEYS = st.sampled_from([b"a", b"ab", b"a\x00", b"b", b"\x00"])
BOUNDS = st.one_of(st.none(), KEYS)
TIMES = st.integers(0, 60)
QUERY_TIMES = st.integers(-5, 70)
VALUES = st.sampled_from([None, b"", b"x", b"yy"])
# (retention, window size, segment interval)
CONFIGS = st.sampled_from([(20, 5, 7), (0, 0, 1), (10, 3, 100), (30, 1, 5), (12, 12, 4)])


def _suffix(time: int, seqnum: int) -> bytes:
    """A window store key's suffix: big-endian window start and sequence number."""
    return time.to_bytes(8, "big", signed=True) + seqnum.to_bytes(4, "big")


class Model:
    def __init__(self, retention: int, size: int, interval: int, dups: bool) -> None:
        self.retention, self.size, self.interval, self.dups = retention, size, interval, dups
        self.rows: dict[tuple[bytes, int, int], bytes] = {}
        self.stream_time = -1
        self.seqnum = 0

    def seg(self, t: int) -> int:
        return t // self.interval if t >= 0 else -(-t // self.interval)

    def put(self, key: bytes, value: bytes | None, start: int) -> None:
        if value is None and self.dups:
            return
        seq = 0
        if self.dups:
            self.seqnum += 1
            seq = self.seqnum
        self.stream_time = max(self.stream_time, start)
        min_live = self.seg(self.stream_time - self.retention)
        if self.seg(start) >= min_live:
            if value is None:
                self.rows.pop((key, start, seq), None)
            else:
                self.rows[(key, start, seq)] = value
        self.rows = {r: v for r, v in self.rows.items() if self.seg(r[1]) >= min_live}

    def _select(
        self, key_from: bytes | None, key_to: bytes | None, lo: int, hi: int, reverse: bool
    ) -> list[tuple[bytes, int, int, bytes]]:
        actual = max(lo, self.stream_time - self.retention + 1)
        if hi < actual:
            return []
        # Kafka scans each segment up to OrderedBytes.upperRange(keyTo, [hi][MAX_INT]), which
        # assumes keys of at least one byte (README, "Kafka's accidents we keep"): with keys
        # b"a" and b"a\x00", the bound of the second stops before the first's later windows.
        last = None if key_to is None else upper_range(key_to, _suffix(hi, 0x7FFFFFFF))
        out = [
            (k, t, s, v)
            for (k, t, s), v in self.rows.items()
            if (key_from is None or k >= key_from)
            and (key_to is None or k <= key_to)
            and (last is None or encode_window_key(k, t, s) <= last)
            and actual <= t <= hi
        ]
        out.sort(key=lambda r: (self.seg(r[1]), encode_window_key(r[0], r[1], r[2])),
                 reverse=reverse)
        return out

    def fetch_key(self, key: bytes, lo: int, hi: int, reverse: bool) -> list[tuple[int, bytes]]:
        return [(t, v) for k, t, _, v in self._select(key, key, lo, hi, reverse) if k == key]

    def fetch_range(self, *args: Any) -> list[tuple[bytes, int, int, bytes]]:
        key_from, key_to = args[0], args[1]
        if key_from is not None and key_to is not None and key_from > key_to:
            return []
        return [(k, t, t + self.size, v) for k, t, _, v in self._select(*args)]

    def fetch_one(self, key: bytes, time: int) -> bytes | None:
        # Kafka's RocksDBWindowStore.fetch(key, time) reads the row of the current sequence
        # number: with retainDuplicates, only the last put's window answers (README).
        if time < self.stream_time - self.retention + 1:
            return None
        return self.rows.get((key, time, self.seqnum if self.dups else 0))


class WindowMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="window-model-"))
        self.store: Any = None

    @initialize(config=CONFIGS, dups=st.booleans(), headers=st.booleans())
    def setup(self, config: tuple[int, int, int], dups: bool, headers: bool) -> None:
        self.config, self.dups, self.headers = config, dups, headers
        self.model = Model(*config, dups)
        self.open()

    def open(self) -> None:
        retention, size, interval = self.config
        cls = TimestampedWindowStoreWithHeaders if self.headers else WindowStore
        self.store = cls(self.dir / "db", retention, size, self.dups, interval)

    def wrap(self, value: bytes | None, t: int) -> Any:
        if value is None or not self.headers:
            return value
        return ValueTimestampHeaders(value, t, (("h", value),))

    def unwrap(self, value: Any) -> Any:
        return value.value if self.headers and value is not None else value

    @rule(key=KEYS, value=VALUES, start=TIMES)
    def put(self, key: bytes, value: bytes | None, start: int) -> None:
        self.store.put(key, self.wrap(value, start), start)
        self.model.put(key, value, start)

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.open()

    @rule(key=KEYS, lo=QUERY_TIMES, hi=QUERY_TIMES, reverse=st.booleans())
    def fetch_key(self, key: bytes, lo: int, hi: int, reverse: bool) -> None:
        call = self.store.backward_fetch if reverse else self.store.fetch
        got = [(kv.key, self.unwrap(kv.value)) for kv in call(key, lo, hi)]
        assert got == self.model.fetch_key(key, lo, hi, reverse)

    @rule(key_from=BOUNDS, key_to=BOUNDS, lo=QUERY_TIMES, hi=QUERY_TIMES, reverse=st.booleans())
    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None, lo: int, hi: int, reverse: bool
    ) -> None:
        call = self.store.backward_fetch if reverse else self.store.fetch
        got = [
            (kv.key.key, kv.key.start, kv.key.end, self.unwrap(kv.value))
            for kv in call(key_from, key_to, lo, hi)
        ]
        assert got == self.model.fetch_range(key_from, key_to, lo, hi, reverse)

    @rule(key=KEYS, time=QUERY_TIMES)
    def fetch_one(self, key: bytes, time: int) -> None:
        assert self.unwrap(self.store.fetch(key, time)) == self.model.fetch_one(key, time)

    @invariant()
    def all_matches(self) -> None:
        if self.store is None:
            return
        expected = self.model.fetch_range(None, None, 0, 2**63 - 1, False)
        got = [
            (kv.key.key, kv.key.start, kv.key.end, self.unwrap(kv.value))
            for kv in self.store.all()
        ]
        assert got == expected
        assert [r[:2] for r in self.model.fetch_range(None, None, 0, 2**63 - 1, True)] == [
            (kv.key.key, kv.key.start) for kv in self.store.backward_all()
        ]
        assert self.store.observed_stream_time == self.model.stream_time
        size = self.model.size
        assert all(kv.key.window == time_window_for_size(kv.key.start, size) for kv in
                   self.store.all())

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)


TestWindowModel = WindowMachine.TestCase
TestWindowModel.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
