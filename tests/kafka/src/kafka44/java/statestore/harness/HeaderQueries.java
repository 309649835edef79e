package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.ReadOnlyRecord;
import org.apache.kafka.streams.query.Query;
import org.apache.kafka.streams.query.TimestampedKeyWithHeadersQuery;
import org.apache.kafka.streams.query.TimestampedRangeWithHeadersQuery;
import org.apache.kafka.streams.query.TimestampedWindowKeyWithHeadersQuery;
import org.apache.kafka.streams.query.TimestampedWindowRangeWithHeadersQuery;

/**
 * KIP-1356's header queries (Kafka 4.4): the query classes, and the JSON of their {@code ReadOnlyRecord} results.
 * The 3.9 and 4.3 builds compile {@code src/pre44/java}'s stand-in of this class instead.
 */
final class HeaderQueries {
    private HeaderQueries() { }

    /** The KIP-1356 query of {@code type}, from the same spec fields as the older query types. */
    static Query<?> build(final String type, final JsonNode spec) {
        final boolean ordered = Queries.has(spec, "ascending");
        final boolean ascending = ordered && spec.get("ascending").asBoolean();
        switch (type) {
            case "TimestampedKeyWithHeadersQuery":
                return TimestampedKeyWithHeadersQuery.withKey(Queries.key(spec, "key"));
            case "TimestampedRangeWithHeadersQuery": {
                TimestampedRangeWithHeadersQuery<Bytes, Object> q =
                    Queries.has(spec, "lower") && Queries.has(spec, "upper")
                        ? TimestampedRangeWithHeadersQuery.withRange(Queries.key(spec, "lower"), Queries.key(spec, "upper"))
                    : Queries.has(spec, "lower") ? TimestampedRangeWithHeadersQuery.withLowerBound(Queries.key(spec, "lower"))
                    : Queries.has(spec, "upper") ? TimestampedRangeWithHeadersQuery.withUpperBound(Queries.key(spec, "upper"))
                    : TimestampedRangeWithHeadersQuery.withNoBounds();
                if (ordered) {
                    q = ascending ? q.withAscendingKeys() : q.withDescendingKeys();
                }
                return q;
            }
            case "TimestampedWindowKeyWithHeadersQuery":
                return TimestampedWindowKeyWithHeadersQuery.withKeyAndWindowStartRange(Queries.key(spec, "key"),
                    Queries.time(spec, "fromTime"), Queries.time(spec, "toTime"));
            case "TimestampedWindowRangeWithHeadersQuery":
                return Queries.has(spec, "key")
                    ? TimestampedWindowRangeWithHeadersQuery.withKey(Queries.key(spec, "key"))
                    : TimestampedWindowRangeWithHeadersQuery.withWindowStartRange(Queries.time(spec, "fromTime"),
                        Queries.time(spec, "toTime"));
            default:
                throw new IllegalArgumentException("not a KIP-1356 query type: " + type);
        }
    }

    /** A {@code ReadOnlyRecord} as {@code {"key": <key>, "v": hex, "t": ts, "h": headers}}, else null. */
    static JsonNode encode(final Object o) {
        if (!(o instanceof ReadOnlyRecord)) {
            return null;
        }
        final ReadOnlyRecord<?, ?> r = (ReadOnlyRecord<?, ?>) o;
        final ObjectNode n = Codec.F.objectNode();
        n.set("key", Codec.encode(r.key()));
        n.set("v", Codec.encode(r.value()));
        n.put("t", r.timestamp());
        n.set("h", Codec.encodeHeaders(r.headers()));
        return n;
    }
}
