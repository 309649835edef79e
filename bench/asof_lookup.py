"""Single-key as-of lookups: ``VersionedKeyValueStore.get(key, as_of)`` against raw rocksdict.

    python bench/asof_lookup.py --keys 100000 --versions 8 --lookups 200000

Data: ``keys`` 16-byte keys with ``versions`` 100-byte values each, 15 minutes apart (history
retention 1 day, so Kafka's default segment interval of 1 hour: a key's versions span 2-3
segments). The same versions go into the store (Kafka's layout: latest-value entries plus
segment rows) and into a plain rocksdict of ``key + big-endian timestamp -> value``, where an
as-of lookup is one ``seek_for_prev(key + as_of)`` on a fresh iterator and a check that the key
matches (the comparable raw layout). Both databases are flushed to SST files and use the same
compression. Lookups: random keys, as-of times uniform from 15 minutes before a key's first
version to 15 minutes after its last (some before history, most in it, some at the latest).
Each side runs the same lookups, in ``--repeat`` interleaved rounds. Prints median µs per lookup
and the median of the rounds' ratios raw / ours (1.0: as fast; the goal of issue 8 is >= 0.8). A second raw figure, one
iterator reused for every lookup, is printed for reference.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rocksdict import DBCompressionType, Options, Rdict

from stores.versioned.store import VersionedKeyValueStore

BASE_MS = 1_714_564_800_000
STEP_MS = 15 * 60_000
DAY_MS = 86_400_000
LONG = struct.Struct(">q")


def timed(action: Callable[[], object], lookups: int) -> float:
    """µs per lookup of ``action`` (which runs every lookup once)."""
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) / lookups * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--versions", type=int, default=8)
    parser.add_argument("--lookups", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="cProfile our lookups once")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-asof-lookup-"))
    try:
        keys = [b"key-%012d" % i for i in range(args.keys)]
        # Keys start at staggered times, so lookups land anywhere in a segment.
        starts = [BASE_MS + (i * 7_919) % STEP_MS for i in range(args.keys)]
        value = b"v" * 100

        store = VersionedKeyValueStore(work / "store", DAY_MS)
        store.put_many(
            ((key, value, start + v * STEP_MS) for v in range(args.versions)
             for key, start in zip(keys, starts)),
            validate=False,
        )  # fmt: skip
        store.wrapped.flush()

        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(DBCompressionType.lz4())
        raw = Rdict(str(work / "raw"), options)
        for key, start in zip(keys, starts):
            for v in range(args.versions):
                raw[key + LONG.pack(start + v * STEP_MS)] = value
        raw.flush()

        rng = random.Random(8)
        lookups = []
        for _ in range(args.lookups):
            i = rng.randrange(args.keys)
            span = (args.versions + 1) * STEP_MS
            lookups.append((keys[i], starts[i] - STEP_MS + rng.randrange(span)))

        def ours() -> None:
            get = store.get
            for key, as_of in lookups:
                get(key, as_of)

        def raw_fresh() -> None:
            pack, new_iter = LONG.pack, raw.iter
            for key, as_of in lookups:
                it = new_iter()
                it.seek_for_prev(key + pack(as_of))
                if it.valid():
                    found = it.key()
                    if found[:-8] == key:
                        it.value()

        def raw_reused() -> None:
            pack = LONG.pack
            it = raw.iter()
            for key, as_of in lookups:
                it.seek_for_prev(key + pack(as_of))
                if it.valid():
                    found = it.key()
                    if found[:-8] == key:
                        it.value()

        # The two agree (a sample): same value found, or none.
        for key, as_of in lookups[:2_000]:
            it = raw.iter()
            it.seek_for_prev(key + LONG.pack(as_of))
            expected = it.value() if it.valid() and it.key()[:-8] == key else None
            record = store.get(key, as_of)
            assert (record.value if record else None) == expected, (key, as_of)

        for action in (ours, raw_fresh, raw_reused):  # warm the block caches
            action()
        # Rounds interleave the three, so that load from elsewhere on the machine falls on all
        # of them alike; the ratio is the median of the rounds' ratios.
        rounds = [
            (timed(ours, len(lookups)), timed(raw_fresh, len(lookups)),
             timed(raw_reused, len(lookups)))
            for _ in range(args.repeat)
        ]  # fmt: skip
        ours_us, fresh_us, reused_us = (statistics.median(r[i] for r in rounds) for i in range(3))
        ratio = statistics.median(r[1] / r[0] for r in rounds)
        reused_ratio = statistics.median(r[2] / r[0] for r in rounds)
        print(
            f"as-of lookups: {args.keys} keys x {args.versions} versions, "
            f"{len(lookups)} lookups, median of {args.repeat} rounds"
        )
        print(f"  ours  VersionedKeyValueStore.get(key, as_of)  {ours_us:6.2f} us")
        print(f"  raw   rocksdict seek_for_prev, fresh iterator {fresh_us:6.2f} us")
        print(f"  raw   rocksdict seek_for_prev, one iterator   {reused_us:6.2f} us (reference)")
        print(f"  ratio raw / ours: {ratio:.2f}x  (goal >= 0.8x)")
        print(f"        vs one reused iterator: {reused_ratio:.2f}x")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(ours)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
        store.close()
        raw.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
