package eosc;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Entry point of the Java client workers: {@code java eosc.Main ROLE CONFIG_JSON}, the same
 * arguments as {@code python -m harness.workers ROLE CONFIG_JSON} (harness/run/pool.py), the same
 * worker protocol: history events and {"ctl": ...} lines on stdout, "stop" and "retire" lines
 * on stdin, diagnostics on stderr.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        // the harness passes the config in EOSC_CONFIG, not argv: it may hold an external
        // cluster's sasl.password, and a command line is readable by every local user
        String raw = args.length == 2 ? args[1] : System.getenv("EOSC_CONFIG");
        if (args.length < 1 || args.length > 2 || raw == null) {
            System.err.println("usage: eosc.Main ROLE [CONFIG_JSON] (else the config in $EOSC_CONFIG)");
            System.exit(2);
        }
        JsonNode cfg = Json.MAPPER.readTree(raw);
        if (args[0].equals("classify") || args[0].equals("facts")) { // unit tests only
            Selftest.run(args[0], cfg);
            return;
        }
        Worker w;
        switch (args[0]) {
            case "txn-producer": w = new TxnProducer(cfg); break;
            case "epoch-burn": w = new EpochBurn(cfg); break;
            case "consumer": w = new Consumers.Poller(cfg); break;
            case "drain": w = new Consumers.Drain(cfg); break;
            case "pipeline-drain": w = new Consumers.PipelineDrain(cfg); break;
            case "processor": w = new Processor(cfg); break;
            case "idempotent-producer": w = new IdempotentProducer(cfg); break;
            case "share-consumer": w = shareConsumer(cfg); break;
            default:
                System.err.println("unknown role " + args[0]);
                System.exit(2);
                return;
        }
        int rc = 0;
        try {
            w.startStdinWatcher();
            w.run();
        } catch (Throwable t) {
            w.log("worker died: " + t);
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        // the clients' non-daemon threads must not keep a finished worker alive
        Runtime.getRuntime().halt(rc);
    }

    /** The share consumer, by name: it is compiled only against kafka-clients 4.0+
     *  (harness.workers.java.SHARE_MIN_CLIENT), so an older client has no such class. */
    static Worker shareConsumer(JsonNode cfg) throws Exception {
        Class<?> c;
        try {
            c = Class.forName("eosc.ShareConsumers");
        } catch (ClassNotFoundException e) {
            System.err.println("the share-consumer role needs kafka-clients 4.0.0 or later (KafkaShareConsumer, KIP-932): "
                    + "set workload.java_client_version to 4.0.0 or later");
            System.exit(2);
            return null;
        }
        return (Worker) c.getDeclaredConstructor(JsonNode.class).newInstance(cfg);
    }
}
