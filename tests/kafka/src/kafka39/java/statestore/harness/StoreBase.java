package statestore.harness;

import org.apache.kafka.streams.processor.ProcessorContext;
import org.apache.kafka.streams.processor.StateStore;

/**
 * The base of the harness' own StateStore (SnapshotStore) on Kafka 3.9, whose {@code StateStore} still has the
 * abstract {@code init(ProcessorContext, StateStore)} (removed in 4.0; SnapshotStore
 * implements 3.9's abstract {@code flush()} itself). Kafka
 * 3.9 calls {@code init(StateStoreContext, StateStore)}, which SnapshotStore overrides, so the old one is never
 * reached.
 */
abstract class StoreBase implements StateStore {
    @Deprecated
    @Override
    public void init(final ProcessorContext context, final StateStore root) {
        throw new UnsupportedOperationException("Kafka Streams calls init(StateStoreContext, StateStore)");
    }
}
