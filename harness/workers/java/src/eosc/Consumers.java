package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/** The consumer, drain and pipeline-drain roles (harness/workers/consumer.py, pipeline_drain.py). */
final class Consumers {
    private Consumers() {}

    static TopicPartition tp(String key) {
        return Processor.tp(key);
    }

    /** consumer: assign every key from the beginning, poll until stopped; a poll op per
     *  non-empty poll() with the [offset, value] pairs per key in the order returned. */
    static class Poller extends Worker {
        boolean fin = false;

        Poller(JsonNode cfg) {
            super(cfg);
        }

        String isolation() {
            return Json.str(cfg, "isolation_level", "read_committed");
        }

        KafkaConsumer<byte[], byte[]> consumer(String groupId, String isolation) {
            Properties p = new Properties();
            p.put("bootstrap.servers", cfg.get("bootstrap").asText());
            p.put("group.id", groupId);
            p.put("enable.auto.commit", "false");
            p.put("auto.offset.reset", "earliest");
            p.put("isolation.level", isolation);
            p.put("fetch.max.wait.ms", "100");
            p.put("request.timeout.ms", "10000");
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            Json.putAll(p, cfg.get("consumer"));
            Json.putAll(p, cfg.get("security"));  // an external cluster's (harness.cluster.client_access)
            return new KafkaConsumer<>(p);
        }

        Map<String, Object> meta() {
            Map<String, Object> m = Json.map("isolation_level", isolation());
            if (fin) m.put("final", true);
            return m;
        }

        List<TopicPartition> tps() {
            List<TopicPartition> out = new ArrayList<>();
            for (String k : Json.strings(cfg, "keys")) out.add(tp(k));
            return out;
        }

        void assign(KafkaConsumer<byte[], byte[]> c, Map<String, Object> extraMeta) {
            List<String> keys = Json.strings(cfg, "keys");
            Map<String, Object> m = meta();
            m.put("from", "beginning");
            if (extraMeta != null) m.putAll(extraMeta);
            emit("invoke", "assign", keys, m);
            c.assign(tps());
            c.seekToBeginning(tps());
            emit("ok", "assign", keys, m);
        }

        Map<String, List<Object>> pollOnce(KafkaConsumer<byte[], byte[]> c, long timeoutMs) {
            long t0 = now();
            ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(timeoutMs));
            Map<String, List<Object>> byKey = new LinkedHashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : recs) {
                String key = r.topic() + "/" + r.partition();
                long value;
                try {
                    value = Long.parseLong(new String(r.value(), StandardCharsets.UTF_8));
                } catch (RuntimeException e) {
                    log("foreign record at " + key + "@" + r.offset());
                    continue;
                }
                byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(Json.list(r.offset(), value));
            }
            if (!byKey.isEmpty()) {
                emit("invoke", "poll", Json.list(Json.list("poll")), t0, null, meta());
                emit("ok", "poll", Json.list(Json.list("poll", byKey)), meta());
            }
            return byKey;
        }

        @Override
        void run() throws Exception {
            try (KafkaConsumer<byte[], byte[]> c = consumer(Json.str(cfg, "group_id", "eosc-readers"), isolation())) {
                assign(c, null);
                while (!stopping.get()) pollOnce(c, 250);
            }
            control(Json.map("done", true));
        }
    }

    /** drain: read every key from the beginning to its high watermark taken at the start. */
    static class Drain extends Poller {
        Drain(JsonNode cfg) {
            super(cfg);
            fin = true;
        }

        /** The finalized feature levels of the cluster (Admin describeFeatures, KIP-584), e.g.
         *  transaction.version and metadata.version; empty when they cannot be read. */
        Map<String, Object> features() {
            Properties p = new Properties();
            p.put("bootstrap.servers", cfg.get("bootstrap").asText());
            p.put("request.timeout.ms", "10000");
            Json.putAll(p, cfg.get("security"));
            Map<String, Object> out = new TreeMap<>();
            try (Admin admin = Admin.create(p)) {
                FeatureMetadata fm = admin.describeFeatures().featureMetadata().get(20, TimeUnit.SECONDS);
                for (Map.Entry<String, FinalizedVersionRange> e : fm.finalizedFeatures().entrySet()) {
                    out.put(e.getKey(), (int) e.getValue().maxVersionLevel());
                }
            } catch (Exception e) {
                log("describeFeatures: " + e);
            }
            return out;
        }

        @Override
        void run() throws Exception {
            long deadline = System.nanoTime() + (long) (Json.dbl(cfg, "drain_timeout_s", 120) * 1e9);
            List<TopicPartition> tps = tps();
            Map<String, Long> low = new LinkedHashMap<>(), high = new LinkedHashMap<>();
            // high watermarks, not the LSO: read_uncommitted end offsets
            try (KafkaConsumer<byte[], byte[]> w = consumer(Json.str(cfg, "group_id", "eosc-final"), "read_uncommitted")) {
                while (high.size() < tps.size()) {
                    try {
                        Map<TopicPartition, Long> b = w.beginningOffsets(tps, Duration.ofSeconds(5));
                        Map<TopicPartition, Long> e = w.endOffsets(tps, Duration.ofSeconds(5));
                        for (TopicPartition tp : tps) {
                            String k = tp.topic() + "/" + tp.partition();
                            low.put(k, b.get(tp));
                            high.put(k, e.get(tp));
                        }
                    } catch (RuntimeException ex) { // a broker still recovering: retry until the deadline
                        if (System.nanoTime() > deadline) throw ex;
                        log("watermarks: " + ex);
                    }
                }
            }
            Map<String, Object> features = features();
            Map<String, Long> positions = new LinkedHashMap<>();
            try (KafkaConsumer<byte[], byte[]> c = consumer(Json.str(cfg, "group_id", "eosc-final"), isolation())) {
                assign(c, Map.of("broker_features", features));
                while (System.nanoTime() < deadline && !stopping.get()) {
                    pollOnce(c, 500);
                    try {
                        for (TopicPartition tp : tps) positions.put(tp.topic() + "/" + tp.partition(), c.position(tp, Duration.ofSeconds(5)));
                    } catch (RuntimeException e) { // a broker still recovering: poll on until the deadline
                        log("position: " + e);
                    }
                    if (allDone(low, high, positions)) break;
                }
            }
            control(Json.map("drained", true, "complete", allDone(low, high, positions), "high", high,
                    "positions", positions, "broker_features", features));
        }

        static boolean allDone(Map<String, Long> low, Map<String, Long> high, Map<String, Long> pos) {
            for (String k : high.keySet()) {
                boolean empty = high.get(k) <= low.get(k); // an empty log has no position to reach
                if (!empty && pos.getOrDefault(k, -1L) < high.get(k)) return false;
            }
            return true;
        }
    }

    /** pipeline-drain: the group's committed offsets (a committed-offsets op), then the drain. */
    static final class PipelineDrain extends Drain {
        PipelineDrain(JsonNode cfg) {
            super(cfg);
        }

        void committedOffsets() {
            List<String> keys = Json.strings(cfg, "input_keys");
            String group = cfg.get("pipeline_group").asText();
            Map<String, Object> m = Json.map("group_id", group, "final", true);
            emit("invoke", "committed-offsets", keys, m);
            LinkedHashSet<TopicPartition> tps = new LinkedHashSet<>();
            for (String k : keys) tps.add(tp(k));
            long deadline = System.nanoTime() + 60_000_000_000L;
            Map<TopicPartition, OffsetAndMetadata> got;
            // read_committed: the consumer asks for stable offsets (KIP-447 require_stable)
            try (KafkaConsumer<byte[], byte[]> c = consumer(group, "read_committed")) {
                while (true) {
                    try {
                        got = c.committed(tps, Duration.ofSeconds(10));
                        break;
                    } catch (RuntimeException e) {
                        if (System.nanoTime() > deadline) {
                            emit("info", "committed-offsets", null, null, Errors.facts(e, null).pair(), m);
                            return;
                        }
                        log("committed offsets: " + e + "; retrying");
                        sleep(500);
                    }
                }
            }
            Map<String, Object> value = new LinkedHashMap<>();
            for (TopicPartition tp : tps) {
                OffsetAndMetadata om = got.get(tp);
                value.put(tp.topic() + "/" + tp.partition(), om == null ? null : om.offset());
            }
            emit("ok", "committed-offsets", value, m);
        }

        @Override
        void run() throws Exception {
            committedOffsets();
            super.run();
        }
    }
}
