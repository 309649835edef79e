package statestore.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import statestore.harness.Codec;
import statestore.harness.Variant;

/**
 * The application's one processor: each input record becomes one write to the store, through the harness'
 * {@link Variant#call} (the same Kafka method calls the harness' ops make), with the record's time:
 *
 * <ul>
 *   <li>key_value: {@code put(key, value)} (a null value deletes);</li>
 *   <li>timestamped: {@code put(key, ValueAndTimestamp.make(value, time))}; timestamped_headers:
 *       {@code put(key, ValueTimestampHeaders.make(value, time, headers))} (a null value deletes);</li>
 *   <li>versioned: {@code put(key, value, time)} (a null value is a tombstone at that time);</li>
 *   <li>window, timestamped_window(_headers), window_duplicates: {@code put(key, value', windowStart)} with the
 *       value as for the key-value kinds and {@code windowStart} = header {@code ws} (decimal), else
 *       {@code time - time % windowSize};</li>
 *   <li>session, session_headers: {@code put(Windowed(key, SessionWindow(ss, se)), value')} with headers
 *       {@code ss}, {@code se} (decimal; default: the record time), value' = {@code AggregationWithHeaders} for
 *       session_headers (a null value removes the session).</li>
 * </ul>
 * Headers stored by header-aware stores are the record's headers without the control headers ws, ss, se.
 * A record with a null key is skipped (counted), as Kafka's own stateful operators skip them.
 */
final class Writer implements Processor<byte[], byte[], Void, Void> {
    static final Set<String> CONTROL_HEADERS = Set.of("ws", "ss", "se");

    private final Variant variant;
    private final String kind;
    private final String storeName;
    private final AtomicLong processed;
    private final AtomicLong skipped;
    private final long windowSize;
    private StateStore store;

    Writer(final Variant variant, final String kind, final String storeName, final AtomicLong processed,
           final AtomicLong skipped) {
        this.variant = variant;
        this.kind = kind.equals("keyvalue") ? "key_value" : kind;
        this.storeName = storeName;
        this.processed = processed;
        this.skipped = skipped;
        this.windowSize = variant.effectiveParams().path("windowSizeMs").asLong(0);
    }

    @Override
    public void init(final ProcessorContext<Void, Void> context) {
        store = context.getStateStore(storeName);
    }

    @Override
    public void process(final Record<byte[], byte[]> record) {
        if (record.key() == null) {
            skipped.incrementAndGet();
            return;
        }
        final String key = Codec.hex(record.key());
        final long time = record.timestamp();
        final Headers headers = record.headers();
        switch (kind) {
            case "key_value":
            case "timestamped":
            case "timestamped_headers":
                variant.call(store, "put", List.of(Codec.F.textNode(key), value(record)));
                break;
            case "versioned":
                variant.call(store, "put", List.of(Codec.F.textNode(key), hexOrNull(record.value()),
                    Codec.F.numberNode(time)));
                break;
            case "window":
            case "timestamped_window":
            case "timestamped_window_headers":
            case "window_duplicates": {
                final Long ws = number(headers, "ws");
                final long start = ws != null ? ws : windowSize > 0 ? time - Math.floorMod(time, windowSize) : time;
                variant.call(store, "put", List.of(Codec.F.textNode(key), value(record), Codec.F.numberNode(start)));
                break;
            }
            case "session":
            case "session_headers": {
                final Long ss = number(headers, "ss");
                final Long se = number(headers, "se");
                final ObjectNode windowed = Codec.F.objectNode().put("k", key).put("s", ss == null ? time : ss)
                    .put("e", se == null ? time : se);
                variant.call(store, "put", List.of(windowed, value(record)));
                break;
            }
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
        processed.incrementAndGet();
    }

    /** The value as the kind's store takes it (the harness' JSON: hex, {v,t}, {v,t,h}, {v,h}); null stays null. */
    private JsonNode value(final Record<byte[], byte[]> record) {
        if (record.value() == null) {
            return NullNode.getInstance();
        }
        final String v = Codec.hex(record.value());
        switch (kind) {
            case "timestamped":
            case "timestamped_window":
                return Codec.F.objectNode().put("v", v).put("t", record.timestamp());
            case "timestamped_headers":
            case "timestamped_window_headers":
                return Codec.F.objectNode().put("v", v).put("t", record.timestamp())
                    .set("h", Codec.encodeHeaders(stored(record.headers())));
            case "session_headers":
                return Codec.F.objectNode().put("v", v).set("h", Codec.encodeHeaders(stored(record.headers())));
            default:
                return Codec.F.textNode(v);
        }
    }

    private static JsonNode hexOrNull(final byte[] b) {
        return b == null ? NullNode.getInstance() : Codec.F.textNode(Codec.hex(b));
    }

    /** The record's headers without the control headers. */
    private static Headers stored(final Headers headers) {
        final RecordHeaders out = new RecordHeaders();
        for (final Header h : headers) {
            if (!CONTROL_HEADERS.contains(h.key())) {
                out.add(h.key(), h.value());
            }
        }
        return out;
    }

    private static Long number(final Headers headers, final String name) {
        final Header h = headers.lastHeader(name);
        if (h == null || h.value() == null) {
            return null;
        }
        return Long.parseLong(new String(h.value(), StandardCharsets.UTF_8).trim());
    }
}
