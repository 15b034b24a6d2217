package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.producer.ProducerRecord;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The epoch-burn role: a txn-producer (TxnProducer, op for op) that first drives its
 * transactional.id's producer epoch close to its end (Short.MAX_VALUE, 32767), then, once its
 * own epoch reaches {@code reinit_at_epoch}, begins a transaction, sends one record and
 * re-initialises with that transaction open: an InitProducerId that meets an Ongoing
 * transaction at that epoch. KAFKA-19367 (Kafka 4.0.0, fixed in 4.0.1 and 4.1.0): with
 * transaction version 2 (KIP-890 part 2) the coordinator bumps the epoch once to fence
 * (32766 -> 32767) and once more for the abort, and 32767 + 1 overflows; the transactional.id
 * then never initialises again.
 *
 * Burn: FindCoordinator, then InitProducerId requests to the coordinator (both Kafka protocol
 * v4, written by hand on a socket, no producer instance) with no producer id, until the returned
 * epoch is {@code burn_to_epoch}. Each one
 * bumps the epoch by one with one __transaction_state append and no markers: ~3,000 a second
 * on the test machine's one-node cluster, where a one-record TV2 transaction (also one epoch)
 * took ~8 ms. The first
 * KafkaProducer init then lands on burn_to_epoch + 1 and each transaction end bumps it by one
 * more (TV2), so burn_to_epoch must stay below 32765: at 32766 the coordinator hands out a
 * new producer id instead (TransactionCoordinator: isProducerEpochExhausted, epoch >= 32766).
 *
 * With {@code trigger: timeout} (KAFKA-20090, 4.0.0-4.2.x) the transaction at reinit_at_epoch
 * is first held open {@code timeout_wait_s} s, past transaction.timeout.ms, so that the
 * coordinator's timeout abort fences the epoch to 32767 without a new producer id, then aborted
 * late by the client (EndTxn at the old epoch, answered as a retry); the re-init then comes with
 * the next transaction open, at 32767.
 *
 * History: an {@code epoch-burn} op (invoke/ok, or info with the error) whose value is
 * {"requests", "epoch", "producer_id"}; init ok meta carries producer_id and producer_epoch
 * (TxnProducer.initOk); the abandoned transaction is a txn op completed
 * fail with error ["_REINIT", ...] and meta abort "reinit": commit was never asked, and the
 * next init aborts it (KIP-98). Then init ops as usual, so a broker that refuses them shows
 * as init fail/info ops until the run ends (checkers/finders/epoch_exhausted.py).
 */
final class EpochBurn extends TxnProducer {
    static final short INIT_PRODUCER_ID = 22;
    static final short FIND_COORDINATOR = 10;
    static final short VERSION = 4; // flexible; 2.7+ brokers, not removed by KIP-896 (4.0)

    final int burnTo;
    final int reinitAt;
    /** trigger "timeout" (KAFKA-20090): the transaction at reinitAt times out on the
     *  coordinator and is aborted late by the client first; "reinit" (KAFKA-19367) skips that */
    final boolean timeoutTrigger;
    final double timeoutWait;
    boolean timedOut;
    boolean burnt;
    boolean reinitDone;
    int correlation;

    EpochBurn(JsonNode cfg) {
        super(cfg);
        burnTo = (int) Json.lng(cfg, "burn_to_epoch", 32760);
        reinitAt = (int) Json.lng(cfg, "reinit_at_epoch", 32766);
        timeoutTrigger = Json.str(cfg, "trigger", "reinit").equals("timeout");
        timeoutWait = Json.dbl(cfg, "timeout_wait_s", 8);
    }

    // -- the burn: InitProducerId by hand --------------------------------------------------

    static void uvarint(ByteBuffer b, int v) {
        while ((v & ~0x7f) != 0) {
            b.put((byte) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        b.put((byte) v);
    }

    static int uvarint(ByteBuffer b) {
        int v = 0;
        for (int shift = 0; ; shift += 7) {
            byte x = b.get();
            v |= (x & 0x7f) << shift;
            if ((x & 0x80) == 0) return v;
        }
    }

    /** A compact (nullable) string of a flexible message. */
    static String compactString(ByteBuffer b) {
        int n = uvarint(b) - 1;
        if (n < 0) return null;
        byte[] x = new byte[n];
        b.get(x);
        return new String(x, StandardCharsets.UTF_8);
    }

    static void skipTags(ByteBuffer b) {
        for (int n = uvarint(b); n > 0; n--) {
            uvarint(b); // tag
            b.position(b.position() + uvarint(b));
        }
    }

    /** A flexible request (header v2) of api ``key`` version 4, size-prefixed; ``body`` writes the
     *  fields after the header. */
    byte[] request(short key, java.util.function.Consumer<ByteBuffer> body) {
        byte[] client = "eosc-epoch-burn".getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(256 + tid.length() * 4);
        b.putInt(0); // size, set below
        b.putShort(key).putShort(VERSION).putInt(++correlation);
        b.putShort((short) client.length).put(client); // header v2: client_id stays a nullable string
        uvarint(b, 0);                                  // header tagged fields
        body.accept(b);
        uvarint(b, 0);                                  // body tagged fields
        b.putInt(0, b.position() - 4);
        byte[] out = new byte[b.position()];
        b.flip();
        b.get(out);
        return out;
    }

    void putCompact(ByteBuffer b, String x) {
        byte[] bytes = x.getBytes(StandardCharsets.UTF_8);
        uvarint(b, bytes.length + 1);
        b.put(bytes);
    }

    /** InitProducerId v4: the transactional.id, conf()'s transaction timeout, no producer id
     *  and epoch (a fresh init: the coordinator bumps the epoch of an Empty or completed one). */
    byte[] initRequest() {
        return request(INIT_PRODUCER_ID, b -> {
            putCompact(b, tid);
            b.putInt(30000);
            b.putLong(-1L).putShort((short) -1);
        });
    }

    /** FindCoordinator v4 (KIP-699 batched) for the transactional.id (key type 1). */
    byte[] findRequest() {
        return request(FIND_COORDINATOR, b -> {
            b.put((byte) 1);
            uvarint(b, 2); // one key
            putCompact(b, tid);
        });
    }

    /** One response after its header v1 (correlation id, tagged fields). */
    static ByteBuffer response(DataInputStream in) throws IOException {
        byte[] body = new byte[in.readInt()];
        in.readFully(body);
        ByteBuffer b = ByteBuffer.wrap(body);
        b.getInt();
        skipTags(b);
        return b;
    }

    static final class Conn implements AutoCloseable {
        final Socket s = new Socket();
        final OutputStream out;
        final DataInputStream in;

        Conn(String host, int port) throws IOException {
            s.connect(new InetSocketAddress(host, port), 5000);
            s.setSoTimeout(15000);
            s.setTcpNoDelay(true);
            out = s.getOutputStream();
            in = new DataInputStream(s.getInputStream());
        }

        ByteBuffer call(byte[] req) throws IOException {
            out.write(req);
            out.flush();
            return response(in);
        }

        @Override
        public void close() throws IOException {
            s.close();
        }
    }

    /** host:port of the transactional.id's coordinator, asked of ``via``; null while there is
     *  none yet (the first FindCoordinator creates __transaction_state). */
    String findCoordinator(Conn via) throws IOException {
        ByteBuffer b = via.call(findRequest());
        b.getInt(); // throttle_time_ms
        int n = uvarint(b) - 1;
        for (int i = 0; i < n; i++) {
            compactString(b);
            b.getInt(); // node id
            String host = compactString(b);
            int port = b.getInt();
            short err = b.getShort();
            compactString(b);
            skipTags(b);
            if (err == 0) return host + ":" + port;
            lastError = org.apache.kafka.common.protocol.Errors.forCode(err).name();
        }
        return null;
    }

    String lastError;

    /** InitProducerId until the epoch is burnTo (at most burn_timeout_s); records one
     *  epoch-burn op: ok when it got there, info (error _BURN) when not. */
    void burn() {
        Map<String, Object> meta = meta();
        emit("invoke", "epoch-burn", Json.map("to", burnTo), meta);
        String[] servers = cfg.get("bootstrap").asText().split(",");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos((long) Json.dbl(cfg, "burn_timeout_s", 240));
        int requests = 0, server = 0;
        long pid = -1, epoch = -1;
        long startNs = System.nanoTime();
        outer:
        while (!stopping.get() && System.nanoTime() < deadline && epoch < burnTo) {
            String[] boot = servers[server++ % servers.length].trim().split(":");
            try (Conn via = new Conn(boot[0], Integer.parseInt(boot[1]))) {
                String coord = null;
                while (coord == null && !stopping.get() && System.nanoTime() < deadline) {
                    coord = findCoordinator(via);
                    if (coord == null) sleep(100);
                }
                if (coord == null) break;
                String[] hp = coord.split(":");
                try (Conn c = new Conn(hp[0], Integer.parseInt(hp[1]))) {
                    while (!stopping.get() && System.nanoTime() < deadline && epoch < burnTo) {
                        ByteBuffer r = c.call(initRequest());
                        requests++;
                        r.getInt(); // throttle_time_ms
                        var e = org.apache.kafka.common.protocol.Errors.forCode(r.getShort());
                        long id = r.getLong();
                        short ep = r.getShort();
                        if (e == org.apache.kafka.common.protocol.Errors.NONE) {
                            pid = id;
                            epoch = ep;
                            continue;
                        }
                        lastError = e.name();
                        if (e == org.apache.kafka.common.protocol.Errors.NOT_COORDINATOR) continue outer;
                        if (!(e.exception() instanceof org.apache.kafka.common.errors.RetriableException)) break outer;
                        sleep(20); // loading, concurrent transactions: the coordinator needs a moment
                    }
                }
            } catch (IOException | RuntimeException ex) {
                lastError = ex.toString();
                log("epoch burn: " + ex);
                sleep(500); // a broker restarting: not a spin of connections
            }
        }
        long ms = (System.nanoTime() - startNs) / 1_000_000;
        Map<String, Object> value = new HashMap<>(Json.map("requests", requests, "ms", ms));
        if (epoch >= 0) {
            value.put("epoch", epoch);
            value.put("producer_id", pid);
        }
        log("epoch burn: " + value + (lastError != null ? " last error " + lastError : ""));
        if (epoch >= burnTo) {
            emit("ok", "epoch-burn", value, meta);
        } else {
            emit("info", "epoch-burn", value, null, List.of("_BURN", String.valueOf(lastError)), meta);
        }
    }

    // -- the trigger -----------------------------------------------------------------------

    /** Begin, send one record, wait for it, then abandon the open transaction (txn fail
     *  _REINIT) and the instance: the next init meets the Ongoing transaction. */
    void openAndReinit(long epoch) {
        List<Send> sends = chooseSends().subList(0, 1);
        Map<Long, Long> offsets = new HashMap<>();
        emit("invoke", "txn", List.of(Json.list("send", sends.get(0).key, sends.get(0).value)), meta());
        List<String> error = List.of("_REINIT", "abandoned open at producer epoch " + epoch + " for a new init");
        try {
            producer.beginTransaction();
            Send s = sends.get(0);
            int slash = s.key.lastIndexOf('/');
            offsets.put(s.value, producer.send(new ProducerRecord<>(s.key.substring(0, slash),
                    Integer.parseInt(s.key.substring(slash + 1)), null,
                    String.valueOf(s.value).getBytes(StandardCharsets.UTF_8))).get((long) (flushTimeout * 1000), TimeUnit.MILLISECONDS).offset());
        } catch (Exception e) {
            log("open transaction at epoch " + epoch + ": " + e);
            Errors.Facts f = Errors.facts(e, producer);
            error = f.pair();
        }
        Map<String, Object> m = meta();
        m.put("abort", "reinit");
        m.put("producer_epoch", epoch);
        complete("fail", completed(List.of(), sends, offsets), error, m);
        log("re-initialising with a transaction open at producer epoch " + epoch);
        replace();
    }

    /** KAFKA-20090's trigger: begin, send one record, let the coordinator abort the
     *  transaction for its timeout (the epoch fence, 32766 -> 32767 with TV2), then end it late
     *  with abortTransaction (EndTxn(ABORT) at the old epoch, answered as a retry). The txn op
     *  completes as the abort does (fail with error _TXN_TIMEOUT when it is accepted). */
    void openAndTimeOut(long epoch) {
        List<Send> sends = chooseSends().subList(0, 1);
        Map<Long, Long> offsets = new HashMap<>();
        emit("invoke", "txn", List.of(Json.list("send", sends.get(0).key, sends.get(0).value)), meta());
        TxnOutcome out;
        try {
            producer.beginTransaction();
            Send s = sends.get(0);
            int slash = s.key.lastIndexOf('/');
            offsets.put(s.value, producer.send(new ProducerRecord<>(s.key.substring(0, slash),
                    Integer.parseInt(s.key.substring(slash + 1)), null,
                    String.valueOf(s.value).getBytes(StandardCharsets.UTF_8))).get((long) (flushTimeout * 1000),
                    TimeUnit.MILLISECONDS).offset());
            log("holding the transaction open at producer epoch " + epoch + " for " + timeoutWait + " s");
            sleep((long) (timeoutWait * 1000));
            out = abort(List.of("_TXN_TIMEOUT", "held open at producer epoch " + epoch + " past transaction.timeout.ms"), false);
        } catch (Exception e) {
            log("timed-out transaction at epoch " + epoch + ": " + e);
            Errors.Facts f = Errors.facts(e, producer);
            out = new TxnOutcome("fail", f.pair(), true);
        }
        Map<String, Object> m = meta();
        m.put("abort", "timeout");
        m.put("producer_epoch", epoch);
        complete(out.type, completed(List.of(), sends, offsets), out.error, m);
        if (out.replace) replace();
    }

    @Override
    void run() {
        while (!stopping.get()) {
            if (producer == null) {
                if (!burnt) {
                    burnt = true;
                    burn();
                    if (stopping.get()) break;
                }
                if (!init()) {
                    sleep(500);
                    continue;
                }
            }
            long[] pe = reinitDone ? null : producerIdAndEpoch();
            if (pe != null && pe[1] >= reinitAt && timeoutTrigger && !timedOut) {
                timedOut = true;
                openAndTimeOut(pe[1]);
            } else if (pe != null && pe[1] >= reinitAt) {
                reinitDone = true;
                openAndReinit(pe[1]);
            } else {
                txn();
            }
        }
        closeProducer();
        control(Json.map("done", true, "next_value", nextValue));
    }
}
