"""History-shaped writes: a DataFrame in a store's own read schema, each row an interval.

A kind that ``writes_intervals`` (``catalog.kinds``) reads back two time columns, an interval's
start and end (``Layout.read_times``), where its writes take one record time
(``Layout.write_times``). A write may give the read schema back (an SCD2 dimension, or a read
of the store): each row puts its value at the interval's start, and a closed interval writes a
tombstone at its end, which a row of the same key starting there replaces (at one time,
deletes apply before puts). The intervals of one key must not overlap: checked per task as
rows arrive (``interval_records``) and across tasks before the commit (``check_across_tasks``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from catalog.kinds import Layout
from catalog.log.changelog import read_changelog
from catalog.log.records import ChangelogFile
from catalog.table import Table
from stores.errors import InvalidOptionError
from stores.serdes import serde_for
from stores.types import TypeJson


@dataclass(frozen=True)
class IntervalColumns:
    """The columns of a history-shaped write: an interval's ``start`` and ``end`` (the kind's
    read time columns) and the record ``time`` column they become (its write time column)."""

    start: str
    end: str
    time: str

    @staticmethod
    def of(layout: Layout) -> IntervalColumns:
        """The interval columns of a kind that writes intervals, from its layout."""
        start, end = layout.read_times
        return IntervalColumns(start, end, layout.write_times[0].name)


def interval_records(
    names: IntervalColumns, key_type: TypeJson, keys: pa.Array, values: pa.Array,
    starts: pa.Array, ends: pa.Array,
) -> tuple[pa.Array, pa.Array, pa.Array]:  # fmt: skip
    """A history-shaped write's rows (``ends`` null where open) as records: keys, values and
    record times, a tombstone at each closed interval's end.

    Raises:
        InvalidOptionError: an end not after its start, or two intervals of one key that
            overlap (INVALID_INTERVAL, naming the key and both).
    """
    bad = pc.fill_null(pc.less_equal(ends, starts), False)
    if pc.any(bad).as_py():
        i = pc.index(bad, True).as_py()
        raise InvalidOptionError(
            f"key {keys[i].as_py()!r} has {names.end} {ends[i].as_py()} not after its "
            f"{names.start} {starts[i].as_py()} (epoch ms); an interval ends after it starts",
            code="INVALID_INTERVAL",
        )
    _check_overlaps(key_type, keys, starts, ends)
    closed = pc.is_valid(ends)
    ended = keys.filter(closed)
    return (
        pa.concat_arrays([keys, ended]),
        pa.concat_arrays([values, pa.nulls(len(ended), values.type)]),
        pa.concat_arrays([starts, ends.filter(closed)]),
    )


def _check_overlaps(key_type: TypeJson, keys: pa.Array, starts: pa.Array, ends: pa.Array) -> None:
    n = len(keys)
    if n < 2 or starts.null_count:
        return  # a null start is refused by stage, with its own message
    raw = serde_for(key_type, column="key").encode(keys)
    order = pc.sort_indices(
        pa.table({"k": raw, "s": starts}), sort_keys=[("k", "ascending"), ("s", "ascending")]
    )
    k, s, e = raw.take(order), starts.take(order), ends.take(order)
    same = pc.equal(k.slice(1), k.slice(0, n - 1))
    before_end = e.slice(0, n - 1)
    overlaps = pc.and_(
        same, pc.or_(pc.is_null(before_end), pc.greater(before_end, s.slice(1)))
    )
    overlaps = pc.fill_null(overlaps, False)
    if not pc.any(overlaps).as_py():
        return
    i = pc.index(overlaps, True).as_py()
    first, second = order[i].as_py(), order[i + 1].as_py()

    def shown(row: int) -> str:
        end = ends[row].as_py()
        return f"[{starts[row].as_py()}, {'open' if end is None else end})"

    raise InvalidOptionError(
        f"key {keys[first].as_py()!r} has overlapping intervals {shown(first)} and "
        f"{shown(second)} (epoch ms) in one write; each instant has one value: end the "
        "first where the second starts",
        code="INVALID_INTERVAL",
    )


def check_across_tasks(
    names: IntervalColumns, table: Table, files: list[ChangelogFile]
) -> None:
    """A history-shaped write's intervals of one key may sit in several tasks, which checked
    only their own: read the staged records back and refuse overlaps before the commit.

    Each interval was staged as a put at its start and, if closed, a tombstone at its end. In
    time order (tombstones first at one time), a put that arrives while an interval of its key
    is still open overlaps it.

    Raises:
        InvalidOptionError: INVALID_INTERVAL, naming the key and both start times.
    """
    staged = [read_changelog(table.catalog.storage, table.spec.name, ref) for ref in files]
    if not staged:
        return
    events = pa.concat_tables(staged)
    puts = pc.is_valid(events.column("value"))
    order = pc.sort_indices(
        events.select(["key", names.time]).append_column("put", puts),
        sort_keys=[("key", "ascending"), (names.time, "ascending"), ("put", "ascending")],
    )
    keys = events.column("key").take(order).combine_chunks()
    stamps = events.column(names.time).take(order).to_numpy()
    is_put = puts.take(order).to_numpy(zero_copy_only=False).astype(np.int64)
    n = len(keys)
    starts = np.ones(n, dtype=bool)
    if n > 1:
        starts[1:] = pc.not_equal(keys.slice(1), keys.slice(0, n - 1)).to_numpy(
            zero_copy_only=False
        )
    balance = np.cumsum(np.where(is_put == 1, 1, -1))  # open intervals after each event
    group_base = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    before = balance - np.where(is_put == 1, 1, -1)  # open intervals before each event
    open_before = before - np.where(group_base > 0, balance[group_base - 1], 0)
    clash = np.flatnonzero((is_put == 1) & (open_before > 0))
    if not len(clash):
        return
    i = int(clash[0])
    earlier = int(np.flatnonzero(is_put[: i] == 1)[-1])
    key = serde_for(table.spec.key_type, column="key").decode(keys.slice(i, 1))[0].as_py()
    raise InvalidOptionError(
        f"key {key!r} has overlapping intervals starting at {stamps[earlier]} and {stamps[i]} "
        "(epoch ms) in one write (rows of different tasks); each instant has one value: end "
        "the first where the second starts",
        code="INVALID_INTERVAL",
    )
