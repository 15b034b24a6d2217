package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The idempotent-producer role on kafka-clients (harness/workers/idempotent_producer.py): one
 * send op per batch of 1..max_sends records to keys drawn with replacement; ok when every
 * record was acknowledged, info otherwise (the "produce" rows of the error table); a fatal
 * error or records without an outcome after flush_timeout_s replace the producer instance.
 * librdkafka's message.timeout.ms (60 s) is delivery.timeout.ms here.
 */
final class IdempotentProducer extends Worker {
    final Errors errors;
    final Random rng;
    long nextValue;
    KafkaProducer<byte[], byte[]> producer;

    IdempotentProducer(JsonNode cfg) {
        super(cfg);
        errors = new Errors(cfg.get("error_table"));
        rng = new Random(Json.lng(cfg, "seed", 0));
        nextValue = Json.lng(cfg, "value_base", 0);
    }

    Properties conf() {
        Properties p = new Properties();
        p.put("bootstrap.servers", cfg.get("bootstrap").asText());
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "0"); // a partition's records go out in several requests
        p.put("max.in.flight.requests.per.connection", "5");
        p.put("delivery.timeout.ms", "60000");
        p.put("request.timeout.ms", "10000");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        Json.putAll(p, cfg.get("producer"));
        Json.putAll(p, cfg.get("security"));  // an external cluster's (harness.cluster.client_access)
        return p;
    }

    void send() {
        if (producer == null) producer = new KafkaProducer<>(conf());
        List<String> keys = Json.strings(cfg, "keys");
        int n = 1 + rng.nextInt((int) Json.lng(cfg, "max_sends", 4));
        List<TxnProducer.Send> sends = new ArrayList<>();
        for (int i = 0; i < n; i++) sends.add(new TxnProducer.Send(keys.get(rng.nextInt(keys.size())), nextValue++));
        List<Object> invoke = new ArrayList<>();
        for (TxnProducer.Send s : sends) invoke.add(Json.list("send", s.key, s.value));
        emit("invoke", "send", invoke, null);
        Map<Long, Long> offsets = new HashMap<>();
        Throwable first = null;
        List<String> error = null;
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try {
            for (TxnProducer.Send s : sends) {
                int slash = s.key.lastIndexOf('/');
                futures.add(producer.send(new ProducerRecord<>(s.key.substring(0, slash),
                        Integer.parseInt(s.key.substring(slash + 1)), null,
                        String.valueOf(s.value).getBytes(StandardCharsets.UTF_8))));
            }
        } catch (RuntimeException e) {
            first = e;
        }
        long deadline = System.nanoTime() + (long) (Json.dbl(cfg, "flush_timeout_s", 90) * 1e9);
        int remaining = 0;
        for (int i = 0; i < futures.size(); i++) {
            try {
                RecordMetadata md = futures.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                offsets.put(sends.get(i).value, md.offset());
            } catch (java.util.concurrent.TimeoutException e) {
                remaining++;
            } catch (ExecutionException e) {
                if (first == null) first = e.getCause();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                remaining++;
            }
        }
        if (remaining > 0) error = List.of("_FLUSH_TIMEOUT", remaining + " records without a delivery report");
        List<Object> completed = TxnProducer.completed(List.of(), sends, offsets);
        if (first == null && error == null) {
            emit("ok", "send", completed, null);
            return;
        }
        boolean replace = false;
        if (first != null) {
            Errors.Facts f = Errors.facts(first, producer);
            replace = errors.classify(f, "produce").replace;
            if (error == null) error = f.pair();
        }
        emit("info", "send", completed, null, error, null);
        if (replace || error.get(0).equals("_FLUSH_TIMEOUT")) {
            // a fatal error leaves the instance unusable; records still queued after a flush
            // timeout would be reported to no op. A new instance is a new logical process.
            log("replacing the producer instance after " + error);
            try {
                producer.close(Duration.ZERO);
            } catch (RuntimeException e) {
                log("close: " + e);
            }
            producer = null;
            newInstance();
        }
    }

    @Override
    void run() {
        while (!stopping.get()) send();
        if (producer != null) {
            try {
                producer.close(Duration.ofSeconds(10));
            } catch (RuntimeException e) {
                log("close: " + e);
            }
        }
        control(Json.map("done", true, "next_value", nextValue));
    }
}
