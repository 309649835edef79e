package statestore.app;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The processor of an aggregating application (config {@code "aggregate"}): each input record reads the key's
 * state, writes it anew and forwards one result, with the record's key, time and headers, to the sink (the
 * output topic), as Kafka's DSL aggregations do ({@code KStreamAggregate}, {@code KStreamWindowAggregate})
 * without their cache, so every input record is one store write and one output record:
 *
 * <table>
 *   <caption>aggregate, kind: the write and the output value</caption>
 *   <tr><th>aggregate</th><th>kind</th><th>write</th><th>output value</th></tr>
 *   <tr><td>count</td><td>key_value</td><td>{@code put(key, BE64(get(key) + 1))} (absent = 0)</td>
 *       <td>{@code BE64 count}</td></tr>
 *   <tr><td>count</td><td>timestamped</td><td>the same in a {@code ValueAndTimestamp}, its time the larger of
 *       the old one and the record's (as {@code KStreamAggregate})</td><td>{@code BE64 count}</td></tr>
 *   <tr><td>count</td><td>window</td><td>{@code put(key, BE64(fetch(key, ws) + 1), ws)}, {@code ws = time -
 *       time % windowSizeMs}</td><td>{@code BE64 ws + BE64 count}</td></tr>
 *   <tr><td>count</td><td>timestamped_window</td><td>the same in a {@code ValueAndTimestamp} (as above)</td>
 *       <td>{@code BE64 ws + BE64 count}</td></tr>
 *   <tr><td>lookup</td><td>versioned</td><td>{@code put(key, value, time)} (null: a tombstone), after
 *       {@code before = get(key, time)}, the version a stream-table join with the table would see</td>
 *       <td>{@code BE64 put's validTo + before's value} (nothing when no version or a tombstone)</td></tr>
 * </table>
 *
 * <p>{@code +} concatenates; BE64 is a big-endian 8-byte long (Kafka's {@code LongSerializer}). A record with a
 * null key is skipped (counted), as Kafka's own stateful operators skip them.
 */
final class Aggregator implements Processor<byte[], byte[], byte[], byte[]> {
    /** The aggregations and the kinds each takes (kind {@code keyvalue} is {@code key_value}). */
    static final List<String> COUNT_KINDS = List.of("key_value", "timestamped", "window", "timestamped_window");
    static final List<String> LOOKUP_KINDS = List.of("versioned");

    private final String aggregate;
    private final String kind;
    private final String storeName;
    private final long windowSize;
    private final AtomicLong processed;
    private final AtomicLong skipped;
    private ProcessorContext<byte[], byte[]> context;
    private StateStore store;

    Aggregator(final String aggregate, final String kind, final String storeName, final long windowSize,
               final AtomicLong processed, final AtomicLong skipped) {
        this.aggregate = aggregate;
        this.kind = kind.equals("keyvalue") ? "key_value" : kind;
        this.storeName = storeName;
        this.windowSize = windowSize;
        this.processed = processed;
        this.skipped = skipped;
        check(aggregate, this.kind);
    }

    /** Fails unless {@code aggregate} is one this processor has for {@code kind}. */
    static void check(final String aggregate, final String kind) {
        final String k = kind.equals("keyvalue") ? "key_value" : kind;
        final boolean ok = aggregate.equals("count") ? COUNT_KINDS.contains(k)
            : aggregate.equals("lookup") && LOOKUP_KINDS.contains(k);
        if (!ok) {
            throw new IllegalArgumentException("aggregate '" + aggregate + "' with kind '" + kind + "': accepted are"
                + " count (kinds " + String.join(", ", COUNT_KINDS) + ") and lookup (kinds "
                + String.join(", ", LOOKUP_KINDS) + ")");
        }
    }

    @Override
    public void init(final ProcessorContext<byte[], byte[]> context) {
        this.context = context;
        this.store = context.getStateStore(storeName);
    }

    @Override
    @SuppressWarnings("unchecked")
    public void process(final Record<byte[], byte[]> record) {
        if (record.key() == null) {
            skipped.incrementAndGet();
            return;
        }
        final Bytes key = Bytes.wrap(record.key());
        final long time = record.timestamp();
        final byte[] out;
        switch (kind) {
            case "key_value": {
                final KeyValueStore<Bytes, byte[]> s = (KeyValueStore<Bytes, byte[]>) store;
                final long count = count(s.get(key)) + 1;
                s.put(key, be64(count));
                out = be64(count);
                break;
            }
            case "timestamped": {
                final KeyValueStore<Bytes, ValueAndTimestamp<byte[]>> s =
                    (KeyValueStore<Bytes, ValueAndTimestamp<byte[]>>) store;
                final ValueAndTimestamp<byte[]> old = s.get(key);
                final long count = count(old == null ? null : old.value()) + 1;
                s.put(key, ValueAndTimestamp.make(be64(count), old == null ? time : Math.max(time, old.timestamp())));
                out = be64(count);
                break;
            }
            case "window": {
                final WindowStore<Bytes, byte[]> s = (WindowStore<Bytes, byte[]>) store;
                final long ws = windowStart(time);
                final long count = count(s.fetch(key, ws)) + 1;
                s.put(key, be64(count), ws);
                out = ByteBuffer.allocate(16).putLong(ws).putLong(count).array();
                break;
            }
            case "timestamped_window": {
                final WindowStore<Bytes, ValueAndTimestamp<byte[]>> s =
                    (WindowStore<Bytes, ValueAndTimestamp<byte[]>>) store;
                final long ws = windowStart(time);
                final ValueAndTimestamp<byte[]> old = s.fetch(key, ws);
                final long count = count(old == null ? null : old.value()) + 1;
                s.put(key, ValueAndTimestamp.make(be64(count), old == null ? time : Math.max(time, old.timestamp())),
                    ws);
                out = ByteBuffer.allocate(16).putLong(ws).putLong(count).array();
                break;
            }
            case "versioned": {
                final VersionedKeyValueStore<Bytes, byte[]> s = (VersionedKeyValueStore<Bytes, byte[]>) store;
                final VersionedRecord<byte[]> before = s.get(key, time);
                final long validTo = s.put(key, record.value(), time);
                final byte[] seen = before == null ? new byte[0] : before.value();
                out = ByteBuffer.allocate(8 + seen.length).putLong(validTo).put(seen).array();
                break;
            }
            default:
                throw new IllegalStateException("aggregate " + aggregate + " has no kind " + kind);
        }
        context.forward(record.withValue(out));
        processed.incrementAndGet();
    }

    private long windowStart(final long time) {
        return windowSize > 0 ? time - Math.floorMod(time, windowSize) : time;
    }

    private static long count(final byte[] value) {
        return value == null ? 0 : ByteBuffer.wrap(value).getLong();
    }

    private static byte[] be64(final long v) {
        return ByteBuffer.allocate(8).putLong(v).array();
    }
}
