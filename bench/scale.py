"""How writes and reads of every kind keep up with the floor of a Python source as stores grow.

    python bench/scale.py                                 # every kind, 1M and 4M rows
    python bench/scale.py --sizes 1m 4m 16m --driver-memory 10g
    python bench/scale.py --kinds keyvalue --sizes 4m --orders random --repeat 5

Per size, kind and key order (ascending keys, or a hash of the row number: ``random``), in one
``local[2]`` session, each figure the median of ``--repeat`` runs (rows: ``scale_rows``; 2
input partitions, 4 store partitions):

- **write**: the store's write, parquet's, and the floor writer's (a ``DataSourceArrowWriter``
  that drops its batches: what Spark costs a Python writer);
- **first read**: the store's first full read of a commit (it computes every partition from
  the changelog), parquet's, and the floor source's (a Python source of ready-made batches of
  the store's read schema: what Spark costs a Python source);
- **second read**: the store read again (its kept scan files).

A full read materializes every column of every row (Spark's ``noop`` sink). Ratios are rates,
store / peer (1.0x: as fast). **Peak memory** is the largest peak resident set of one Spark
Python worker during the store's write or first read (``VmHWM``, reset before each run),
beside the read's raw data size: its Arrow bytes, all partitions together. Each timing also
says how busy the machine's CPUs were during it (``/proc/stat``): a figure bound by CPU shares
it with Spark's own conversions, so every copy the connector makes costs the job.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from _spark import full_read, register_floor, session
from pyspark.sql import SparkSession
from scale_rows import KINDS, spark_columns, store_options

INPUT_PARTITIONS = 2
STORE_PARTITIONS = 4
#: The goals of issue 27 at 4M rows, store / floor.
GOALS = {"write": 0.75, "first read": 0.75, "second read": 0.95}


def _worker_pids() -> list[int]:
    """The processes of Spark's Python daemon and its workers on this machine."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read()
            if b"pyspark.daemon" in command or b"pyspark.worker" in command:
                pids.append(int(entry))
    return pids


@contextlib.contextmanager
def worker_peak() -> Iterator[list[int]]:
    """Yield a list that holds, after the block, the largest peak RSS (bytes) of one Python
    worker during it (each worker's ``VmHWM`` reset first; a worker forked during the block
    starts its own)."""
    for pid in _worker_pids():
        with contextlib.suppress(OSError), open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    found = [0]
    yield found
    for pid in _worker_pids():
        with contextlib.suppress(OSError, ValueError), open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    found[0] = max(found[0], int(line.split()[1]) * 1024)


def _cpu_ticks() -> tuple[int, int]:
    """(all, idle) jiffies of this machine's CPUs so far (``/proc/stat``)."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]  # idle and iowait


class Figures:
    """Medians of timed runs (rows/s) and the peak worker memory of some."""

    def __init__(self, rows: int, repeat: int) -> None:
        self.rows, self.repeat = rows, repeat
        self.rates: dict[str, float] = {}
        self.peaks: dict[str, int] = {}

    def time(self, label: str, action: Callable[[int], object], *, peak: bool = False) -> None:
        """Run ``action(i)`` ``repeat`` times; keep the median rate (and the peak memory)."""
        seconds, busy = [], []
        for i in range(self.repeat):
            with worker_peak() as found:
                ticks, idle = _cpu_ticks()
                start = time.perf_counter()
                action(i)
                seconds.append(time.perf_counter() - start)
                ticks_after, idle_after = _cpu_ticks()
            busy.append(1 - (idle_after - idle) / max(1, ticks_after - ticks))
            if peak:
                self.peaks[label] = max(self.peaks.get(label, 0), found[0])
        median = statistics.median(seconds)
        self.rates[label] = self.rows / median
        runs = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"  {label:<20} median {median:6.2f} s {self.rows / median:12,.0f} rows/s  ({runs}; "
              f"CPUs {statistics.median(busy):4.0%} busy)", flush=True)  # fmt: skip

    def ratio(self, a: str, b: str) -> float:
        return self.rates[a] / self.rates[b]


def run_case(
    spark: SparkSession, work: Path, kind: str, rows: int, order: str, repeat: int
) -> dict[str, float]:
    """Measure one size, kind and key order; print and return its ratios."""
    df = (
        spark.range(0, rows, 1, INPUT_PARTITIONS)
        .selectExpr(*spark_columns(kind, order == "random"))
        .cache()
    )
    df.count()  # generated once, outside the timings
    root = str(work / "warehouse")
    options = {"root": root, **store_options(kind, STORE_PARTITIONS)}
    case = f"{kind}-{order}-{rows}"

    def store_write(i: int) -> None:
        df.write.format("state_store").options(store=f"{case}-{i}", **options).mode(
            "append"
        ).save()

    def store_read(i: int) -> None:
        full_read(spark.read.format("state_store").option("root", root).load(f"{case}-{i}"))

    print(f"\n{rows:,} rows, {kind}, {order} keys, median of {repeat}", flush=True)
    figures = Figures(rows, repeat)
    figures.time("parquet write", lambda i: df.write.parquet(str(work / f"{case}-pq{i}")))
    figures.time("floor write", lambda i: df.write.format("floor_arrow").mode("append").save())
    figures.time("store write", store_write, peak=True)
    figures.time("parquet read", lambda i: full_read(spark.read.parquet(str(work / f"{case}-pq{i}"))))
    figures.time("store first read", store_read, peak=True)
    figures.time("store second read", store_read)
    schema = spark.read.format("state_store").option("root", root).load(f"{case}-0").schema
    ddl = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in schema.fields)
    floor = spark.read.format("floor_arrow").options(
        rows=str(rows), parts=str(STORE_PARTITIONS), schema=ddl
    )
    figures.time("floor read", lambda i: full_read(floor.load()))
    count = spark.read.format("state_store").option("root", root).load(f"{case}-0").count()
    assert count == rows, f"store returned {count} rows, wrote {rows}"
    # The read's Arrow bytes: its strings, their offsets, its timestamps.
    stamps = sum(1 for f in schema.fields if f.dataType.simpleString() == "timestamp")
    text = df.selectExpr("sum(octet_length(key) + octet_length(value))").first()[0]
    raw = int(text) + rows * (8 + 8 * stamps)

    ratios = {
        "write / parquet": figures.ratio("store write", "parquet write"),
        "write / floor": figures.ratio("store write", "floor write"),
        "first read / parquet": figures.ratio("store first read", "parquet read"),
        "first read / floor": figures.ratio("store first read", "floor read"),
        "second read / parquet": figures.ratio("store second read", "parquet read"),
        "second read / floor": figures.ratio("store second read", "floor read"),
    }
    for name, value in ratios.items():
        goal = GOALS.get(name.split(" / ")[0]) if name.endswith("floor") else None
        note = f"  (goal at 4M >= {goal})" if goal else ""
        print(f"  {name:<24} {value:5.2f}{note}")
    mib = 1 << 20
    print(f"  peak worker memory: write {figures.peaks['store write'] / mib:,.0f} MiB, "
          f"first read {figures.peaks['store first read'] / mib:,.0f} MiB; "
          f"raw data {raw / mib:,.0f} MiB "
          f"(first read peak / raw {figures.peaks['store first read'] / raw:4.2f}x)",
          flush=True)  # fmt: skip
    df.unpersist()
    # The next case starts on an empty disk: its files, stores and local caches removed.
    for folder in (work, Path(root)):
        for entry in folder.iterdir():
            if entry.name.startswith(case):
                shutil.rmtree(entry, ignore_errors=True)
    shutil.rmtree(work / "cache", ignore_errors=True)
    return ratios


def size(text: str) -> int:
    """``1m`` / ``4M`` / ``250k`` / ``1000`` as a row count."""
    text = text.lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1], 1)
    return int(float(text.rstrip("km")) * scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=size, default=[1_000_000, 4_000_000])
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--orders", nargs="+", choices=["ascending", "random"],
                        default=["ascending", "random"])  # fmt: skip
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--driver-memory", default="6g", help="Spark's (the cached rows live there)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="state-store-scale-"))
    os.environ["STATE_STORE_CACHE_DIR"] = str(work / "cache")  # seen by Spark's workers
    spark = session("state_store scale bench", **{"spark.driver.memory": args.driver_memory})
    summary: list[str] = []
    try:
        register_floor(spark)
        # Warm-up at the first size: Python workers, imports, and the JVM's compiled paths.
        warm = spark.range(0, args.sizes[0], 1, INPUT_PARTITIONS).selectExpr(
            *spark_columns("keyvalue", False)
        )
        root = str(work / "warehouse")
        warm.write.parquet(str(work / "warm.parquet"))
        full_read(spark.read.parquet(str(work / "warm.parquet")))
        warm.write.format("state_store").options(root=root, store="warm").mode("append").save()
        full_read(spark.read.format("state_store").option("root", root).load("warm"))
        warm.write.format("floor_arrow").mode("append").save()
        full_read(spark.read.format("floor_arrow").options(rows=str(args.sizes[0]), parts="4").load())
        for rows in args.sizes:
            for kind in args.kinds:
                for order in args.orders:
                    ratios = run_case(spark, work, kind, rows, order, args.repeat)
                    summary.append(
                        f"{rows / 1e6:>5g}M {kind:<11} {order:<9} "
                        + " ".join(f"{v:9.2f}x" for v in ratios.values())
                    )
        print("\nsummary: store / peer rates (1.00x: as fast; goals at 4M: write and first read "
              ">= 0.75x of the floor, second read >= 0.95x)")  # fmt: skip
        print("  rows kind        keys      " + " ".join(f"{h:>10}" for h in (
            "write/pq", "write/flr", "1st/pq", "1st/flr", "2nd/pq", "2nd/flr")))  # fmt: skip
        print("\n".join(summary))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
