package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.HarnessAccess;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.internals.HarnessRestore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * One run: a fresh TopologyTestDriver over a fresh state directory, whose topology is
 * {@code source "in" -> "driver" -> "ops" (owns the store) -> "snap" (owns the SnapshotStore)}.
 *
 * <p>One input record makes "driver" forward one record per op, {@code withTimestamp(op.rt)}, to "ops", which
 * calls the op's Kafka method on the store as a processor sees it ({@code context.getStateStore}), so
 * {@code context.timestamp()} is the op's record time. The driver commits after the input record; the changelog
 * is what the driver's producer captured on {@code <application.id>-store-changelog}; the column families are
 * dumped when the driver closes the task (see SnapshotStore).
 */
final class Run {
    static final String APP = "harness";
    static final String CHANGELOG = APP + "-" + Variant.STORE + "-changelog";
    static final String INPUT = "in";

    private final Variant variant;
    private final JsonNode ops;
    private final JsonNode[] answers;
    private ColumnFamilyDump dump;
    private RuntimeException dumpError;
    private long dumpNanos;

    Run(final Variant variant, final JsonNode ops) {
        this.variant = variant;
        this.ops = ops == null ? Codec.F.arrayNode() : ops;
        this.answers = new JsonNode[this.ops.size()];
    }

    void snapshot(final File taskDir) {
        final long start = System.nanoTime();
        try {
            dump = ColumnFamilyDump.of(taskDir, variant.segmentInterval());
            dumpNanos = System.nanoTime() - start;
        } catch (final Exception e) {
            dumpError = new IllegalStateException("column family dump failed: " + e, e);
        }
    }

    ObjectNode execute(final Path base, final JsonNode restoreRecords) throws IOException {
        final Path stateDir = Files.createTempDirectory(base, "run");
        try {
            return executeIn(stateDir, restoreRecords);
        } finally {
            Utils.delete(stateDir.toFile());
        }
    }

    private ObjectNode executeIn(final Path stateDir, final JsonNode restoreRecords) {
        final Topology topology = new Topology();
        topology.addSource("src", new ByteArrayDeserializer(), new ByteArrayDeserializer(), INPUT);
        topology.addProcessor("driver", DriverProcessor::new, "src");
        topology.addProcessor("ops", OpsProcessor::new, "driver");
        topology.addStateStore(variant.builder(), "ops");
        topology.addProcessor("snap", SinkProcessor::new, "ops");
        topology.addStateStore(new SnapshotStore.Builder(this), "snap");

        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "harness:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);

        final ArrayNode changelog = Codec.F.arrayNode();
        final long t0 = System.nanoTime();
        final TopologyTestDriver driver = new TopologyTestDriver(topology, props);
        final long t1 = System.nanoTime();
        long t2 = 0;
        try {
            if (restoreRecords != null) {
                HarnessRestore.restore(HarnessAccess.task(driver), new TopicPartition(CHANGELOG, 0),
                    consumerRecords(restoreRecords));
            }
            if (ops.size() > 0) {
                final TestInputTopic<byte[], byte[]> input =
                    driver.createInputTopic(INPUT, new ByteArraySerializer(), new ByteArraySerializer());
                input.pipeInput(null, new byte[0], 0L);
            }
            t2 = System.nanoTime();
            for (final TestRecord<byte[], byte[]> r : driver
                    .createOutputTopic(CHANGELOG, new ByteArrayDeserializer(), new ByteArrayDeserializer())
                    .readRecordsToList()) {
                final ObjectNode rec = Codec.F.objectNode();
                rec.put("k", Codec.hex(r.key()));
                rec.put("v", Codec.hex(r.value()));
                rec.put("t", r.timestamp());
                rec.set("h", Codec.encodeHeaders(r.headers()));
                changelog.add(rec);
            }
        } finally {
            driver.close();
        }
        final long t3 = System.nanoTime();
        if (dumpError != null) {
            throw dumpError;
        }
        if (dump == null) {
            throw new IllegalStateException("the snapshot store was not closed: no column family dump");
        }
        final ObjectNode out = Codec.F.objectNode();
        final ArrayNode answerList = out.putArray("answers");
        for (final JsonNode a : answers) {
            answerList.add(a == null ? NullNode.getInstance() : a);
        }
        out.set("changelog", changelog);
        out.set("cfs", dump.entries);
        out.set("dbs", dump.dbs);
        final Long interval = variant.segmentInterval();
        out.set("segment_interval", interval == null ? NullNode.getInstance() : Codec.F.numberNode(interval));
        out.set("params", variant.effectiveParams());
        out.putObject("timing_us").put("driver", (t1 - t0) / 1000).put("ops", (t2 - t1) / 1000)
            .put("close", (t3 - t2) / 1000).put("dump", dumpNanos / 1000);
        return out;
    }

    /** Changelog records as the restore consumer would hand them over: offsets 0.., partition 0, CreateTime. */
    private static List<ConsumerRecord<byte[], byte[]>> consumerRecords(final JsonNode records) {
        final List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long offset = 0;
        for (final JsonNode r : records) {
            final byte[] key = Codec.unhex(r.get("k"));
            final byte[] value = Codec.unhex(r.get("v"));
            final RecordHeaders headers = (RecordHeaders) Codec.headers(r.get("h"));
            out.add(new ConsumerRecord<>(CHANGELOG, 0, offset++, Codec.lng(r.get("t")), TimestampType.CREATE_TIME,
                key == null ? ConsumerRecord.NULL_SIZE : key.length,
                value == null ? ConsumerRecord.NULL_SIZE : value.length,
                key, value, headers, Optional.empty()));
        }
        return out;
    }

    /** Owns the snapshot store; receives nothing ("ops" forwards nothing). */
    private static final class SinkProcessor implements Processor<Void, Void, Void, Void> {
        @Override
        public void process(final Record<Void, Void> record) { }
    }

    /** Forwards one record per op, with the op's record time, to the processor that owns the store. */
    private final class DriverProcessor implements Processor<byte[], byte[], Void, Integer> {
        private ProcessorContext<Void, Integer> context;

        @Override
        public void init(final ProcessorContext<Void, Integer> context) {
            this.context = context;
        }

        @Override
        public void process(final Record<byte[], byte[]> record) {
            for (int i = 0; i < ops.size(); i++) {
                final Record<Void, Integer> op;
                try {
                    final JsonNode recordHeaders = ops.get(i).get("rh");
                    op = new Record<>(null, i, Codec.lng(ops.get(i).get("rt")),
                        recordHeaders == null ? new RecordHeaders() : Codec.headers(recordHeaders));
                } catch (final RuntimeException e) {
                    answers[i] = Codec.error(e);
                    continue;
                }
                context.forward(op);
            }
        }
    }

    /** Calls each op's Kafka method on the store and keeps the encoded answer (or the exception). */
    private final class OpsProcessor implements Processor<Void, Integer, Void, Void> {
        private StateStore store;

        @Override
        public void init(final ProcessorContext<Void, Void> context) {
            store = context.getStateStore(Variant.STORE);
        }

        @Override
        public void process(final Record<Void, Integer> record) {
            final int i = record.value();
            final JsonNode op = ops.get(i);
            try {
                final String m = op.path("m").asText();
                final List<JsonNode> args = new ArrayList<>();
                op.path("a").forEach(args::add);
                if (m.equals("query")) {
                    if (args.size() != 1) {
                        throw new IllegalArgumentException("query takes one argument, got " + args.size());
                    }
                    answers[i] = Codec.encode(Queries.run(store, args.get(0)));
                } else {
                    answers[i] = Codec.encode(variant.call(store, m, args));
                }
            } catch (final RuntimeException e) {
                answers[i] = Codec.error(e);
            }
        }
    }
}
