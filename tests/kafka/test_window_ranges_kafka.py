"""Key-range reads of the window and session stores, Kafka Streams 4.3.1's stores as the judge.

Kafka's ``AbstractRocksDBSegmentedBytesStore.fetch(keyFrom, keyTo, from, to)`` takes the
segments ``segments.segments(actualFrom, to)`` (``SessionKeySchema``: up to ``Long.MAX_VALUE``)
and scans each with ``segment.range(lowerRange(keyFrom), upperRange(keyTo, to))`` (or
``reverseRange``; a null key an open bound), keeping the rows ``KeySchema.hasNextCondition``
accepts. ``WindowKeySchema`` / ``SessionKeySchema`` build the bounds with ``OrderedBytes``,
which assumes keys of at least one byte: with variable-length keys a row of a key in range can
sort above ``upperRange``, and Kafka never reads it. A window store holding ``b""`` at window
starts 0 and 1 answers ``fetch(null, 00, 0, 1)`` with the window at 0 only: the bound
``00 + [1 (8)][MAX_INT (4)]`` sorts below ``[1 (8)][0 (4)]``. We keep Kafka's answers
(``stores.segments.ordered``).

Each test runs one op list through Kafka's store (``tests/kafka/harness.py``) and ours
(``tests/kafka/ours.py``) and compares every answer: a grid of key ranges (keys of different
lengths, with 00, 7f and ff bytes, None bounds, ``keyFrom > keyTo``) by time ranges across
segments, forward and backward, before and after a segment expires.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.kafka.ours import run

MAX_LONG = 2**63 - 1
WINDOW_PARAMS = {"retentionMs": 120_000, "windowSizeMs": 10_000, "segmentIntervalMs": 60_000}
SESSION_PARAMS = {"retentionMs": 120_000, "segmentIntervalMs": 60_000}
KEYS = [
    b"", b"\x00", b"\x00\x00", b"\x01", b"a", b"a\x00", b"a\x00\x00", b"ab",
    b"\x7f", b"\x7f\x80", b"\x80", b"\xff", b"\xff\xff",
]  # fmt: skip
BOUNDS = [None, *(key.hex() for key in KEYS)]
PAIRS = list(itertools.product(BOUNDS, BOUNDS))

#: Every window store Kafka 4.3.1 builds (``window_headers`` has no Kafka builder), and the
#: timestamped ones with retainDuplicates.
WINDOW_CASES = [
    ("window", WINDOW_PARAMS),
    ("window_duplicates", WINDOW_PARAMS),
    ("timestamped_window", WINDOW_PARAMS),
    ("timestamped_window", {**WINDOW_PARAMS, "retainDuplicates": True}),
    ("timestamped_window_headers", WINDOW_PARAMS),
    ("timestamped_window_headers", {**WINDOW_PARAMS, "retainDuplicates": True}),
]


def _op(method: str, *args: Any) -> dict[str, Any]:
    return {"m": method, "a": list(args), "rt": 0}


def _value(variant: str, payload: bytes) -> Any:
    if variant in ("window", "window_duplicates", "session"):
        return payload.hex()
    if variant == "timestamped_window":
        return {"v": payload.hex(), "t": 5}
    if variant == "session_headers":
        return {"v": payload.hex(), "h": [["h", "01"]]}
    return {"v": payload.hex(), "t": 5, "h": [["h", "01"]]}


def _assert_same(harness: Any, variant: str, params: dict[str, Any], ops: list[Any],
                 tmp_path: Path) -> list[Any]:
    kafka = harness.run(variant, params, ops)
    ours = run(variant, params, ops, tmp_path / "ours")
    for index, (op, k, o) in enumerate(zip(ops, kafka.answers, ours.answers)):
        assert k == o, f"op {index} {op}: Kafka answered {k}, ours {o}"
    assert len(kafka.answers) == len(ours.answers)
    return list(kafka.answers)


def test_the_differential_case(kafka_harness: Any, tmp_path: Path) -> None:
    """The case the differential test found: Kafka's ``fetch(null, 00, 0, 1)`` leaves out the
    window of ``b""`` at 1 (``WindowKeySchema.upperRange``), forward and backward."""
    ops = [
        _op("put", "", {"v": "01", "t": 5}, 0),
        _op("put", "", {"v": "02", "t": 5}, 1),
        _op("fetch", None, "00", 0, 1),
        _op("backwardFetch", None, "00", 0, 1),
        _op("fetch", "", 0, 1),
    ]
    answers = _assert_same(kafka_harness, "timestamped_window", WINDOW_PARAMS, ops, tmp_path)
    only_0 = [[{"k": "", "s": 0, "e": 10_000}, {"v": "01", "t": 5}]]
    assert answers[2] == only_0 and answers[3] == only_0
    assert [start for start, _ in answers[4]] == [0, 1]


def _window_grid(times: list[tuple[int, int]]) -> list[dict[str, Any]]:
    ops = []
    for (key_from, key_to), (low, high) in itertools.product(PAIRS, times):
        ops.append(_op("fetch", key_from, key_to, low, high))
        ops.append(_op("backwardFetch", key_from, key_to, low, high))
    for low, high in times:
        ops.append(_op("fetchAll", low, high))
        ops.append(_op("backwardFetchAll", low, high))
    return ops


@pytest.mark.parametrize(
    ("variant", "params"), WINDOW_CASES,
    ids=[v + ("+dups" if p.get("retainDuplicates") else "") for v, p in WINDOW_CASES],
)
def test_window_key_ranges(
    kafka_harness: Any, tmp_path: Path, variant: str, params: dict[str, Any]
) -> None:
    """``fetch`` / ``backwardFetch(keyFrom, keyTo, from, to)`` over segments 0 and 1, then
    after segment 0 expires (``actualFrom`` above ``from``)."""
    starts = [0, 1, 255, 256, 60_000, 60_001, 65_536, 119_000]
    ops = [
        _op("put", key.hex(), _value(variant, b"%d" % start), start)
        for start in starts
        for key in KEYS
    ]
    times = [(0, 0), (0, 1), (1, 1), (0, 255), (0, 60_001), (1, 65_536), (256, 119_000),
             (-5, 1), (0, MAX_LONG), (60_001, MAX_LONG), (1, 0)]  # fmt: skip
    ops += _window_grid(times)
    # Stream time 180 001: segment 0 expires, actualFrom = 60 002.
    ops.append(_op("put", "7a", _value(variant, b"late"), 180_001))
    ops += _window_grid([(0, 65_536), (60_002, 180_001), (0, MAX_LONG)])
    _assert_same(kafka_harness, variant, params, ops, tmp_path)


def _session_grid(times: list[tuple[int, int]]) -> list[dict[str, Any]]:
    ops = []
    for key_from, key_to in PAIRS:
        ops.append(_op("fetch", key_from, key_to))
        ops.append(_op("backwardFetch", key_from, key_to))
        for earliest_end, latest_start in times:
            ops.append(_op("findSessions", key_from, key_to, earliest_end, latest_start))
            ops.append(_op("backwardFindSessions", key_from, key_to, earliest_end, latest_start))
    for key in BOUNDS[1:]:
        ops.append(_op("fetch", key))
        ops.append(_op("backwardFetch", key))
    return ops


@pytest.mark.parametrize("variant", ["session", "session_headers"])
def test_session_key_ranges(kafka_harness: Any, tmp_path: Path, variant: str) -> None:
    """``findSessions`` / ``backwardFindSessions(keyFrom, keyTo, earliestEnd, latestStart)``
    and ``fetch(keyFrom, keyTo)`` over sessions in segments 0 and 1."""
    sessions = [(0, 0), (0, 5), (1, 60_001), (60_000, 60_000), (100, 65_536), (256, 119_000)]
    ops = [
        _op("put", {"k": key.hex(), "s": start, "e": end}, _value(variant, b"%d" % end))
        for start, end in sessions
        for key in KEYS
    ]
    ops += _session_grid([(0, 0), (0, 1), (5, 100), (60_000, 60_001), (0, MAX_LONG), (6, 5)])
    _assert_same(kafka_harness, variant, SESSION_PARAMS, ops, tmp_path)


@pytest.mark.parametrize("end", [0x7F << 48, 2**55, 2**56 + 3, MAX_LONG])
@pytest.mark.parametrize("variant", ["session", "session_headers"])
def test_session_key_ranges_with_late_ends(
    kafka_harness: Any, tmp_path: Path, variant: str, end: int
) -> None:
    """Sessions ending at 2**55 or later: there ``SessionKeySchema.upperRange`` (``00 +
    [MAX_LONG][latest]`` for ``keyTo`` 00) sorts below the session of ``b""``, so Kafka's key
    ranges leave it out."""
    ops = [
        _op("put", {"k": key.hex(), "s": start, "e": end}, _value(variant, b"%d" % start))
        for start in (0, end)
        for key in KEYS
    ]
    ops += _session_grid([(0, MAX_LONG), (end, end), (end, 0)])
    answers = _assert_same(kafka_harness, variant, SESSION_PARAMS, ops, tmp_path)
    if end == 2**55:
        found = answers[ops.index(_op("findSessions", None, "00", 0, MAX_LONG))]
        assert {item[0]["k"] for item in found} == {"00"}
