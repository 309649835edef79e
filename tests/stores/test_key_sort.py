"""``stores.columns.key_sort``: numpy's order of serialized keys is Arrow's (and RocksDB's)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stores.columns.key_sort import MAX_WORDS_BYTES, distinct, key_order, key_runs

# Few distinct bytes and lengths around the word borders, so that ties and prefixes are common.
_KEY = st.binary(max_size=MAX_WORDS_BYTES + 3).map(lambda b: bytes(x % 3 for x in b))
_ROWS = st.lists(st.tuples(_KEY, st.integers(-3, 3), st.booleans()), max_size=80)


def _expected(rows: list[tuple[bytes, int, bool]], before: bool, descending: bool) -> list[int]:
    table = pa.table(
        {
            "key": pa.array([k for k, _, _ in rows], pa.binary()),
            "n": pa.array([n for _, n, _ in rows], pa.int64()),
            "flag": pa.array([f for _, _, f in rows]),
        }
    )
    order = "descending" if descending else "ascending"
    if before:
        sort_keys = [("flag", "ascending"), ("key", "ascending"), ("n", order)]
    else:
        sort_keys = [("key", "ascending"), ("n", order)]
    return pc.sort_indices(table, sort_keys=sort_keys).to_pylist()


@given(_ROWS, st.booleans(), st.booleans(), st.sampled_from([pa.binary(), pa.large_binary()]))
def test_key_order_is_arrow_s_stable_order(
    rows: list[tuple[bytes, int, bool]], before: bool, descending: bool, kind: pa.DataType
) -> None:
    keys = pa.array([k for k, _, _ in rows], kind)
    numbers = np.array([n for _, n, _ in rows], dtype=np.int64)
    flags = pa.array([f for _, _, f in rows], pa.bool_())
    got = key_order(keys, before=[(flags, False)] if before else (), after=[(numbers, descending)])
    assert got.tolist() == _expected(rows, before, descending)


@given(st.lists(st.binary(min_size=12, max_size=12), max_size=40), st.integers(0, 5))
def test_key_order_of_one_length_from_a_slice(keys: list[bytes], cut: int) -> None:
    array = pa.array(keys, pa.binary()).slice(min(cut, len(keys)))
    expected = pc.sort_indices(array).to_pylist()
    assert key_order(array).tolist() == expected
    assert key_order(pa.chunked_array([array], pa.binary())).tolist() == expected


def test_key_order_strings_and_empty() -> None:
    assert key_order(pa.array(["b", "", "a", "ab"])).tolist() == [1, 2, 3, 0]
    assert key_order(pa.array([], pa.binary())).tolist() == []


# Keys of one length (the suffix as numbers) or several (store keys built); suffix fields
# of either sign (their two's complement bytes order them).
_SUFFIXED = st.lists(
    st.tuples(_KEY, st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1),
              st.integers(0, 3), st.booleans()),
    max_size=60,
)  # fmt: skip


@given(_SUFFIXED, st.booleans(), st.booleans(), st.sampled_from([0, 5, MAX_WORDS_BYTES + 1]))
def test_key_runs_order_store_keys_as_their_bytes(
    rows: list[tuple[bytes, int, int, int, bool]], before: bool, few: bool, length: int
) -> None:
    """The order of ``key + big-endian suffix`` bytes (then ``after``), stable; a run starts
    where ``before``, the key or the suffix changes."""
    if length:  # one length, below or above the words limit
        rows = [((k * length)[:length].ljust(length, b"\0"), *rest) for k, *rest in rows]
    if few:  # ties in the suffix too
        rows = [(k, a % 3 - 1, b % 2, n, f) for k, a, b, n, f in rows]
    keys = pa.array([r[0] for r in rows], pa.binary())
    longs = np.array([r[1] for r in rows], dtype=np.int64)
    ints = np.array([r[2] for r in rows], dtype=np.int64)
    numbers = np.array([r[3] for r in rows], dtype=np.int64)
    flags = np.array([r[4] for r in rows], dtype=bool)
    store_keys = [k + a.to_bytes(8, "big", signed=True) + b.to_bytes(4, "big", signed=True)
                  for k, a, b, _, _ in rows]  # fmt: skip
    identity = [((f,) if before else ()) + (s,) for s, (*_, f) in zip(store_keys, rows)]
    expected = sorted(range(len(rows)), key=lambda i: (*identity[i], numbers[i]))
    order, first = key_runs(
        keys,
        before=[(flags, False)] if before else (),
        after=[(numbers, False)],
        suffix=[(longs, 8), (ints, 4)],
    )
    assert order.tolist() == expected
    assert first.tolist() == [
        j == 0 or identity[expected[j]] != identity[expected[j - 1]] for j in range(len(rows))
    ]
    assert key_order(keys, suffix=[(longs, 8), (ints, 4)]).tolist() == sorted(
        range(len(rows)), key=lambda i: store_keys[i]
    )


@pytest.mark.parametrize("repeats", [0, 10, 400], ids=["distinct", "few ties", "many ties"])
@pytest.mark.parametrize("seed", range(3))
def test_key_order_with_distinct_few_or_many_tied_first_words(repeats: int, seed: int) -> None:
    """Keys sorted by their first word alone, with no ties; with a few rows (``repeats`` of
    2,000) tied on it, ordered among themselves; with most tied, ordered all over again: each
    way gives Arrow's stable order by (key, number)."""
    rng = np.random.default_rng(seed)
    distinct = [rng.bytes(int(rng.integers(9, 20))) for _ in range(2000)]
    # Ties on the first word: the same key again, or another key of the same first 8 bytes.
    tied = [
        distinct[i] if rng.random() < 0.5 else distinct[i][:8] + rng.bytes(int(rng.integers(0, 9)))
        for i in rng.integers(0, 40, repeats)
    ]
    keys = distinct + tied
    order = rng.permutation(len(keys))
    rows = [(keys[i], int(rng.integers(-2, 3)), False) for i in order]
    numbers = np.array([n for _, n, _ in rows], dtype=np.int64)
    got = key_order(pa.array([k for k, _, _ in rows], pa.binary()), after=[(numbers, False)])
    assert got.tolist() == _expected(rows, before=False, descending=False)


@given(st.lists(_KEY, max_size=80), st.integers(0, 3), st.sampled_from([pa.binary(), pa.string()]))
def test_distinct_tells_keys_written_once(keys: list[bytes], cut: int, kind: pa.DataType) -> None:
    """``distinct`` (a table read's shortcut: every row its key's only write) says True exactly
    when no key repeats, for keys of up to MAX_WORDS_BYTES, of one length or many, from a
    slice; longer keys are left to the sort (False)."""
    array = pa.array([b"\xff" * cut, *keys], pa.binary()).slice(1)  # (a slice: offsets past 0)
    if kind == pa.string():
        array = array.cast(pa.string())  # (``_KEY``'s bytes are 0-2: valid UTF-8)
    short = all(len(k) <= MAX_WORDS_BYTES for k in keys)
    # (one key is always told distinct, however long)
    assert distinct(array) == ((short or len(keys) < 2) and len(set(keys)) == len(keys))


def test_distinct_on_keys_alike_in_their_first_words() -> None:
    hexadecimal = [f"{i * 2654435761 % 2**32:08x}{i:08x}".encode() for i in range(100_000)]
    assert distinct(pa.array(hexadecimal))
    assert not distinct(pa.array([*hexadecimal, hexadecimal[77]]))
    prefixed = pa.array([f"customer-{i}" for i in range(100_000)])  # lengths 10 to 14
    assert distinct(prefixed)
    assert not distinct(pa.concat_arrays([prefixed, prefixed.slice(5, 1)]))
    assert not distinct(pa.array([b"a", None, b"b"]))  # a null: left to the sort


@given(st.lists(st.tuples(_KEY, st.integers(-2, 2), st.integers(0, 2)), max_size=60))
def test_distinct_counts_a_store_key_s_suffix(rows: list[tuple[bytes, int, int]]) -> None:
    """A window or session store's key is the record key followed by its numbers: keys may
    repeat where the numbers differ."""
    keys = pa.array([k for k, _, _ in rows], pa.binary())
    suffix = [(np.array([a for _, a, _ in rows]), 8), (np.array([b for _, _, b in rows]), 4)]
    short = all(len(k) <= MAX_WORDS_BYTES for k, _, _ in rows)
    assert distinct(keys, suffix) == ((short or len(rows) < 2) and len(set(rows)) == len(rows))
