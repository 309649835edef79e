"""Model-based test of ``VersionedKeyValueStore`` against a tiny pure-Python model.

The model keeps, per key, a dict of timestamp -> value (None = tombstone) and the observed stream
time, and answers from the ideal history with Kafka's grace and expiry rules. Two places where
Kafka's RocksDBVersionedStore departs from the ideal history are modelled explicitly:

* A tombstone put at exactly the timestamp of the latest *value* only deletes that value from the
  latest-value store. The tombstone survives only if the previous version's row already ends at
  that timestamp ("linked"); otherwise the key simply loses that version.
* Old versions disappear a whole segment at a time, so a range query reaching back past the
  retention still sees the versions whose segment (the one of their ``validTo``) is live.
"""

from __future__ import annotations

import itertools
from pathlib import Path

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
from stores.protocols import VersionedRecord
from stores.versioned.format import segment_id
from stores.versioned.put import NOT_PUT
from stores.versioned.store import VersionedKeyValueStore

KEYS = (b"a", b"b")
VALUES = st.sampled_from([None, b"", b"x", b"yy"])
CONFIGS = [(20, 7), (0, 5), (10, 100), (30, 1), (12, 4)]  # (history retention, segment interval)


class Model:
    """The ideal version history, plus the two Kafka departures described above."""

    def __init__(self, retention: int, interval: int) -> None:
        self.retention = retention
        self.interval = interval
        self.history: dict[bytes, dict[int, bytes | None]] = {k: {} for k in KEYS}
        self.linked: dict[bytes, bool] = {k: False for k in KEYS}
        self.stream_time = -1

    def put(self, key: bytes, value: bytes | None, ts: int) -> int:
        if ts < self.stream_time - self.retention:
            return NOT_PUT
        self.stream_time = max(self.stream_time, ts)
        h = self.history[key]
        newest = max(h) if h else None
        if newest is not None and h[newest] is not None and ts >= newest:
            # Kafka's latest-value store path.
            if ts > newest:
                h[ts] = value
                self.linked[key] = True
            elif value is not None:
                h[ts] = value
            elif self.linked[key]:
                h[ts] = None
            else:
                del h[ts]
            return -1
        later = [t for t in h if t > ts]
        result = min(later) if later else -1
        if result == -1 and value is not None:
            # Becomes the latest value over a tombstone (or nothing): linked only when it
            # replaces that tombstone at the same timestamp.
            self.linked[key] = newest == ts
        elif result != -1 and newest is not None and h[newest] is not None and result == newest:
            self.linked[key] = True
        h[ts] = value
        return result

    def delete(self, key: bytes, ts: int) -> VersionedRecord | None:
        if ts < self.stream_time - self.retention:
            return None
        existing = self.get(key, ts)
        self.put(key, None, ts)
        return existing

    def _valid_to(self, key: bytes, ts: int) -> int | None:
        later = [t for t in self.history[key] if t > ts]
        return min(later) if later else None

    def latest(self, key: bytes) -> VersionedRecord | None:
        h = self.history[key]
        if not h or h[max(h)] is None:
            return None
        newest = max(h)
        return VersionedRecord(h[newest], newest, None)  # type: ignore[arg-type]

    def get(self, key: bytes, as_of: int) -> VersionedRecord | None:
        if as_of < self.stream_time - self.retention:
            latest = self.latest(key)
            return latest if latest is not None and latest.timestamp <= as_of else None
        h = self.history[key]
        before = [t for t in h if t <= as_of]
        if not before or h[max(before)] is None:
            return None
        ts = max(before)
        return VersionedRecord(h[ts], ts, self._valid_to(key, ts))  # type: ignore[arg-type]

    def versions(self, key: bytes, lo: int | None, hi: int | None) -> list[VersionedRecord]:
        latest = self.latest(key)
        if hi is not None and hi < self.stream_time - self.retention:
            return [latest] if latest is not None and latest.timestamp <= hi else []
        min_live = segment_id(self.stream_time - self.retention, self.interval)
        out = []
        for ts, value in sorted(self.history[key].items(), reverse=True):
            valid_to = self._valid_to(key, ts)
            if value is None or (hi is not None and ts > hi):
                continue
            if valid_to is not None and (
                (lo is not None and valid_to <= lo)
                or segment_id(valid_to, self.interval) < min_live
            ):
                continue
            out.append(VersionedRecord(value, ts, valid_to))
        return out


class VersionedMachine(RuleBasedStateMachine):
    """Drives the store and the model with the same operations and compares every answer."""

    root: Path

    def __init__(self) -> None:
        super().__init__()
        self.store: VersionedKeyValueStore | None = None
        self.db: RocksDBBytesStore | None = None

    @initialize(config=st.sampled_from(CONFIGS), wrapped=st.booleans())
    def start(self, config: tuple[int, int], wrapped: bool) -> None:
        self.retention, self.interval = config
        self.wrapped = wrapped
        self.path = self.root / f"store-{next(_COUNTER)}"
        self.model = Model(*config)
        self._open()

    def _open(self) -> None:
        if self.wrapped:
            self.db = RocksDBBytesStore(
                self.path, VersionedKeyValueStore.column_families(), autocommit=False
            )
            self.store = VersionedKeyValueStore.over(self.db, self.retention, self.interval)
        else:
            self.store = VersionedKeyValueStore(self.path, self.retention, self.interval)

    def _timestamp(self, offset: int) -> int:
        return max(0, self.model.stream_time + offset)

    @rule(key=st.sampled_from(KEYS), value=VALUES, offset=st.integers(-35, 6))
    def put(self, key: bytes, value: bytes | None, offset: int) -> None:
        assert self.store is not None
        ts = self._timestamp(offset)
        assert self.store.put(key, value, ts) == self.model.put(key, value, ts), (key, value, ts)

    @rule(key=st.sampled_from(KEYS), offset=st.integers(-35, 6))
    def delete(self, key: bytes, offset: int) -> None:
        assert self.store is not None
        ts = self._timestamp(offset)
        assert self.store.delete(key, ts) == self.model.delete(key, ts), (key, ts)

    @rule(
        batch=st.lists(
            st.tuples(st.sampled_from(KEYS), VALUES, st.integers(-35, 6)), min_size=1, max_size=6
        )
    )
    def put_many(self, batch: list[tuple[bytes, bytes | None, int]]) -> None:
        assert self.store is not None
        base = self.model.stream_time
        records = [(k, v, max(0, base + off)) for k, v, off in batch]
        self.store.put_many(records)
        for k, v, ts in records:
            self.model.put(k, v, ts)

    @precondition(lambda self: self.wrapped)
    @rule()
    def commit(self) -> None:
        assert self.db is not None
        self.db.commit()

    @rule()
    def reopen(self) -> None:
        assert self.store is not None
        if self.db is not None:
            self.db.commit()
            self.store.close()
            self.db.close()
        else:
            self.store.close()
        self._open()

    @invariant()
    def answers_match(self) -> None:
        store, model = self.store, self.model
        if store is None:
            return
        assert store.observed_stream_time == model.stream_time
        now = model.stream_time
        probes = {now, now + 1, now - self.retention - 1, now - self.retention, 0}
        for h in model.history.values():
            for t in h:
                probes |= {t - 1, t, t + 1}
        probes = {p for p in probes if p >= 0}
        for key in KEYS:
            assert store.get(key) == model.latest(key)
            for as_of in probes:
                assert store.get(key, as_of=as_of) == model.get(key, as_of), (key, as_of)
            bounds = [(None, None), (now - self.retention, None), (None, now - self.retention - 1)]
            bounds += [(p, p + 3) for p in sorted(probes)[:: max(1, len(probes) // 4)]]
            for lo, hi in bounds:
                expected = model.versions(key, lo, hi)
                assert store.versions(key, lo, hi) == expected, (key, lo, hi)
                assert store.versions(key, lo, hi, ascending=True) == expected[::-1]
        as_of = max(0, now - self.retention // 2)
        assert list(store.scan_as_of(as_of)) == [
            (k, r.value, r.timestamp, r.valid_to)
            for k in KEYS
            if (r := store.get(k, as_of=as_of)) is not None
        ]
        assert list(store.scan_latest()) == [
            (k, r.value, r.timestamp) for k in KEYS if (r := store.get(k)) is not None
        ]

    def teardown(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.db is not None:
            self.db.close()


_COUNTER = itertools.count()


def test_store_follows_the_model(tmp_path: Path) -> None:
    VersionedMachine.root = tmp_path
    run_state_machine_as_test(
        VersionedMachine,
        settings=settings(
            max_examples=60,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
