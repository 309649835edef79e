"""State in and out of Kafka Streams, each figure against its peer measured in the same run.

    python bench/kafka_interop.py --rows 1000000            # Spark and library figures
    python bench/kafka_interop.py --rows 1000000 --kafka    # + the start of a real application

Rows: a timestamped store (16-byte string keys, 100-byte string values, one record time each),
``partitioner=kafka`` over 4 partitions. Figures (rows/s, median of ``--repeat`` runs):

- **changelog import** (``writeFrom=kafkaChangelog``: the records in Spark's Kafka source shape,
  applied per partition in offset order) against a **plain store write** of the same rows, and
  against the floor of that shape: a **do-nothing writer** (``floor_arrow``) given the same
  records. Spark alone takes about as long to hand a Python writer the records' six columns as
  a whole plain write of the three store columns takes, so through Spark the import cannot
  reach 0.8x of the plain write; the library's import against its plain write, without Spark,
  is in ``bench/changelog_columns.py``;
- **changelog export** (``readAs=kafkaChangelog``) against a **plain read** of the store (the
  first read of a commit, which computes the state, and a later one, served from its scan file);
- **state directory export** (``write_state_dir``: every partition's task directory, SST files)
  against **our own cache build** of the same store (every partition's RocksDB from its log);
- with ``--kafka``, the headline: seconds until a real Kafka Streams application (4.3.1, on a
  local broker, both started by ``tests/kafka/cluster.py``) with the store is running and
  answering a key query, started on the exported state directory versus restoring the store
  from its changelog topic (the records exported, produced before the clock starts).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _spark import REPO, full_read, register_floor, session
from pyspark.sql import DataFrame
from write_read import timed

PARTITIONS = 4
BASE_MS = 1_714_564_800_000


def ratio(results: dict[str, float], ours: str, peer: str, note: str) -> None:
    print(f"{ours + ' / ' + peer:<52} {results[ours] / results[peer]:5.2f}x  ({note})")


def spark_figures(rows: int, repeat: int, work: Path) -> None:
    from catalog import Catalog
    from catalog.caches.partitions import PartitionCache
    from catalog.kafka import write_state_dir

    spark = session("state_store kafka interop bench")
    register_floor(spark)
    try:
        root = str(work / "warehouse")
        df = spark.range(0, rows, 1, 2).selectExpr(
            "lpad(hex(id), 16, '0') AS key",
            "concat(repeat('v', 84), lpad(cast(id AS string), 16, '0')) AS value",
            f"timestamp_millis({BASE_MS} + id) AS timestamp",
        ).cache()
        df.count()
        records = spark.range(0, rows, 1, 2).selectExpr(
            "cast(lpad(hex(id), 16, '0') AS binary) AS key",
            "cast(concat(repeat('v', 84), lpad(cast(id AS string), 16, '0')) AS binary) AS value",
            "'bench-store-changelog' AS topic",
            # As Spark's Kafka source reads a topic: each partition's records in offset order.
            f"cast(div(id, {-(-rows // PARTITIONS)}) AS int) AS partition",
            f"cast(pmod(id, {-(-rows // PARTITIONS)}) AS bigint) AS offset",
            f"timestamp_millis({BASE_MS} + id) AS timestamp",
        ).cache()
        records.count()
        options = {"root": root, "kind": "timestamped", "numPartitions": str(PARTITIONS),
                   "partitioner": "kafka"}  # fmt: skip

        def plain_write(data: DataFrame, name: str) -> None:
            data.write.format("state_store").options(store=name, **options).mode("append").save()

        def changelog_import(name: str) -> None:
            records.write.format("state_store").options(
                store=name, writeFrom="kafkaChangelog", keyType="string", valueType="string",
                **options,
            ).mode("append").save()  # fmt: skip

        def plain_read(name: str) -> None:
            full_read(spark.read.format("state_store").option("root", root).load(name))

        def changelog_export(name: str) -> None:
            full_read(spark.read.format("state_store").options(
                root=root, readAs="kafkaChangelog", applicationId="bench").load(name))  # fmt: skip

        # Warm-ups at full size (Python workers, imports, the JVM's JIT of the large-batch paths).
        plain_write(df, "warm-plain")
        changelog_import("warm-imported")
        plain_read("warm-plain")
        changelog_export("warm-plain")

        results: dict[str, float] = {}
        print(f"{rows:,} rows, timestamped, {PARTITIONS} partitions (partitioner=kafka), median of {repeat}")
        timed("plain store write", lambda i: plain_write(df, f"plain{i}"), rows, repeat, results)
        timed("changelog import", lambda i: changelog_import(f"imported{i}"), rows, repeat, results)
        timed("records to a do-nothing writer", lambda i: records.write.format("floor_arrow")
              .mode("append").save(), rows, repeat, results)  # fmt: skip
        timed("plain read (first)", lambda i: plain_read(f"plain{i}"), rows, repeat, results)
        timed("plain read (second)", lambda i: plain_read(f"plain{i}"), rows, repeat, results)
        timed("changelog export", lambda i: changelog_export(f"imported{i}"), rows, repeat, results)
        for i in range(repeat):
            count = spark.read.format("state_store").option("root", root).load(f"imported{i}").count()
            assert count == rows, f"import kept {count} rows of {rows}"

        catalog = Catalog(root)

        def cache_build(i: int) -> None:
            table = catalog.load(f"plain{i}")
            cache_root = str(work / f"caches{i}")
            for p in range(PARTITIONS):
                PartitionCache(catalog.storage, table.spec, table.spec.name, p, cache_root).materialize(
                    str(work / f"caches{i}" / f"p{p}"), table.log.latest_id()
                )

        def state_dir_export(i: int) -> None:
            write_state_dir(
                catalog.load(f"plain{i}"), str(work / f"state{i}" / "bench"), store_name="store",
                kafka_version="4.3.1", subtopology=0, offsets={},
            )  # fmt: skip

        timed("cache build", cache_build, rows, repeat, results)
        timed("state dir export", state_dir_export, rows, repeat, results)
        print()
        ratio(results, "changelog import", "plain store write", "target >= 0.8")
        ratio(results, "records to a do-nothing writer", "plain store write",
              "Spark's delivery of the record shape alone")
        ratio(results, "changelog import", "records to a do-nothing writer", "the floor")
        ratio(results, "changelog export", "plain read (first)", "target >= 0.8")
        ratio(results, "changelog export", "plain read (second)", "a read served from its scan file")
        ratio(results, "state dir export", "cache build", "target >= 0.8")
    finally:
        spark.stop()


def kafka_figures(keys: int, work: Path) -> None:
    """Seconds until an application with a ``keys``-key store answers: restored from its
    changelog versus started on the exported state directory."""
    import sys

    import pyarrow as pa

    sys.path.insert(0, str(REPO))
    from catalog import Catalog
    from catalog.kafka import export_changelog
    from tests.kafka.cluster import Broker, KafkaStreamsApp

    catalog = Catalog(str(work / "kafka-warehouse"))
    table = catalog.create_store("store", "timestamped", "string", "string", PARTITIONS, partitioner="kafka")
    ids = pa.array(range(keys), pa.int64())
    rows = pa.table({
        "key": pa.array([f"{i:016x}" for i in range(keys)]),
        "value": pa.array(["v" * 84 + f"{i:016d}" for i in range(keys)]),
        "timestamp": pa.compute.add(ids, BASE_MS),
    })
    records = rows.select(["key", "value", "timestamp"]).cast(pa.schema([
        ("key", pa.binary()), ("value", pa.binary()), ("timestamp", pa.int64())]))
    records = records.append_column("topic", pa.array(["seed"] * keys)).append_column(
        "partition", pa.array([0] * keys, pa.int32())).append_column("offset", ids)
    table.import_kafka_changelog(records)
    key = f"{keys // 2:016x}".encode().hex()
    with Broker.start(work / "broker") as broker:
        print(f"\nKafka Streams 4.3.1, one timestamped store of {keys:,} keys, {PARTITIONS} partitions")
        figures = {}
        for route in ("restore from changelog", "start on exported state dir"):
            app = KafkaStreamsApp(broker, f"bench-{route.split()[0]}", work / route.split()[0],
                                  kind="timestamped", partitions=PARTITIONS)  # fmt: skip
            with app:
                exported = export_changelog(catalog.load("store"), app.application_id)
                broker.create_topic(app.changelog_topic, PARTITIONS)
                produced = broker.produce(app.changelog_topic, exported)
                if route.startswith("start"):
                    seconds = time.perf_counter()
                    catalog.load("store").export_kafka_state_dir(
                        str(work / route.split()[0]), app.application_id, kafka_version="4.3.1",
                        store=app.store, offsets=produced,
                    )  # fmt: skip
                    export = time.perf_counter() - seconds
                start = time.perf_counter()
                app.start(timeout=900)
                answer = app.query_result({"type": "KeyQuery", "key": key})
                figures[route] = time.perf_counter() - start
                assert answer is not None, "the application does not answer"
                print(f"{route:<30} {figures[route]:7.2f} s until running and answering "
                      f"(restored {app.restored():,} records)")
                app.stop()
        print(f"state dir export (before the start) {export:7.2f} s")
        print(f"{'restore / state dir start':<52} "
              f"{figures['restore from changelog'] / figures['start on exported state dir']:5.2f}x  "
              "(seconds to running and answering; > 1: the exported state dir starts faster)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kafka", action="store_true", help="also start a real application")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="state-store-kafka-bench-"))
    try:
        spark_figures(args.rows, args.repeat, work)
        if args.kafka:
            kafka_figures(args.rows, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
