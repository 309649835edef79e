"""Hypothesis strategies of op sequences for the differential tests, one per store variant.

Keys come from a small alphabet (so puts collide, prefixes nest and ranges cut between keys);
times cluster around segment boundaries and retention edges and sometimes jump, so that stream
time moves forward and backward, segments expire and late writes are dropped. Every op has a
record time ``rt`` >= 0 (Kafka's source drops records with negative timestamps).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

KEYS = [
    b"", b"\x00", b"\x00\x00", b"a", b"a\x00", b"a\x00\x00", b"ab", b"abc", b"b", b"ba",
    b"\xff", b"\xff\xff",
]  # fmt: skip
HEADER_KEYS = ["h", "trace", "h"]

keys = st.sampled_from([k.hex() for k in KEYS])
optional_keys = st.one_of(st.none(), keys)
payloads = st.binary(min_size=0, max_size=6).map(bytes.hex)
headers = st.lists(
    st.tuples(st.sampled_from(HEADER_KEYS), st.one_of(st.none(), payloads)).map(list), max_size=3
)


def _op(method: str, *args: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"m": st.just(method), "a": st.tuples(*args).map(list), "rt": record_times, "rh": headers}
    )


#: The time and headers of the record being processed (Kafka's ``context.timestamp()`` and
#: ``context.headers()``), which plain values and deletes are logged with.
record_times = st.integers(0, 20)


def times(span: int, boundaries: list[int], step: int) -> st.SearchStrategy[int]:
    """Timestamps in ``[0, span]``: on a grid of ``step`` (so that differences hit the
    retention, the grace period and the segment interval exactly), on or next to a
    boundary, or anywhere."""
    near = st.sampled_from(boundaries).flatmap(lambda b: st.integers(max(b - 1, 0), b + 1))
    grid = st.integers(0, span // step).map(lambda i: i * step)
    return st.one_of(grid, near, st.integers(0, span))


# -- key-value family ---------------------------------------------------------------------------


def kv_values(variant: str) -> st.SearchStrategy[Any]:
    if variant == "key_value":
        return payloads
    stamp = st.integers(0, 1_000)
    if variant == "timestamped":
        return st.fixed_dictionaries({"v": payloads, "t": stamp})
    return st.fixed_dictionaries({"v": payloads, "t": stamp, "h": headers})


def query(kind: str, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """An IQv2 op: ``StateStore.query`` with a query of ``kind`` (fields may be None)."""
    spec = st.fixed_dictionaries({"type": st.just(kind), **fields})
    return _op("query", spec)


ascending = st.one_of(st.none(), st.booleans())


def key_value_ops(variant: str) -> st.SearchStrategy[dict[str, Any]]:
    values = kv_values(variant)
    nullable = st.one_of(st.none(), values)
    return st.one_of(
        query("KeyQuery", key=keys),
        query("TimestampedKeyQuery", key=keys),
        query("RangeQuery", lower=optional_keys, upper=optional_keys, ascending=ascending),
        query("TimestampedRangeQuery", lower=optional_keys, upper=optional_keys,
              ascending=ascending),  # fmt: skip
        query("TimestampedKeyWithHeadersQuery", key=keys),
        query("TimestampedRangeWithHeadersQuery", lower=optional_keys, upper=optional_keys,
              ascending=ascending),  # fmt: skip
        _op("put", keys, nullable),
        _op("put", keys, values),
        _op("putIfAbsent", keys, nullable),
        _op("putAll", st.lists(st.tuples(keys, nullable).map(list), max_size=3)),
        _op("delete", keys),
        _op("get", keys),
        _op("range", optional_keys, optional_keys),
        _op("reverseRange", optional_keys, optional_keys),
        _op("all"),
        _op("reverseAll"),
        _op("prefixScan", keys),
    )


# -- versioned ----------------------------------------------------------------------------------

VERSIONED_PARAMS = {"historyRetentionMs": 100, "segmentIntervalMs": 30}


def versioned_ops(params: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    retention, interval = params["historyRetentionMs"], params["segmentIntervalMs"]
    t = times(400, [0, interval, 2 * interval, retention, retention + interval, 300], 10)
    return st.one_of(
        _op("put", keys, payloads, t),
        _op("put", keys, st.none(), t),
        _op("delete", keys, t),
        _op("get", keys),
        _op("get", keys, t),
        query("VersionedKeyQuery", key=keys, asOf=st.one_of(st.none(), t)),
        query("MultiVersionedKeyQuery", key=keys, fromTime=st.one_of(st.none(), t),
              toTime=st.one_of(st.none(), t), ascending=ascending),  # fmt: skip
        query("KeyQuery", key=keys),
    )


# -- window family -------------------------------------------------------------------------------

WINDOW_PARAMS = {"retentionMs": 120_000, "windowSizeMs": 10_000, "segmentIntervalMs": 60_000}


def window_values(variant: str) -> st.SearchStrategy[Any]:
    stamp = st.integers(0, 1_000)
    if variant in ("window", "window_duplicates"):
        return payloads
    if variant == "timestamped_window":
        return st.fixed_dictionaries({"v": payloads, "t": stamp})
    if variant == "window_headers":
        return st.fixed_dictionaries({"v": payloads, "h": headers})
    return st.fixed_dictionaries({"v": payloads, "t": stamp, "h": headers})


def window_ops(variant: str, params: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    interval, retention = params["segmentIntervalMs"], params["retentionMs"]
    t = times(600_000, [0, interval, 2 * interval, retention, retention + interval, 400_000], 10_000)
    values = window_values(variant)
    return st.one_of(
        _op("put", keys, values, t),
        _op("put", keys, st.one_of(st.none(), values), t),
        _op("fetch", keys, t),
        _op("fetch", keys, t, t),
        _op("fetch", optional_keys, optional_keys, t, t),
        _op("backwardFetch", keys, t, t),
        _op("backwardFetch", optional_keys, optional_keys, t, t),
        _op("fetchAll", t, t),
        _op("backwardFetchAll", t, t),
        _op("all"),
        _op("backwardAll"),
        query("WindowKeyQuery", key=keys, fromTime=t, toTime=t),
        query("WindowRangeQuery", key=keys),
        query("WindowRangeQuery", fromTime=t, toTime=t),
        query("TimestampedWindowKeyWithHeadersQuery", key=keys, fromTime=t, toTime=t),
        query("TimestampedWindowRangeWithHeadersQuery", fromTime=t, toTime=t),
        query("TimestampedWindowRangeWithHeadersQuery", key=keys),
    )


# -- session family ------------------------------------------------------------------------------

SESSION_PARAMS = {"retentionMs": 120_000, "segmentIntervalMs": 60_000}


def session_values(variant: str) -> st.SearchStrategy[Any]:
    if variant == "session":
        return payloads
    return st.fixed_dictionaries({"v": payloads, "h": headers})


def session_ops(variant: str, params: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    interval, retention = params["segmentIntervalMs"], params["retentionMs"]
    t = times(600_000, [0, interval, 2 * interval, retention, retention + interval, 400_000], 10_000)
    lengths = st.integers(0, 30_000)
    # Now and then a session ending past 2**55, where Kafka's session key-range bound
    # (OrderedBytes.upperRange) starts to cut rows off.
    far_ends = st.sampled_from([2**55, 2**56 + 3, 2**63 - 1])
    sessions = st.one_of(
        st.tuples(keys, t, lengths).map(lambda ksd: {"k": ksd[0], "s": ksd[1], "e": ksd[1] + ksd[2]}),
        st.tuples(keys, t, lengths).map(lambda ksd: {"k": ksd[0], "s": ksd[1], "e": ksd[1] + ksd[2]}),
        st.tuples(keys, t, far_ends).map(lambda kse: {"k": kse[0], "s": kse[1], "e": kse[2]}),
    )
    values = session_values(variant)
    return st.one_of(
        _op("put", sessions, values),
        _op("put", sessions, st.one_of(st.none(), values)),
        _op("remove", sessions),
        _op("fetchSession", keys, t, t),
        _op("findSessions", keys, t, t),
        _op("findSessions", optional_keys, optional_keys, t, t),
        _op("backwardFindSessions", keys, t, t),
        _op("backwardFindSessions", optional_keys, optional_keys, t, t),
        _op("fetch", keys),
        _op("fetch", optional_keys, optional_keys),
        _op("backwardFetch", keys),
        _op("backwardFetch", optional_keys, optional_keys),
        query("WindowRangeQuery", key=keys),
        query("WindowKeyQuery", key=keys, fromTime=t, toTime=t),
        query("TimestampedWindowRangeWithHeadersQuery", key=keys),
        query("TimestampedWindowRangeWithHeadersQuery", fromTime=t, toTime=t),
        # Not findSessions(earliestEnd, latestEnd): Kafka's RocksDBSessionStore refuses it
        # (UnsupportedOperationException: only the time-ordered emit-final store answers it),
        # ours answers it from the same layout (stores.session.store.find_sessions_by_end).
    )


def params_of(variant: str) -> dict[str, Any]:
    """The store parameters each variant's differential test uses."""
    if variant == "versioned":
        return dict(VERSIONED_PARAMS)
    if variant.startswith("session"):
        return dict(SESSION_PARAMS)
    if variant in ("key_value", "timestamped", "timestamped_headers"):
        return {}
    return dict(WINDOW_PARAMS)


def ops_of(variant: str, params: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """One op of ``variant``."""
    if variant == "versioned":
        return versioned_ops(params)
    if variant.startswith("session"):
        return session_ops(variant, params)
    if variant in ("key_value", "timestamped", "timestamped_headers"):
        return key_value_ops(variant)
    return window_ops(variant, params)


def sequences(
    variant: str, params: dict[str, Any], without: frozenset[str] = frozenset()
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Op sequences of ``variant``: up to 40 ops, none of a method in ``without``."""
    ops = ops_of(variant, params)
    if without:
        ops = ops.filter(lambda op: op["m"] not in without)
    return st.lists(ops, min_size=1, max_size=40)
