package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What every worker shares (harness/workers/base.py): the event emitter, the stop signal and,
 * for transactional roles, retirement (harness/workers/retire.py).
 *
 * Times are System.nanoTime() minus the controller's start_ns: on Linux both are
 * CLOCK_MONOTONIC, the clock of Python's time.monotonic_ns(), so Java and Python events share
 * one time line.
 */
abstract class Worker {
    final JsonNode cfg;
    final long startNs;
    final AtomicBoolean stopping = new AtomicBoolean(false);
    final AtomicBoolean retired = new AtomicBoolean(false);
    /** the current client instance; a new one after each replacement (a new history process) */
    volatile int proc = 0;
    private final BufferedWriter out = new BufferedWriter(
            new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8), 1 << 16);

    Worker(JsonNode cfg) {
        this.cfg = cfg;
        this.startNs = cfg.get("start_ns").asLong();
    }

    /** Roles that a zombie fault may retire acknowledge a "retire" line; others ignore it. */
    boolean retirable() {
        return false;
    }

    void startStdinWatcher() {
        Thread t = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    String cmd = line.strip();
                    if (cmd.equals("stop")) {
                        stopping.set(true);
                    } else if (cmd.equals("retire") && retirable()) {
                        retired.set(true);
                        control(Json.map("retired", true));
                    }
                }
            } catch (IOException e) {
                log("stdin: " + e);
            }
            stopping.set(true); // stdin closed: the controller is gone
        }, "stdin");
        t.setDaemon(true);
        t.start();
    }

    long now() {
        return System.nanoTime() - startNs;
    }

    private void write(Object obj) {
        try {
            String line = Json.MAPPER.writeValueAsString(obj);
            synchronized (out) {
                out.write(line);
                out.write('\n');
                out.flush();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void emit(String type, String f, Object value, Long timeNs, List<String> error, Map<String, Object> meta) {
        Map<String, Object> ev = new LinkedHashMap<>();
        ev.put("proc", proc);
        ev.put("time", timeNs == null ? now() : timeNs);
        ev.put("type", type);
        ev.put("f", f);
        ev.put("value", value);
        if (error != null) ev.put("error", error);
        if (meta != null && !meta.isEmpty()) ev.put("meta", meta);
        write(ev);
    }

    void emit(String type, String f, Object value, Map<String, Object> meta) {
        emit(type, f, value, null, null, meta);
    }

    void control(Map<String, Object> msg) {
        write(Json.map("ctl", msg));
    }

    void log(String msg) {
        System.err.printf("[%9.3f] %s%n", now() / 1e9, msg);
        System.err.flush();
    }

    /** The next client instance is a new logical process in the history. */
    void newInstance() {
        proc += 1;
    }

    /**
     * kafka-clients' version, from the jar's kafka/kafka-version.properties (what AppInfoParser
     * reads: that class moved to common.utils.internals in 4.4.0), "unknown" when absent.
     */
    static String clientVersion() {
        try (java.io.InputStream in = org.apache.kafka.clients.producer.KafkaProducer.class
                .getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties version = new Properties();  // the jar's version file, not client settings
            if (in != null) version.load(in);
            return version.getProperty("version", "unknown").trim();
        } catch (IOException e) {
            return "unknown";
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    abstract void run() throws Exception;
}
