"""``StoreTable.rescale`` against a plain write of the same rows, in the same run.

    python bench/rescale.py                          # every kind, 1M rows, 4 -> 5 partitions
    python bench/rescale.py --kinds window --rows 200000 --profile rescale

Per kind (the rows of ``bench/changelog_columns.py``: keys of 16 characters, values of 100,
``partitioner=kafka``; versioned, window and session stores four entries of 250k keys):

- **plain write**: the rows staged and committed into a fresh store of the new partition count
  (what a Spark write task does, ``Stager.add``, then the commit);
- **plain read**: the first read of every partition of the store to rescale (the read a
  rescale cannot skip: it rewrites what the store holds);
- **rescale**: ``StoreTable.rescale`` of that store (written by a plain write, its cache cold),
  which reads every partition's state as changelog records, regroups them by Kafka's
  partitioner and applies them as one overwrite.

Printed: seconds (median of ``--repeat``), ``rescale / write`` (the issue's measure: the speed of
a plain write of the same rows) and ``rescale / (read + write)`` (the floor of a rewrite).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import uuid
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from changelog_columns import KINDS, PARTITIONS, plain_read, plain_write, rows_of, timed

from catalog import Catalog

TARGET = PARTITIONS + 1


def bench_kind(kind: str, n: int, repeat: int, work: Path, profile: str | None) -> None:
    keys, values, columns, _ = rows_of(kind, n)
    runs: dict[str, list[float]] = {}
    for i in range(repeat + 1):  # run 0 warms up
        catalog = Catalog(str(work / f"w{i}"), cache_dir=str(work / f"caches-{uuid.uuid4().hex}"))
        source = catalog.create_store(f"{kind}-s", kind, "string", "string", PARTITIONS,
                                      partitioner="kafka", **KINDS[kind])  # fmt: skip
        plain_write(source, keys, values, columns)
        # A second catalog (other caches) reads the store cold, as the rescale does.
        cold = Catalog(str(work / f"w{i}"), cache_dir=str(work / f"caches-{uuid.uuid4().hex}"))
        peer = catalog.create_store(f"{kind}-p", kind, "string", "string", TARGET,
                                    partitioner="kafka", **KINDS[kind])  # fmt: skip
        last = i == repeat
        took = {
            "write": timed(partial(plain_write, peer, keys, values, columns), last and profile == "write"),
            "read": timed(partial(plain_read, cold.load(f"{kind}-s")), last and profile == "read"),
            "rescale": timed(partial(source.rescale, TARGET), last and profile == "rescale"),
        }  # fmt: skip
        assert catalog.load(f"{kind}-s").spec.num_partitions == TARGET
        if i:
            for name, seconds in took.items():
                runs.setdefault(name, []).append(seconds)
        shutil.rmtree(work / f"w{i}", ignore_errors=True)
    m = {name: statistics.median(r) for name, r in runs.items()}
    print(
        f"{kind:<12} write {m['write']:5.2f}s  read {m['read']:5.2f}s  rescale {m['rescale']:5.2f}s"
        f"   rescale/write {m['rescale'] / m['write']:4.2f}x"
        f"   rescale/(read+write) {m['rescale'] / (m['read'] + m['write']):4.2f}x",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--profile", choices=["write", "read", "rescale"])
    args = parser.parse_args()
    print(f"{args.rows:,} rows, {PARTITIONS} -> {TARGET} partitions (partitioner=kafka), "
          f"median of {args.repeat}")  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="rescale-bench-"))
    try:
        for kind in args.kinds.split(","):
            bench_kind(kind, args.rows, args.repeat, work, args.profile)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
