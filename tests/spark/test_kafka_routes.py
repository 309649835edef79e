"""The connector's Kafka Streams routes through Spark (``datasource.kafka``): a store read as
changelog records (``readAs``), changelog records written into a store (``writeFrom``), a state
directory read as a table (``kafkaStateDir``), and their refusals. The real application judges
the bytes in ``tests/kafka/test_interop.py``; here Spark's side: shapes, types, options, errors.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from catalog import Catalog

pytestmark = pytest.mark.spark
UTC = dt.timezone.utc


def write_counts(spark: Any, root: str, name: str = "counts", partitioner: str = "kafka") -> None:
    spark.createDataFrame(
        [("alice", 3, 1_000), ("bob", 5, 2_000), ("carol", 1, 3_000), ("dan", 7, 4_000)],
        "key string, value bigint, ts bigint",
    ).selectExpr("key", "value", "timestamp_millis(ts) AS timestamp").write.format(
        "state_store"
    ).options(
        root=root, store=name, kind="timestamped", partitioner=partitioner, numPartitions="2"
    ).mode("append").save()


def records_of(spark: Any, root: str, name: str = "counts", **options: str) -> Any:
    return (
        spark.read.format("state_store")
        .options(root=root, store=name, readAs="kafkaChangelog", applicationId="clicks", **options)
        .load()
    )


def test_read_as_changelog_records(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "w")
    write_counts(spark, root)
    df = records_of(spark, root)
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("topic", "string"), ("partition", "int"), ("key", "binary"), ("value", "binary"),
        ("timestamp", "timestamp"), ("headers", "array<struct<key:string,value:binary>>"),
    ]  # fmt: skip
    rows = sorted((r.key, r.value, r.timestamp, r.partition, r.topic) for r in df.collect())
    expected = Catalog(root).load("counts").export_kafka_changelog("clicks").to_pylist()
    assert len(rows) == 4 and {r[4] for r in rows} == {"clicks-counts-changelog"}
    assert rows == sorted(
        (e["key"], e["value"], dt.datetime.fromtimestamp(e["timestamp"] / 1000, UTC).replace(
            tzinfo=None), e["partition"], e["topic"]) for e in expected
    )  # fmt: skip
    # The value travels without its time (timestamped), a bigint's 8 bytes; the key as a string.
    # bytes() as well: Spark 4.0 returns binary columns as bytearray.
    assert (b"alice", (3).to_bytes(8, "big")) in {(bytes(r[0]), bytes(r[1])) for r in rows}
    renamed = records_of(spark, root, kafkaStore="clicks-per-user").select("topic").distinct()
    assert [r.topic for r in renamed.collect()] == ["clicks-clicks-per-user-changelog"]


def test_read_as_changelog_refusals(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "w")
    write_counts(spark, root, "crc", partitioner="crc32")
    write_counts(spark, root)
    with pytest.raises(Exception, match="PARTITIONER_MISMATCH"):
        records_of(spark, root, "crc").collect()
    with pytest.raises(Exception, match="PARTITION_COUNT_MISMATCH"):
        records_of(spark, root, kafkaPartitions="3").collect()
    with pytest.raises(Exception, match="MISSING_OPTION.*applicationId"):
        spark.read.format("state_store").options(
            root=root, store="counts", readAs="kafkaChangelog").load().collect()  # fmt: skip
    with pytest.raises(Exception, match="'readAs' is 'kafka'.*kafkaChangelog"):
        spark.read.format("state_store").options(
            root=root, store="counts", readAs="kafka").load().collect()  # fmt: skip


def test_write_from_changelog_records(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "w")
    write_counts(spark, root)
    consumed = records_of(spark, root).selectExpr(
        "*", "cast(row_number() OVER (PARTITION BY partition ORDER BY timestamp) - 1 AS bigint) "
        "AS offset"
    )

    def write(data: Any, **extra: str) -> None:
        data.write.format("state_store").options(
            root=root, store="mirror", writeFrom="kafkaChangelog", kind="timestamped",
            keyType="string", valueType="bigint", **extra,
        ).mode("append").save()  # fmt: skip

    write(consumed)
    catalog = Catalog(root)
    mirror = catalog.load("mirror")
    same = sorted((r["key"], r["value"], r["timestamp"]) for r in mirror.to_arrow().to_pylist())
    original = catalog.load("counts").to_arrow().to_pylist()
    assert same == sorted((r["key"], r["value"], r["timestamp"]) for r in original)
    held = mirror.kafka_offsets()
    assert set(held) <= {("clicks-counts-changelog", 0), ("clicks-counts-changelog", 1)}
    assert sum(o + 1 for o in held.values()) == 4
    commits = mirror.log.latest_id()
    write(consumed)  # a rerun: every record already applied, nothing committed
    assert catalog.load("mirror").log.latest_id() == commits
    assert '"clicks-counts-changelog"' in mirror.kafka_starting_offsets()

    # A later record continues the store; a bad DataFrame changes nothing.
    later = spark.createDataFrame(
        [(b"alice", (9).to_bytes(8, "big"), "clicks-counts-changelog", 0, 100, 9_000)],
        "key binary, value binary, topic string, partition int, offset bigint, ts bigint",
    ).selectExpr("key", "value", "topic", "partition", "offset", "timestamp_millis(ts) AS timestamp")
    write(later)
    values = {r["key"]: r["value"] for r in catalog.load("mirror").to_arrow().to_pylist()}
    assert values["alice"] == 9 and values["bob"] == 5
    with pytest.raises(Exception, match="MISSING_COLUMN.*offset"):
        write(later.drop("offset"))
    short = later.selectExpr("cast(x'00' AS binary) AS key", "cast(x'00' AS binary) AS value",
                             "topic", "partition", "offset + 1 AS offset", "timestamp")  # fmt: skip
    with pytest.raises(Exception, match="UNDECODABLE_VALUE.*partition 0 offset 101"):
        write(short)
    with pytest.raises(Exception, match="'keyType' is 'binary'.*key type 'string'"):
        later.write.format("state_store").options(
            root=root, store="mirror", writeFrom="kafkaChangelog", keyType="binary",
        ).mode("append").save()  # fmt: skip
    assert catalog.load("mirror").log.latest_id() == commits + 1
    with pytest.raises(Exception, match="UNDECODABLE_KEY.*partition 0 offset 101"):
        short.write.format("state_store").options(
            root=root, store="fresh", writeFrom="kafkaChangelog", kind="timestamped",
            keyType="bigint",
        ).mode("append").save()  # fmt: skip
    assert not catalog.exists("fresh")  # a failed first import leaves no store
    # The records the tasks kept for the driver are gone, committed or failed.
    assert [p for p in (tmp_path / "w").rglob("*-records-*")] == []


def test_state_dir_as_a_table(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "w")
    write_counts(spark, root)
    catalog = Catalog(root)
    written = catalog.load("counts").export_kafka_state_dir(
        str(tmp_path / "state"), "clicks", kafka_version="4.3.1", offsets={}
    )
    assert written
    read = spark.read.format("state_store").options(
        kafkaStateDir=str(tmp_path / "state"), applicationId="clicks", store="counts",
        kind="timestamped", keyType="string", valueType="bigint",
    ).load()  # fmt: skip
    assert [f.name for f in read.schema.fields] == ["key", "value", "timestamp"]
    got = sorted((r.key, r.value) for r in read.collect())
    assert got == [("alice", 3), ("bob", 5), ("carol", 1), ("dan", 7)]
    direct = catalog.read_kafka_state_dir(
        str(tmp_path / "state"), "clicks", "counts", "timestamped", key_type="string",
        value_type="long",
    )  # fmt: skip
    assert sorted((r["key"], r["value"]) for r in direct.to_pylist()) == got
    with pytest.raises(Exception, match="MISSING_OPTION.*'kind'"):
        spark.read.format("state_store").options(
            kafkaStateDir=str(tmp_path / "state"), applicationId="clicks", store="counts",
        ).load().collect()  # fmt: skip
    with pytest.raises(Exception, match="WRONG_STORE_KIND|UNKNOWN_COLUMN_FAMILY"):
        spark.read.format("state_store").options(
            kafkaStateDir=str(tmp_path / "state"), applicationId="clicks", store="counts",
            kind="keyvalue",
        ).load().collect()  # fmt: skip
