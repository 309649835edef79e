"""Scenarios a real Kafka Streams application (tests/kafka/cluster.py) runs: input records and the
IQv2 answers Kafka must give. ``test_app`` checks the application itself with them;
``test_interop`` moves their state between the application and our stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from stores.columns.headers import HEADERS_TYPE

PARTITIONS = 2


def h(s: str) -> str:
    return s.encode().hex()


@dataclass
class Scenario:
    """Input records ``(key, value, time, headers)`` (key k<i> goes to partition i % 2) and the
    queries with the answers Kafka must give, combined over the partitions (``query_result``)."""

    kind: str
    params: dict[str, Any]
    records: list[tuple[str, str | None, int, list[tuple[str, bytes]]]]
    queries: list[tuple[dict[str, Any], Any]] = field(default_factory=list)
    kafka_version: str = "4.3.1"
    processing_guarantee: str = "at_least_once"
    #: Answers (by query index) Kafka gives otherwise after reopening its own state without restoring.
    reopened: dict[int, Any] = field(default_factory=dict)

    def table(self) -> pa.Table:
        return pa.table({
            "key": pa.array([k.encode() for k, _, _, _ in self.records], pa.binary()),
            "value": pa.array([None if v is None else v.encode() for _, v, _, _ in self.records], pa.binary()),
            "partition": pa.array([int(k[1:]) % PARTITIONS for k, _, _, _ in self.records], pa.int32()),
            "timestamp": pa.array([t for _, _, t, _ in self.records], pa.int64()),
            "headers": pa.array([[{"key": hk, "value": hv} for hk, hv in h] for _, _, _, h in self.records],
                                HEADERS_TYPE),
        })


KV_RECORDS: list[tuple[str, str | None, int, list[tuple[str, bytes]]]] = [
    ("k0", "a", 100, []), ("k1", "b", 110, []), ("k2", "c", 120, []), ("k3", "d", 130, []),
    ("k0", "a2", 140, []), ("k1", None, 150, []),
]

SCENARIOS = [
    Scenario("keyvalue", {}, KV_RECORDS, [
        ({"type": "KeyQuery", "key": h("k0")}, h("a2")),
        ({"type": "KeyQuery", "key": h("k1")}, None),
        ({"type": "KeyQuery", "key": h("k3")}, h("d")),
        ({"type": "RangeQuery"}, [[h("k0"), h("a2")], [h("k2"), h("c")], [h("k3"), h("d")]]),
        ({"type": "RangeQuery", "lower": h("k1"), "upper": h("k2")}, [[h("k2"), h("c")]]),
    ]),
    Scenario("timestamped", {}, KV_RECORDS, [
        ({"type": "TimestampedKeyQuery", "key": h("k0")}, {"v": h("a2"), "t": 140}),
        ({"type": "TimestampedKeyQuery", "key": h("k1")}, None),
        ({"type": "KeyQuery", "key": h("k2")}, h("c")),
        ({"type": "TimestampedRangeQuery"}, [[h("k0"), {"v": h("a2"), "t": 140}],
                                             [h("k2"), {"v": h("c"), "t": 120}],
                                             [h("k3"), {"v": h("d"), "t": 130}]]),
    ]),
    Scenario("versioned", {"historyRetentionMs": 100_000}, [
        ("k0", "a", 100, []), ("k0", "b", 200, []), ("k1", "c", 150, []), ("k1", None, 250, []),
        ("k2", "d", 120, []),
    ], [
        ({"type": "VersionedKeyQuery", "key": h("k0")}, {"v": h("b"), "t": 200, "to": None}),
        ({"type": "VersionedKeyQuery", "key": h("k0"), "asOf": 150}, {"v": h("a"), "t": 100, "to": 200}),
        ({"type": "VersionedKeyQuery", "key": h("k1")}, None),
        ({"type": "VersionedKeyQuery", "key": h("k1"), "asOf": 200}, {"v": h("c"), "t": 150, "to": 250}),
        ({"type": "MultiVersionedKeyQuery", "key": h("k0"), "ascending": True},
         [{"v": h("a"), "t": 100, "to": 200}, {"v": h("b"), "t": 200, "to": None}]),
    ], reopened={
        # Kafka's own behaviour (4.3.1): a RocksDBVersionedStore reopened from its state dir (no restore)
        # does not see its older versions: LogicalKeyValueSegments.openExisting opens the one RocksDB but
        # registers no logical segment, and get(key, asOf) only searches registered segments (until a
        # write creates that segment again). The latest values (the reserved segment) are there.
        1: None, 3: None, 4: [{"v": h("b"), "t": 200, "to": None}],
    }),
    Scenario("window", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 105, []), ("k0", "b", 250, [("ws", b"200")]), ("k1", "c", 130, []),
        ("k0", "a2", 150, []),
    ], [
        ({"type": "WindowKeyQuery", "key": h("k0"), "fromTime": 0, "toTime": 1000},
         [[100, h("a2")], [200, h("b")]]),
        ({"type": "WindowRangeQuery", "fromTime": 0, "toTime": 1000},
         [[{"k": h("k0"), "s": 100, "e": 200}, h("a2")], [{"k": h("k0"), "s": 200, "e": 300}, h("b")],
          [{"k": h("k1"), "s": 100, "e": 200}, h("c")]]),
    ]),
    Scenario("timestamped_window", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 105, []), ("k0", "b", 250, [("ws", b"200")]), ("k1", "c", 130, []),
    ], [
        ({"type": "WindowKeyQuery", "key": h("k0"), "fromTime": 0, "toTime": 1000},
         [[100, {"v": h("a"), "t": 105}], [200, {"v": h("b"), "t": 250}]]),
    ]),
    Scenario("session", {"retentionMs": 100_000}, [
        ("k0", "a", 150, [("ss", b"100"), ("se", b"150")]), ("k0", "b", 300, []),
        ("k1", "c", 200, [("ss", b"100"), ("se", b"200")]), ("k0", None, 300, [("ss", b"300"), ("se", b"300")]),
    ], [
        ({"type": "WindowRangeQuery", "key": h("k0")}, [[{"k": h("k0"), "s": 100, "e": 150}, h("a")]]),
        ({"type": "WindowRangeQuery", "key": h("k1")}, [[{"k": h("k1"), "s": 100, "e": 200}, h("c")]]),
    ]),
    Scenario("window_duplicates", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 105, []), ("k0", "a", 110, []), ("k1", "c", 130, []),
    ], [
        ({"type": "WindowKeyQuery", "key": h("k0"), "fromTime": 0, "toTime": 1000},
         [[100, h("a")], [100, h("a")]]),
    ]),
    # Kafka 4.3.1's header-aware stores answer no IQv2 query (UNKNOWN_QUERY_TYPE; KAFKA-20703 in 4.4):
    # processing, the changelog's headers and the restores only.
    Scenario("timestamped_headers", {}, [
        ("k0", "a", 100, [("h", b"x")]), ("k1", "b", 110, []), ("k0", "a2", 140, [("h", b"y"), ("ws", b"1")]),
    ]),
    Scenario("timestamped_headers", {}, [
        ("k0", "a", 100, [("h", b"x")]), ("k1", "b", 110, []), ("k0", "a2", 140, [("h", b"y"), ("ws", b"1")]),
    ], [
        ({"type": "TimestampedKeyWithHeadersQuery", "key": h("k0")},
         {"key": h("k0"), "v": h("a2"), "t": 140, "h": [["h", h("y")]]}),
        ({"type": "TimestampedKeyQuery", "key": h("k1")}, {"v": h("b"), "t": 110}),
    ], kafka_version="4.4.0"),
    Scenario("timestamped_window_headers", {"windowSizeMs": 100, "retentionMs": 100_000}, [
        ("k0", "a", 150, [("x", b"1")]), ("k0", "b", 300, [("ws", b"200")]), ("k1", "c", 200, []),
    ], [
        ({"type": "TimestampedWindowKeyWithHeadersQuery", "key": h("k0"), "fromTime": 0, "toTime": 1000},
         [{"key": {"k": h("k0"), "s": 100, "e": 200}, "v": h("a"), "t": 150, "h": [["x", h("1")]]},
          {"key": {"k": h("k0"), "s": 200, "e": 300}, "v": h("b"), "t": 300, "h": []}]),
    ], kafka_version="4.4.0"),
    Scenario("session_headers", {"retentionMs": 100_000}, [
        ("k0", "a", 150, [("ss", b"100"), ("se", b"150"), ("x", b"1")]), ("k1", "c", 200, []),
    ], [
        ({"type": "WindowRangeQuery", "key": h("k0")}, [[{"k": h("k0"), "s": 100, "e": 150}, h("a")]]),
    ], kafka_version="4.4.0"),
    Scenario("keyvalue", {}, KV_RECORDS, [
        ({"type": "KeyQuery", "key": h("k0")}, h("a2")),
        ({"type": "RangeQuery"}, [[h("k0"), h("a2")], [h("k2"), h("c")], [h("k3"), h("d")]]),
    ], kafka_version="3.9.1"),
    Scenario("keyvalue", {}, KV_RECORDS, [
        ({"type": "KeyQuery", "key": h("k0")}, h("a2")),
        ({"type": "RangeQuery"}, [[h("k0"), h("a2")], [h("k2"), h("c")], [h("k3"), h("d")]]),
    ], processing_guarantee="exactly_once_v2"),
]
