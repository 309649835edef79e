"""A versioned store's whole history as a table (versions=all): every version with its
validity interval, KIP-968's time bounds, and the as-of read as a filter of it."""

from __future__ import annotations

import random
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pytest

from catalog import Catalog, StoreTable
from stores.errors import InvalidOptionError

DAY = 86_400_000


def _ms(value: Any) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)


def _history(table: StoreTable, **bounds: Any) -> list[tuple[str, int, int, int | None]]:
    from catalog.kinds import Scan

    scan = Scan(time_from=bounds.get("from_ms"), time_to=bounds.get("to_ms"), all_versions=True)
    rows = table.to_arrow(scan=scan).to_pylist()
    found = [(r["key"], r["value"], _ms(r["valid_from"]), _ms(r["valid_to"])) for r in rows]
    return sorted(found, key=lambda h: (h[0], h[2]))  # by key, then time


@pytest.fixture
def prices(catalog: Catalog) -> StoreTable:
    table = catalog.create_store("prices", "versioned", "string", "long", 2, history_retention_ms=DAY)
    rng = random.Random(3)
    for _ in range(6):
        n = 12
        keys = [f"p{rng.randrange(4)}" for _ in range(n)]
        values = [None if rng.random() < 0.2 else rng.randrange(100) for _ in range(n)]
        stamps = [rng.randrange(1, 1000) for _ in range(n)]
        table.commit(table.stage(pa.array(keys), pa.array(values, pa.int64()),
                                 {"timestamp": pa.array(stamps, pa.int64())}))  # fmt: skip
    return table


def test_every_as_of_read_is_the_history_filtered_to_its_instant(prices: StoreTable) -> None:
    history = _history(prices)
    assert history and any(vt is not None for *_, vt in history)
    for instant in sorted({0, 999, 2000} | {vf for _, _, vf, _ in history} | {vt or 0 for *_, vt in history}):
        as_of = sorted((r["key"], r["value"]) for r in prices.to_arrow(as_of=instant).to_pylist())
        filtered = sorted(
            (k, v) for k, v, vf, vt in history if vf <= instant and (vt is None or instant < vt)
        )
        assert as_of == filtered, instant


def test_time_bounds_keep_the_versions_valid_at_some_instant_in_the_range(prices: StoreTable) -> None:
    history = _history(prices)
    for low, high in ((100, 300), (500, 500), (0, 50), (900, 10_000)):
        expected = [h for h in history if h[2] <= high and (h[3] is None or h[3] > low)]
        assert _history(prices, from_ms=low, to_ms=high) == expected
    # A key's versions do not overlap and follow each other in time.
    by_key: dict[str, list[tuple[int, int | None]]] = {}
    for key, _, vf, vt in history:
        by_key.setdefault(key, []).append((vf, vt))
    for intervals in by_key.values():
        for (_, end), (start, _) in pairwise(intervals):
            assert end is not None and end <= start


def test_a_history_written_back_into_a_new_store_reads_the_same(
    catalog: Catalog, prices: StoreTable
) -> None:
    history = _history(prices)
    copy = catalog.create_store("copy", "versioned", "string", "long", history_retention_ms=DAY)
    keys = [h[0] for h in history] + [h[0] for h in history if h[3] is not None]
    values = [h[1] for h in history] + [None for h in history if h[3] is not None]
    stamps = [h[2] for h in history] + [h[3] for h in history if h[3] is not None]
    copy.commit(copy.stage(pa.array(keys), pa.array(values, pa.int64()),
                           {"timestamp": pa.array(stamps, pa.int64())}))  # fmt: skip
    assert _history(copy) == history


def test_history_options_are_checked(catalog: Catalog, prices: StoreTable) -> None:
    from catalog.kinds import Scan

    kv = catalog.create_store("kv", "keyvalue", "string", "long")
    with pytest.raises(InvalidOptionError, match="'versions' = 'all' applies to versioned stores"):
        kv.to_arrow(versions="all")
    with pytest.raises(InvalidOptionError, match="do not combine"):
        prices.check_scan(Scan(as_of=5, all_versions=True))
    with pytest.raises(InvalidOptionError, match="'fromTimestamp' \\(9 ms\\) is after"):
        prices.check_scan(Scan(time_from=9, time_to=1, all_versions=True))
    with pytest.raises(InvalidOptionError, match="accepted: 'latest' or 'all'"):
        prices.to_arrow(versions="every")


def test_the_history_as_known_after_an_earlier_commit(catalog: Catalog) -> None:
    from catalog.kinds import Scan

    table = catalog.create_store("h", "versioned", "string", "long", history_retention_ms=DAY)
    table.commit(table.stage(pa.array(["k"]), pa.array([1]), {"timestamp": pa.array([10], pa.int64())}))
    table.commit(table.stage(pa.array(["k"]), pa.array([2]), {"timestamp": pa.array([5], pa.int64())}))

    def known_after(commit_id: int) -> list[tuple[int, int | None, int | None]]:
        batches = list(table.read_partition(0, commit_id, Scan(all_versions=True)))
        rows = pa.Table.from_batches(batches, schema=table.arrow_schema()).to_pylist()
        return sorted((r["value"], _ms(r["valid_from"]), _ms(r["valid_to"])) for r in rows)

    assert known_after(2) == [(1, 10, None)]
    assert known_after(3) == [(1, 10, None), (2, 5, 10)]  # a late record filled in the past
