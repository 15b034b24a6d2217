package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * share-consumer (harness/workers/share_consumer.py, the same ops): a member of a share group
 * (KIP-932) on KafkaShareConsumer with share.acknowledgement.mode=explicit. Sets the group's
 * configs first (IncrementalAlterConfigs on the GROUP resource: a share-config op), then per
 * non-empty poll(): an acquire op ({key: [[offset, value, deliveryCount]]}), per record
 * release / reject / process+accept as drawn, a process op for the processed records and one
 * ack op per partition, each committed by its own commitSync() with its invoke written first
 * (ok, fail on INVALID_RECORD_STATE, info otherwise).
 * ack_order before-processing accepts and commits before it processes (the zoo mutant).
 */
final class ShareConsumers extends Worker {
    private final Random rng;
    private int acquired = 0;
    private long lastNs = 0;

    ShareConsumers(JsonNode cfg) {
        super(cfg);
        rng = new Random(Json.lng(cfg, "seed", 0));
    }

    Map<String, Object> meta() {
        Map<String, Object> m = Json.map("group_id", cfg.get("group_id").asText());
        JsonNode gc = cfg.get("group_configs");
        if (gc != null && gc.has("share.isolation.level")) m.put("isolation_level", gc.get("share.isolation.level").asText());
        return m;
    }

    static String errorName(Throwable e) {
        org.apache.kafka.common.protocol.Errors err = org.apache.kafka.common.protocol.Errors.forException(e);
        return err == org.apache.kafka.common.protocol.Errors.UNKNOWN_SERVER_ERROR
                ? e.getClass().getSimpleName() : err.name();
    }

    static List<String> error(Throwable e) {
        String msg = String.valueOf(e.getMessage());
        return List.of(errorName(e), msg.length() > 300 ? msg.substring(0, 300) : msg);
    }

    Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.get("bootstrap").asText());
        Json.putAll(p, cfg.get("security"));
        return p;
    }

    boolean configureGroup() {
        JsonNode gc = cfg.get("group_configs");
        if (gc == null || gc.size() == 0) return true;
        Map<String, Object> value = new LinkedHashMap<>();
        List<AlterConfigOp> ops = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = gc.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            value.put(e.getKey(), e.getValue().asText());
            ops.add(new AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue().asText()), AlterConfigOp.OpType.SET));
        }
        emit("invoke", "share-config", value, meta());
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, cfg.get("group_id").asText());
        long deadline = System.nanoTime() + (long) (Json.dbl(cfg, "config_timeout_s", 60) * 1e9);
        Throwable last = null;
        Properties p = common();
        p.put("request.timeout.ms", "10000");
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < deadline && !stopping.get()) {
                try {
                    admin.incrementalAlterConfigs(Map.of(res, ops)).all().get(15, TimeUnit.SECONDS);
                    emit("ok", "share-config", value, meta());
                    return true;
                } catch (Exception e) {
                    last = e.getCause() != null ? e.getCause() : e;
                    log("share-config: " + last);
                    sleep(1000);
                }
            }
        }
        emit("fail", "share-config", value, null,
             last == null ? List.of("STOPPED", "stopped") : error(last), meta());
        return false;
    }

    @Override
    void run() {
        configureGroup();
        Properties p = common();
        p.put("group.id", cfg.get("group_id").asText());
        p.put("share.acknowledgement.mode", "explicit");
        p.put("request.timeout.ms", "10000");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        Json.putAll(p, cfg.get("consumer"));
        double releaseP = Json.dbl(cfg, "release_probability", 0), rejectP = Json.dbl(cfg, "reject_probability", 0);
        boolean before = Json.str(cfg, "ack_order", "after-processing").equals("before-processing");
        long processMs = (long) Json.dbl(cfg, "process_ms", 0);
        List<String> topics = Json.strings(cfg, "topics");
        long told = 0;
        KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p);
        try {
            c.subscribe(topics);
            while (!stopping.get()) {
                long t0 = now();
                ConsumerRecords<byte[], byte[]> recs;
                try {
                    recs = c.poll(Duration.ofMillis(500));
                } catch (KafkaException e) {
                    log("poll: " + e);
                    sleep(200);
                    continue;
                }
                if (recs.isEmpty()) continue;
                Map<String, List<Object>> byKey = new LinkedHashMap<>();
                List<Object[]> plan = new ArrayList<>();  // record, key, value, kind
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    String key = r.topic() + "/" + r.partition();
                    long value;
                    try {
                        value = Long.parseLong(new String(r.value(), StandardCharsets.UTF_8).trim());
                    } catch (RuntimeException e) {
                        log("foreign record at " + key + "@" + r.offset());
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        continue;
                    }
                    Optional<Short> dc = r.deliveryCount();
                    byKey.computeIfAbsent(key, k -> new ArrayList<>()).add(Json.list(r.offset(), value, dc.isPresent() ? (Object) dc.get() : null));
                    double d = rng.nextDouble();
                    String kind = d < releaseP ? "release" : d < releaseP + rejectP ? "reject" : "accept";
                    plan.add(new Object[] {r, key, value, kind});
                }
                if (plan.isEmpty()) continue;
                emit("invoke", "acquire", null, t0, null, meta());
                emit("ok", "acquire", byKey, meta());
                acquired += plan.size();
                lastNs = now();
                if (before) {
                    acknowledge(c, plan);
                    process(plan, processMs);
                } else {
                    process(plan, processMs);
                    acknowledge(c, plan);
                }
                if (System.nanoTime() - told >= 1_000_000_000L) {
                    control(Json.map("share_acquired", acquired, "last_ns", lastNs));
                    told = System.nanoTime();
                }
            }
        } finally {
            control(Json.map("share_acquired", acquired, "last_ns", lastNs));
            try {
                c.close(Duration.ofSeconds(10));
            } catch (RuntimeException e) {
                log("close: " + e);
            }
            logCpu();
        }
        control(Json.map("done", true));
    }

    /**
     * The JVM's CPU time and uptime in the log: kafka-clients before 4.4.0 spin both consumer
     * threads while the share coordinator is unknown (KAFKA-20253), which starves the brokers
     * on a small machine; this line shows whether a run's consumers did.
     */
    static void logCpu() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            double cpu = ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() / 1e9;
            double up = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() / 1e3;
            System.err.printf("cpu: %.1f s of CPU in %.1f s (kafka-clients %s)%n", cpu, up, clientVersion());
        }
    }

    void process(List<Object[]> plan, long processMs) {
        Map<String, List<Object>> out = new LinkedHashMap<>();
        for (Object[] x : plan) {
            if (!x[3].equals("accept")) continue;
            @SuppressWarnings("unchecked") ConsumerRecord<byte[], byte[]> r = (ConsumerRecord<byte[], byte[]>) x[0];
            out.computeIfAbsent((String) x[1], k -> new ArrayList<>()).add(Json.list(r.offset(), x[2]));
        }
        if (out.isEmpty()) return;
        long t0 = now();
        if (processMs > 0) sleep(processMs);
        emit("invoke", "process", out, t0, null, meta());
        emit("ok", "process", out, meta());
    }

    /** One commitSync() and one ack op per partition, the invoke written before the commit
     * is sent: a member killed inside commitSync() leaves an open invoke (info), not a history
     * without the acknowledgement (a reject the broker archived must not read as share-lost). */
    @SuppressWarnings("unchecked")
    void acknowledge(KafkaShareConsumer<byte[], byte[]> c, List<Object[]> plan) {
        Map<String, List<Object[]>> byKey = new LinkedHashMap<>();
        for (Object[] x : plan) byKey.computeIfAbsent((String) x[1], k -> new ArrayList<>()).add(x);
        for (Map.Entry<String, List<Object[]>> e : byKey.entrySet()) {
            List<Object> acks = new ArrayList<>();
            for (Object[] x : e.getValue()) {
                ConsumerRecord<byte[], byte[]> r = (ConsumerRecord<byte[], byte[]>) x[0];
                acks.add(Json.list(x[3], x[1], r.offset(), x[2]));
            }
            emit("invoke", "ack", acks, now(), null, meta());
            for (Object[] x : e.getValue()) {
                ConsumerRecord<byte[], byte[]> r = (ConsumerRecord<byte[], byte[]>) x[0];
                String kind = (String) x[3];
                c.acknowledge(r, kind.equals("accept") ? AcknowledgeType.ACCEPT
                        : kind.equals("release") ? AcknowledgeType.RELEASE : AcknowledgeType.REJECT);
            }
            Map<String, Optional<KafkaException>> res = new LinkedHashMap<>();
            Throwable err = null;
            try {
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> r : c.commitSync(Duration.ofSeconds(15)).entrySet()) {
                    res.put(r.getKey().topic() + "/" + r.getKey().partition(), r.getValue());
                }
            } catch (KafkaException x) {
                err = x;
            }
            long t1 = now();
            if (err != null) {
                emit("info", "ack", acks, t1, error(err), meta());
            } else if (!res.containsKey(e.getKey())) {
                emit("info", "ack", acks, t1, List.of("NO_RESULT", "commitSync named no result for the partition"), meta());
            } else if (res.get(e.getKey()).isEmpty()) {
                emit("ok", "ack", acks, t1, null, meta());
            } else {
                List<String> er = error(res.get(e.getKey()).get());
                emit(er.get(0).equals("INVALID_RECORD_STATE") ? "fail" : "info", "ack", acks, t1, er, meta());
            }
        }
    }
}
