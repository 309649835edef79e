package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.AggregationWithHeaders;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.ValueTimestampHeaders;
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.RocksDbSessionHeadersBytesStoreSupplier;
import org.apache.kafka.streams.state.internals.RocksDbWindowHeadersBytesStoreSupplier;

/**
 * Kafka 4.3's header-aware stores (KIP-1271): every use of a class Kafka 3.9 lacks lives here, so the 3.9
 * build (source root {@code src/kafka39/java}) swaps this class for a stub of the same name.
 */
final class HeaderStores {
    /** Whether this Kafka line has the header-aware stores. */
    static final boolean AVAILABLE = true;

    private HeaderStores() { }

    /** timestamped_headers: Stores.timestampedKeyValueStoreWithHeadersBuilder. */
    static StoreBuilder<? extends StateStore> keyValueBuilder(final String store) {
        return Stores.timestampedKeyValueStoreWithHeadersBuilder(
            Stores.persistentTimestampedKeyValueStoreWithHeaders(store), Serdes.Bytes(), Serdes.ByteArray());
    }

    /** timestamped_window_headers: Stores' own supplier (its checks and default segment interval). */
    static WindowBytesStoreSupplier windowSupplier(final String store, final Duration retention,
                                                   final Duration size,
                                                   final boolean duplicates) {
        return Stores.persistentTimestampedWindowStoreWithHeaders(store, retention, size, duplicates);
    }

    /** timestamped_window_headers with an explicit segment interval: the class Stores returns. */
    static WindowBytesStoreSupplier windowSupplier(final String store, final long retentionMs,
                                                   final long segmentInterval,
                                                   final long sizeMs, final boolean duplicates) {
        return new RocksDbWindowHeadersBytesStoreSupplier(store, retentionMs, segmentInterval, sizeMs,
            duplicates);
    }

    static StoreBuilder<? extends StateStore> windowBuilder(final WindowBytesStoreSupplier supplier) {
        return Stores.timestampedWindowStoreWithHeadersBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    /** session_headers: Stores' own supplier, or its class with only segmentIntervalMs() overridden. */
    static SessionBytesStoreSupplier sessionSupplier(final String store, final Duration retention,
                                                     final Long segmentInterval) {
        if (segmentInterval == null) {
            return Stores.persistentSessionStoreWithHeaders(store, retention);
        }
        return new RocksDbSessionHeadersBytesStoreSupplier(store, retention.toMillis()) {
            @Override
            public long segmentIntervalMs() {
                return segmentInterval;
            }
        };
    }

    static StoreBuilder<? extends StateStore> sessionBuilder(final SessionBytesStoreSupplier supplier) {
        return Stores.sessionStoreWithHeadersBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
    }

    /** {v,t,h} to ValueTimestampHeaders. */
    static Object valueTimestampHeaders(final JsonNode n) {
        return ValueTimestampHeaders.make(Codec.unhex(n.get("v")), Codec.lng(n.get("t")), Codec.headers(n.get("h")));
    }

    /** {v,h} to AggregationWithHeaders. */
    static Object aggregationWithHeaders(final JsonNode n) {
        return AggregationWithHeaders.make(Codec.unhex(n.get("v")), Codec.headers(n.get("h")));
    }

    /** The JSON of a header-carrying answer, or null when {@code o} is none. */
    static JsonNode encode(final Object o) {
        if (o instanceof ValueTimestampHeaders) {
            final ValueTimestampHeaders<?> v = (ValueTimestampHeaders<?>) o;
            final ObjectNode n = Codec.F.objectNode();
            n.set("v", Codec.encode(v.value()));
            n.put("t", v.timestamp());
            n.set("h", Codec.encodeHeaders(v.headers()));
            return n;
        } else if (o instanceof AggregationWithHeaders) {
            final AggregationWithHeaders<?> v = (AggregationWithHeaders<?>) o;
            final ObjectNode n = Codec.F.objectNode();
            n.set("v", Codec.encode(v.aggregation()));
            n.set("h", Codec.encodeHeaders(v.headers()));
            return n;
        }
        return null;
    }
}
