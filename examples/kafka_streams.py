"""State in and out of a Kafka Streams application: a store of page-view counts made in Spark
bootstraps the application's state (its changelog topic and its state directory), and the
changelog topic comes back into a store, as it would from a live application.

    KAFKA_BOOTSTRAP=127.0.0.1:9092 KAFKA_STATE_DIR=/var/lib/kafka-streams python examples/kafka_streams.py

Needs a broker (``KAFKA_BOOTSTRAP``) and ``pip install confluent-kafka``. The application it
prepares: ``application.id`` ``clicks-app``, a timestamped key-value store ``counts``
(``Stores.persistentTimestampedKeyValueStore``, String keys, Long values) in subtopology 0, an
input topic of 2 partitions keyed by user (Kafka's default partitioner), Kafka Streams 4.3.
The suite runs this against its test broker, then starts such an application on the state
directory written here: it restores nothing and answers from it.
"""

from __future__ import annotations

import os
import sys

import pyarrow as pa
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from catalog import Catalog

BOOTSTRAP = os.environ["KAFKA_BOOTSTRAP"]
STATE_DIR = os.environ.get("KAFKA_STATE_DIR", "./kafka-streams-state")
APP, STORE, PARTITIONS = "clicks-app", "counts", 2
TOPIC = f"{APP}-{STORE}-changelog"

spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false") \
    .config("spark.sql.session.timeZone", "UTC").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")

# 1. The store, partitioned as the application's tasks: Kafka's partitioner, its partition count.
views = spark.createDataFrame(
    [("ada", 12, 1_000), ("bob", 3, 2_000), ("cy", 7, 3_000), ("dee", 1, 4_000)],
    "key string, value bigint, ts bigint",
).selectExpr("key", "value", "timestamp_millis(ts) AS timestamp")
views.write.format("state_store").option("store", STORE).option("kind", "timestamped") \
    .option("partitioner", "kafka").option("numPartitions", str(PARTITIONS)) \
    .mode("append").save()

# 2. The store as the changelog records the application restores it from, produced to its
#    changelog topic with their partition and timestamp (Spark's Kafka sink sets no record
#    timestamp, which a timestamped store's records need: a producer that keeps it).
records = spark.read.format("state_store").option("store", STORE) \
    .option("readAs", "kafkaChangelog").option("applicationId", APP).load()
admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
for future in admin.create_topics(
    [NewTopic(TOPIC, PARTITIONS, 1, config={"cleanup.policy": "compact"})]
).values():
    future.result()
producer = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True})
last: dict[int, int] = {}


def delivered(err: object, msg: object) -> None:
    if err is not None:
        sys.exit(f"not produced: {err}")
    last[msg.partition()] = max(last.get(msg.partition(), -1), msg.offset())  # type: ignore[attr-defined]


for row in records.orderBy("partition", "timestamp").collect():
    producer.produce(TOPIC, key=row.key, value=row.value, partition=row.partition,
                     timestamp=int(row.timestamp.timestamp() * 1000), on_delivery=delivered)
producer.flush()
print(f"Produced {sum(1 for _ in records.collect())} records to {TOPIC}, last offsets {last}")

# 3. The store as the application's state directory, with those offsets: an instance started on
#    it trusts them and restores nothing.
catalog = Catalog(os.environ.get("STATE_STORE_ROOT", "./state-warehouse"))
written = catalog.load(STORE).export_kafka_state_dir(STATE_DIR, APP, kafka_version="4.3.1",
                                                     offsets=last)
print("Task directories:", sorted(os.path.basename(d) for d in written))

# 4. A live application's changelog back into a store (as Spark's Kafka source reads a topic:
#    key, value, topic, partition, offset, timestamp): Kafka's restore semantics, and the store
#    keeps each partition's last offset to continue from.
consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": "example",
                     "enable.auto.commit": False, "isolation.level": "read_committed"})
consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
rows = []
while len(rows) < sum(o + 1 for o in last.values()):
    message = consumer.poll(10)
    if message is None:
        sys.exit("the changelog topic did not answer")
    rows.append({"key": message.key(), "value": message.value(), "topic": message.topic(),
                 "partition": message.partition(), "offset": message.offset(),
                 "timestamp": message.timestamp()[1]})
consumer.close()
consumed = spark.createDataFrame(pa.Table.from_pylist(rows).to_pandas()) \
    .selectExpr("key", "value", "topic", "cast(partition AS int) AS partition", "offset",
                "timestamp_millis(timestamp) AS timestamp")
consumed.write.format("state_store").option("store", "counts_mirror") \
    .option("writeFrom", "kafkaChangelog").option("kind", "timestamped") \
    .option("keyType", "string").option("valueType", "bigint").mode("append").save()
print("Imported from the changelog:")
spark.read.format("state_store").load("counts_mirror").orderBy("key").show()
print("Continue from:", catalog.load("counts_mirror").kafka_starting_offsets())
spark.stop()
