"""Window and session stores' scans computed from columns (``catalog.span_columns``) against
the stores themselves: for any commits of puts, deletes, late and expired records, and any
start range, the rows and their order are what Kafka's segmented store in RocksDB scans."""

from __future__ import annotations

import itertools
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.kinds import SESSION, WINDOW, Scan, StoreKind
from catalog.span_columns import session_read, window_read
from stores.headers_format import encode_headers
from stores.rocksdb_bytes import RocksDBBytesStore

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


def _store_scan(kind: StoreKind, params: dict[str, Any], tables: list[pa.Table],
                scans: list[Scan]) -> list[list[dict[str, Any]]]:  # fmt: skip
    db = RocksDBBytesStore(str(_ROOT / f"s{next(_COUNTER)}"), kind.column_families(params))
    try:
        store = kind.open(db, params)
        for table in tables:
            kind.apply(store, table, params)
        return [
            [r for b in kind.scan(store, scan, params) for r in b.to_pylist()] for scan in scans
        ]
    finally:
        db.close()


@pytest.fixture(scope="module", autouse=True)
def _root(tmp_path_factory: pytest.TempPathFactory) -> None:
    global _ROOT
    _ROOT = tmp_path_factory.mktemp("span-stores")


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
    for scan, expected in zip(scans, _store_scan(WINDOW, params, tables, scans)):
        computed = window_read(tables, params, scan.time_from, scan.time_to)
        assert computed is not None
        assert computed.to_pylist() == expected, scan


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
    for scan, expected in zip(scans, _store_scan(SESSION, params, tables, scans)):
        computed = session_read(tables, params, scan.time_from, scan.time_to)
        assert computed is not None
        assert computed.to_pylist() == expected, scan
