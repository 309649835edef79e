"""One versioned history and the events asked of it, shared by the as-of tests (``asof_join``
in Spark and without it, the SQL lookups), so that every route is held to the same cases."""

from __future__ import annotations

from typing import Any

from catalog import Catalog
from catalog.operations.query import StateQueryRequest, query
from stores.query import VersionedKeyQuery

# history retention 7 s: at stream time 9 s (key c's last write) versions that ended before
# 2 s answer no more, as in Kafka.
VERSIONS = [
    ("a", 1.0, 1_000), ("a", 2.0, 2_000), ("a", 3.0, 3_000),
    ("b", 10.0, 1_500),
    ("d", 5.0, 1_200), ("d", None, 2_500),  # deleted at 2.5 s
    ("c", 7.0, 100), ("c", 8.0, 9_000),
]  # fmt: skip
EVENTS = [
    ("a", 500),  # before a's first version
    ("a", 1_500),  # valid then, but older than the retention: only the latest may answer
    ("a", 2_000), ("a", 2_500), ("a", 2_999),  # at a version's start, between, at its end
    ("a", 3_000), ("a", 50_000),  # the latest version, from its start on
    ("b", 1_499), ("b", 1_500), ("b", 8_000),
    ("d", 2_200), ("d", 2_500), ("d", 2_600),  # before and after the delete
    ("c", 500), ("c", 8_999), ("c", 9_000),
    ("e", 2_000),  # a key the store never had
    (None, 2_000), ("a", None),  # nulls join nothing
]  # fmt: skip


def python_get(root: str, key: str | None, at_ms: int | None) -> tuple[Any, Any, Any]:
    """``(value, valid_from ms, valid_to ms)`` of store ``rates`` under ``root`` by the store's
    Python API: what every as-of route must answer (Nones: no version; a null key or time, or
    a time before 1970, joins nothing)."""
    if key is None or at_ms is None or at_ms < 0:
        return None, None, None
    request = StateQueryRequest.in_store("rates").with_query(
        VersionedKeyQuery.with_key(key).as_of(at_ms)
    )
    found = query(Catalog(root), request).get_only_partition_result()
    record = None if found is None else found.get_result()
    if record is None:
        return None, None, None
    return record.value, record.timestamp, record.valid_to
