"""A tour of the store family from Python, no Spark: window, session and header-aware stores,
then Interactive Queries v2 over a catalog store.

Runs on local files only (a temporary directory, or ``$STATE_STORE_ROOT`` for the catalog part).
"""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa

from catalog import Catalog, StateQueryRequest
from stores import (
    KeyQuery,
    SessionStore,
    TimestampedKeyValueStoreWithHeaders,
    TimestampedWindowStore,
    ValueAndTimestamp,
    ValueTimestampHeaders,
    WindowKeyQuery,
)

MINUTE = 60_000


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        # Five-minute click counts per page, kept for an hour of stream time.
        with TimestampedWindowStore(
            os.path.join(scratch, "clicks"), retention_ms=60 * MINUTE, window_size_ms=5 * MINUTE
        ) as clicks:
            clicks.put(b"home", ValueAndTimestamp(b"3", 1 * MINUTE), 0)
            clicks.put(b"home", ValueAndTimestamp(b"5", 7 * MINUTE), 5 * MINUTE)
            clicks.put(b"docs", ValueAndTimestamp(b"1", 6 * MINUTE), 5 * MINUTE)
            print("Windows of 'home' in the first ten minutes:")
            for start, value in clicks.fetch(b"home", 0, 10 * MINUTE):
                print(f"  [{start // MINUTE}, {start // MINUTE + 5}) min: count={value.value.decode()}")
            print("All windows:")
            for windowed, value in clicks.all():
                print(f"  {windowed.key.decode():<5} starts {windowed.start // MINUTE} min")

        # User sessions with an inactivity gap, found by Kafka's findSessions.
        with SessionStore(os.path.join(scratch, "sessions"), retention_ms=60 * MINUTE) as sessions:
            sessions.put(b"ada", 0, 4 * MINUTE, b"2 pages")
            sessions.put(b"ada", 20 * MINUTE, 21 * MINUTE, b"1 page")
            found = list(sessions.find_sessions(b"ada", 0, 30 * MINUTE))
            print(f"Sessions of 'ada': {[(w.start // MINUTE, w.end // MINUTE) for w, _ in found]}")

        # Record headers kept with the value (KIP-1271).
        with TimestampedKeyValueStoreWithHeaders(os.path.join(scratch, "orders")) as orders:
            orders.put(b"o-1", ValueTimestampHeaders(b"paid", 1_000, [("trace-id", b"a1b2")]))
            print(f"Order o-1: {orders.get(b'o-1')}")

    # Interactive Queries v2 over a catalog store: typed keys, per-partition results.
    catalog = Catalog(os.environ.get("STATE_STORE_ROOT", "./state-warehouse"))
    if catalog.exists("tour_counts"):
        catalog.drop("tour_counts")
    table = catalog.create_store(
        "tour_counts", "window", "string", "long", 2,
        retention_ms=60 * MINUTE, window_size_ms=5 * MINUTE,
    )  # fmt: skip
    # A write without Spark: Arrow, pandas or polars rows, one commit (append, overwrite, delete).
    table.append(
        pa.table({"key": ["home", "home", "docs"], "value": [3, 5, 1],
                  "window_start": pa.array([0, 5 * MINUTE, 5 * MINUTE], pa.int64())})
    )  # fmt: skip
    result = catalog.query(
        StateQueryRequest.in_store("tour_counts").with_query(
            WindowKeyQuery.with_key_and_window_start_range("home", 0, 10 * MINUTE)
        )
    )
    # As in Kafka, every partition answers (the key's own one with its windows, the others
    # with an empty iterator), so the results are gathered rather than asked for "the only one".
    windows = [
        (start // MINUTE, value)
        for partition_result in result.get_partition_results().values()
        for start, value in partition_result.get_result()
    ]
    print(f"IQv2 windows of 'home': {windows}")
    print(f"  answered at position {result.get_position()}")
    plain = catalog.query(StateQueryRequest.in_store("tour_counts").with_query(KeyQuery.with_key("docs")))
    reasons = {r.get_failure_reason().name for r in plain.get_partition_results().values()}
    print(f"  a KeyQuery on a window store fails per partition: {sorted(reasons)}")


if __name__ == "__main__":
    main()
