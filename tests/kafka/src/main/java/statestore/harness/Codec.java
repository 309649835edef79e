package statestore.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Closeable;
import java.util.Iterator;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.VersionedRecord;

/** JSON encodings of the protocol (see tests/kafka/harness.py): bytes as lowercase hex, null as null. */
public final class Codec {
    public static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Codec() { }

    public static String hex(final byte[] b) {
        if (b == null) {
            return null;
        }
        final char[] out = new char[b.length * 2];
        for (int i = 0; i < b.length; i++) {
            out[2 * i] = HEX[(b[i] >> 4) & 0xF];
            out[2 * i + 1] = HEX[b[i] & 0xF];
        }
        return new String(out);
    }

    public static byte[] unhex(final JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        final String s = n.asText();
        if (s.length() % 2 != 0) {
            throw new IllegalArgumentException("odd-length hex string: " + s);
        }
        final byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    public static Bytes key(final JsonNode n) {
        final byte[] b = unhex(n);
        return b == null ? null : Bytes.wrap(b);
    }

    public static long lng(final JsonNode n) {
        if (n == null || !n.isIntegralNumber()) {
            throw new IllegalArgumentException("expected an integer, got " + n);
        }
        return n.longValue();
    }

    public static Headers headers(final JsonNode n) {
        final RecordHeaders h = new RecordHeaders();
        if (n != null && !n.isNull()) {
            for (final JsonNode pair : n) {
                h.add(pair.get(0).asText(), unhex(pair.get(1)));
            }
        }
        return h;
    }

    public static ArrayNode encodeHeaders(final Headers headers) {
        final ArrayNode out = F.arrayNode();
        if (headers != null) {
            for (final Header h : headers) {
                out.add(F.arrayNode().add(h.key()).add(hex(h.value())));
            }
        }
        return out;
    }

    /** Any answer of a store, by its runtime type; iterators are drained and closed. */
    public static JsonNode encode(final Object o) {
        if (o == null) {
            return NullNode.getInstance();
        } else if (o instanceof byte[]) {
            return F.textNode(hex((byte[]) o));
        } else if (o instanceof Bytes) {
            return F.textNode(hex(((Bytes) o).get()));
        } else if (o instanceof Long || o instanceof Integer || o instanceof Short) {
            return F.numberNode(((Number) o).longValue());
        } else if (o instanceof Boolean) {
            return F.booleanNode((Boolean) o);
        } else if (o instanceof String) {
            return F.textNode((String) o);
        } else if (o instanceof ValueAndTimestamp) {
            final ValueAndTimestamp<?> v = (ValueAndTimestamp<?>) o;
            return F.objectNode().<ObjectNode>set("v", encode(v.value())).put("t", v.timestamp());
        } else if (o instanceof VersionedRecord) {
            final VersionedRecord<?> v = (VersionedRecord<?>) o;
            final ObjectNode n = F.objectNode();
            n.set("v", encode(v.value()));
            n.put("t", v.timestamp());
            n.set("to", v.validTo().isPresent() ? F.numberNode(v.validTo().get()) : NullNode.getInstance());
            return n;
        } else if (o instanceof Windowed) {
            final Windowed<?> w = (Windowed<?>) o;
            final ObjectNode n = F.objectNode();
            n.set("k", encode(w.key()));
            n.put("s", w.window().start());
            n.put("e", w.window().end());
            return n;
        } else if (o instanceof KeyValue) {
            final KeyValue<?, ?> kv = (KeyValue<?, ?>) o;
            return F.arrayNode().add(encode(kv.key)).add(encode(kv.value));
        } else if (o instanceof QueryResult) {
            final QueryResult<?> r = (QueryResult<?>) o;
            final ObjectNode n = F.objectNode();
            n.put("ok", r.isSuccess());
            if (r.isSuccess()) {
                n.putNull("failure");
                n.set("result", encode(r.getResult()));
            } else {
                n.put("failure", r.getFailureReason().name());
                n.put("msg", r.getFailureMessage());
                n.putNull("result");
            }
            return n;
        } else if (o instanceof Iterator) {
            final ArrayNode out = F.arrayNode();
            try {
                final Iterator<?> it = (Iterator<?>) o;
                while (it.hasNext()) {
                    out.add(encode(it.next()));
                }
            } finally {
                if (o instanceof Closeable) {
                    try {
                        ((Closeable) o).close();
                    } catch (final java.io.IOException e) {
                        throw new RuntimeException(e);
                    }
                } else if (o instanceof AutoCloseable) {
                    try {
                        ((AutoCloseable) o).close();
                    } catch (final Exception e) {
                        throw new RuntimeException(e);
                    }
                }
            }
            return out;
        } else if (o instanceof Map) {
            final ObjectNode n = F.objectNode();
            for (final Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                n.set(String.valueOf(e.getKey()), encode(e.getValue()));
            }
            return n;
        }
        final JsonNode withHeaders = HeaderStores.encode(o);  // ValueTimestampHeaders, AggregationWithHeaders
        if (withHeaders != null) {
            return withHeaders;
        }
        final JsonNode record = HeaderQueries.encode(o);  // ReadOnlyRecord (Kafka 4.4's KIP-1356 queries)
        if (record != null) {
            return record;
        }
        throw new IllegalStateException("no JSON encoding for " + o.getClass().getName());
    }

    public static ObjectNode error(final Throwable t) {
        final ObjectNode n = F.objectNode();
        n.put("error", t.getClass().getSimpleName());
        n.put("msg", t.getMessage());
        return n;
    }
}
