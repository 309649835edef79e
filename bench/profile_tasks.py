"""One Spark write task and the first and second read tasks of a store, run in this process
through the connector's own hooks (``StateStoreWriter.write`` / ``commit``,
``StateStoreReader.read``) with the batches Spark would hand them, timed and profiled.

    python bench/profile_tasks.py --kind keyvalue --rows 2000000        # one task's rows
    python bench/profile_tasks.py --kind window --random-keys --top 25

What Spark adds around these hooks (the JVM's conversion to and from Arrow, the socket) is not
here: ``bench/write_read.py`` and ``bench/scale.py`` measure the whole path against a do-nothing
Python source and writer. This script says where the connector's own share of a task goes.
Rows are those of ``bench/scale.py`` (``rows_of``), in batches of Spark's
``spark.sql.execution.arrow.maxRecordsPerBatch`` (10,000).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyarrow as pa
from scale_rows import KINDS, rows_of, spark_write_schema, store_options

from datasource.options import StoreOptions
from datasource.reader import StateStoreReader, StorePartition
from datasource.writer import StateStoreWriter

#: Rows per Arrow batch Spark hands a Python writer (maxRecordsPerBatch's default).
SPARK_BATCH = 10_000


def profiled(action, top: int, profile: bool):  # type: ignore[no-untyped-def]
    """Run ``action()``; return its result, wall seconds, CPU seconds (this process, every
    thread) and, with ``profile``, the top of its profile."""
    profiler = cProfile.Profile() if profile else None
    start, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    result = action()
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    text = ""
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(top)
        text = "\n".join(out.getvalue().splitlines()[4:])
    return result, wall, cpu, text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=KINDS, default="keyvalue")
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the one write task")
    parser.add_argument("--random-keys", action="store_true")
    parser.add_argument("--partitions", type=int, default=4, help="store partitions")
    parser.add_argument("--repeat", type=int, default=3, help="runs (fresh stores); the best is shown")
    parser.add_argument("--top", type=int, default=20, help="profile lines per task")
    parser.add_argument("--profile", action="store_true", help="cProfile the first run")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="state-store-profile-"))
    os.environ["STATE_STORE_CACHE_DIR"] = str(work / "cache")
    try:
        data = rows_of(args.kind, 0, args.rows, random_keys=args.random_keys)
        batches = data.to_batches(max_chunksize=SPARK_BATCH)
        root = str(work / "warehouse")
        print(f"{args.rows:,} rows of kind {args.kind}"
              f"{', random keys' if args.random_keys else ''}, {args.partitions} partitions, "
              f"best of {args.repeat} (wall and CPU seconds)")  # fmt: skip
        best: dict[str, tuple[float, float]] = {}
        profiles: dict[str, str] = {}
        for run in range(args.repeat):
            profile = args.profile and run == 0
            name = f"profiled{run}"
            options = StoreOptions.parse(
                {"root": root, "store": name, **store_options(args.kind, args.partitions)}
            )
            writer = StateStoreWriter.plan(options, spark_write_schema(args.kind), overwrite=False)
            message, *figures = profiled(lambda w=writer: w.write(iter(batches)), args.top, profile)
            phases = {"write task": figures}
            phases["commit"] = profiled(lambda w=writer, m=message: w.commit([m]), args.top, False)[1:]
            reader = StateStoreReader.plan(StoreOptions.parse({"root": root, "store": name}))
            for label in ("first read", "second read"):

                def read_all(source: StateStoreReader = reader) -> int:
                    return sum(
                        b.num_rows
                        for p in range(args.partitions)
                        for b in source.read(StorePartition(p))
                    )

                rows, *figures = profiled(read_all, args.top, profile)
                assert rows == args.rows, f"read {rows} rows, wrote {args.rows}"
                phases[label] = figures
            for label, (wall, cpu, text) in phases.items():
                old = best.get(label, (float("inf"), float("inf")))
                best[label] = (min(old[0], wall), min(old[1], cpu))
                if text:
                    profiles[label] = text
        for label, (wall, cpu) in best.items():
            print(f"{label:<12} wall {wall:6.3f}  cpu {cpu:6.3f}  "
                  f"({cpu / args.rows * 1e9:5.0f} ns of CPU a row)")  # fmt: skip
        for label, text in profiles.items():
            print(f"\n{label}:\n{text}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    pa.set_cpu_count(1)  # a Spark task's Python worker has one core of local[2]
    main()
