package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.internals.SessionWindow;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.SessionBytesStoreSupplier;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.internals.RocksDbSessionBytesStoreSupplier;

/**
 * session, session_headers: Kafka's SessionStore family.
 *
 * <p>Kafka's session suppliers fix the segment interval at {@code max(retention / 2, 60 000)}; with
 * {@code segmentIntervalMs} the harness uses the same supplier class with only {@code segmentIntervalMs()}
 * overridden (its {@code get()} reads the interval from that method).
 */
final class SessionVariant implements Variant {
    private final String name;
    private final ValueKind kind;
    private final SessionBytesStoreSupplier supplier;

    SessionVariant(final String name, final JsonNode params, final String store) {
        this.name = name;
        final boolean headers = name.equals("session_headers");
        this.kind = headers ? ValueKind.HEADERS : ValueKind.PLAIN;
        final JsonNode retentionNode = params.get("retentionMs");
        if (retentionNode == null) {
            throw new IllegalArgumentException(name + " needs params.retentionMs");
        }
        final Duration retention = Duration.ofMillis(Codec.lng(retentionNode));
        final JsonNode interval = params.get("segmentIntervalMs");
        Long segmentInterval = null;
        if (interval != null && !interval.isNull()) {
            segmentInterval = Codec.lng(interval);
            if (segmentInterval < 1) {
                throw new IllegalArgumentException("segmentIntervalMs must be at least 1, got " + segmentInterval);
            }
        }
        supplier = headers ? HeaderStores.sessionSupplier(store, retention, segmentInterval)
            : plainSupplier(store, retention, segmentInterval);
    }

    /** Stores.persistentSessionStore, or its class with only segmentIntervalMs() overridden. */
    private static SessionBytesStoreSupplier plainSupplier(final String store, final Duration retention,
                                                           final Long segmentInterval) {
        if (segmentInterval == null) {
            return Stores.persistentSessionStore(store, retention);
        }
        return new RocksDbSessionBytesStoreSupplier(store, retention.toMillis()) {
            @Override
            public long segmentIntervalMs() {
                return segmentInterval;
            }
        };
    }

    @Override
    public StoreBuilder<? extends StateStore> builder() {
        final StoreBuilder<? extends StateStore> b = kind == ValueKind.HEADERS
            ? HeaderStores.sessionBuilder(supplier)
            : Stores.sessionStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
        return b.withCachingDisabled().withLoggingEnabled(Map.of());
    }

    @Override
    public Long segmentInterval() {
        return supplier.segmentIntervalMs();
    }

    @Override
    public ObjectNode effectiveParams() {
        return Codec.F.objectNode().put("retentionMs", supplier.retentionPeriod())
            .put("segmentIntervalMs", supplier.segmentIntervalMs());
    }

    private static Windowed<Bytes> windowed(final JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        return new Windowed<>(Codec.key(n.get("k")), new SessionWindow(Codec.lng(n.get("s")), Codec.lng(n.get("e"))));
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object call(final StateStore s, final String m, final List<JsonNode> a) {
        final SessionStore<Bytes, Object> store = (SessionStore<Bytes, Object>) s;
        switch (m + "/" + a.size()) {
            case "put/2":
                store.put(windowed(a.get(0)), kind.decode(a.get(1)));
                return null;
            case "remove/1":
                store.remove(windowed(a.get(0)));
                return null;
            case "fetchSession/3":
                return store.fetchSession(Codec.key(a.get(0)), Variant.arg(a, 1), Variant.arg(a, 2));
            case "findSessions/2":
                return store.findSessions(Variant.arg(a, 0), Variant.arg(a, 1));
            case "findSessions/3":
                return store.findSessions(Codec.key(a.get(0)), Variant.arg(a, 1), Variant.arg(a, 2));
            case "backwardFindSessions/3":
                return store.backwardFindSessions(Codec.key(a.get(0)), Variant.arg(a, 1), Variant.arg(a, 2));
            case "findSessions/4":
                return store.findSessions(Codec.key(a.get(0)), Codec.key(a.get(1)), Variant.arg(a, 2),
                    Variant.arg(a, 3));
            case "backwardFindSessions/4":
                return store.backwardFindSessions(Codec.key(a.get(0)), Codec.key(a.get(1)), Variant.arg(a, 2),
                    Variant.arg(a, 3));
            case "fetch/1":
                return store.fetch(Codec.key(a.get(0)));
            case "backwardFetch/1":
                return store.backwardFetch(Codec.key(a.get(0)));
            case "fetch/2":
                return store.fetch(Codec.key(a.get(0)), Codec.key(a.get(1)));
            case "backwardFetch/2":
                return store.backwardFetch(Codec.key(a.get(0)), Codec.key(a.get(1)));
            default:
                throw Variant.noSuchMethod(name, m, a.size());
        }
    }
}
