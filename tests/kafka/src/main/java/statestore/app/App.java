package statestore.app;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import statestore.harness.Codec;

/**
 * A real Kafka Streams application for the interop tests, driven like the harness: one JSON request per stdin
 * line, one JSON response per stdout line (tests/kafka/cluster.py's KafkaStreamsApp).
 *
 * <p>Requests: {@code {"cmd": "start"|"query"|"restored"|"processed"|"describe"|"stop"|"ping"|"quit", ...}};
 * responses {@code {"ok": true, ...}} or {@code {"ok": false, "error": class, "msg": message, "trace": stack}}.
 * Kafka's own logging is off (slf4j-nop); stdout carries the protocol only. See {@link Instance} for the
 * application (its topology, config and each command).
 */
public final class App {
    private static final ObjectMapper JSON = JsonMapper.builder()
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
        .build();

    private App() { }

    public static void main(final String[] args) throws Exception {
        final Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        System.setOut(System.err);
        Instance instance = null;
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
                    final String cmd = request.path("cmd").asText();
                    if (cmd.equals("quit")) {
                        break;
                    }
                    if (cmd.equals("start")) {
                        if (instance != null && instance.running()) {
                            throw new IllegalStateException("the application is running: stop it first");
                        }
                        instance = new Instance(request.get("config"));
                    } else if (instance == null && !cmd.equals("ping")) {
                        throw new IllegalStateException("'" + cmd + "' before 'start'");
                    }
                    response = cmd.equals("ping") ? ping() : instance.handle(cmd, request);
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
            if (instance != null) {
                instance.close();
            }
        }
    }

    private static ObjectNode ping() {
        return Codec.F.objectNode().put("kafka", Instance.KAFKA_VERSION)
            .put("java", System.getProperty("java.version"));
    }
}
