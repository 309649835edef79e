"""The change feed of every kind: inserts, updates (pre and post images), deletes, overwrites,
expiry, and nothing for rows a commit left equal."""

from __future__ import annotations

import pyarrow as pa
import pytest

from catalog import Catalog
from stores.errors import InvalidOptionError

HOUR = 3_600_000


def _changes(catalog: Catalog, start: int, end: int | None = None) -> list[tuple[object, ...]]:
    feed = catalog.changes("s", start, end).to_pylist()
    shown = []
    for row in feed:
        stamp = row.pop("_commit_timestamp")
        assert stamp is not None
        fields = [row.pop("_commit_version"), row.pop("_change_type")]
        fields += [v.timestamp() * 1000 if hasattr(v, "timestamp") else v for v in row.values()]
        shown.append(tuple(fields))
    return sorted(shown, key=str)


def test_a_key_value_store_reports_inserts_updates_and_deletes(catalog: Catalog) -> None:
    table = catalog.create_store("s", "keyvalue", "string", "long", num_partitions=2)
    table.commit(table.stage(pa.array(["a", "b"]), pa.array([1, 2]), None))  # 2
    table.commit(table.stage(pa.array(["a", "b", "c"]), pa.array([10, 2, None]), None))  # 3
    table.commit(table.stage(pa.array(["a"]), pa.array([None], pa.int64()), None))  # 4
    table.commit(table.stage(pa.array(["z"]), pa.array([7]), None), overwrite=True)  # 5
    assert _changes(catalog, 2) == sorted([
        (2, "insert", "a", 1), (2, "insert", "b", 2),
        (3, "update_preimage", "a", 1), (3, "update_postimage", "a", 10),  # b left equal: none
        (4, "delete", "a", 10),
        (5, "delete", "b", 2), (5, "insert", "z", 7),  # an overwrite: deletes plus inserts
    ], key=str)  # fmt: skip
    assert _changes(catalog, 3, 3) == sorted(
        [(3, "update_preimage", "a", 1), (3, "update_postimage", "a", 10)], key=str
    )


def test_a_versioned_store_reports_changes_of_its_latest_view(catalog: Catalog) -> None:
    table = catalog.create_store("s", "versioned", "string", "long", history_retention_ms=HOUR)
    def put(values: list[int | None], stamps: list[int]) -> None:
        keys = pa.array(["k"] * len(values))
        table.commit(table.stage(keys, pa.array(values, pa.int64()),
                                 {"timestamp": pa.array(stamps, pa.int64())}))  # fmt: skip

    put([1], [100])  # 2
    put([2], [50])  # 3: an older version, the latest view is unchanged
    put([3], [200])  # 4
    assert _changes(catalog, 2) == sorted([
        (2, "insert", "k", 1, 100, None),
        (4, "update_preimage", "k", 1, 100, None), (4, "update_postimage", "k", 3, 200, None),
    ], key=str)  # fmt: skip


def test_window_expiry_is_a_delete_of_the_commit_that_expired_it(catalog: Catalog) -> None:
    table = catalog.create_store("s", "window", "string", "long", window_size_ms=HOUR,
                                 retention_ms=2 * HOUR)  # fmt: skip
    def put(key: str, value: int, start: int) -> None:
        table.commit(table.stage(pa.array([key]), pa.array([value]),
                                 {"window_start": pa.array([start], pa.int64())}))  # fmt: skip

    put("old", 1, 0)  # 2
    put("new", 5, 10 * HOUR)  # 3: stream time moves past the old window's retention
    changes = _changes(catalog, 2)
    assert [(c[0], c[1], c[2]) for c in changes] == sorted(
        [(2, "insert", "old"), (3, "delete", "old"), (3, "insert", "new")], key=str
    )


def test_a_session_store_identifies_rows_by_their_session(catalog: Catalog) -> None:
    table = catalog.create_store("s", "session", "string", "long", retention_ms=10 * HOUR)
    def put(value: int | None, start: int, end: int) -> None:
        table.commit(table.stage(pa.array(["u"]), pa.array([value], pa.int64()),
                                 {"session_start": pa.array([start], pa.int64()),
                                  "session_end": pa.array([end], pa.int64())}))  # fmt: skip

    put(1, 0, 10)  # 2
    put(2, 0, 10)  # 3: the same session, a new value
    put(3, 20, 30)  # 4: another session
    put(None, 0, 10)  # 5: removed
    kinds = [(c[0], c[1], c[2], c[3], c[4]) for c in _changes(catalog, 2)]
    assert kinds == sorted([
        (2, "insert", "u", 0, 10), (3, "update_preimage", "u", 0, 10),
        (3, "update_postimage", "u", 0, 10), (4, "insert", "u", 20, 30), (5, "delete", "u", 0, 10),
    ], key=str)  # fmt: skip


def test_ranges_outside_the_log_are_refused_with_what_exists(catalog: Catalog) -> None:
    table = catalog.create_store("s", "keyvalue", "string", "long")
    table.commit(table.stage(pa.array(["a"]), pa.array([1]), None))
    with pytest.raises(InvalidOptionError, match="commits 5 to 2 of store 's', which has commits 1 to 2"):
        catalog.changes("s", 5)
    assert _changes(catalog, 1) == [(2, "insert", "a", 1)]  # commit 1 created it, empty
