package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.query.KeyQuery;
import org.apache.kafka.streams.query.MultiVersionedKeyQuery;
import org.apache.kafka.streams.query.PositionBound;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.QueryConfig;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.RangeQuery;
import org.apache.kafka.streams.query.TimestampedKeyQuery;
import org.apache.kafka.streams.query.TimestampedRangeQuery;
import org.apache.kafka.streams.query.VersionedKeyQuery;
import org.apache.kafka.streams.query.WindowKeyQuery;
import org.apache.kafka.streams.query.WindowRangeQuery;

/** The "query" op: IQv2 through {@code StateStore.query(query, PositionBound.unbounded(), new QueryConfig(false))}. */
public final class Queries {
    private Queries() { }

    static QueryResult<?> run(final StateStore store, final JsonNode spec) {
        return store.query(build(spec), PositionBound.unbounded(), new QueryConfig(false));
    }

    static boolean has(final JsonNode spec, final String field) {
        return spec.has(field) && !spec.get(field).isNull();
    }

    static Bytes key(final JsonNode spec, final String field) {
        return Codec.key(spec.get(field));
    }

    static Instant time(final JsonNode spec, final String field) {
        return Instant.ofEpochMilli(Codec.lng(spec.get(field)));
    }

    /**
     * A query class this Kafka release does not have. KIP-1356's header queries
     * ({@code TimestampedKeyWithHeadersQuery}, ...) come with Kafka 4.4; 4.3.1 and 3.9 have no such classes, so a
     * store there answers them as any query class it has no handler for: this stand-in (built by
     * {@code src/pre44/java}'s HeaderQueries) is one.
     */
    static final class AbsentQuery implements Query<Object> {
        private final String name;

        AbsentQuery(final String name) {
            this.name = name;
        }

        @Override
        public String toString() {
            return name + "{absent in Kafka Streams " + Harness.KAFKA_VERSION + "}";
        }
    }

    /** The IQv2 query a spec describes (the JSON shapes of the harness' "query" op). */
    public static Query<?> build(final JsonNode spec) {
        final String type = spec.path("type").asText();
        final boolean ordered = has(spec, "ascending");
        final boolean ascending = ordered && spec.get("ascending").asBoolean();
        switch (type) {
            case "KeyQuery":
                return KeyQuery.withKey(key(spec, "key"));
            case "TimestampedKeyQuery":
                return TimestampedKeyQuery.withKey(key(spec, "key"));
            case "RangeQuery": {
                RangeQuery<Bytes, Object> q = has(spec, "lower") && has(spec, "upper")
                    ? RangeQuery.withRange(key(spec, "lower"), key(spec, "upper"))
                    : has(spec, "lower") ? RangeQuery.withLowerBound(key(spec, "lower"))
                    : has(spec, "upper") ? RangeQuery.withUpperBound(key(spec, "upper"))
                    : RangeQuery.withNoBounds();
                if (ordered) {
                    q = ascending ? q.withAscendingKeys() : q.withDescendingKeys();
                }
                return q;
            }
            case "TimestampedRangeQuery": {
                TimestampedRangeQuery<Bytes, Object> q = has(spec, "lower") && has(spec, "upper")
                    ? TimestampedRangeQuery.withRange(key(spec, "lower"), key(spec, "upper"))
                    : has(spec, "lower") ? TimestampedRangeQuery.withLowerBound(key(spec, "lower"))
                    : has(spec, "upper") ? TimestampedRangeQuery.withUpperBound(key(spec, "upper"))
                    : TimestampedRangeQuery.withNoBounds();
                if (ordered) {
                    q = ascending ? q.withAscendingKeys() : q.withDescendingKeys();
                }
                return q;
            }
            case "VersionedKeyQuery": {
                final VersionedKeyQuery<Bytes, Object> q = VersionedKeyQuery.withKey(key(spec, "key"));
                return has(spec, "asOf") ? q.asOf(time(spec, "asOf")) : q;
            }
            case "MultiVersionedKeyQuery": {
                MultiVersionedKeyQuery<Bytes, Object> q = MultiVersionedKeyQuery.withKey(key(spec, "key"));
                if (has(spec, "fromTime")) {
                    q = q.fromTime(time(spec, "fromTime"));
                }
                if (has(spec, "toTime")) {
                    q = q.toTime(time(spec, "toTime"));
                }
                if (ordered) {
                    q = ascending ? q.withAscendingTimestamps() : q.withDescendingTimestamps();
                }
                return q;
            }
            case "WindowKeyQuery":
                return WindowKeyQuery.withKeyAndWindowStartRange(key(spec, "key"), time(spec, "fromTime"),
                    time(spec, "toTime"));
            case "WindowRangeQuery":
                return has(spec, "key")
                    ? WindowRangeQuery.withKey(key(spec, "key"))
                    : WindowRangeQuery.withWindowStartRange(time(spec, "fromTime"), time(spec, "toTime"));
            case "TimestampedKeyWithHeadersQuery":
            case "TimestampedRangeWithHeadersQuery":
            case "TimestampedWindowKeyWithHeadersQuery":
            case "TimestampedWindowRangeWithHeadersQuery":
                return HeaderQueries.build(type, spec);  // the 4.4 classes, or AbsentQuery before 4.4
            default:
                throw new IllegalArgumentException("unknown query type '" + type + "'; accepted: KeyQuery, RangeQuery,"
                    + " TimestampedKeyQuery, TimestampedRangeQuery, VersionedKeyQuery, MultiVersionedKeyQuery,"
                    + " WindowKeyQuery, WindowRangeQuery, TimestampedKeyWithHeadersQuery,"
                    + " TimestampedRangeWithHeadersQuery, TimestampedWindowKeyWithHeadersQuery,"
                    + " TimestampedWindowRangeWithHeadersQuery");
        }
    }
}
