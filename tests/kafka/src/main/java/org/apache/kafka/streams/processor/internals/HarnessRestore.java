package org.apache.kafka.streams.processor.internals;

import java.util.List;
import java.util.OptionalLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Restores changelog records into a task's store through Kafka Streams' own
 * {@code ProcessorStateManager.restore(StateStoreMetadata, List, OptionalLong)}: the restore callback the store
 * registered in its {@code init}, adapted to a batching callback, after the record converter that
 * {@code StateManagerUtil.converterForStore} chose at registration (e.g. {@code rawValueToTimestampedValue},
 * {@code rawValueToHeadersValue}). Only the changelog consumer ({@code StoreChangelogReader}) is left out: the
 * records arrive as one batch, as one poll would hand them over.
 */
public final class HarnessRestore {
    private HarnessRestore() { }

    public static void restore(final StreamTask task,
                               final TopicPartition changelog,
                               final List<ConsumerRecord<byte[], byte[]>> records) {
        final ProcessorStateManager stateManager = task.stateMgr;
        final ProcessorStateManager.StateStoreMetadata metadata = stateManager.storeMetadata(changelog);
        if (metadata == null) {
            throw new IllegalStateException("no store is registered for changelog partition " + changelog);
        }
        stateManager.restore(metadata, records, OptionalLong.empty());
    }
}
