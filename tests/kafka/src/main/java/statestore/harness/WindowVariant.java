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
import org.apache.kafka.streams.state.WindowBytesStoreSupplier;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.state.internals.RocksDbWindowBytesStoreSupplier;

/**
 * window, timestamped_window, timestamped_window_headers, window_duplicates: Kafka's WindowStore family.
 *
 * <p>Without {@code segmentIntervalMs} the supplier is {@code Stores.persistent*WindowStore*} itself (segment
 * interval {@code max(retention / 2, 60 000)}); with it, the same supplier class that {@code Stores} returns,
 * constructed with that interval (as {@code Stores} does, after the same checks).
 */
final class WindowVariant implements Variant {
    private final String name;
    private final ValueKind kind;
    private final WindowBytesStoreSupplier supplier;

    WindowVariant(final String name, final JsonNode params, final String store) {
        this.name = name;
        this.kind = name.equals("timestamped_window") ? ValueKind.TIMESTAMPED
            : name.equals("timestamped_window_headers") ? ValueKind.TIMESTAMPED_HEADERS : ValueKind.PLAIN;
        final boolean duplicates = name.equals("window_duplicates") || params.path("retainDuplicates").asBoolean(false);
        final JsonNode retentionNode = params.get("retentionMs");
        final JsonNode sizeNode = params.get("windowSizeMs");
        if (retentionNode == null || sizeNode == null) {
            throw new IllegalArgumentException(name + " needs params.retentionMs and params.windowSizeMs");
        }
        final Duration retention = Duration.ofMillis(Codec.lng(retentionNode));
        final Duration size = Duration.ofMillis(Codec.lng(sizeNode));
        // Stores' own supplier first: its checks and its default interval.
        final WindowBytesStoreSupplier byStores;
        switch (kind) {
            case TIMESTAMPED:
                byStores = Stores.persistentTimestampedWindowStore(store, retention, size, duplicates);
                break;
            case TIMESTAMPED_HEADERS:
                byStores = HeaderStores.windowSupplier(store, retention, size, duplicates);
                break;
            default:
                byStores = Stores.persistentWindowStore(store, retention, size, duplicates);
        }
        final JsonNode interval = params.get("segmentIntervalMs");
        if (interval == null || interval.isNull()) {
            supplier = byStores;
        } else {
            final long segmentInterval = Codec.lng(interval);
            if (segmentInterval < 1) {
                throw new IllegalArgumentException("segmentIntervalMs must be at least 1, got " + segmentInterval);
            }
            switch (kind) {
                case TIMESTAMPED:
                    supplier = new RocksDbWindowBytesStoreSupplier(store, retention.toMillis(), segmentInterval,
                        size.toMillis(), duplicates,
                        RocksDbWindowBytesStoreSupplier.WindowStoreTypes.TIMESTAMPED_WINDOW_STORE);
                    break;
                case TIMESTAMPED_HEADERS:
                    supplier = HeaderStores.windowSupplier(store, retention.toMillis(), segmentInterval, size.toMillis(),
                        duplicates);
                    break;
                default:
                    supplier = new RocksDbWindowBytesStoreSupplier(store, retention.toMillis(), segmentInterval,
                        size.toMillis(), duplicates, RocksDbWindowBytesStoreSupplier.WindowStoreTypes.DEFAULT_WINDOW_STORE);
            }
        }
    }

    @Override
    public StoreBuilder<? extends StateStore> builder() {
        final StoreBuilder<? extends StateStore> b;
        switch (kind) {
            case TIMESTAMPED:
                b = Stores.timestampedWindowStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
                break;
            case TIMESTAMPED_HEADERS:
                b = HeaderStores.windowBuilder(supplier);
                break;
            default:
                b = Stores.windowStoreBuilder(supplier, Serdes.Bytes(), Serdes.ByteArray());
        }
        return b.withCachingDisabled().withLoggingEnabled(Map.of());
    }

    @Override
    public Long segmentInterval() {
        return supplier.segmentIntervalMs();
    }

    @Override
    public ObjectNode effectiveParams() {
        return Codec.F.objectNode().put("retentionMs", supplier.retentionPeriod())
            .put("windowSizeMs", supplier.windowSize()).put("segmentIntervalMs", supplier.segmentIntervalMs())
            .put("retainDuplicates", supplier.retainDuplicates());
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object call(final StateStore s, final String m, final List<JsonNode> a) {
        final WindowStore<Bytes, Object> store = (WindowStore<Bytes, Object>) s;
        switch (m + "/" + a.size()) {
            case "put/3":
                store.put(Codec.key(a.get(0)), kind.decode(a.get(1)), Variant.arg(a, 2));
                return null;
            case "fetch/2":
                return store.fetch(Codec.key(a.get(0)), Variant.arg(a, 1));
            case "fetch/3":
                return store.fetch(Codec.key(a.get(0)), Variant.arg(a, 1), Variant.arg(a, 2));
            case "backwardFetch/3":
                return store.backwardFetch(Codec.key(a.get(0)), Variant.arg(a, 1), Variant.arg(a, 2));
            case "fetch/4":
                return store.fetch(Codec.key(a.get(0)), Codec.key(a.get(1)), Variant.arg(a, 2), Variant.arg(a, 3));
            case "backwardFetch/4":
                return store.backwardFetch(Codec.key(a.get(0)), Codec.key(a.get(1)), Variant.arg(a, 2),
                    Variant.arg(a, 3));
            case "fetchAll/2":
                return store.fetchAll(Variant.arg(a, 0), Variant.arg(a, 1));
            case "backwardFetchAll/2":
                return store.backwardFetchAll(Variant.arg(a, 0), Variant.arg(a, 1));
            case "all/0":
                return store.all();
            case "backwardAll/0":
                return store.backwardAll();
            default:
                throw Variant.noSuchMethod(name, m, a.size());
        }
    }
}
