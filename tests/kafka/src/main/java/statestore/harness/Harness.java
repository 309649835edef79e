package statestore.harness;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.serialization.BooleanSerializer;
import org.apache.kafka.common.serialization.BytesSerializer;
import org.apache.kafka.common.serialization.DoubleSerializer;
import org.apache.kafka.common.serialization.FloatSerializer;
import org.apache.kafka.common.serialization.IntegerSerializer;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.ShortSerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.serialization.UUIDSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Utils;
import org.rocksdb.RocksDB;

/**
 * The harness JVM: one JSON request per stdin line, one JSON response per stdout line (tests/kafka/harness.py).
 *
 * <p>Requests: {@code {"cmd": "ping"|"murmur2"|"partitions"|"serialize"|"run"|"restore"|"quit", ...}}.
 * Responses: {@code {"ok": true, ...}} or {@code {"ok": false, "error": class, "msg": message, "trace": stack}}.
 * Everything else the JVM might print goes to stderr: stdout carries the protocol only.
 */
public final class Harness {
    static final String KAFKA_VERSION = kafkaVersion();

    private static final ObjectMapper JSON = JsonMapper.builder()
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
        .build();

    private Harness() { }

    /**
     * The kafka-clients release on the classpath, from the resource Kafka's AppInfoParser reads
     * ({@code /kafka/kafka-version.properties}): AppInfoParser itself moved to {@code common.utils.internals} in 4.4.
     */
    private static String kafkaVersion() {
        try (java.io.InputStream in = Harness.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            final java.util.Properties props = new java.util.Properties();
            if (in != null) {
                props.load(in);
            }
            return props.getProperty("version", "unknown");
        } catch (final java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    public static void main(final String[] args) throws Exception {
        final Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        System.setOut(System.err);
        RocksDB.loadLibrary();
        final Path base = Files.createTempDirectory("state-store-kafka-harness");
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                ObjectNode response;
                JsonNode request = null;
                try {
                    request = JSON.readTree(line);
                    if (request.path("cmd").asText().equals("quit")) {
                        break;
                    }
                    response = handle(request, base);
                    response.put("ok", true);
                } catch (final Throwable t) {
                    response = Codec.error(t);
                    response.put("ok", false);
                    final StringWriter trace = new StringWriter();
                    t.printStackTrace(new PrintWriter(trace));
                    response.put("trace", trace.toString());
                }
                if (request != null && request.has("id")) {
                    response.set("id", request.get("id"));
                }
                out.write(JSON.writeValueAsString(response));
                out.write('\n');
                out.flush();
            }
        } finally {
            Utils.delete(base.toFile());
        }
    }

    private static ObjectNode handle(final JsonNode request, final Path base) throws Exception {
        final String cmd = request.path("cmd").asText();
        final ObjectNode response = Codec.F.objectNode();
        switch (cmd) {
            case "ping":
                response.put("kafka", KAFKA_VERSION);
                response.put("rocksdb", RocksDB.rocksdbVersion().toString());
                response.put("java", System.getProperty("java.version"));
                final ArrayNode variants = response.putArray("variants");
                Variant.names().forEach(variants::add);
                return response;
            case "murmur2": {
                final ArrayNode result = response.putArray("result");
                for (final JsonNode k : request.get("keys")) {
                    result.add(Utils.murmur2(Codec.unhex(k)));
                }
                return response;
            }
            case "partitions": {
                final int n = request.get("n").intValue();
                final ArrayNode result = response.putArray("result");
                for (final JsonNode k : request.get("keys")) {
                    result.add(BuiltInPartitioner.partitionForKey(Codec.unhex(k), n));
                }
                return response;
            }
            case "serialize": {
                final String type = request.path("type").asText();
                final ArrayNode result = response.putArray("result");
                for (final JsonNode v : request.get("values")) {
                    result.add(Codec.hex(serialize(type, v)));
                }
                return response;
            }
            case "run":
            case "restore": {
                final Variant variant = Variant.of(request.path("variant").asText(), request.path("params"));
                final Run run = new Run(variant, request.get("ops"));
                return run.execute(base, cmd.equals("restore") ? request.path("records") : null);
            }
            default:
                throw new IllegalArgumentException("unknown cmd '" + cmd + "'; accepted: ping, murmur2, partitions,"
                    + " serialize, run, restore, quit");
        }
    }

    private static byte[] serialize(final String type, final JsonNode v) {
        final boolean isNull = v == null || v.isNull();
        switch (type) {
            case "string":
                return new StringSerializer().serialize(null, isNull ? null : v.asText());
            case "long":
                return new LongSerializer().serialize(null, isNull ? null : v.longValue());
            case "integer":
                return new IntegerSerializer().serialize(null, isNull ? null : Math.toIntExact(v.longValue()));
            case "short": {
                if (isNull) {
                    return new ShortSerializer().serialize(null, null);
                }
                final long s = v.longValue();
                if (s < Short.MIN_VALUE || s > Short.MAX_VALUE) {
                    throw new ArithmeticException("short overflow: " + s);
                }
                return new ShortSerializer().serialize(null, (short) s);
            }
            case "double":
                return new DoubleSerializer().serialize(null, isNull ? null : v.doubleValue());
            case "float":
                return new FloatSerializer().serialize(null, isNull ? null : (float) v.doubleValue());
            case "boolean":
                return new BooleanSerializer().serialize(null, isNull ? null : v.booleanValue());
            case "bytes":
                return new BytesSerializer().serialize(null, isNull ? null : Bytes.wrap(Codec.unhex(v)));
            case "uuid":
                return new UUIDSerializer().serialize(null, isNull ? null : UUID.fromString(v.asText()));
            default:
                throw new IllegalArgumentException("unknown serializer type '" + type + "'; accepted: string, long,"
                    + " integer, short, double, float, boolean, bytes, uuid");
        }
    }
}
