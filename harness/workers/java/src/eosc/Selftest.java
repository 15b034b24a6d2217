package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.KafkaException;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutionException;

/**
 * Roles for the unit tests (tests/unit/test_java_workers.py), no cluster needed; one JSON
 * request per stdin line, one JSON answer per stdout line:
 *
 * classify: {"phase", "fatal", "retriable", "txn_requires_abort", "commit_requested"} ->
 *   {"action", "replace"} from the error table in the config;
 * facts: {"exception": simple class name in org.apache.kafka.common.errors, "wrap": "kafka" |
 *   "execution" | null} -> {"name", "fatal", "retriable", "txn_requires_abort"} for that
 *   exception (wrapped in a KafkaException or an ExecutionException), without a producer.
 */
final class Selftest {
    private Selftest() {}

    static void run(String role, JsonNode cfg) throws Exception {
        Errors errors = new Errors(cfg.get("error_table"));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode q = Json.MAPPER.readTree(line);
            Object answer;
            if (role.equals("classify")) {
                Errors.Facts f = new Errors.Facts("X", "", q.get("fatal").asBoolean(), q.get("retriable").asBoolean(),
                        q.get("txn_requires_abort").asBoolean());
                Errors.Decision d = errors.classify(f, q.get("phase").asText(), q.get("commit_requested").asBoolean());
                answer = Json.map("action", d.action.name().toLowerCase(), "replace", d.replace);
            } else {
                Class<?> c = Class.forName("org.apache.kafka.common.errors." + q.get("exception").asText());
                Throwable t = (Throwable) c.getConstructor(String.class).newInstance("test");
                String wrap = Json.str(q, "wrap", "");
                if (wrap.equals("kafka")) t = new KafkaException("Cannot execute transactional method because we are in an error state", t);
                if (wrap.equals("execution")) t = new ExecutionException(t);
                Errors.Facts f = Errors.facts(t, null);
                answer = Json.map("name", f.name, "fatal", f.fatal, "retriable", f.retriable,
                        "txn_requires_abort", f.txnRequiresAbort);
            }
            System.out.println(Json.MAPPER.writeValueAsString(answer));
            System.out.flush();
        }
    }
}
