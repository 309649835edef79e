"""Reading a store's state through Spark, against Spark's own state reader of the same state.

    python bench/statestore_peer.py --rows 1000000

Spark's built-in ``statestore`` source reads the state of a streaming query's stateful operator
from its checkpoint. The peer here: a streaming aggregation keeping the last value of each of
``rows`` distinct keys (16-byte keys, 100-byte values) in Spark's RocksDB state store provider,
``--partitions`` state partitions (shuffle partitions), run once over the rows
(``availableNow``), then read back whole with ``spark.read.format("statestore")``. The store:
the same rows written to a ``keyvalue`` store of as many partitions, read back whole (the first
read computes each partition from its changelog; the second reads the kept scan files). Both
reads materialize every column of every row (Spark's ``noop`` sink), in the same session,
medians of ``--repeat``; ratios are the store's speed over the peer's (1.0x: as fast).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _spark import full_read, seconds, session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = session(
        "statestore-peer",
        **{
            "spark.sql.shuffle.partitions": str(args.partitions),
            "spark.sql.streaming.stateStore.providerClass": (
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
            ),
        },
    )
    work = Path(tempfile.mkdtemp(prefix="bench-statestore-"))
    try:
        df = spark.range(0, args.rows, 1, 2).selectExpr(
            "lpad(hex(id), 16, '0') AS key",
            "concat(repeat('v', 84), lpad(cast(id AS string), 16, '0')) AS value",
        )
        df.write.parquet(str(work / "input"))
        # The peer's state: one streaming aggregation over the rows, checkpointed.
        stream = (
            spark.readStream.schema(df.schema).parquet(str(work / "input"))
            .groupBy("key").agg({"value": "last"})
            .writeStream.format("noop").outputMode("update")
            .option("checkpointLocation", str(work / "checkpoint"))
            .trigger(availableNow=True).start()
        )  # fmt: skip
        stream.awaitTermination()
        peer = spark.read.format("statestore").load(str(work / "checkpoint"))
        state_rows = peer.count()
        assert state_rows == args.rows, f"the checkpoint holds {state_rows} rows"
        root = str(work / "warehouse")
        options = {"root": root, "kind": "keyvalue", "numPartitions": str(args.partitions)}
        stored = spark.read.parquet(str(work / "input"))
        for i in range(args.repeat + 1):  # one more: a warm-up store
            stored.write.format("state_store").options(store=f"s{i}", **options).mode(
                "append"
            ).save()

        def store(name: str):  # type: ignore[no-untyped-def]
            return spark.read.format("state_store").option("root", root).load(name)

        full_read(store(f"s{args.repeat}"))  # warm-up: workers, imports, JIT
        full_read(peer)
        def median(read: Callable[[int], None]) -> float:
            """Median seconds of ``read(i)`` for each of the measured stores ``i``."""
            return statistics.median(seconds(partial(read, i)) for i in range(args.repeat))

        figures = {
            "statestore read": median(lambda i: full_read(peer)),
            "store read (first)": median(lambda i: full_read(store(f"s{i}"))),
            "store read (second)": median(lambda i: full_read(store(f"s{i}"))),
        }
        print(f"{args.rows:,} keys, {args.partitions} partitions, median of {args.repeat}")
        for name, took in figures.items():
            print(f"{name:<22} median {took:6.3f} s  {args.rows / took:12,.0f} rows/s")
        peer_s = figures["statestore read"]
        print(f"ratio first read / statestore read:  {peer_s / figures['store read (first)']:.2f}x")
        print(f"ratio second read / statestore read: {peer_s / figures['store read (second)']:.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
