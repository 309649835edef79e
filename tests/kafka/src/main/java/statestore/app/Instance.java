package statestore.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.StateQueryRequest;
import org.apache.kafka.streams.query.StateQueryResult;
import statestore.harness.Codec;
import statestore.harness.Queries;
import statestore.harness.Variant;

/**
 * One run of the application: {@code start} builds and starts a {@link KafkaStreams} over the config, the other
 * commands act on it, {@code stop} closes it cleanly (state flushed and checkpointed, group left).
 *
 * <p>Topology: source {@code input} (ByteArray serdes) -> processor {@code writer}, which owns the store (the
 * harness' {@link Variant} builder: {@code Stores.*} persistent supplier, {@code Serdes.Bytes()} keys,
 * {@code Serdes.ByteArray()} values, change logging on, caching off) and writes each record to it; no sink.
 * See {@link Writer} for how a record becomes a write. With {@code aggregate} set: source {@code input} ->
 * processor {@code aggregator} (the same store; see {@link Aggregator}: a count, or a versioned table's
 * lookup) -> sink {@code output} (ByteArray serdes; the topic must exist).
 *
 * <p>Config ({@code "config"} of {@code start}): {@code bootstrap}, {@code application_id}, {@code state_dir},
 * {@code store}, {@code kind} (a harness variant; {@code keyvalue} = {@code key_value}), {@code params} (the
 * harness' params: retentionMs, windowSizeMs, segmentIntervalMs, historyRetentionMs, retainDuplicates),
 * optional {@code input} (default {@code <application_id>-input}), {@code processing_guarantee} (default
 * at_least_once), {@code commit_interval_ms} (default 100), {@code timeout_ms} (for RUNNING, default 60 000),
 * {@code streams} (more StreamsConfig entries, strings), optional {@code aggregate} ({@code count} or
 * {@code lookup}; absent or null: the {@link Writer}) and {@code output} (the sink topic of an aggregating
 * application, default {@code <application_id>-output}).
 */
final class Instance {
    static final String KAFKA_VERSION = kafkaVersion();

    private final JsonNode config;
    private final String applicationId;
    private final String store;
    private final String input;
    /** The aggregation (see {@link Aggregator}), or null: the {@link Writer} and no sink. */
    private final String aggregate;
    private final String output;
    private final Variant variant;
    private final Topology topology;
    private final KafkaStreams streams;
    private final Admin admin;
    private final Object stateLock = new Object();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Map<Integer, AtomicLong> restored = new ConcurrentHashMap<>();
    private final Map<Integer, long[]> restoreRanges = new ConcurrentHashMap<>();
    private final Map<Integer, Long> restoreEnds = new ConcurrentHashMap<>();
    private final AtomicLong processed = new AtomicLong();
    private final AtomicLong skipped = new AtomicLong();
    private boolean closed;

    Instance(final JsonNode config) {
        if (config == null || !config.isObject()) {
            throw new IllegalArgumentException("start needs a \"config\" object");
        }
        this.config = config;
        this.applicationId = required("application_id");
        this.store = required("store");
        this.input = config.path("input").asText(applicationId + "-input");
        final String kind = required("kind");
        this.variant = Variant.of(kind.equals("keyvalue") ? "key_value" : kind, config.path("params"), store);
        final JsonNode aggregateNode = config.get("aggregate");
        this.aggregate = aggregateNode == null || aggregateNode.isNull() ? null : aggregateNode.asText();
        this.output = aggregate == null ? null : config.path("output").asText(applicationId + "-output");
        this.topology = new Topology();
        topology.addSource("input", new ByteArrayDeserializer(), new ByteArrayDeserializer(), input);
        if (aggregate == null) {
            topology.addProcessor("writer", () -> new Writer(variant, kind, store, processed, skipped), "input");
            topology.addStateStore(variant.builder(), "writer");
        } else {
            Aggregator.check(aggregate, kind);
            final long windowSize = variant.effectiveParams().path("windowSizeMs").asLong(0);
            topology.addProcessor("aggregator",
                () -> new Aggregator(aggregate, kind, store, windowSize, processed, skipped), "input");
            topology.addStateStore(variant.builder(), "aggregator");
            topology.addSink("output", output, new ByteArraySerializer(), new ByteArraySerializer(), "aggregator");
        }

        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, required("bootstrap"));
        props.put(StreamsConfig.STATE_DIR_CONFIG, required("state_dir"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            config.path("processing_guarantee").asText("at_least_once"));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, config.path("commit_interval_ms").asLong(100));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        // Static membership: a restart rejoins at once, and close(leaveGroup) removes the member (3.9 removes only
        // static members), so the next start never waits out a session timeout for a departed member.
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), applicationId + "-instance");
        final Iterator<Map.Entry<String, JsonNode>> extra = config.path("streams").fields();
        while (extra.hasNext()) {
            final Map.Entry<String, JsonNode> e = extra.next();
            props.put(e.getKey(), e.getValue().asText());
        }
        this.streams = new KafkaStreams(topology, props);
        streams.setStateListener((now, before) -> {
            synchronized (stateLock) {
                stateLock.notifyAll();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            failure.compareAndSet(null, e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new RestoreCounter());
        final Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, props.get(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG));
        this.admin = Admin.create(adminProps);
    }

    private String required(final String field) {
        final JsonNode n = config.get(field);
        if (n == null || n.isNull() || n.asText().isEmpty()) {
            throw new IllegalArgumentException("config." + field + " is required");
        }
        return n.asText();
    }

    private static String kafkaVersion() {
        try (java.io.InputStream in = Instance.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            final Properties props = new Properties();
            if (in != null) {
                props.load(in);
            }
            return props.getProperty("version", "unknown");
        } catch (final java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    boolean running() {
        return !closed;
    }

    ObjectNode handle(final String cmd, final JsonNode request) throws Exception {
        if (closed && !cmd.equals("stop") && !cmd.equals("describe") && !cmd.equals("restored")) {
            throw new IllegalStateException("'" + cmd + "' after 'stop': start the application again");
        }
        switch (cmd) {
            case "start":
                return start(request.path("config").path("timeout_ms").asLong(60_000));
            case "query":
                return query(request);
            case "restored":
                return restoredCounts();
            case "processed":
                return waitProcessed(request.get("offsets"), request.path("timeout_ms").asLong(60_000));
            case "describe":
                return describe();
            case "stop":
                return stop();
            default:
                throw new IllegalArgumentException("unknown cmd '" + cmd + "'; accepted: ping, start, query, restored,"
                    + " processed, describe, stop, quit");
        }
    }

    private ObjectNode start(final long timeoutMs) throws InterruptedException {
        final long t0 = System.nanoTime();
        streams.start();
        final long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (stateLock) {
            while (true) {
                final KafkaStreams.State state = streams.state();
                if (state == KafkaStreams.State.RUNNING) {
                    break;
                }
                if (failure.get() != null || state == KafkaStreams.State.ERROR
                        || state == KafkaStreams.State.PENDING_ERROR || state == KafkaStreams.State.NOT_RUNNING
                        || state == KafkaStreams.State.PENDING_SHUTDOWN) {
                    final Throwable f = failure.get();
                    close();
                    throw new IllegalStateException("the application did not reach RUNNING (state " + state + ")"
                        + (f == null ? "" : ": " + f), f);
                }
                final long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    close();
                    throw new IllegalStateException("the application was not RUNNING after " + timeoutMs + " ms (state "
                        + state + ")");
                }
                stateLock.wait(Math.min(left, 100));
            }
        }
        final ObjectNode out = Codec.F.objectNode();
        out.put("state", streams.state().name());
        out.put("kafka", KAFKA_VERSION);
        out.put("start_ms", (System.nanoTime() - t0) / 1_000_000);
        out.set("params", variant.effectiveParams());
        out.set("restored", restoredCounts().get("partitions"));
        if (output != null) {
            out.put("output", output);
        }
        return out;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private ObjectNode query(final JsonNode request) {
        final Query<Object> q = (Query<Object>) (Query) Queries.build(request.get("query"));
        StateQueryRequest<Object> req = StateQueryRequest.inStore(store).withQuery(q);
        final JsonNode partitions = request.get("partitions");
        if (partitions != null && !partitions.isNull()) {
            final Set<Integer> set = new HashSet<>();
            partitions.forEach(p -> set.add(p.intValue()));
            req = req.withPartitions(set);
        }
        final StateQueryResult<Object> result = streams.query(req);
        final ObjectNode out = Codec.F.objectNode();
        final ObjectNode byPartition = out.putObject("partitions");
        for (final Map.Entry<Integer, QueryResult<Object>> e : new TreeMap<>(result.getPartitionResults()).entrySet()) {
            byPartition.set(String.valueOf(e.getKey()), Codec.encode(e.getValue()));
        }
        return out;
    }

    private ObjectNode restoredCounts() {
        final ObjectNode out = Codec.F.objectNode();
        final ObjectNode parts = out.putObject("partitions");
        long total = 0;
        for (final Map.Entry<Integer, AtomicLong> e : new TreeMap<>(restored).entrySet()) {
            parts.put(String.valueOf(e.getKey()), e.getValue().get());
            total += e.getValue().get();
        }
        out.put("total", total);
        final ObjectNode ranges = out.putObject("ranges");
        new TreeMap<>(restoreRanges).forEach((p, r) -> ranges.putArray(String.valueOf(p)).add(r[0]).add(r[1]));
        final ObjectNode ends = out.putObject("ended");
        new TreeMap<>(restoreEnds).forEach((p, n) -> ends.put(String.valueOf(p), n));
        out.put("processed", processed.get());
        out.put("skipped_null_keys", skipped.get());
        return out;
    }

    /** Waits until the group's committed offset of each given input partition is past the given last offset. */
    private ObjectNode waitProcessed(final JsonNode offsets, final long timeoutMs) throws Exception {
        if (offsets == null || !offsets.isObject()) {
            throw new IllegalArgumentException("processed needs \"offsets\": {partition: last offset}");
        }
        final Map<TopicPartition, Long> wanted = new HashMap<>();
        offsets.fields().forEachRemaining(e -> wanted.put(new TopicPartition(input, Integer.parseInt(e.getKey())),
            e.getValue().longValue()));
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            final Throwable f = failure.get();
            if (f != null) {
                throw new IllegalStateException("the application failed: " + f, f);
            }
            final Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get();
            final List<String> behind = new ArrayList<>();
            for (final Map.Entry<TopicPartition, Long> e : wanted.entrySet()) {
                final OffsetAndMetadata c = committed.get(e.getKey());
                if (c == null || c.offset() <= e.getValue()) {
                    behind.add(e.getKey() + " committed " + (c == null ? "nothing" : c.offset()) + ", wanted > "
                        + e.getValue());
                }
            }
            if (behind.isEmpty()) {
                final ObjectNode out = Codec.F.objectNode();
                final ObjectNode c = out.putObject("committed");
                for (final TopicPartition tp : wanted.keySet()) {
                    c.put(String.valueOf(tp.partition()), committed.get(tp).offset());
                }
                return out;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("input not processed within " + timeoutMs + " ms: " + behind);
            }
            Thread.sleep(50);  // the poll interval of the committed offsets, under the deadline above
        }
    }

    private ObjectNode describe() {
        final ObjectNode out = Codec.F.objectNode();
        final ArrayNode subs = out.putArray("subtopologies");
        for (final TopologyDescription.Subtopology s : topology.describe().subtopologies()) {
            final ObjectNode sub = subs.addObject();
            sub.put("id", s.id());
            final ArrayNode stores = sub.putArray("stores");
            final ArrayNode nodes = sub.putArray("nodes");
            for (final TopologyDescription.Node n : s.nodes()) {
                nodes.add(n.name());
                if (n instanceof TopologyDescription.Processor) {
                    ((TopologyDescription.Processor) n).stores().forEach(stores::add);
                }
            }
        }
        out.put("text", topology.describe().toString());
        return out;
    }

    @SuppressWarnings("deprecation")  // KafkaStreams.CloseOptions: the one close options class 3.9 and 4.x share
    private ObjectNode stop() {
        final boolean clean = closed || streams.close(new KafkaStreams.CloseOptions().leaveGroup(true)
            .timeout(Duration.ofSeconds(60)));
        closed = true;
        admin.close(Duration.ofSeconds(10));
        final ObjectNode out = Codec.F.objectNode();
        out.put("clean", clean);
        out.put("state", streams.state().name());
        return out;
    }

    void close() {
        if (!closed) {
            stop();
        }
    }

    /** Counts the records restored into the store, per changelog partition, since start. */
    private final class RestoreCounter implements StateRestoreListener {
        @Override
        public void onRestoreStart(final TopicPartition tp, final String storeName, final long start, final long end) {
            restored.computeIfAbsent(tp.partition(), p -> new AtomicLong());
            restoreRanges.put(tp.partition(), new long[] {start, end});
        }

        @Override
        public void onBatchRestored(final TopicPartition tp, final String storeName, final long batchEnd,
                                    final long numRestored) {
            restored.computeIfAbsent(tp.partition(), p -> new AtomicLong()).addAndGet(numRestored);
        }

        @Override
        public void onRestoreEnd(final TopicPartition tp, final String storeName, final long total) {
            restoreEnds.put(tp.partition(), total);
        }
    }
}
