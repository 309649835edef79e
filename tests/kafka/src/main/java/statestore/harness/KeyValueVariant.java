package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/** key_value, timestamped, timestamped_headers: Kafka's KeyValueStore family. */
final class KeyValueVariant implements Variant {
    private final String name;
    private final ValueKind kind;
    private final String store;

    KeyValueVariant(final String name, final JsonNode params, final String store) {
        this.name = name;
        this.store = store;
        this.kind = name.equals("key_value") ? ValueKind.PLAIN
            : name.equals("timestamped") ? ValueKind.TIMESTAMPED : ValueKind.TIMESTAMPED_HEADERS;
    }

    @Override
    public StoreBuilder<? extends StateStore> builder() {
        final StoreBuilder<? extends StateStore> b;
        switch (kind) {
            case PLAIN:
                b = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(store), Serdes.Bytes(), Serdes.ByteArray());
                break;
            case TIMESTAMPED:
                b = Stores.timestampedKeyValueStoreBuilder(Stores.persistentTimestampedKeyValueStore(store),
                    Serdes.Bytes(), Serdes.ByteArray());
                break;
            default:
                b = HeaderStores.keyValueBuilder(store);
        }
        return b.withCachingDisabled().withLoggingEnabled(Map.of());
    }

    @Override
    public Long segmentInterval() {
        return null;
    }

    @Override
    public ObjectNode effectiveParams() {
        return Codec.F.objectNode();
    }

    @Override
    @SuppressWarnings("unchecked")
    public Object call(final StateStore s, final String m, final List<JsonNode> a) {
        final KeyValueStore<Bytes, Object> store = (KeyValueStore<Bytes, Object>) s;
        switch (m + "/" + a.size()) {
            case "get/1":
                return store.get(Codec.key(a.get(0)));
            case "put/2":
                store.put(Codec.key(a.get(0)), kind.decode(a.get(1)));
                return null;
            case "putIfAbsent/2":
                return store.putIfAbsent(Codec.key(a.get(0)), kind.decode(a.get(1)));
            case "putAll/1": {
                final List<KeyValue<Bytes, Object>> entries = new ArrayList<>();
                for (final JsonNode kv : a.get(0)) {
                    entries.add(KeyValue.pair(Codec.key(kv.get(0)), kind.decode(kv.get(1))));
                }
                store.putAll(entries);
                return null;
            }
            case "delete/1":
                return store.delete(Codec.key(a.get(0)));
            case "range/2":
                return store.range(Codec.key(a.get(0)), Codec.key(a.get(1)));
            case "reverseRange/2":
                return store.reverseRange(Codec.key(a.get(0)), Codec.key(a.get(1)));
            case "all/0":
                return store.all();
            case "reverseAll/0":
                return store.reverseAll();
            case "prefixScan/1":
                return store.prefixScan(Codec.unhex(a.get(0)), new ByteArraySerializer());
            case "approximateNumEntries/0":
                return store.approximateNumEntries();
            default:
                throw Variant.noSuchMethod(name, m, a.size());
        }
    }
}
