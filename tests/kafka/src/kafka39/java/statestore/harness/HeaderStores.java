package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;

/**
 * Kafka 3.9 has no header-aware stores (KIP-1271 came with 4.3): the stub of {@code src/kafka43/java}'s
 * HeaderStores. {@code Variant.of} refuses the header variants before any of these would be reached.
 */
final class HeaderStores {
    /** Whether this Kafka line has the header-aware stores. */
    static final boolean AVAILABLE = false;

    private HeaderStores() { }

    private static IllegalStateException absent() {
        return new IllegalStateException("Kafka Streams " + Harness.KAFKA_VERSION + " has no header-aware stores");
    }

    static StoreBuilder<? extends StateStore> keyValueBuilder(final String store) {
        throw absent();
    }

    static WindowBytesStoreSupplier windowSupplier(final String store, final Duration retention,
                                                   final Duration size,
                                                   final boolean duplicates) {
        throw absent();
    }

    static WindowBytesStoreSupplier windowSupplier(final String store, final long retentionMs,
                                                   final long segmentInterval,
                                                   final long sizeMs, final boolean duplicates) {
        throw absent();
    }

    static StoreBuilder<? extends StateStore> windowBuilder(final WindowBytesStoreSupplier supplier) {
        throw absent();
    }

    static SessionBytesStoreSupplier sessionSupplier(final String store, final Duration retention,
                                                     final Long segmentInterval) {
        throw absent();
    }

    static StoreBuilder<? extends StateStore> sessionBuilder(final SessionBytesStoreSupplier supplier) {
        throw absent();
    }

    static Object valueTimestampHeaders(final JsonNode n) {
        throw absent();
    }

    static Object aggregationWithHeaders(final JsonNode n) {
        throw absent();
    }

    /** No answer of a 3.9 store carries headers. */
    static JsonNode encode(final Object o) {
        return null;
    }
}
