"""Window and session stores' scans computed from columns (``stores.window.columns``,
``stores.session.columns``, on ``stores.segments.columns``) against
the stores themselves: for any commits of puts, deletes, late and expired records, from the
start or from a snapshot taken after some of them, and any start range, the rows and their
order are what Kafka's segmented store in RocksDB scans."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.kinds import SESSION, WINDOW, Scan, StoreKind
from catalog.log.snapshots import dump
from stores.bytes.rocksdb import RocksDBBytesStore
from stores.formats.headers import encode_headers
from stores.session.columns import session_base, session_read, session_rows
from stores.window.columns import window_base, window_read, window_rows

_COUNTER = itertools.count()
KEYS = [b"a", b"ab", b"b"]
VALUES = st.sampled_from([None, b"", b"x", b"yy"])
HEADERS = st.sampled_from([b"", encode_headers([("h", b"1")]), encode_headers([("k", None)])])
TIMES = st.integers(0, 30)

window_params = st.builds(
    lambda size, extra, interval, dups, timestamped, headers: WINDOW.make_params(
        {
            "window_size_ms": size,
            "retention_ms": size + extra,
            "segment_interval_ms": interval,
            "retain_duplicates": dups,
            "timestamped": timestamped,
            "headers": headers,
        }
    ),
    st.integers(1, 8),
    st.integers(0, 10),
    st.integers(1, 12),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
session_params = st.builds(
    lambda retention, interval, headers: SESSION.make_params(
        {"retention_ms": retention, "segment_interval_ms": interval, "headers": headers}
    ),
    st.integers(0, 30),
    st.integers(1, 20),
    st.booleans(),
)


def _scans(times: list[int]) -> list[Scan]:
    bounds = sorted({0, *times[:6], max(times, default=0) + 5})
    return [Scan(), *(Scan(time_from=t) for t in bounds), *(Scan(time_to=t) for t in bounds),
            *(Scan(time_from=a, time_to=b) for a, b in itertools.pairwise(bounds))]  # fmt: skip


@contextmanager
def _dropped(kind: StoreKind) -> Iterator[list[int]]:
    """The records Kafka's expired-segment warnings count, logged meanwhile for ``kind``."""
    counts: list[int] = []

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found = re.search(r"\((\d+) records\)", record.getMessage())
            counts.append(int(found.group(1)) if found else 1)

    logger, handler = logging.getLogger(f"stores.{kind.name}"), Count(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield counts
    finally:
        logger.removeHandler(handler)


def _store_scan(
    kind: StoreKind,
    params: dict[str, Any],
    tables: list[pa.Table],
    scans: list[Scan],
    snapshot_after: int | None = None,
) -> tuple[list[list[dict[str, Any]]], dict[str, tuple[pa.Array, pa.Array]], int]:
    """Each scan of a store built from ``tables``, (``snapshot_after``: once that many were
    applied) the store's rows dumped as a compaction does, by column family, and the records
    the store dropped as expired after it."""
    families = kind.column_families(params)
    db = RocksDBBytesStore(str(_ROOT / f"s{next(_COUNTER)}"), families)
    runs: dict[str, tuple[pa.Array, pa.Array]] = {}
    dropped = 0
    try:
        store = kind.open(db, params)
        for n, table in enumerate(tables):
            if n == snapshot_after:
                runs = _runs(db, families)
            with _dropped(kind) as counts:
                kind.apply(store, table, params)
            dropped += sum(counts) if snapshot_after is None or n >= snapshot_after else 0
        if snapshot_after == len(tables):
            runs = _runs(db, families)
        scanned = [[r for b in kind.scan(store, s, params) for r in b.to_pylist()] for s in scans]
        _FINAL[0] = _rows_of(_runs(db, families))
        return scanned, runs, dropped
    finally:
        db.close()


#: The last store's rows per column family once every table was applied (``_store_scan``).
_FINAL: list[dict[str, list[tuple[bytes, bytes]]]] = [{}]


def _rows_of(runs: dict[str, tuple[pa.Array, pa.Array]]) -> dict[str, list[tuple[bytes, bytes]]]:
    """Non-empty families' rows as (key, value) bytes."""
    rows = {f: list(zip(k.to_pylist(), v.to_pylist(), strict=True)) for f, (k, v) in runs.items()}
    return {f: r for f, r in rows.items() if r}


def _runs(db: RocksDBBytesStore, families: tuple[str, ...]) -> dict[str, tuple[pa.Array, pa.Array]]:
    db.commit()
    snapshot = dump(db, families)
    runs = {}
    for family in set(snapshot.column("cf").to_pylist()):
        rows = snapshot.filter(pc.equal(snapshot.column("cf"), family))
        runs[family] = (rows.column("key").combine_chunks(), rows.column("value").combine_chunks())
    return runs


@pytest.fixture(scope="module", autouse=True)
def _root(tmp_path_factory: pytest.TempPathFactory) -> None:
    global _ROOT
    _ROOT = tmp_path_factory.mktemp("window-session-stores")


_ROOT: Any = None
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(params=window_params, data=st.data())
def test_window_scans_equal_the_store(params: dict[str, Any], data: st.DataObject) -> None:
    row = st.tuples(st.sampled_from(KEYS), VALUES, TIMES, st.sampled_from([-1, 3, 9]), HEADERS)
    commits = data.draw(st.lists(st.lists(row, max_size=8), min_size=1, max_size=4))
    tables = []
    for commit in commits:
        keys, values, starts, stamps, headers = zip(*commit) if commit else ([],) * 5
        columns = {"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                   "window_start": pa.array(starts, pa.int64())}  # fmt: skip
        if params["timestamped"]:
            columns["timestamp"] = pa.array(stamps, pa.int64())
        if params["headers"]:
            columns["headers"] = pa.array(headers, pa.binary())
        tables.append(pa.table(columns))
    scans = _scans([r[2] for c in commits for r in c])
    cut = data.draw(st.integers(0, len(tables)))  # a snapshot after the first ``cut`` commits
    expected_scans, runs, dropped = _store_scan(WINDOW, params, tables, scans, cut)
    base = window_base(runs, params, WINDOW.column_families(params)) if runs else None
    for scan, expected in zip(scans, expected_scans):
        with _dropped(WINDOW) as counts:
            computed = window_read(tables[cut:], params, scan.time_from, scan.time_to, base)
        assert computed is not None
        assert computed.to_pylist() == expected, scan
        assert sum(counts) == dropped  # the store's warning, with its count
    # A cache built from columns holds, byte for byte, the rows the store wrote.
    stored = window_rows(tables[cut:], params, base, WINDOW.column_families(params))
    assert stored is not None and _rows_of(stored) == _FINAL[0]


@SETTINGS
@given(params=session_params, data=st.data())
def test_session_scans_equal_the_store(params: dict[str, Any], data: st.DataObject) -> None:
    row = st.tuples(st.sampled_from(KEYS), VALUES, TIMES, st.integers(0, 12), HEADERS)
    commits = data.draw(st.lists(st.lists(row, max_size=8), min_size=1, max_size=4))
    tables = []
    for commit in commits:
        keys, values, starts, lengths, headers = zip(*commit) if commit else ([],) * 5
        columns = {"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                   "session_start": pa.array(starts, pa.int64()),
                   "session_end": pa.array([s + n for s, n in zip(starts, lengths)], pa.int64())}  # fmt: skip
        if params["headers"]:
            columns["headers"] = pa.array(headers, pa.binary())
        tables.append(pa.table(columns))
    scans = _scans([r[2] for c in commits for r in c])
    cut = data.draw(st.integers(0, len(tables)))
    expected_scans, runs, dropped = _store_scan(SESSION, params, tables, scans, cut)
    base = session_base(runs, params, SESSION.column_families(params)) if runs else None
    for scan, expected in zip(scans, expected_scans):
        with _dropped(SESSION) as counts:
            computed = session_read(tables[cut:], params, scan.time_from, scan.time_to, base)
        assert computed is not None
        assert computed.to_pylist() == expected, scan
        assert sum(counts) == dropped  # the store's warning, with its count
    stored = session_rows(tables[cut:], params, base, SESSION.column_families(params))
    assert stored is not None and _rows_of(stored) == _FINAL[0]


def test_duplicates_after_a_snapshot_continue_its_sequence_numbers() -> None:
    params = WINDOW.make_params(
        {"window_size_ms": 5, "retention_ms": 100, "retain_duplicates": True}
    )
    first, second = (
        pa.table(
            {
                "key": pa.array([b"a"]),
                "value": pa.array([v]),
                "window_start": pa.array([10], pa.int64()),
            }
        )
        for v in (b"old", b"new")
    )
    (expected,), runs, _ = _store_scan(WINDOW, params, [first, second], [Scan()], snapshot_after=1)
    assert [r["value"] for r in expected] == [b"old", b"new"]  # both kept, in put order
    base = window_base(runs, params, WINDOW.column_families(params))
    computed = window_read([second], params, None, None, base)
    assert computed is not None and computed.to_pylist() == expected
