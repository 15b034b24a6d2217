package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The txn-producer role on kafka-clients: harness/workers/txn_producer.py plus its retirement
 * (harness/workers/retire.py), op for op. Config keys are the Python worker's; "producer" holds
 * extra Java producer settings. The librdkafka settings map to Java ones as follows:
 * message.timeout.ms -> delivery.timeout.ms (20 s), socket.timeout.ms -> request.timeout.ms
 * (10 s), and every blocking call (init, commit, abort, send offsets) waits max.block.ms =
 * timeout_s before a TimeoutException, which the table retries like librdkafka's _TIMED_OUT.
 *
 * Unlike librdkafka, KafkaProducer.abortTransaction() does not purge records in flight: it
 * waits until every sent batch has an outcome (delivered or expired after delivery.timeout.ms)
 * before EndTxn(abort). So ``flush_timeout_s`` below delivery.timeout.ms with
 * ``inflight_abort: reuse`` (the F1 path of scenarios/coordinator-inflight-abort.yaml) makes
 * the abort wait instead of racing the records.
 */
class TxnProducer extends Worker {
    static final class TxnOutcome extends Exception {
        final String type;
        final List<String> error;
        final boolean replace;

        TxnOutcome(String type, List<String> error, boolean replace) {
            super(type, null, false, false);
            this.type = type;
            this.error = error;
            this.replace = replace;
        }
    }

    final Errors errors;
    final Random rng;
    long nextValue;
    final String tid;
    final double timeout;
    final double flushTimeout;
    KafkaProducer<byte[], byte[]> producer;
    /** when commitTransaction was first called for the current txn op (retire.py commit_ns) */
    Long commitNs;
    /** the transaction protocol version is recorded once per instance, on its first commit */
    boolean versionRecorded;

    TxnProducer(JsonNode cfg) {
        super(cfg);
        errors = new Errors(cfg.get("error_table"));
        rng = new Random(Json.lng(cfg, "seed", 0));
        nextValue = Json.lng(cfg, "value_base", 0);
        tid = cfg.get("transactional_id").asText();
        timeout = Json.dbl(cfg, "timeout_s", 10);
        double deliveryTimeout = Double.parseDouble(conf().getProperty("delivery.timeout.ms")) / 1000;
        flushTimeout = Json.dbl(cfg, "flush_timeout_s", deliveryTimeout + 2);
    }

    @Override
    boolean retirable() {
        return true;
    }

    Properties conf() {
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.get("bootstrap").asText());
        p.put("transactional.id", tid);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("transaction.timeout.ms", "30000");
        p.put("delivery.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        // with protocol v2 a produce that races the previous transaction's markers gets
        // CONCURRENT_TRANSACTIONS and is retried after retry.backoff.ms (100 ms by default,
        // growing): 20 ms, as librdkafka and the v1 Java path use for AddPartitionsToTxn
        p.put("retry.backoff.ms", "20");
        p.put("max.block.ms", String.valueOf((long) (Json.dbl(cfg, "timeout_s", 10) * 1000)));
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        extra(p, "producer");
        return p;
    }

    void extra(Properties p, String section) {
        Json.putAll(p, cfg.get(section));
        Json.putAll(p, cfg.get("security"));  // an external cluster's (harness.cluster.client_access)
    }

    Map<String, Object> meta() {
        return Json.map("transactional_id", tid);
    }

    // -- instances -------------------------------------------------------------------------

    /** Create a producer instance and register it (init op). True when it completed ok. */
    boolean init() {
        producer = new KafkaProducer<>(conf());
        versionRecorded = false;
        Map<String, Object> meta = meta();
        emit("invoke", "init", null, meta);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (true) {
            try {
                producer.initTransactions();
                Map<String, Object> m = meta();
                m.put("client", "java " + clientVersion());
                initOk(m);
                emit("ok", "init", null, m);
                break;
            } catch (RuntimeException e) {
                Errors.Facts f = Errors.facts(e, producer);
                Errors.Decision d = errors.classify(f, "init");
                if (d.action == Errors.Action.RETRY && System.nanoTime() < deadline && !stopping.get()) continue;
                emit(d.action == Errors.Action.FAIL ? "fail" : "info", "init", null, null, f.pair(), meta);
                replace();
                return false;
            }
        }
        if (retired.get()) {
            // paused mid-init, completed after its replacement's init: do not fight it
            log("retired, yet registered a new instance (paused mid-init): exiting");
            stopping.set(true);
            return false;
        }
        return true;
    }

    /** An ok init's meta gets the producer id and epoch the coordinator handed out: the
     *  epoch-exhausted checker and the hunt's max_epoch signal read them. */
    void initOk(Map<String, Object> meta) {
        long[] pe = producerIdAndEpoch();
        if (pe != null) {
            meta.put("producer_id", pe[0]);
            meta.put("producer_epoch", pe[1]);
        }
    }

    private static java.lang.reflect.Method pidEpoch;
    private static volatile boolean pidEpochUnreadable;

    /** {producer_id, epoch} of the producer's TransactionManager (private: read by reflection,
     *  as Errors reads its state), or null when unreadable. With transaction version 2 every
     *  transaction end bumps the epoch (KIP-890 part 2). */
    long[] producerIdAndEpoch() {
        Object tm = producer == null || pidEpochUnreadable ? null : Errors.transactionManager(producer);
        if (tm == null) return null;
        try {
            synchronized (TxnProducer.class) {
                if (pidEpoch == null) {
                    java.lang.reflect.Method m = tm.getClass().getDeclaredMethod("producerIdAndEpoch");
                    m.setAccessible(true);
                    pidEpoch = m;
                }
            }
            Object pe = pidEpoch.invoke(tm);
            long id = pe.getClass().getField("producerId").getLong(pe);
            short epoch = pe.getClass().getField("epoch").getShort(pe);
            return new long[] {id, epoch};
        } catch (NoSuchMethodException | NoSuchFieldException e) {
            pidEpochUnreadable = true; // once: this client release has another shape
            log("producer id and epoch not readable: " + e);
            return null;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null; // e.g. the instance closing under it: the next op reads again
        }
    }

    /** Abandon the current instance; the next one is a new logical process. A retired worker
     *  exits instead: a new instance would fence its replacement. */
    void replace() {
        KafkaProducer<byte[], byte[]> p = producer;
        producer = null;
        if (p != null) {
            try {
                p.close(Duration.ZERO); // no EndTxn: the next init (or the timeout) aborts
            } catch (RuntimeException e) {
                log("producer close: " + e);
            }
        }
        newInstance();
        if (retired.get()) {
            log("retired: the producer instance is gone (fenced); exiting instead of registering a new one");
            stopping.set(true);
        }
    }

    // -- one transaction -------------------------------------------------------------------

    static final class Send {
        final String key;
        final long value;

        Send(String key, long value) {
            this.key = key;
            this.value = value;
        }
    }

    List<Send> chooseSends() {
        List<String> keys = new ArrayList<>(Json.strings(cfg, "keys"));
        int max = (int) Math.min(Json.lng(cfg, "max_sends", 4), keys.size());
        int n = 1 + rng.nextInt(max);
        Collections.shuffle(keys, rng);
        List<Send> sends = new ArrayList<>();
        for (String k : keys.subList(0, n)) sends.add(new Send(k, nextValue++));
        return sends;
    }

    static List<Object> completed(List<Object> head, List<Send> sends, Map<Long, Long> offsets) {
        List<Object> out = new ArrayList<>(head);
        for (Send s : sends) out.add(Json.list("send", s.key, Json.list(offsets.get(s.value), s.value)));
        return out;
    }

    /** Emit the completion of a txn op, with commit_ns when commit was requested. */
    void complete(String type, List<Object> value, List<String> error, Map<String, Object> meta) {
        Map<String, Object> m = new HashMap<>(meta);
        if (commitNs != null) m.put("commit_ns", commitNs);
        commitNs = null;
        if (type.equals("ok") && !versionRecorded && producer != null) {
            m.put("transaction_version", Errors.transactionVersion(producer));
            versionRecorded = true;
        }
        if (type.equals("ok") && !m.containsKey("producer_epoch")) {
            long[] pe = producerIdAndEpoch(); // after the commit: its bump under version 2
            if (pe != null) m.put("producer_epoch", pe[1]);
        }
        emit(type, "txn", value, null, error, new java.util.TreeMap<>(m));
    }

    void txn() {
        List<Send> sends = chooseSends();
        boolean abortOnPurpose = rng.nextDouble() < Json.dbl(cfg, "abort_probability", 0.1);
        Map<Long, Long> offsets = new HashMap<>();
        List<Object> invoke = new ArrayList<>();
        for (Send s : sends) invoke.add(Json.list("send", s.key, s.value));
        emit("invoke", "txn", invoke, meta());
        try {
            runTxn(sends, offsets, abortOnPurpose);
            complete("ok", completed(List.of(), sends, offsets), null, meta());
        } catch (TxnOutcome out) {
            Map<String, Object> m = meta();
            if (out.error == null && out.type.equals("fail")) m.put("abort", "chosen");
            complete(out.type, completed(List.of(), sends, offsets), out.error, m);
            if (out.replace) replace();
        }
    }

    void runTxn(List<Send> sends, Map<Long, Long> offsets, boolean abortOnPurpose) throws TxnOutcome {
        try {
            producer.beginTransaction();
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (Send s : sends) {
                int slash = s.key.lastIndexOf('/');
                futures.add(producer.send(new ProducerRecord<>(s.key.substring(0, slash),
                        Integer.parseInt(s.key.substring(slash + 1)), null,
                        String.valueOf(s.value).getBytes(StandardCharsets.UTF_8))));
            }
            // the flush: wait for every outcome, at most flushTimeout
            long deadline = System.nanoTime() + (long) (flushTimeout * 1e9);
            Throwable deliveryError = null;
            int remaining = 0;
            for (int i = 0; i < futures.size(); i++) {
                try {
                    long left = Math.max(0, deadline - System.nanoTime());
                    RecordMetadata md = futures.get(i).get(left, TimeUnit.NANOSECONDS);
                    offsets.put(sends.get(i).value, md.offset());
                } catch (java.util.concurrent.TimeoutException e) {
                    remaining++;
                } catch (ExecutionException e) {
                    if (deliveryError == null) deliveryError = e.getCause();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    remaining++;
                }
            }
            if (deliveryError != null) throw new SendFailed(deliveryError);
            if (remaining > 0) {
                TxnOutcome o = abort(List.of("_FLUSH_TIMEOUT", remaining + " records undelivered"), false);
                boolean replace = o.replace || Json.str(cfg, "inflight_abort", "replace").equals("replace");
                throw new TxnOutcome(o.type, o.error, replace);
            }
        } catch (SendFailed | RuntimeException e) {
            Throwable cause = e instanceof SendFailed ? e.getCause() : e;
            Errors.Facts f = Errors.facts(cause, producer);
            Errors.Decision d = errors.classify(f, "send");
            if (d.action == Errors.Action.FAIL) throw new TxnOutcome("fail", f.pair(), d.replace);
            throw abort(f.pair(), false);
        }
        if (abortOnPurpose) throw abort(null, false);
        commit();
    }

    /** A delivery error, carried out of the flush to the send phase's classification. */
    static final class SendFailed extends Exception {
        SendFailed(Throwable cause) {
            super(cause);
        }
    }

    void commit() throws TxnOutcome {
        if (commitNs == null) commitNs = now();
        long deadline = System.nanoTime() + (long) (4 * timeout * 1e9);
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (RuntimeException e) {
                Errors.Facts f = Errors.facts(e, producer);
                Errors.Decision d = errors.classify(f, "commit");
                if (d.action == Errors.Action.RETRY && System.nanoTime() < deadline) continue;
                if (d.action == Errors.Action.ABORT) throw abort(f.pair(), true);
                throw new TxnOutcome("info", f.pair(), true);
            }
        }
    }

    /** abortTransaction with retries; the outcome (type, error, replace) of the op. */
    TxnOutcome abort(List<String> error, boolean commitRequested) {
        long deadline = System.nanoTime() + (long) (4 * timeout * 1e9);
        while (true) {
            try {
                producer.abortTransaction();
                return new TxnOutcome("fail", error, false);
            } catch (RuntimeException e) {
                Errors.Facts f = Errors.facts(e, producer);
                Errors.Decision d = errors.classify(f, "abort", commitRequested);
                if (d.action == Errors.Action.RETRY && System.nanoTime() < deadline) continue;
                Errors.Action action = d.action;
                if (action == Errors.Action.RETRY) action = commitRequested ? Errors.Action.INFO : Errors.Action.FAIL;
                return new TxnOutcome(action.name().toLowerCase(), error != null ? error : f.pair(), true);
            }
        }
    }

    @Override
    void run() {
        while (!stopping.get()) {
            if (producer == null && !init()) {
                sleep(500); // an init that failed: the cluster needs a moment, not a spin
                continue;
            }
            txn();
        }
        closeProducer();
        control(Json.map("done", true, "next_value", nextValue));
    }

    void closeProducer() {
        if (producer != null) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                log("producer close: " + e);
            }
            producer = null;
        }
    }
}
