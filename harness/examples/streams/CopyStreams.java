// A Kafka Streams application as a user writes one: copy every record of one topic to another.
// It knows nothing of the harness. Arguments:
//   --bootstrap HOST:PORT --input TOPIC --output TOPIC --application-id ID --state-dir DIR
//   [--guarantee exactly_once_v2|at_least_once] [--instance-id ID] [--client-properties FILE]
//   [--group-protocol classic|streams]
// processing.guarantee=exactly_once_v2 (KIP-447) makes each task's consume-produce-commit one
// transaction; at_least_once commits offsets after the outputs, so an instance killed in between
// writes its last records again, and it reads read_uncommitted, so aborted input reaches the
// output (the negative control). Exit codes: 143 after SIGTERM (the JVM's code for a shutdown on
// a signal; the shutdown hook closes the client cleanly first), 1 when the Streams client went
// to ERROR, 2 bad arguments. --group-protocol streams joins a streams group (KIP-1071's rebalance
// protocol, production-ready from Kafka 4.2; its session timeout is the brokers'
// group.streams.session.timeout.ms, so none is set here). Static membership with it needs
// client and brokers 4.4+: older brokers answer INVALID_REQUEST, which is fatal to the client.
import java.io.FileReader;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

public class CopyStreams {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i], argv[i + 1]);
        for (String k : new String[]{"--bootstrap", "--input", "--output", "--application-id", "--state-dir"}) {
            if (!a.containsKey(k)) {
                System.err.println("CopyStreams: missing " + k);
                System.exit(2);
            }
        }
        Properties p = new Properties();
        if (a.containsKey("--client-properties")) {
            try (FileReader r = new FileReader(a.get("--client-properties"))) { p.load(r); }
        }
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("--bootstrap"));
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("--application-id"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("--state-dir"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, a.getOrDefault("--guarantee", "exactly_once_v2"));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArraySerde.class);
        // static membership (KIP-345): a restarted instance takes its tasks back at once instead of
        // the group waiting out the killed member's session
        String protocol = a.getOrDefault("--group-protocol", "classic");
        if (!protocol.equals("classic") && !protocol.equals("streams")) {
            System.err.println("CopyStreams: --group-protocol is classic or streams, not " + protocol);
            System.exit(2);
        }
        // StreamsConfig.GROUP_PROTOCOL_CONFIG (4.1+); the literal keeps the source compiling on older releases
        if (protocol.equals("streams")) p.put("group.protocol", "streams");
        if (a.containsKey("--instance-id")) {
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), a.get("--instance-id"));
            if (protocol.equals("classic")) p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        }

        StreamsBuilder b = new StreamsBuilder();
        b.<byte[], byte[]>stream(a.get("--input")).to(a.get("--output"));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger code = new AtomicInteger(0);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR) {
                code.set(1);
                done.countDown();
            }
        });
        // a fenced or failed thread is replaced; the instance keeps running (Streams' own default is
        // to shut the client down)
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("CopyStreams: stream thread failed: " + e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(15));
            done.countDown();
        }));
        streams.start();
        done.await();
        streams.close(Duration.ofSeconds(15));
        System.exit(code.get());
    }
}
