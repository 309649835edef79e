package statestore.harness;

import org.apache.kafka.streams.processor.StateStore;

/**
 * The base of the harness' own StateStore (SnapshotStore): empty on Kafka 4.3, whose {@code StateStore} has
 * only {@code init(StateStoreContext, StateStore)}; the 3.9 build swaps in a base with 3.9's abstract methods.
 */
abstract class StoreBase implements StateStore {
}
