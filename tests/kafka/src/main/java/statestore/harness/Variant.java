package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * One store variant of the protocol: how Kafka builds it and how an op's Kafka method is called on it.
 *
 * <p>Every variant is built with {@code Stores.*} persistent RocksDB suppliers, {@code Serdes.Bytes()} keys,
 * {@code Serdes.ByteArray()} values, change logging on and caching off.
 */
public interface Variant {
    /** The store name of the harness' runs (the application of statestore.app names its own). */
    String STORE = "store";

    /** The builder, as an application would write it (logging on, caching off). */
    StoreBuilder<? extends StateStore> builder();

    /** The segment interval of the supplier (Kafka's default where the params leave it out), or null. */
    Long segmentInterval();

    /** The params as Kafka applied them (defaults filled in), reported back to the client. */
    ObjectNode effectiveParams();

    /** Calls Kafka method {@code m} with {@code args} on the store a processor sees; returns the raw answer. */
    Object call(StateStore store, String m, List<JsonNode> args);

    /** The variants of KIP-1271 (Kafka 4.3): only a build with {@link HeaderStores#AVAILABLE} has them. */
    List<String> HEADER_VARIANTS = List.of("timestamped_headers", "timestamped_window_headers", "session_headers");

    /** The variants this build's Kafka version has, in the protocol's order. */
    static List<String> names() {
        final List<String> out = new ArrayList<>();
        for (final String name : List.of("key_value", "timestamped", "timestamped_headers", "versioned", "window",
                "timestamped_window", "timestamped_window_headers", "window_duplicates", "session", "session_headers")) {
            if (HeaderStores.AVAILABLE || !HEADER_VARIANTS.contains(name)) {
                out.add(name);
            }
        }
        return out;
    }

    static Variant of(final String name, final JsonNode params) {
        return of(name, params, STORE);
    }

    /** The variant {@code name} whose store is called {@code store} (statestore.app's applications name theirs). */
    static Variant of(final String name, final JsonNode params, final String store) {
        if (!HeaderStores.AVAILABLE && (HEADER_VARIANTS.contains(name) || name.equals("window_headers"))) {
            throw new UnsupportedOperationException(name + ": Kafka Streams " + Harness.KAFKA_VERSION + " has no"
                + " header-aware stores (KIP-1271 added them in 4.3); this harness has: " + String.join(", ", names()));
        }
        switch (name) {
            case "key_value":
            case "timestamped":
            case "timestamped_headers":
                return new KeyValueVariant(name, params, store);
            case "versioned":
                return new VersionedVariant(params, store);
            case "window":
            case "timestamped_window":
            case "timestamped_window_headers":
            case "window_duplicates":
                return new WindowVariant(name, params, store);
            case "window_headers":
                throw new UnsupportedOperationException(
                    "window_headers: Kafka Streams " + Harness.KAFKA_VERSION + " has no key-ordered window store with"
                        + " headers and without timestamps (Stores offers only persistentTimestampedWindowStoreWithHeaders;"
                        + " the windowKeyValueWithHeaders column family is used only by"
                        + " RocksDbIndexedTimeOrderedWindowBytesStoreWithHeadersSupplier, the time-ordered stream-stream"
                        + " join buffer)");
            case "session":
            case "session_headers":
                return new SessionVariant(name, params, store);
            default:
                throw new IllegalArgumentException("unknown variant '" + name + "'; accepted: key_value, timestamped,"
                    + " timestamped_headers, versioned, window, timestamped_window, window_headers,"
                    + " timestamped_window_headers, window_duplicates, session, session_headers");
        }
    }

    /** Value encodings: plain bytes, {v,t}, {v,t,h}, {v,h}. */
    enum ValueKind {
        PLAIN, TIMESTAMPED, TIMESTAMPED_HEADERS, HEADERS;

        Object decode(final JsonNode n) {
            if (n == null || n.isNull()) {
                return null;
            }
            switch (this) {
                case PLAIN:
                    return Codec.unhex(n);
                case TIMESTAMPED:
                    return ValueAndTimestamp.make(Codec.unhex(n.get("v")), Codec.lng(n.get("t")));
                case TIMESTAMPED_HEADERS:
                    return HeaderStores.valueTimestampHeaders(n);
                default:
                    return HeaderStores.aggregationWithHeaders(n);
            }
        }
    }

    static long arg(final List<JsonNode> args, final int i) {
        return Codec.lng(args.get(i));
    }

    static UnsupportedOperationException noSuchMethod(final String variant, final String m, final int argc) {
        return new UnsupportedOperationException("variant " + variant + " has no method " + m + " with " + argc
            + " argument(s) in the harness");
    }
}
