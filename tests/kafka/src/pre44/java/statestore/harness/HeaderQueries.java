package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.streams.query.Query;

/**
 * KIP-1356's header queries on a Kafka release without them (3.9, 4.3): the 4.4 build (source root
 * {@code src/kafka44/java}) swaps this class for one that builds the real query classes.
 */
final class HeaderQueries {
    private HeaderQueries() { }

    /**
     * {@code TimestampedKeyWithHeadersQuery} and the three others come with Kafka 4.4: this release has no such
     * classes, so a store answers them as any query class it has no handler for, which the stand-in is.
     */
    static Query<?> build(final String type, final JsonNode spec) {
        return new Queries.AbsentQuery(type);
    }

    /** No ReadOnlyRecord results on this release. */
    static JsonNode encode(final Object o) {
        return null;
    }
}
