// A Kafka Streams word count as a user writes one: the words of each input record's value (split
// on whitespace) counted per word in a KTable, each count update written to the output topic
// (key: the word, value: its count as decimal text). It knows nothing of the harness.
// Arguments, as CopyStreams': --bootstrap HOST:PORT --input TOPIC --output TOPIC
//   --application-id ID --state-dir DIR [--guarantee exactly_once_v2|at_least_once]
//   [--instance-id ID] [--client-properties FILE]
// With exactly_once_v2 (KIP-447) an input record's count update, its changelog write and its
// input offset commit in one transaction, so a word's last count in the output is how many
// committed inputs hold it. With at_least_once (the broken variant) an instance killed between
// writing its updates and committing its offsets counts those inputs again, and it reads
// read_uncommitted, so aborted input is counted too. Exit codes as CopyStreams'.
import java.io.FileReader;
import java.time.Duration;
import java.util.Arrays;
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
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

public class WordCount {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i], argv[i + 1]);
        for (String k : new String[]{"--bootstrap", "--input", "--output", "--application-id", "--state-dir"}) {
            if (!a.containsKey(k)) {
                System.err.println("WordCount: missing " + k);
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
        if (a.containsKey("--instance-id")) {  // static membership (KIP-345), as CopyStreams
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), a.get("--instance-id"));
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10000);
        }

        StreamsBuilder b = new StreamsBuilder();
        b.stream(a.get("--input"), Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line == null ? new String[0] : line.trim().split("\\s+")))
            .filter((k, word) -> !word.isEmpty())
            .groupBy((k, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
            .count()
            .toStream()
            .mapValues(n -> Long.toString(n))
            .to(a.get("--output"), Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        AtomicInteger code = new AtomicInteger(0);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR) {
                code.set(1);
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("WordCount: stream thread failed: " + e);
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
