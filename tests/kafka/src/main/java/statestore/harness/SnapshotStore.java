package statestore.harness;

import java.io.File;
import java.util.Map;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * A store that does nothing but dump the task directory's RocksDBs when it is closed.
 *
 * <p>It is attached to a processor downstream of the one that owns the store under test, so
 * {@code InternalTopologyBuilder} registers it second and {@code ProcessorStateManager.close()} (registration
 * order, a {@code FixedOrderMap}) closes it after the store under test: by then RocksDB has flushed its
 * memtables (Kafka writes without WAL; {@code RocksDB.close()} flushes unpersisted data), and
 * {@code TopologyTestDriver.close()} has not yet deleted the state directory ({@code StateDirectory.clean()}
 * runs after the task is closed).
 */
final class SnapshotStore extends StoreBase {
    static final String NAME = "harness-snapshot";

    private final Run run;
    private File taskDir;
    private boolean open;

    SnapshotStore(final Run run) {
        this.run = run;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void init(final StateStoreContext context, final StateStore root) {
        taskDir = context.stateDir();
        context.register(root, (key, value) -> { });
        open = true;
    }

    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        run.snapshot(taskDir);
    }

    @Override
    public void flush() { }

    @Override
    public boolean persistent() {
        return false;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    static final class Builder implements StoreBuilder<SnapshotStore> {
        private final Run run;

        Builder(final Run run) {
            this.run = run;
        }

        @Override
        public StoreBuilder<SnapshotStore> withCachingEnabled() {
            return this;
        }

        @Override
        public StoreBuilder<SnapshotStore> withCachingDisabled() {
            return this;
        }

        @Override
        public StoreBuilder<SnapshotStore> withLoggingEnabled(final Map<String, String> config) {
            throw new UnsupportedOperationException("the snapshot store has no changelog");
        }

        @Override
        public StoreBuilder<SnapshotStore> withLoggingDisabled() {
            return this;
        }

        @Override
        public SnapshotStore build() {
            return new SnapshotStore(run);
        }

        @Override
        public Map<String, String> logConfig() {
            return Map.of();
        }

        @Override
        public boolean loggingEnabled() {
            return false;
        }

        @Override
        public String name() {
            return NAME;
        }
    }
}
