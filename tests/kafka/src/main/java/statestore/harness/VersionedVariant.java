package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.internals.RocksDbVersionedKeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.VersionedKeyValueStore;

/** versioned: Stores.persistentVersionedKeyValueStore (RocksDBVersionedStore). */
final class VersionedVariant implements Variant {
    private final RocksDbVersionedKeyValueBytesStoreSupplier supplier;

    VersionedVariant(final JsonNode params, final String store) {
        final JsonNode history = params.get("historyRetentionMs");
        if (history == null) {
            throw new IllegalArgumentException("versioned needs params.historyRetentionMs");
        }
        final JsonNode interval = params.get("segmentIntervalMs");
        // Stores returns a RocksDbVersionedKeyValueBytesStoreSupplier; its segmentIntervalMs() is not on the interface.
        supplier = (RocksDbVersionedKeyValueBytesStoreSupplier) (interval == null || interval.isNull()
            ? Stores.persistentVersionedKeyValueStore(store, Duration.ofMillis(Codec.lng(history)))
            : Stores.persistentVersionedKeyValueStore(store, Duration.ofMillis(Codec.lng(history)),
                Duration.ofMillis(Codec.lng(interval))));
    }

    @Override
    public StoreBuilder<? extends StateStore> builder() {
        return Stores.versionedKeyValueStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray())
            .withCachingDisabled().withLoggingEnabled(Map.of());
    }

    @Override
    public Long segmentInterval() {
        return supplier.segmentIntervalMs();
    }

    @Override
    public ObjectNode effectiveParams() {
        return Codec.F.objectNode().put("historyRetentionMs", supplier.historyRetentionMs())
            .put("segmentIntervalMs", supplier.segmentIntervalMs());
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object call(final StateStore s, final String m, final List<JsonNode> a) {
        final VersionedKeyValueStore<Bytes, byte[]> store = (VersionedKeyValueStore<Bytes, byte[]>) s;
        switch (m + "/" + a.size()) {
            case "put/3":
                return store.put(Codec.key(a.get(0)), Codec.unhex(a.get(1)), Variant.arg(a, 2));
            case "delete/2":
                return store.delete(Codec.key(a.get(0)), Variant.arg(a, 1));
            case "get/1":
                return store.get(Codec.key(a.get(0)));
            case "get/2":
                return store.get(Codec.key(a.get(0)), Variant.arg(a, 1));
            default:
                throw Variant.noSuchMethod("versioned", m, a.size());
        }
    }
}
