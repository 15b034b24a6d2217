package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

/**
 * The processor role on kafka-clients: harness/workers/processor.py op for op (KIP-98
 * consume-transform-produce, KIP-447 sendOffsetsToTransaction with the consumer's
 * ConsumerGroupMetadata); the negative controls offsets: consumer (auto-commit every 5 s) and
 * offsets: commit-before (commitSync of the batch's offsets before the transaction) as there.
 * After a clean abort the consumer seeks back to the batch's first
 * offsets and the worker records that as a ``rewind`` op (invoke and ok, value
 * {input key: offset}), so that checkers see why the next reads go back.
 */
class Processor extends TxnProducer {
    static final long OUTPUT_FACTOR = 1_000_000L;

    final String group;
    final int spawn;
    final Map<Long, Integer> attempts = new HashMap<>();
    KafkaConsumer<byte[], byte[]> consumer;
    Map<TopicPartition, OffsetAndMetadata> pending;
    /** the keys assigned now (incremental callbacks add and remove); revoked/lost since the last assign op */
    final Set<String> owned = new TreeSet<>();
    final List<String> revoked = new ArrayList<>();
    Long revokeNs;

    Processor(JsonNode cfg) {
        super(cfg);
        group = cfg.get("group_id").asText();
        spawn = (int) Json.lng(cfg, "spawn", 0);
    }

    static long outputValue(long input, int spawn, int attempt) {
        if (spawn < 0 || spawn >= 1000 || attempt < 0 || attempt >= 1000) {
            throw new IllegalArgumentException("attempt tag out of range: spawn " + spawn + ", attempt " + attempt);
        }
        return input * OUTPUT_FACTOR + spawn * 1000L + attempt;
    }

    @Override
    Map<String, Object> meta() {
        return Json.map("transactional_id", tid, "group_id", group);
    }

    Properties consumerConf() {
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.get("bootstrap").asText());
        p.put("group.id", group);
        // offsets: consumer (negative control) commits the position every 5 s, outside the txn
        p.put("enable.auto.commit", String.valueOf(Json.str(cfg, "offsets", "transaction").equals("consumer")));
        p.put("auto.commit.interval.ms", "5000");
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        p.put("fetch.max.wait.ms", "100");
        p.put("request.timeout.ms", "10000");
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        p.put("max.poll.records", String.valueOf(Json.lng(cfg, "max_batch", 50)));
        if (Json.has(cfg, "group_instance_id")) p.put("group.instance.id", cfg.get("group_instance_id").asText());
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        extra(p, "consumer");
        groupProtocol(p);
        return p;
    }

    /** group_protocol / assignor (harness.workloads.group): under consumer (KIP-848) drop the
     * settings ConsumerConfig refuses there (its CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS) and set
     * group.protocol and group.remote.assignor; under classic the assignor's class. */
    void groupProtocol(Properties p) {
        String protocol = Json.str(cfg, "group_protocol", "classic");
        String assignor = Json.str(cfg, "assignor", null);
        if (protocol.equals("consumer")) {
            for (String k : List.of("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")) p.remove(k);
            p.put("group.protocol", "consumer");
            if (assignor != null) p.put("group.remote.assignor", assignor);
        } else if (assignor != null) {
            p.put("partition.assignment.strategy", assignor.equals("cooperative-sticky")
                    ? "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
                    : "org.apache.kafka.clients.consumer.RangeAssignor");
        }
    }

    void revoked(Collection<TopicPartition> parts, String how) {
        List<String> keys = new ArrayList<>();
        for (TopicPartition tp : parts) keys.add(tp.topic() + "/" + tp.partition());
        if (!keys.isEmpty() && revokeNs == null) revokeNs = now();
        revoked.addAll(keys);
        owned.removeAll(keys);
        log(how + " " + keys);
    }

    boolean startInstance() {
        if (!init()) return false;
        consumer = new KafkaConsumer<>(consumerConf());
        owned.clear();
        revoked.clear();
        revokeNs = null;
        consumer.subscribe(List.of(cfg.get("input_topic").asText()), new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                List<String> added = new ArrayList<>();
                for (TopicPartition tp : parts) added.add(tp.topic() + "/" + tp.partition());
                Collections.sort(added);
                owned.addAll(added);
                // the whole assignment: an incremental protocol's callback names only what it adds
                List<String> keys = new ArrayList<>(owned);
                Map<String, Object> m = Json.map("group_id", group, "via", "rebalance", "transactional_id", tid,
                        "added", added);
                if (!revoked.isEmpty()) {
                    m.put("revoked", new ArrayList<>(new TreeSet<>(revoked)));
                    m.put("revoke_ns", revokeNs);
                }
                revoked.clear();
                revokeNs = null;
                emit("invoke", "assign", keys, m);
                emit("ok", "assign", keys, m);
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> parts) {
                revoked(parts, "revoked");
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> parts) {
                revoked(parts, "lost");
            }
        });
        return true;
    }

    void closeConsumer() {
        if (consumer != null) {
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log("consumer close: " + e);
            }
            consumer = null;
        }
    }

    @Override
    void replace() {
        closeConsumer();
        super.replace();
    }

    String outKey(String inKey) {
        return cfg.get("output_topic").asText() + "/" + inKey.substring(inKey.lastIndexOf('/') + 1);
    }

    ConsumerGroupMetadata groupMetadata() {
        if (Json.str(cfg, "group_metadata", "member").equals("group-only")) {
            return new ConsumerGroupMetadata(group); // generation -1, no member id
        }
        return consumer.groupMetadata();
    }

    void step() {
        long t0 = now();
        ConsumerRecords<byte[], byte[]> recs;
        try {
            recs = consumer.poll(Duration.ofMillis(500));
        } catch (RetriableException e) {
            log("poll: " + e);
            return;
        } catch (RuntimeException e) { // a fatal consumer error: this instance is done
            crash(e);
            return;
        }
        Map<String, List<Object>> byKey = new LinkedHashMap<>();
        Map<String, Long> first = new LinkedHashMap<>();
        Map<String, Long> last = new LinkedHashMap<>();
        List<Send> sends = new ArrayList<>();
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
            first.putIfAbsent(key, r.offset());
            last.put(key, r.offset());
            int n = attempts.getOrDefault(value, 0);
            attempts.put(value, n + 1);
            sends.add(new Send(outKey(key), outputValue(value, spawn, n)));
        }
        if (sends.isEmpty()) return;
        Map<TopicPartition, OffsetAndMetadata> nxt = new LinkedHashMap<>();
        for (Map.Entry<String, Long> e : last.entrySet()) nxt.put(tp(e.getKey()), new OffsetAndMetadata(e.getValue() + 1));
        List<Object> invoke = new ArrayList<>();
        invoke.add(Json.list("poll"));
        for (Send s : sends) invoke.add(Json.list("send", s.key, s.value));
        emit("invoke", "txn", invoke, t0, null, meta());
        Map<Long, Long> offsets = new HashMap<>();
        boolean abortOnPurpose = rng.nextDouble() < Json.dbl(cfg, "abort_probability", 0.0);
        String mode = Json.str(cfg, "offsets", "transaction");
        pending = mode.equals("transaction") ? nxt : null;
        if (mode.equals("commit-before")) { // negative control: the offsets go first, outside the transaction
            try {
                consumer.commitSync(nxt);
            } catch (RuntimeException e) { // as a careless application would: carry on
                log("offset commit before the transaction failed: " + e);
            }
        }
        List<Object> head = List.of(Json.list("poll", byKey));
        try {
            runTxn(sends, offsets, abortOnPurpose); // its commit sends the offsets first
        } catch (TxnOutcome out) {
            Map<String, Object> m = meta();
            if (out.error == null && out.type.equals("fail")) m.put("abort", "chosen");
            complete(out.type, completed(head, sends, offsets), out.error, m);
            if (out.replace) replace();
            else if (out.type.equals("fail")) rewind(first);
            return;
        }
        complete("ok", completed(head, sends, offsets), null, meta());
    }

    static TopicPartition tp(String key) {
        int slash = key.lastIndexOf('/');
        return new TopicPartition(key.substring(0, slash), Integer.parseInt(key.substring(slash + 1)));
    }

    @Override
    void commit() throws TxnOutcome {
        if (pending != null) sendOffsets(pending);
        super.commit();
    }

    void sendOffsets(Map<TopicPartition, OffsetAndMetadata> offsets) throws TxnOutcome {
        long deadline = System.nanoTime() + (long) (4 * timeout * 1e9);
        while (true) {
            try {
                producer.sendOffsetsToTransaction(offsets, groupMetadata());
                return;
            } catch (RuntimeException e) {
                Errors.Facts f = Errors.facts(e, producer);
                Errors.Decision d = errors.classify(f, "offsets");
                if (d.action == Errors.Action.RETRY && System.nanoTime() < deadline) continue;
                if (d.action == Errors.Action.FAIL) throw new TxnOutcome("fail", f.pair(), d.replace);
                throw abort(f.pair(), false);
            }
        }
    }

    /** A fatal consumer error between transactions: a crash op (invoke, info), then replace. */
    void crash(Throwable err) {
        Errors.Facts f = Errors.facts(err, null);
        Map<String, Object> m = Json.map("transactional_id", tid, "group_id", group, "reason", "fatal consumer error");
        emit("invoke", "crash", null, m);
        emit("info", "crash", null, null, f.pair(), m);
        log("fatal consumer error " + err + "; replacing the instance");
        replace();
    }

    /** After an abort: seek back to the batch's first offsets (still assigned ones), so that
     *  the batch is processed again, and record that as a rewind op. */
    void rewind(Map<String, Long> first) {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<String, Object> done = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, Long> e : first.entrySet()) {
                TopicPartition tp = tp(e.getKey());
                if (!assigned.contains(tp)) continue; // revoked: its new owner starts from the committed offset
                consumer.seek(tp, e.getValue());
                done.put(e.getKey(), e.getValue());
            }
        } catch (RuntimeException e) {
            log("seek: " + e + "; replacing the instance");
            replace();
            return;
        }
        if (!done.isEmpty()) {
            emit("invoke", "rewind", done, meta());
            emit("ok", "rewind", done, meta());
        }
    }

    @Override
    void run() {
        while (!stopping.get()) {
            if (producer == null && !startInstance()) {
                sleep(500);
                continue;
            }
            step();
        }
        closeConsumer();
        closeProducer();
        control(Json.map("done", true));
    }
}
