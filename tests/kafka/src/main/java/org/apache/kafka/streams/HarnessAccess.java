package org.apache.kafka.streams;

import org.apache.kafka.streams.processor.internals.StreamTask;

/**
 * The state-store harness' one reach into TopologyTestDriver: its package-private task, whose
 * ProcessorStateManager restores a store exactly as Kafka Streams does (see HarnessRestore).
 * Lives in Kafka's package only for that access; it changes nothing in Kafka's classes.
 */
public final class HarnessAccess {
    private HarnessAccess() { }

    public static StreamTask task(final TopologyTestDriver driver) {
        return driver.task;
    }
}
