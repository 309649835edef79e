"""Behaviour of ``VersionedKeyValueStore``: the scenarios of Kafka's RocksDBVersionedStoreTest
(restated), the byte layouts of its formatter tests as golden hex, and this library's additions
(persistence, bulk puts, scans). Store tests run standalone and over an uncommitted batch."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stores.bytes.protocol import DEFAULT_CF
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.errors import InvalidOptionError, StoreClosedError
from stores.protocols import VersionedRecord
from stores.versioned.format import (
    LATEST_PREFIX,
    METADATA_CF,
    SegmentValue,
    decode_latest,
    encode_latest,
    min_timestamp,
    next_timestamp,
    segment_id,
    segment_prefix,
)
from stores.versioned.put import NOT_PUT
from stores.versioned.store import VersionedKeyValueStore, default_segment_interval_ms

RETENTION = 300_000
GRACE = RETENTION  # history retention doubles as grace period
SI = RETENTION // 3  # segment interval of Kafka's test
BASE = 10
UNDEF = -1


@pytest.fixture(params=["standalone", "over-uncommitted-batch"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VersionedKeyValueStore]:
    if request.param == "standalone":
        with VersionedKeyValueStore(tmp_path / "v", RETENTION, SI) as s:
            yield s
    else:
        db = RocksDBBytesStore(
            tmp_path / "v", VersionedKeyValueStore.column_families(), autocommit=False
        )
        yield VersionedKeyValueStore.over(db, RETENTION, SI)
        db.close()


def enc(s: str | None) -> bytes | None:
    return None if s is None else s.encode()


def put(s: VersionedKeyValueStore, key: str, value: str | None, ts: int, expected: int) -> None:
    assert s.put(key.encode(), enc(value), ts) == expected, (key, value, ts)


def latest_is(s: VersionedKeyValueStore, key: str, value: str | None, ts: int = 0) -> None:
    got = s.get(key.encode())
    assert got == (None if value is None else VersionedRecord(value.encode(), ts, None))


def as_of_is(
    s: VersionedKeyValueStore,
    key: str,
    as_of: int,
    value: str | None,
    ts: int = 0,
    valid_to: int | None = None,
) -> None:
    got = s.get(key.encode(), as_of=as_of)
    expected = None if value is None else VersionedRecord(value.encode(), ts, valid_to)
    assert got == expected, (key, as_of, got)


def versions_are(
    s: VersionedKeyValueStore,
    key: str,
    lo: int | None,
    hi: int | None,
    expected: list[tuple[str, int, int | None]],
    ascending: bool = False,
) -> None:
    got = s.versions(key.encode(), lo, hi, ascending=ascending)
    assert got == [VersionedRecord(v.encode(), f, t) for v, f, t in expected], (lo, hi)


# -- put and get: latest-value store -----------------------------------------------------------


def test_newer_puts_replace_the_latest_and_file_the_old_one(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v", BASE, UNDEF)
    put(store, "k", "v2", BASE + 1, UNDEF)
    latest_is(store, "k", "v2", BASE + 1)
    as_of_is(store, "k", BASE, "v", BASE, BASE + 1)
    as_of_is(store, "k", BASE + 1, "v2", BASE + 1)
    as_of_is(store, "k", BASE + 2, "v2", BASE + 1)
    as_of_is(store, "k", BASE - 1, None)


def test_tombstones_as_latest_read_as_absent(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, BASE, UNDEF)
    put(store, "k", None, BASE + 1, UNDEF)
    latest_is(store, "k", None)
    for t in (BASE, BASE + 1, BASE + 2):
        as_of_is(store, "k", t, None)


def test_older_puts_behind_a_value(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v", BASE, UNDEF)
    put(store, "k", "v2", BASE - 2, BASE)
    put(store, "k", "v1", BASE - 1, BASE)
    put(store, "k", "v4", BASE - 4, BASE - 2)
    latest_is(store, "k", "v", BASE)
    as_of_is(store, "k", BASE, "v", BASE)
    as_of_is(store, "k", BASE - 1, "v1", BASE - 1, BASE)
    as_of_is(store, "k", BASE - 2, "v2", BASE - 2, BASE - 1)
    as_of_is(store, "k", BASE - 3, "v4", BASE - 4, BASE - 2)


def test_older_puts_behind_a_tombstone(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, BASE, UNDEF)
    put(store, "k", "v2", BASE - 2, BASE)
    put(store, "k", "v1", BASE - 1, BASE)
    put(store, "k", "v4", BASE - 4, BASE - 2)
    latest_is(store, "k", None)
    as_of_is(store, "k", BASE, None)
    as_of_is(store, "k", BASE - 1, "v1", BASE - 1, BASE)
    as_of_is(store, "k", BASE - 2, "v2", BASE - 2, BASE - 1)
    as_of_is(store, "k", BASE - 3, "v4", BASE - 4, BASE - 2)


def test_older_tombstones_behind_a_value(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v", BASE, UNDEF)
    put(store, "k", None, BASE - 2, BASE)
    put(store, "k", None, BASE - 1, BASE)
    put(store, "k", None, BASE - 4, BASE - 2)
    put(store, "k", "v5", BASE - 5, BASE - 4)
    put(store, "k", "v3", BASE - 3, BASE - 2)
    put(store, "k", None, BASE - 6, BASE - 5)
    latest_is(store, "k", "v", BASE)
    as_of_is(store, "k", BASE, "v", BASE)
    as_of_is(store, "k", BASE - 1, None)
    as_of_is(store, "k", BASE - 2, None)
    as_of_is(store, "k", BASE - 3, "v3", BASE - 3, BASE - 2)
    as_of_is(store, "k", BASE - 4, None)
    as_of_is(store, "k", BASE - 5, "v5", BASE - 5, BASE - 4)
    as_of_is(store, "k", BASE - 6, None)


def test_older_tombstones_behind_a_tombstone(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, BASE, UNDEF)
    put(store, "k", None, BASE - 2, BASE)
    put(store, "k", None, BASE - 1, BASE)
    put(store, "k", None, BASE - 4, BASE - 2)
    put(store, "k", "v3", BASE - 3, BASE - 2)
    put(store, "k", "v5", BASE - 5, BASE - 4)
    put(store, "k", None, BASE - 6, BASE - 5)
    latest_is(store, "k", None)
    for t in (BASE, BASE - 1, BASE - 2, BASE - 4, BASE - 6):
        as_of_is(store, "k", t, None)
    as_of_is(store, "k", BASE - 3, "v3", BASE - 3, BASE - 2)
    as_of_is(store, "k", BASE - 5, "v5", BASE - 5, BASE - 4)


def test_same_timestamp_replaces_the_latest(store: VersionedKeyValueStore) -> None:
    put(store, "k", "to_be_replaced", BASE, UNDEF)
    put(store, "k", "b", BASE, UNDEF)
    latest_is(store, "k", "b", BASE)
    as_of_is(store, "k", BASE, "b", BASE)
    as_of_is(store, "k", BASE - 1, None)
    put(store, "k", None, BASE, UNDEF)
    latest_is(store, "k", None)
    as_of_is(store, "k", BASE, None)
    put(store, "k", None, BASE, UNDEF)
    latest_is(store, "k", None)
    put(store, "k", "b", BASE, UNDEF)
    latest_is(store, "k", "b", BASE)
    as_of_is(store, "k", BASE - 1, None)


def test_tombstone_replacing_an_unlinked_latest_leaves_no_trace(
    store: VersionedKeyValueStore,
) -> None:
    # Kafka only deletes the latest value here; nothing records the tombstone, so an older put
    # afterwards becomes the latest version (a Kafka quirk, kept on purpose).
    put(store, "k", "v", BASE, UNDEF)
    put(store, "k", None, BASE, UNDEF)
    put(store, "k", "older", BASE - 5, UNDEF)
    latest_is(store, "k", "older", BASE - 5)
    # With a previous version the row ending at BASE keeps the tombstone.
    put(store, "j", "v1", BASE - 5, UNDEF)
    put(store, "j", "v2", BASE, UNDEF)
    put(store, "j", None, BASE, UNDEF)
    put(store, "j", "mid", BASE - 2, BASE)
    latest_is(store, "j", None)
    as_of_is(store, "j", BASE - 1, "mid", BASE - 2, BASE)


# -- put and get: segments ---------------------------------------------------------------------


def test_repeat_timestamps_across_segments(store: VersionedKeyValueStore) -> None:
    put(store, "k", "to_be_replaced", SI + 20, UNDEF)
    put(store, "k", None, SI - 10, SI + 20)
    put(store, "k", "to_be_replaced", SI - 10, SI + 20)
    put(store, "k", None, SI - 10, SI + 20)
    put(store, "k", "to_be_replaced", SI - 1, SI + 20)
    put(store, "k", "to_be_replaced", SI + 1, SI + 20)
    put(store, "k", None, SI - 1, SI + 1)
    put(store, "k", None, SI + 1, SI + 20)
    put(store, "k", None, SI + 10, SI + 20)
    put(store, "k", None, SI + 5, SI + 10)
    put(store, "k", "vp5", SI + 5, SI + 10)
    put(store, "k", "to_be_replaced", SI - 5, SI - 1)
    put(store, "k", "vn5", SI - 5, SI - 1)
    put(store, "k", None, SI + 20, UNDEF)
    put(store, "k", None, SI + 20, UNDEF)
    put(store, "k", "vn6", SI - 6, SI - 5)
    expect_nulls_and_values_around_si(store)


def expect_nulls_and_values_around_si(s: VersionedKeyValueStore, empty: bool = False) -> None:
    v = (lambda x: "") if empty else (lambda x: x)
    latest_is(s, "k", None)
    for t in (SI + 30, SI + 15, SI + 2, SI, SI - 1, SI - 8):
        as_of_is(s, "k", t, None)
    as_of_is(s, "k", SI + 6, v("vp5"), SI + 5, SI + 10)
    as_of_is(s, "k", SI - 5, v("vn5"), SI - 5, SI - 1)
    as_of_is(s, "k", SI - 6, v("vn6"), SI - 6, SI - 5)


def test_put_into_multiple_segments(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, SI - 20, UNDEF)
    put(store, "k", "vn10", SI - 10, UNDEF)
    put(store, "k", None, SI - 1, UNDEF)
    put(store, "k", None, SI + 1, UNDEF)
    put(store, "k", "vp10", SI + 10, UNDEF)
    put(store, "k", None, SI + 20, UNDEF)
    latest_is(store, "k", None)
    for t in (SI + 30, SI + 5, SI + 2, SI, SI - 1, SI - 15):
        as_of_is(store, "k", t, None)
    as_of_is(store, "k", SI + 15, "vp10", SI + 10, SI + 20)
    as_of_is(store, "k", SI - 5, "vn10", SI - 10, SI - 1)


def test_out_of_order_put_moves_a_version_to_an_older_segment(
    store: VersionedKeyValueStore,
) -> None:
    put(store, "k", "vp20", SI + 20, UNDEF)
    put(store, "k", "vp10", SI + 10, SI + 20)
    put(store, "k", "vn10", SI - 10, SI + 10)
    put(store, "k", "vn2", SI - 2, SI + 10)
    put(store, "k", "vn1", SI - 1, SI + 10)
    put(store, "k", "vp1", SI + 1, SI + 10)
    expect_moved_history(store)


def expect_moved_history(s: VersionedKeyValueStore) -> None:
    latest_is(s, "k", "vp20", SI + 20)
    as_of_is(s, "k", SI + 30, "vp20", SI + 20)
    as_of_is(s, "k", SI + 15, "vp10", SI + 10, SI + 20)
    as_of_is(s, "k", SI + 5, "vp1", SI + 1, SI + 10)
    as_of_is(s, "k", SI, "vn1", SI - 1, SI + 1)
    as_of_is(s, "k", SI - 1, "vn1", SI - 1, SI + 1)
    as_of_is(s, "k", SI - 2, "vn2", SI - 2, SI - 1)
    as_of_is(s, "k", SI - 5, "vn10", SI - 10, SI - 2)


def test_out_of_order_tombstones_move_between_segments(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, SI + 20, UNDEF)
    put(store, "k", None, SI - 1, SI + 20)
    put(store, "k", None, SI + 1, SI + 20)
    put(store, "k", None, SI - 10, SI - 1)
    put(store, "k", None, SI + 10, SI + 20)
    put(store, "k", "vp5", SI + 5, SI + 10)
    put(store, "k", "vn5", SI - 5, SI - 1)
    put(store, "k", "vn6", SI - 6, SI - 5)
    expect_nulls_and_values_around_si(store)


def test_fall_through_to_an_older_segment_as_its_latest(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, SI - 5, UNDEF)
    put(store, "k", "vn6", SI - 6, SI - 5)
    put(store, "k", "vp20", SI + 20, UNDEF)
    put(store, "k", None, SI + 10, SI + 20)
    put(store, "k", None, SI - 1, SI + 10)
    put(store, "k", "vn2", SI - 2, SI - 1)
    latest_is(store, "k", "vp20", SI + 20)
    as_of_is(store, "k", SI + 30, "vp20", SI + 20)
    for t in (SI + 12, SI, SI - 1, SI - 5):
        as_of_is(store, "k", t, None)
    as_of_is(store, "k", SI - 2, "vn2", SI - 2, SI - 1)
    as_of_is(store, "k", SI - 6, "vn6", SI - 6, SI - 5)


def test_non_latest_tombstone_gets_a_valid_to(store: VersionedKeyValueStore) -> None:
    put(store, "k", "vp30", SI + 30, UNDEF)
    put(store, "k", None, SI - 10, SI + 30)
    put(store, "k", "vn5", SI - 5, SI + 30)
    put(store, "k", "vn1", SI - 1, SI + 30)
    put(store, "k", None, SI - 2, SI - 1)
    latest_is(store, "k", "vp30", SI + 30)
    as_of_is(store, "k", SI + 10, "vn1", SI - 1, SI + 30)
    as_of_is(store, "k", SI - 1, "vn1", SI - 1, SI + 30)
    as_of_is(store, "k", SI - 2, None)
    as_of_is(store, "k", SI - 5, "vn5", SI - 5, SI - 2)
    as_of_is(store, "k", SI - 10, None)


def test_empty_value_is_not_a_tombstone(store: VersionedKeyValueStore) -> None:
    put(store, "k", None, SI + 20, UNDEF)
    put(store, "k", None, SI - 10, SI + 20)
    put(store, "k", None, SI - 1, SI + 20)
    put(store, "k", None, SI + 1, SI + 20)
    put(store, "k", None, SI + 10, SI + 20)
    put(store, "k", "", SI + 5, SI + 10)
    put(store, "k", "", SI - 5, SI - 1)
    put(store, "k", "", SI - 6, SI - 5)
    expect_nulls_and_values_around_si(store, empty=True)


def test_get_from_older_segments(store: VersionedKeyValueStore) -> None:
    for n in (1, 2, 3):  # another key creates three segments
        put(store, "ko", None, n * SI - 10, UNDEF)
    as_of_is(store, "k", SI - 20, None)
    put(store, "k", "v", SI - 20, UNDEF)
    put(store, "k", None, SI - 10, UNDEF)
    as_of_is(store, "k", SI - 30, None)
    as_of_is(store, "k", SI - 15, "v", SI - 20, SI - 10)
    as_of_is(store, "k", SI - 5, None)
    put(store, "k", "v2", 3 * SI - 20, UNDEF)
    put(store, "k", None, 3 * SI - 10, UNDEF)
    as_of_is(store, "k", SI - 30, None)
    as_of_is(store, "k", SI - 15, "v", SI - 20, SI - 10)
    as_of_is(store, "k", SI - 5, None)


# -- delete ------------------------------------------------------------------------------------


def test_delete_returns_the_version_valid_before_it(store: VersionedKeyValueStore) -> None:
    put(store, "k", "vp20", SI + 20, UNDEF)
    put(store, "k", "vp10", SI + 10, SI + 20)
    put(store, "k", "vn10", SI - 10, SI + 10)
    put(store, "k", "vn2", SI - 2, SI + 10)
    assert store.delete(b"k", SI - 5) == VersionedRecord(b"vn10", SI - 10, SI - 2)
    assert store.delete(b"k", SI + 10) == VersionedRecord(b"vp10", SI + 10, SI + 20)
    assert store.delete(b"k", SI + 10) is None  # now a tombstone
    assert store.delete(b"k", SI + 25) == VersionedRecord(b"vp20", SI + 20, None)
    latest_is(store, "k", None)
    as_of_is(store, "k", SI - 3, None)
    as_of_is(store, "k", SI - 2, "vn2", SI - 2, SI + 10)


# -- grace period and expiry -------------------------------------------------------------------


def test_puts_older_than_the_grace_period_are_dropped(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v", RETENTION + 10, UNDEF)
    put(store, "k1", "v1", RETENTION + 10 - GRACE, UNDEF)
    latest_is(store, "k1", "v1", RETENTION + 10 - GRACE)
    put(store, "k2", "v2", RETENTION + 9 - GRACE, NOT_PUT)
    latest_is(store, "k2", None)
    assert store.observed_stream_time == RETENTION + 10


def test_deletes_older_than_the_grace_period_are_dropped(store: VersionedKeyValueStore) -> None:
    put(store, "k1", "v1", 1, UNDEF)
    put(store, "k2", "v2", 1, UNDEF)
    put(store, "kother", "vother", RETENTION + 10, UNDEF)
    assert store.delete(b"k1", RETENTION + 10 - GRACE) == VersionedRecord(b"v1", 1)
    latest_is(store, "k1", None)
    assert store.delete(b"k2", RETENTION + 9 - GRACE) is None
    latest_is(store, "k2", "v2", 1)


def test_history_past_retention_is_not_returned(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v_old", 0, UNDEF)
    put(store, "k", "v", SI - 10, UNDEF)
    as_of_is(store, "k", SI - 11, "v_old", 0, SI - 10)
    versions_are(store, "k", 0, SI - 11, [("v_old", 0, SI - 10)])
    put(store, "ko", "vo", RETENTION + SI - 11, UNDEF)
    as_of_is(store, "k", SI - 11, "v_old", 0, SI - 10)
    versions_are(store, "k", 0, SI - 11, [("v_old", 0, SI - 10)])
    put(store, "ko", "vo2", RETENTION + SI - 10, UNDEF)
    as_of_is(store, "k", SI - 11, None)
    versions_are(store, "k", 0, SI - 11, [])


def test_latest_version_never_expires(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v", 1, UNDEF)
    put(store, "ko", "vo_old", 1, UNDEF)
    put(store, "ko", "vo_new", RETENTION + 12, UNDEF)
    as_of_is(store, "k", 10, "v", 1)
    as_of_is(store, "ko", 10, None)
    versions_are(store, "k", 0, 10, [("v", 1, None)])
    versions_are(store, "ko", 0, 10, [])


def test_expired_segments_are_dropped_whole(store: VersionedKeyValueStore) -> None:
    put(store, "k", "v0", 5, UNDEF)
    put(store, "k", "v1", SI + 5, UNDEF)  # v0 is filed in segment 1 (its validTo)
    put(store, "k", "v2", 2 * SI + 5, UNDEF)  # v1 in segment 2
    db = store.wrapped
    assert db.get(segment_prefix(1) + b"k") is not None
    put(store, "x", "x", RETENTION + 2 * SI, UNDEF)  # live from segment(2 * SI) = 2
    assert db.get(segment_prefix(1) + b"k") is None
    assert db.get(segment_prefix(2) + b"k") is not None
    versions_are(store, "k", None, None, [("v2", 2 * SI + 5, None), ("v1", SI + 5, 2 * SI + 5)])


def test_zero_history_retention(tmp_path: Path) -> None:
    with VersionedKeyValueStore(tmp_path / "v", 0, SI) as s:
        put(s, "k", "v", BASE, UNDEF)
        latest_is(s, "k", "v", BASE)
        as_of_is(s, "k", BASE, "v", BASE)
        as_of_is(s, "k", BASE + 1, "v", BASE)  # the future is fine
        put(s, "k", "updated", BASE, UNDEF)
        as_of_is(s, "k", BASE, "updated", BASE)
        put(s, "k", "v2", BASE + 2, UNDEF)
        as_of_is(s, "k", BASE + 2, "v2", BASE + 2)
        as_of_is(s, "k", BASE + 1, None)  # history is gone at once
        s.delete(b"k", BASE + 3)
        latest_is(s, "k", None)
        put(s, "k2", "v", BASE + 2, NOT_PUT)
        latest_is(s, "k2", None)


# -- versions (KIP-968) ------------------------------------------------------------------------


def test_versions_across_segments_and_tombstones(store: VersionedKeyValueStore) -> None:
    for n in (1, 2, 3):
        put(store, "ko", None, n * SI - 10, UNDEF)
    versions_are(store, "k", SI - 20, SI, [])
    for value, ts in [("v1", 30), ("v2", 25), (None, 20), (None, 15), ("v3", 10), ("v4", 5)]:
        put(store, "k", value, SI - ts, UNDEF)
    all4 = [("v4", SI - 5, None), ("v3", SI - 10, SI - 5)]
    all4 += [("v2", SI - 25, SI - 20), ("v1", SI - 30, SI - 25)]
    versions_are(store, "k", SI - 40, SI - 35, [])
    versions_are(store, "k", SI - 30, SI - 5, all4)
    versions_are(store, "k", None, None, all4)
    versions_are(store, "k", -(2**63), 2**63 - 1, all4)
    versions_are(store, "k", SI - 4, SI, all4[:1])
    versions_are(store, "k", SI - 5, SI - 5, all4[:1])
    versions_are(store, "k", SI - 4, SI - 4, all4[:1])
    versions_are(store, "k", SI - 31, SI - 21, all4[2:])
    versions_are(store, "k", SI - 24, SI - 11, all4[2:3])
    versions_are(store, "k", SI - 11, SI - 4, all4[:2])
    versions_are(store, "k", SI - 26, SI - 5, all4)
    versions_are(store, "k", SI - 15, SI - 10, all4[1:2])
    versions_are(store, "k", SI - 19, SI - 16, [])
    versions_are(store, "k", None, None, all4[::-1], ascending=True)
    put(store, "k", "v5", 3 * SI - 30, UNDEF)
    put(store, "k", None, 3 * SI - 20, UNDEF)
    versions_are(store, "k", SI - 40, SI - 35, [])
    versions_are(store, "k", SI - 30, SI - 26, all4[3:])
    versions_are(store, "k", SI - 19, SI - 16, [])


def test_versions_ascending_over_several_segments(store: VersionedKeyValueStore) -> None:
    for value, ts in [("v1", SI - 10), ("v2", SI - 5), ("v3", 2 * SI - 10), ("v4", 2 * SI - 5)]:
        put(store, "k", value, ts, UNDEF)
    versions_are(
        store,
        "k",
        None,
        None,
        [
            ("v1", SI - 10, SI - 5),
            ("v2", SI - 5, 2 * SI - 10),
            ("v3", 2 * SI - 10, 2 * SI - 5),
            ("v4", 2 * SI - 5, None),
        ],
        ascending=True,
    )


def test_versions_include_one_that_ends_in_a_later_segment(store: VersionedKeyValueStore) -> None:
    # v1 is filed in segment 1 (validTo SI + 50) yet valid in [0, 50]. Kafka searches only the
    # segments up to to_ts's and misses it; get(as_of) finds it, and so do we.
    put(store, "k", "v1", 10, UNDEF)
    put(store, "k", "v2", SI + 50, UNDEF)
    as_of_is(store, "k", 50, "v1", 10, SI + 50)
    versions_are(store, "k", 0, 50, [("v1", 10, SI + 50)])


def test_versions_refuses_an_inverted_range(store: VersionedKeyValueStore) -> None:
    with pytest.raises(InvalidOptionError, match=r"\[INVALID_OPTION\].*from_ts"):
        store.versions(b"k", 10, 5)


# -- persistence -------------------------------------------------------------------------------


def test_reopen_keeps_data_and_stream_time(tmp_path: Path) -> None:
    with VersionedKeyValueStore(tmp_path / "v", RETENTION, SI) as s:
        put(s, "k", "vp20", SI + 20, UNDEF)
        put(s, "k", "vp10", SI + 10, SI + 20)
        put(s, "k", "vn10", SI - 10, SI + 10)
        put(s, "k", "vn2", SI - 2, SI + 10)
        put(s, "k", "vn1", SI - 1, SI + 10)
        put(s, "k", "vp1", SI + 1, SI + 10)
        put(s, "x", "x", RETENTION + 9, UNDEF)
    with VersionedKeyValueStore(tmp_path / "v", RETENTION, SI) as s:
        assert s.observed_stream_time == RETENTION + 9
        expect_moved_history(s)
        put(s, "late", "v", 8, NOT_PUT)  # the grace period still applies after reopening
        put(s, "k", "vp15", SI + 15, SI + 20)  # and so do the segments found on disk


def test_stream_time_is_written_with_the_data(tmp_path: Path) -> None:
    db = RocksDBBytesStore(
        tmp_path / "v", VersionedKeyValueStore.column_families(), autocommit=False
    )
    s = VersionedKeyValueStore.over(db, RETENTION, SI)
    s.put(b"k", b"v", 42)
    assert s.observed_stream_time == 42
    db.rollback()  # the owner discards the batch: data and stream time go together
    assert s.observed_stream_time == -1
    assert s.get(b"k") is None
    s.put(b"k", b"v", 7)
    db.commit()
    db.close()
    with VersionedKeyValueStore(tmp_path / "v", RETENTION, SI) as s2:
        assert s2.observed_stream_time == 7
        assert s2.get(b"k") == VersionedRecord(b"v", 7)


def test_segments_expired_then_rolled_back_are_seen_again(tmp_path: Path) -> None:
    db = RocksDBBytesStore(
        tmp_path / "v", VersionedKeyValueStore.column_families(), autocommit=False
    )
    s = VersionedKeyValueStore.over(db, RETENTION, SI)
    s.put(b"k", b"v0", 5)
    s.put(b"k", b"v1", SI + 5)
    db.commit()
    s.put(b"x", b"x", 10 * SI)  # expires segment 1 in the pending batch
    assert s.get(b"k", as_of=6) is None
    db.rollback()
    assert s.get(b"k", as_of=6) == VersionedRecord(b"v0", 5, SI + 5)
    db.close()


# -- bulk operations ---------------------------------------------------------------------------

_RECORDS = st.lists(
    st.tuples(
        st.sampled_from([b"a", b"b", b"c", b""]),
        st.sampled_from([None, b"", b"1", b"22"]),
        st.integers(0, 40),
    ),
    max_size=30,
)
_DIRS = itertools.count()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=_RECORDS, second=_RECORDS)
def test_put_many_equals_sequential_puts(
    tmp_path: Path,
    first: list[tuple[bytes, bytes | None, int]],
    second: list[tuple[bytes, bytes | None, int]],
) -> None:
    n = next(_DIRS)
    with (
        VersionedKeyValueStore(tmp_path / f"bulk{n}", 12, 5) as bulk,
        VersionedKeyValueStore(tmp_path / f"seq{n}", 12, 5) as seq,
    ):
        for batch in (first, second):
            bulk.put_many(batch)
            for record in batch:
                seq.put(*record)
        for cf in VersionedKeyValueStore.column_families():
            assert list(bulk.wrapped.items(cf)) == list(seq.wrapped.items(cf))


def test_put_many_is_one_batch(store: VersionedKeyValueStore) -> None:
    store.put_many([(b"k", b"v1", 1), (b"k", b"v2", 2), (b"j", None, 3)])
    assert store.versions(b"k") == [VersionedRecord(b"v2", 2), VersionedRecord(b"v1", 1, 2)]
    assert store.observed_stream_time == 3
    with pytest.raises(InvalidOptionError, match="timestamp"):
        store.put_many([(b"k", b"v3", 4), (b"k", b"v4", -1)])
    assert store.get(b"k") == VersionedRecord(b"v2", 2)  # nothing of the bad batch landed
    with pytest.raises(InvalidOptionError, match="records"):
        store.put_many([(b"k", b"v3")])  # type: ignore[list-item]


def test_scan_latest_and_as_of(store: VersionedKeyValueStore) -> None:
    put(store, "b", "b1", 10, UNDEF)
    put(store, "a", "a1", 5, UNDEF)
    put(store, "a", "a2", SI + 5, UNDEF)
    put(store, "c", "c1", 7, UNDEF)
    put(store, "c", None, 20, UNDEF)
    put(store, "d", None, 3, UNDEF)
    assert list(store.scan_latest()) == [(b"a", b"a2", SI + 5), (b"b", b"b1", 10)]
    assert list(store.scan_as_of(8)) == [(b"a", b"a1", 5, SI + 5), (b"c", b"c1", 7, 20)]
    assert list(store.scan_as_of(12)) == [
        (b"a", b"a1", 5, SI + 5),
        (b"b", b"b1", 10, None),
        (b"c", b"c1", 7, 20),
    ]
    keys = [b"a", b"b", b"c", b"d", b"e"]
    for as_of in (0, 4, 5, 6, 10, 20, 21, SI + 5, SI + 6):
        expected = [
            (k, r.value, r.timestamp, r.valid_to)
            for k in keys
            if (r := store.get(k, as_of=as_of)) is not None
        ]
        assert list(store.scan_as_of(as_of)) == expected
    put(store, "x", "x", RETENTION + 100, UNDEF)  # past retention only latest values answer
    assert list(store.scan_as_of(50)) == [(b"b", b"b1", 10, None)]


# -- validation and lifecycle ------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda s: s.put("k", b"v", 1), "key"),
        (lambda s: s.put(b"k", "v", 1), "value"),
        (lambda s: s.put(b"k", b"v", -1), "timestamp"),
        (lambda s: s.put(b"k", b"v", 1.5), "timestamp"),
        (lambda s: s.put(b"k", b"v", True), "timestamp"),
        (lambda s: s.put(b"k", b"v", 2**63), "timestamp"),
        (lambda s: s.delete(b"k", -5), "timestamp"),
        (lambda s: s.delete(None, 5), "key"),
        (lambda s: s.get(b"k", as_of=-1), "as_of"),
        (lambda s: s.versions(b"k", "0", None), "from_ts"),
        (lambda s: s.scan_as_of(-3), "as_of"),
    ],
)
def test_bad_arguments_are_refused(store: VersionedKeyValueStore, call, argument: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidOptionError, match=rf"^\[INVALID_OPTION\] {argument} "):
        call(store)


def test_any_bytes_key_is_accepted(store: VersionedKeyValueStore) -> None:
    put(store, "", "empty key", 1, UNDEF)
    assert store.get(b"") == VersionedRecord(b"empty key", 1)
    assert store.put(bytearray(b"k"), bytearray(b"v"), 2) == UNDEF  # type: ignore[arg-type]
    assert store.get(b"k") == VersionedRecord(b"v", 2)


@pytest.mark.parametrize(
    "retention, interval, argument",
    [(-1, 10, "history_retention_ms"), (10, 0, "segment_interval_ms"), ("1", 5, "history")],
)
def test_bad_configuration_is_refused(
    tmp_path: Path, retention: int, interval: int, argument: str
) -> None:
    with pytest.raises(InvalidOptionError, match=argument):
        VersionedKeyValueStore(tmp_path / "v", retention, interval)


def test_default_segment_interval_is_kafkas() -> None:
    assert default_segment_interval_ms(0) == 2_000
    assert default_segment_interval_ms(60_000) == 20_000
    assert default_segment_interval_ms(60_001) == 20_000
    assert default_segment_interval_ms(300_000) == 60_000
    assert default_segment_interval_ms(300_001) == 60_000
    assert default_segment_interval_ms(3_600_000) == 300_000
    assert default_segment_interval_ms(86_400_000) == 3_600_000
    assert default_segment_interval_ms(3_600_001) == 300_000


def test_closed_store_refuses_calls(tmp_path: Path) -> None:
    s = VersionedKeyValueStore(tmp_path / "v", RETENTION)
    assert s.segment_interval_ms == 60_000
    s.put(b"k", b"v", 1)
    s.close()
    assert s.closed
    for call in (
        lambda: s.put(b"k", b"v", 2),
        lambda: s.get(b"k"),
        lambda: s.get(b"k", as_of=1),
        lambda: s.delete(b"k", 3),
        lambda: s.versions(b"k"),
        lambda: s.scan_latest(),
        lambda: s.scan_as_of(1),
        lambda: s.put_many([]),
        lambda: s.observed_stream_time,
    ):
        with pytest.raises(StoreClosedError, match=r"^\[STORE_CLOSED\]"):
            call()


def test_wrapper_does_not_close_a_bytes_store_it_does_not_own(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "v", VersionedKeyValueStore.column_families())
    with VersionedKeyValueStore.over(db, RETENTION, SI) as s:
        s.put(b"k", b"v", 1)  # autocommit: durable at once
    assert not db.closed
    assert db.get(LATEST_PREFIX + b"k") == bytes.fromhex("0000000000000001") + b"v"
    db.close()


# -- golden bytes ------------------------------------------------------------------------------


def test_store_layout_golden_bytes(store: VersionedKeyValueStore) -> None:
    store.put(b"k", b"v", 10)
    store.put(b"k", b"v2", 20)
    store.put(b"k", b"v3", SI + 1)
    db = store.wrapped
    assert list(db.items(DEFAULT_CF)) == [
        # segment 0: v valid [10, 20)
        (
            bytes.fromhex("0000000000000000") + b"k",
            bytes.fromhex("0000000000000014 000000000000000a 000000000000000a 00000001 76"),
        ),
        # segment 1: v2 valid [20, SI + 1) is filed by its validTo
        (
            bytes.fromhex("0000000000000001") + b"k",
            bytes.fromhex("00000000000186a1 0000000000000014 0000000000000014 00000002 7632"),
        ),
        # latest-value store: reserved segment -1
        (bytes.fromhex("ffffffffffffffff") + b"k", bytes.fromhex("00000000000186a1 7633")),
    ]
    assert list(db.items(METADATA_CF)) == [
        (b"observedStreamTime", bytes.fromhex("00000000000186a1"))
    ]
    store.put(b"t", None, 5)  # a tombstone with no history: a degenerate row
    assert db.get(segment_prefix(0) + b"t") == bytes.fromhex(
        "0000000000000005 0000000000000005 0000000000000005 ffffffff"
    )


def test_latest_value_golden_bytes() -> None:
    assert encode_latest(b"v", 10) == bytes.fromhex("000000000000000a76")
    assert encode_latest(b"", 2**63 - 1) == bytes.fromhex("7fffffffffffffff")
    assert decode_latest(bytes.fromhex("0000000000000100 6869")) == (b"hi", 256)
    assert segment_prefix(-1) == LATEST_PREFIX == b"\xff" * 8
    assert segment_prefix(258) == bytes.fromhex("0000000000000102")
    assert [segment_id(t, 100) for t in (0, 99, 100, -1, -99, -100, -101)] == [
        0,
        0,
        1,
        0,
        0,
        -1,
        -1,
    ]


# Kafka's formatter test cases: (name, next_timestamp, records newest first).
FORMATTER_CASES = [
    ("degenerate", 10, [(10, None)]),
    ("single record", 10, [(1, b"foo")]),
    ("multiple records", 10, [(8, b"foo"), (3, b"bar"), (0, b"baz")]),
    ("single tombstone", 10, [(1, None)]),
    ("multiple tombstone", 10, [(4, None), (1, None)]),
    ("tombstones and records (r, t, r)", 10, [(5, b"foo"), (2, None), (1, b"bar")]),
    ("tombstones and records (t, r, t)", 10, [(5, None), (2, b"foo"), (1, None)]),
    ("tombstones and records (r, r, t, t)", 10, [(6, b"foo"), (5, b"bar"), (2, None), (1, None)]),
    ("tombstones and records (t, t, r, r)", 10, [(7, None), (6, None), (2, b"foo"), (1, b"bar")]),
    ("record with empty bytes", 10, [(1, b"")]),
    ("records with empty bytes (r, e)", 10, [(4, b"foo"), (1, b"")]),
    ("records with empty bytes (e, e, r)", 10, [(8, b""), (2, b""), (1, b"foo")]),
]

GOLDEN = {
    "degenerate": "000000000000000a 000000000000000a 000000000000000a ffffffff",
    "multiple records": "000000000000000a 0000000000000000"
    " 0000000000000008 00000003 0000000000000003 00000003 0000000000000000 00000003"
    " 62617a 626172 666f6f",
    "tombstones and records (r, t, r)": "000000000000000a 0000000000000001"
    " 0000000000000005 00000003 0000000000000002 ffffffff 0000000000000001 00000003"
    " 626172 666f6f",
    "record with empty bytes": "000000000000000a 0000000000000001 0000000000000001 00000000",
}


def build_with_insert_latest(next_ts: int, records: list[tuple[int, bytes | None]]) -> SegmentValue:
    row: SegmentValue | None = None
    for i in range(len(records) - 1, -1, -1):
        ts, value = records[i]
        valid_to = next_ts if i == 0 else records[i - 1][0]
        if row is None:
            # Where possible, start from a degenerate row as Kafka's test does.
            if len(records) > 1 and value is None:
                row = SegmentValue.with_record(None, ts, ts)
            else:
                row = SegmentValue.with_record(value, ts, valid_to)
        else:
            row.insert_as_latest(ts, valid_to, value)
    assert row is not None
    return row


def check_contents(
    row: SegmentValue, next_ts: int, records: list[tuple[int, bytes | None]]
) -> None:
    min_ts = records[-1][0]
    assert (row.next_ts, row.min_ts, row.records) == (next_ts, min_ts, records)
    raw = row.encode()
    assert (next_timestamp(raw), min_timestamp(raw)) == (next_ts, min_ts)
    assert SegmentValue.decode(raw) == row
    if next_ts != min_ts:
        for i, (ts, value) in enumerate(records):
            found = row.find(ts)
            valid_to = next_ts if i == 0 else records[i - 1][0]
            assert (found.index, found.valid_from, found.valid_to, found.value) == (
                i,
                ts,
                valid_to,
                value,
            )
    with pytest.raises(InvalidOptionError):
        row.find(next_ts)
    with pytest.raises(InvalidOptionError):
        row.find(min_ts - 1)


@pytest.mark.parametrize(
    "name, next_ts, records", FORMATTER_CASES, ids=[c[0] for c in FORMATTER_CASES]
)
def test_segment_row_builds_and_round_trips(
    name: str, next_ts: int, records: list[tuple[int, bytes | None]]
) -> None:
    latest_first = build_with_insert_latest(next_ts, records)
    check_contents(latest_first, next_ts, records)
    earliest_first = SegmentValue.with_record(None, next_ts, next_ts)
    for ts, value in records:
        earliest_first.insert_as_earliest(ts, value)
    check_contents(earliest_first, next_ts, records)
    assert earliest_first.encode() == latest_first.encode()
    if len(records) == 1:
        ((ts, value),) = records
        check_contents(SegmentValue.with_record(value, ts, next_ts), next_ts, records)
    if name in GOLDEN:
        assert latest_first.encode() == bytes.fromhex(GOLDEN[name])
    if next_ts != records[-1][0]:
        lo, hi = records[-1][0], records[0][0]
        assert [
            (r.index, r.valid_from, r.valid_to, r.value) for r in latest_first.find_all(lo, hi)
        ] == [
            (i, ts, next_ts if i == 0 else records[i - 1][0], value)
            for i, (ts, value) in enumerate(records)
            if value is not None
        ]


@pytest.mark.parametrize(
    "name, next_ts, records", FORMATTER_CASES[1:], ids=[c[0] for c in FORMATTER_CASES[1:]]
)
def test_segment_row_insert_and_update_at_index(
    name: str, next_ts: int, records: list[tuple[int, bytes | None]]
) -> None:
    for i in range(len(records)):
        new_ts = records[0][0] + 1 if i == 0 else records[i - 1][0] - 1
        if new_ts in (next_ts, records[i][0]) or new_ts < 0:
            continue
        row = build_with_insert_latest(next_ts, records)
        assert row.find(records[i][0]).index == i
        row.insert(new_ts, b"new", i)
        check_contents(row, next_ts, records[:i] + [(new_ts, b"new")] + records[i:])
    for i in range(len(records)):
        row = build_with_insert_latest(next_ts, records)
        row.update_record(records[i][0], b"updated", i)
        check_contents(row, next_ts, records[:i] + [(records[i][0], b"updated")] + records[i + 1 :])


# Kafka's "exceptional" cases: rows left overlapping by an interrupted write, repaired by
# truncation when a version from 10 to 13 is inserted as latest.
TRUNCATION_CASES = [
    ("truncate all, single record", [(12, None)]),
    ("truncate all, single record, exact timestamp match", [(10, None)]),
    ("truncate all, multiple records", [(12, None), (11, b"foo")]),
    (
        "truncate all, multiple records, exact timestamp match",
        [(12, None), (11, b"foo"), (10, None)],
    ),
    ("partial truncation, single record", [(8, None)]),
    ("partial truncation, multiple records", [(12, b"foo"), (8, b"bar")]),
    ("partial truncation, on record boundary", [(12, b"foo"), (10, b"bar"), (8, b"baz")]),
]


@pytest.mark.parametrize("name, records", TRUNCATION_CASES, ids=[c[0] for c in TRUNCATION_CASES])
def test_segment_row_repairs_overlap_on_insert_as_latest(
    name: str, records: list[tuple[int, bytes | None]]
) -> None:
    row = build_with_insert_latest(15, records)
    row.insert_as_latest(10, 13, b"new")
    kept = [(ts, v) for ts, v in records if ts < 10]
    check_contents(row, 13, [(10, b"new"), *kept])


def test_corrupt_segment_rows_are_reported() -> None:
    from stores.errors import CorruptDataError

    good = SegmentValue.with_record(b"foo", 1, 10).encode()
    for bad in (good[:10], good[:-1], good + b"x", good[:16] + bytes.fromhex("0000000000000002")):
        with pytest.raises(CorruptDataError):
            SegmentValue.decode(bad)


def test_scan_latest_columns_matches_scan_latest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Two and three rows: sizes at which pyarrow 26's binary_slice fails.
    for n in (0, 1, 2, 3, 70):
        with VersionedKeyValueStore(tmp_path / f"s{n}", history_retention_ms=1000) as store:
            for i in range(n):
                store.put(b"k%03d" % i, b"v" * i, 10 + i)
            columns = [
                (k, v, ts)
                for keys, values, stamps in store.scan_latest_columns(batch_rows=32)
                for k, v, ts in zip(keys.to_pylist(), values.to_pylist(), stamps.to_pylist())
            ]
            assert columns == list(store.scan_latest())


def test_a_store_over_an_open_database_leaves_it_open(tmp_path: Path) -> None:
    db = RocksDBBytesStore(tmp_path / "v", VersionedKeyValueStore.column_families())
    with VersionedKeyValueStore(None, 100, 10, db=db) as store:
        store.put(b"k", b"v", 5)
    assert not db.closed
    assert VersionedKeyValueStore.over(db, 100, 10).get(b"k") == VersionedRecord(b"v", 5)
    with pytest.raises(TypeError, match="a path or db="):
        VersionedKeyValueStore(tmp_path / "other", 100, db=db)
    with pytest.raises(TypeError, match="a path or db="):
        VersionedKeyValueStore(None, 100)
    db.close()
