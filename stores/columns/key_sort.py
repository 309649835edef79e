"""Sorting rows by serialized key bytes (RocksDB's order), then by numbers, with numpy.

Every columnar read sorts by store key: Arrow's ``sort_indices`` compares binary values one pair
at a time. Keys of up to 32 bytes are instead cut into big-endian 64-bit words (zero-padded on
the right) and sorted as numbers on (words..., length, tie-breakers...), which orders byte
strings as RocksDB does (a key sorts before any longer key it is a prefix of: equal words,
smaller length). The first varying word is sorted alone by numpy's quicksort; only rows that
tie on it are ordered by the other columns (``stable_order``): keys that differ early, such as
random or hashed ones, cost one fast sort (250k keys: 5 ms, against 40 ms for ``lexsort``).
Longer keys go to Arrow.

| keys                        | how                                              |
|-----------------------------|--------------------------------------------------|
| one length, <= 32 bytes     | the data buffer viewed as rows, copied to words  |
| mixed lengths, <= 32 bytes  | each word gathered at once, bytes past the end 0 |
| any longer than 32 bytes    | ``pyarrow.compute.sort_indices``                   |

A window or session store's key is the record key followed by big-endian numbers (window
start and sequence number; session end and start). When the record keys are of one length,
those bytes order as the numbers do, so they are sorted as numbers (``suffix``) and no store
key is built; otherwise the store keys are joined as bytes. ``key_runs`` also says where each
run of equal store keys starts, from the same columns (no keys are taken and compared). A
column holding one value is left out of the sort: it orders nothing.

A read that asks for no key order (a table read) only needs each key's last write; where no
key repeats, that is every row. ``distinct`` tells so from a hash of the same words, sorted
as values alone: a third of the cost of the argsort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stores.columns.encode import big_endian_column, binary_data, binary_offsets, concat_rows, whole

#: Keys up to this many bytes are sorted by numpy; longer ones by Arrow.
MAX_WORDS_BYTES = 32

#: A tie-breaker: an integer or boolean column, and whether it sorts descending.
Column = tuple[Any, bool]
#: Fields appended to each key, as its store key has them: integers and their width in bytes
#: (big-endian).
Suffix = tuple[Any, int]


def _numbers(column: Any, descending: bool) -> np.ndarray:
    values = (
        column.to_numpy(zero_copy_only=False)
        if isinstance(column, (pa.Array, pa.ChunkedArray))
        else np.asarray(column)
    )
    if values.dtype == bool:
        values = values.astype(np.int8)
    return ~values if descending else values  # ~x = -x - 1: reversed order, no overflow


def key_order(
    keys: pa.Array | pa.ChunkedArray,
    before: Sequence[Column] = (),
    after: Sequence[Column] = (),
    suffix: Sequence[Suffix] = (),
) -> np.ndarray:
    """Row indices (int64) in order of ``before`` columns, then the bytes of each key followed
    by its ``suffix`` fields, then ``after`` columns; stable. ``keys`` is binary without nulls.
    """
    return _sort(keys, before, after, suffix, runs=False)[0]


def key_runs(
    keys: pa.Array | pa.ChunkedArray,
    before: Sequence[Column] = (),
    after: Sequence[Column] = (),
    suffix: Sequence[Suffix] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """``key_order``'s order, and for each of its positions whether the row there starts a run
    of rows equal in ``before`` columns, key bytes and suffix (``after`` columns only order a
    run): the rows of one store key, which a stable sort keeps in their given order."""
    order, first = _sort(keys, before, after, suffix, runs=True)
    assert first is not None
    return order, first


def distinct(keys: pa.Array | pa.ChunkedArray, suffix: Sequence[Suffix] = ()) -> bool:
    """Whether no two of ``keys`` (binary) followed by their ``suffix`` fields (a window or
    session store's key) are equal, where that is cheap to tell: False also for a null, and,
    among two or more keys, for one of over ``MAX_WORDS_BYTES`` or two alike in a hash of
    their words (a single key is distinct, whatever its length).

    Each key's words (``_key_words``), length and suffix are mixed into one 64-bit number, and
    the numbers sorted, values only: a third of the cost of ``key_order``'s argsort, and
    distinct numbers are distinct keys. A read that asks for no key order then knows that
    every row is its key's only write (``stores.engine.last_per_key``), as in a store loaded in
    one go."""
    keys = _binary(keys)
    n = len(keys)
    if keys.null_count or n < 2:
        return not keys.null_count
    offsets = binary_offsets(keys)
    lengths = np.diff(offsets)
    longest = int(lengths.max())
    if longest > MAX_WORDS_BYTES:
        return False
    mixed = lengths.astype(np.uint64) * _MIX
    suffixes = (_unsigned(values, width) for values, width in suffix)
    for word in (*_key_words(keys, offsets, lengths, longest), *suffixes):
        mixed ^= word
        mixed *= _MIX
    mixed.sort()
    return not bool((mixed[1:] == mixed[:-1]).any())


#: An odd 64-bit multiplier (2**64 / the golden ratio) that spreads the bits of ``distinct``'s
#: words.
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _binary(keys: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Keys as one binary (or large binary) array: strings are viewed as their bytes."""
    keys = whole(keys)
    if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type):
        keys = keys.cast(pa.large_binary() if pa.types.is_large_string(keys.type) else pa.binary())
    return keys


def _key_words(
    keys: pa.Array, offsets: np.ndarray, lengths: np.ndarray, longest: int
) -> list[np.ndarray]:
    """Keys of at most ``longest`` bytes as big-endian 64-bit words, zero-padded on the right:
    native uint64 columns, the most significant first.

    Keys of one length are the data buffer viewed as rows. Otherwise each word is gathered at
    once, 8 bytes from each key's offset (an unaligned view of the bytes at every position),
    and the bytes past a key's end are cleared: a gather per word, where gathering byte by
    byte cost 6 times as much for keys of up to 29 bytes."""
    n = len(keys)
    count = max(1, (longest + 7) // 8)
    data = binary_data(keys)
    if longest == 0 or (lengths == longest).all():
        matrix = np.zeros((n, count * 8), dtype=np.uint8)
        start = int(offsets[0])
        matrix[:, :longest] = data[start : start + n * longest].reshape(n, longest)
        rows = matrix.view(">u8")
        return [rows[:, j].astype(np.uint64) for j in range(count)]
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[: len(data)] = data
    at_every_byte = np.ndarray((len(data) + 1,), dtype=">u8", buffer=padded, strides=(1,))
    starts = offsets[:-1]
    words = []
    for j in range(count):
        word = at_every_byte[np.minimum(starts + 8 * j, len(data))].astype(np.uint64)
        kept = np.clip(lengths - 8 * j, 0, 8)  # the key's bytes in this word
        mask = _ONES << ((8 - kept) * 8).astype(np.uint64) % np.uint64(64)
        mask[kept == 0] = 0
        words.append(word & mask)
    return words


_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def run_lasts(first: np.ndarray) -> np.ndarray:
    """Where each run ends, from ``key_runs``' run starts: a mask of each run's last row (in
    a stable order, a store key's last write)."""
    last = np.ones(len(first), dtype=bool)
    last[:-1] = first[1:]
    return last


def _sort(
    keys: pa.Array | pa.ChunkedArray,
    before: Sequence[Column],
    after: Sequence[Column],
    suffix: Sequence[Suffix],
    runs: bool,
) -> tuple[np.ndarray, np.ndarray | None]:
    keys = _binary(keys)
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    offsets = binary_offsets(keys)
    lengths = np.diff(offsets)
    if suffix and (lengths != lengths[0]).any():
        # Keys of mixed lengths: a suffix's bytes are compared with other keys' bytes, so the
        # store keys are built. (Of one length, a suffix orders like the numbers after it.)
        keys, suffix = joined(keys, suffix), ()
        offsets = binary_offsets(keys)
        lengths = np.diff(offsets)
    longest = int(lengths.max())
    if longest > MAX_WORDS_BYTES or keys.null_count:
        keys = joined(keys, suffix) if suffix else keys
        return _arrow_order(keys, before, after, runs)
    words = _key_words(keys, offsets, lengths, longest)
    # The columns that identify a row's store key, most significant first: ``before``, the
    # key's words, its length, the suffix. One of a single value orders nothing and tells no
    # rows apart; it is left out (the first varying column is the one sorted alone).
    head = [_numbers(c, d) for c, d in before]
    identity = list(words)
    if (lengths != longest).any():
        identity.append(lengths)
    identity += [_unsigned(values, width) for values, width in suffix]
    head, identity = [c for c in head if _varies(c)], [c for c in identity if _varies(c)]
    order = stable_order(head + identity + [_numbers(c, d) for c, d in after], n)
    if not runs:
        return order, None
    first = np.ones(n, dtype=bool)
    if n > 1:
        first[1:] = False
        for column in head + identity:  # (a descending ``before`` column: its complement)
            ordered = column[order]
            first[1:] |= ordered[1:] != ordered[:-1]
    return order, first


def stable_order(columns: list[np.ndarray], n: int) -> np.ndarray:
    """Row indices (int64) in order of ``columns`` (most significant first), ties in row
    order: ``numpy.lexsort``'s answer, faster.

    lexsort makes a stable pass per column, from the least significant. Here the first column
    alone is sorted by numpy's quicksort (vectorized, not stable); where its values are all
    distinct (keys that differ in their first bytes) that is the order. Rows that tie on it
    are then ordered by every column: a few by lexsort over them alone, many (a key's
    versions, windows, updates) by Arrow's multi-key sort, which sorts by the first column and
    breaks ties with the next ones, stably. A first column of few values (a segment id) ties
    nearly every row, so it is sorted last instead, by a stable counting pass.
    """
    if not columns or n < 2:
        return np.arange(n, dtype=np.int64)
    if len(columns) > 1 and _narrow(columns[0]):
        # A leading column of few values (a segment id, a flag) would tie nearly every row:
        # order by the rest, then by it with a stable counting pass (numpy's radix sort of
        # 16-bit integers), as lexsort would.
        order = stable_order(columns[1:], n)
        lead = columns[0][order]
        return order[np.argsort((lead - lead.min()).astype(np.uint16), kind="stable")]
    primary = columns[0]
    order = np.argsort(primary).astype(np.int64)
    ranked = primary[order]
    tie = ranked[1:] == ranked[:-1]
    if not tie.any():
        return order
    tied = np.zeros(n, dtype=bool)
    tied[1:] = tie
    tied[:-1] |= tie
    at = np.flatnonzero(tied)
    if len(at) > n // 8:
        table = pa.table({str(i): c for i, c in enumerate(columns)})
        sort_keys = [(str(i), "ascending") for i in range(len(columns))]
        return pc.sort_indices(table, sort_keys=sort_keys).to_numpy().astype(np.int64)
    # The tied rows keep their places in ``order`` (grouped by the first column, ascending);
    # within them, in row order, a stable sort by all columns puts each group right.
    rows = np.sort(order[at])
    order[at] = rows[np.lexsort([c[rows] for c in reversed(columns)])]
    return order


def _narrow(column: np.ndarray) -> bool:
    """Whether ``column`` holds integers spanning fewer than 2**16 values."""
    if column.dtype.kind not in "iu":
        return False
    return int(column.max()) - int(column.min()) < 1 << 16


def _varies(column: np.ndarray) -> bool:
    return bool(column[0] != column[-1] or column.min() != column.max())


def _unsigned(values: Any, width: int) -> np.ndarray:
    """Integers as the unsigned numbers their big-endian ``width`` bytes are (two's
    complement): their byte order."""
    values = np.asarray(values).astype(np.int64)
    if width == 8:
        return values.view(np.uint64)
    return (values & ((1 << (8 * width)) - 1)).astype(np.uint64)


def joined(keys: pa.Array, suffix: Sequence[Suffix]) -> pa.Array:
    """``key + suffix`` per row (large binary), each suffix field a big-endian integer of its
    width: a store's binary keys (``window_format``, ``session_format``)."""
    fields = (big_endian_column(np.asarray(values), width) for values, width in suffix)
    return concat_rows(keys, *fields)


def _arrow_order(
    keys: pa.Array, before: Sequence[Column], after: Sequence[Column], runs: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    columns: dict[str, Any] = {}
    sort_keys = []
    for i, (column, descending) in enumerate(before):
        columns[f"b{i}"] = _numbers(column, False)
        sort_keys.append((f"b{i}", "descending" if descending else "ascending"))
    columns["key"] = keys
    sort_keys.append(("key", "ascending"))
    for i, (column, descending) in enumerate(after):
        columns[f"a{i}"] = _numbers(column, False)
        sort_keys.append((f"a{i}", "descending" if descending else "ascending"))
    table = pa.table(columns)
    order = pc.sort_indices(table, sort_keys=sort_keys).to_numpy().astype(np.int64)
    if not runs:
        return order, None
    n = len(order)
    first = np.ones(n, dtype=bool)
    if n > 1:
        first[1:] = False
        for name in ["key", *(f"b{i}" for i in range(len(before)))]:
            ordered = table.column(name).take(pa.array(order)).combine_chunks()
            first[1:] |= pc.not_equal(ordered.slice(1), ordered.slice(0, n - 1)).to_numpy(
                zero_copy_only=False
            )
    return order, first
