package eosc;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** JSON helpers: the worker config (a JsonNode) and the events written (Lists and Maps). */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    static boolean has(JsonNode cfg, String key) {
        JsonNode n = cfg.get(key);
        return n != null && !n.isNull();
    }

    static String str(JsonNode cfg, String key, String dflt) {
        return has(cfg, key) ? cfg.get(key).asText() : dflt;
    }

    static double dbl(JsonNode cfg, String key, double dflt) {
        return has(cfg, key) ? cfg.get(key).asDouble() : dflt;
    }

    static long lng(JsonNode cfg, String key, long dflt) {
        return has(cfg, key) ? cfg.get(key).asLong() : dflt;
    }

    static List<String> strings(JsonNode cfg, String key) {
        List<String> out = new ArrayList<>();
        if (has(cfg, key)) cfg.get(key).forEach(n -> out.add(n.asText()));
        return out;
    }

    /** An ordered map from key/value pairs: map("a", 1, "b", 2). */
    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    /** Extra client settings (a JSON object) into ``p``, every value as its text. */
    static void putAll(java.util.Properties p, JsonNode extra) {
        if (extra == null || !extra.isObject()) return;
        for (Map.Entry<String, JsonNode> e : extra.properties()) p.put(e.getKey(), e.getValue().asText());
    }

    static List<Object> list(Object... xs) {
        return new ArrayList<>(Arrays.asList(xs));
    }
}
