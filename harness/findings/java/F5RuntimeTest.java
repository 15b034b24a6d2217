/*
 * Finding F5 (docs/findings/F5.md), deterministic: Kafka's CoordinatorRuntime lets the load of an
 * unloaded coordinator context complete the *newer* context of the same partition.
 *
 * Plain Java against the release's jars (kafka-coordinator-common, kafka-clients,
 * kafka-server-common, slf4j/log4j); no JUnit, no broker, no threads of our own. It sits in the
 * runtime's package, as Kafka's own CoordinatorRuntimeTest does, to read a context's state
 * (package-private CoordinatorRuntime.contextOrThrow and CoordinatorContext.state); what a client
 * sees is checked through the public scheduleReadOperation.
 *
 * Stand-ins, only what CoordinatorRuntime.Builder.build() demands (CoordinatorRuntime.java:207-240
 * at 4.3.1):
 *   - event processor: runs each event inline on the caller's thread, as the runtime's event
 *     thread would, one at a time (Kafka's tests use a DirectEventProcessor the same way);
 *   - loader: load() records (playback, future) and returns the future; the test replays records
 *     into the playback and completes the future by hand, in the order the real loader's single
 *     thread would (CoordinatorLoaderImpl.java:108: one scheduler thread, FIFO);
 *   - shard: counts the records replayed into it; a read operation returns that count;
 *   - partition writer, timer, metrics, serializer: no-op dynamic proxies (never written to here).
 *
 * Scenarios (epochs e1 < e2 < e3 of the partition's leadership):
 *   control-ok      load(e1); e1's load replays 3 records and completes -> ACTIVE, reads 3
 *   control-failed  load(e1); e1's load fails                           -> FAILED
 *   stale-ok        load(e1); unload(e2); load(e3); e1's load completes: the e3 context must stay
 *                   LOADING; then e3's load replays 3 records and completes -> ACTIVE, reads 3
 *   stale-failed    load(e1); unload(e2); load(e3); e1's load fails: the e3 context must stay
 *                   LOADING, not FAILED; then e3's load completes -> ACTIVE
 *
 * Output: one line per assertion, "PASS <scenario>.<check>: <what was seen>" or "FAIL ...", the
 * runtime's own log lines prefixed "  | ", and a last line
 * "RESULT controls=<ok|broken> stale-completion=<rejected|accepted>". Exit 0 when every scenario
 * ran (whatever it showed), 1 when the test itself broke (an unexpected exception).
 *
 * Compiles against Kafka 4.0.0 to 4.4.0 (the few API differences are noted where they are met).
 * Usage: java -cp <jars>:<classes> org.apache.kafka.coordinator.common.runtime.F5RuntimeTest
 * (harness/findings/f5_runtime.py compiles and runs it for a given release).
 */
package org.apache.kafka.coordinator.common.runtime;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime.Builder;
import org.apache.kafka.server.util.timer.Timer;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

public class F5RuntimeTest {
    static final TopicPartition TP = new TopicPartition("__consumer_offsets", 25);
    static final int E1 = 10, E2 = 11, E3 = 12;
    static int failures = 0, staleFailures = 0, controlFailures = 0;

    /** The shard: counts replayed records, so a read shows which load filled it. */
    static class CountingShard implements CoordinatorShard<String> {
        int replayed = 0;

        @Override
        public void replay(long offset, long producerId, short producerEpoch, String record) {
            replayed++;
        }
    }

    /** One call of CoordinatorLoader.load: the shard it fills and the future the test completes. */
    static class Load {
        final CoordinatorPlayback<String> playback;
        final CompletableFuture<CoordinatorLoader.LoadSummary> future = new CompletableFuture<>();

        Load(CoordinatorPlayback<String> playback) {
            this.playback = playback;
        }

        /** What CoordinatorLoaderImpl.doLoad does for n records, then its normal completion. */
        void replayAndComplete(int n) {
            for (int i = 0; i < n; i++) playback.replay(i, -1L, (short) -1, "record-" + i);
            playback.updateLastWrittenOffset((long) n);  // (long): a Long parameter before 4.3
            playback.updateLastCommittedOffset((long) n);
            future.complete(new CoordinatorLoader.LoadSummary(0L, 1L, 0L, n, 100L * n));
        }

        /** The loader's failure when the broker no longer leads (CoordinatorLoaderImpl.java:129,161). */
        void fail() {
            future.completeExceptionally(new NotLeaderOrFollowerException(
                "Stopped loading records from " + TP + " because the partition is not online or is no longer the leader."));
        }
    }

    static class HandLoader implements CoordinatorLoader<String> {
        final List<Load> loads = new ArrayList<>();

        @Override
        public CompletableFuture<LoadSummary> load(TopicPartition tp, CoordinatorPlayback<String> coordinator) {
            Load l = new Load(coordinator);
            loads.add(l);
            return l.future;
        }

        @Override
        public void close() { }
    }

    /** Runs events inline; like MultiThreadedEventProcessor.java:147-151, a throw goes to complete(). */
    static class InlineProcessor implements CoordinatorEventProcessor {
        @Override
        public void enqueueLast(CoordinatorEvent event) {
            try {
                event.run();
            } catch (Throwable t) {
                event.complete(t);
            }
        }

        @Override
        public void enqueueFirst(CoordinatorEvent event) {
            enqueueLast(event);
        }

        @Override
        public void close() { }
    }

    /** A no-op implementation of an interface (null / 0 / false); builder-style methods return the proxy. */
    @SuppressWarnings("unchecked")
    static <T> T noop(Class<T> type, Object built) {
        InvocationHandler h = (proxy, m, args) -> {
            switch (m.getName()) {
                case "toString": return "noop " + type.getSimpleName();
                case "hashCode": return System.identityHashCode(proxy);
                case "equals": return proxy == args[0];
                case "build": return built;
                default: break;
            }
            Class<?> r = m.getReturnType();
            if (r.isInstance(proxy)) return proxy;  // withX(...) of a builder
            if (r == boolean.class) return false;
            if (r.isPrimitive() && r != void.class) return defaultOf(r);
            return null;
        };
        return (T) Proxy.newProxyInstance(F5RuntimeTest.class.getClassLoader(), new Class<?>[]{type}, h);
    }

    static Object defaultOf(Class<?> r) {
        if (r == long.class) return 0L;
        if (r == short.class) return (short) 0;
        if (r == byte.class) return (byte) 0;
        if (r == double.class) return 0.0;
        if (r == float.class) return 0.0f;
        return 0;
    }

    final HandLoader loader = new HandLoader();
    final CoordinatorRuntime<CountingShard, String> runtime;

    F5RuntimeTest() {
        CoordinatorShardBuilderSupplier<CountingShard, String> shards =
            () -> noop(CoordinatorShardBuilder.class, new CountingShard());
        Builder<CountingShard, String> b = new Builder<CountingShard, String>()
            .withLogPrefix("[runtime] ")
            .withEventProcessor(new InlineProcessor())
            .withPartitionWriter(noop(PartitionWriter.class, null))
            .withLoader(loader)
            .withCoordinatorShardBuilderSupplier(shards)
            .withTime(Time.SYSTEM)
            .withTimer(noop(Timer.class, null))
            .withCoordinatorRuntimeMetrics(noop(CoordinatorRuntimeMetrics.class, null))
            .withCoordinatorMetrics(new CoordinatorMetrics() {
                @Override
                public CoordinatorMetricsShard newMetricsShard(SnapshotRegistry r, TopicPartition tp) {
                    return null;
                }

                @Override
                public void activateMetricsShard(CoordinatorMetricsShard shard) { }

                @Override
                public void deactivateMetricsShard(CoordinatorMetricsShard shard) { }

                @Override
                public void onUpdateLastCommittedOffset(TopicPartition tp, long offset) { }

                // abstract up to 4.2, gone in 4.3: no @Override, so that both compile
                public com.yammer.metrics.core.MetricsRegistry registry() {
                    return null;
                }
            })
            .withSerializer(noop(Serializer.class, null))
            .withExecutorService(Executors.newSingleThreadExecutor());
        // required from 4.3 on (absent before): called by reflection so that 4.0-4.2 compile too
        try {
            Supplier<Integer> cachedBufferMaxBytes = () -> 1024 * 1024;
            Builder.class.getMethod("withCachedBufferMaxBytesSupplier", Supplier.class).invoke(b, cachedBufferMaxBytes);
        } catch (NoSuchMethodException absent) {
            // Kafka < 4.3
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        runtime = b.build();
    }

    Object context() {
        return runtime.contextOrThrow(TP);
    }

    String state() {
        try {
            return runtime.contextOrThrow(TP).state.toString();
        } catch (RuntimeException e) {
            return "absent (" + e.getClass().getSimpleName() + ")";
        }
    }

    /** What a client's read (e.g. OffsetFetch) gets now: the shard's record count, or the error. */
    String read() {
        CompletableFuture<Integer> f = runtime.scheduleReadOperation("F5-read", TP, (shard, offset) -> shard.replayed);
        try {
            return "served from a shard holding " + f.getNow(null) + " records";
        } catch (CompletionException e) {
            return "error " + e.getCause().getClass().getSimpleName();
        }
    }

    static void check(String scenario, String what, boolean ok, String seen, boolean control) {
        System.out.println((ok ? "PASS " : "FAIL ") + scenario + "." + what + ": " + seen);
        if (!ok) {
            failures++;
            if (control) controlFailures++;
            else staleFailures++;
        }
    }

    static void step(String text) {
        System.out.println("-- " + text);
    }

    static void controlOk() throws Exception {
        String s = "control-ok";
        System.out.println("== " + s + ": load(e1=" + E1 + "); e1's load replays 3 records and completes");
        F5RuntimeTest t = new F5RuntimeTest();
        t.runtime.scheduleLoadOperation(TP, E1);
        check(s, "loading", t.state().equals("LOADING"), "state " + t.state() + ", read " + t.read(), true);
        step("complete the e1 load");
        t.loader.loads.get(0).replayAndComplete(3);
        String read = t.read();
        check(s, "active", t.state().equals("ACTIVE") && read.endsWith(" 3 records"), "state " + t.state() + ", read " + read, true);
        t.runtime.close();
    }

    static void controlFailed() throws Exception {
        String s = "control-failed";
        System.out.println("== " + s + ": load(e1=" + E1 + "); e1's load fails");
        F5RuntimeTest t = new F5RuntimeTest();
        t.runtime.scheduleLoadOperation(TP, E1);
        step("complete the e1 load exceptionally");
        t.loader.loads.get(0).fail();
        check(s, "failed", t.state().equals("FAILED"), "state " + t.state() + ", read " + t.read(), true);
        t.runtime.close();
    }

    /** load(e1), unload(e2), load(e3): two loads pending, the second context LOADING. */
    static F5RuntimeTest reloaded(String s) {
        F5RuntimeTest t = new F5RuntimeTest();
        t.runtime.scheduleLoadOperation(TP, E1);
        Object c1 = t.context();
        t.runtime.scheduleUnloadOperation(TP, OptionalInt.of(E2));
        step("after unload(e2): state " + t.state());
        t.runtime.scheduleLoadOperation(TP, E3);
        Object c2 = t.context();
        boolean setup = c1 != c2 && t.state().equals("LOADING") && t.loader.loads.size() == 2;
        check(s, "setup", setup, "e3 context is a new context: " + (c1 != c2) + ", state " + t.state()
            + ", loads pending " + t.loader.loads.size(), true);
        return t;
    }

    static void staleOk() throws Exception {
        String s = "stale-ok";
        System.out.println("== " + s + ": load(e1=" + E1 + "); unload(e2=" + E2 + "); load(e3=" + E3
            + "); the e1 load replays 3 records into its (unloaded) shard and completes");
        F5RuntimeTest t = reloaded(s);
        step("complete the e1 load (stale)");
        t.loader.loads.get(0).replayAndComplete(3);
        String read = t.read();
        check(s, "e3-not-activated-by-e1", t.state().equals("LOADING"), "state " + t.state(), false);
        check(s, "read-not-served-before-e3-load", read.equals("error CoordinatorLoadInProgressException"),
            "read " + read, false);
        step("complete the e3 load");
        t.loader.loads.get(1).replayAndComplete(3);
        read = t.read();
        check(s, "active-after-e3-load", t.state().equals("ACTIVE") && read.endsWith(" 3 records"),
            "state " + t.state() + ", read " + read, false);
        t.runtime.close();
    }

    static void staleFailed() throws Exception {
        String s = "stale-failed";
        System.out.println("== " + s + ": load(e1=" + E1 + "); unload(e2=" + E2 + "); load(e3=" + E3
            + "); the e1 load fails");
        F5RuntimeTest t = reloaded(s);
        step("complete the e1 load exceptionally (stale)");
        t.loader.loads.get(0).fail();
        String read = t.read();
        check(s, "e3-not-failed-by-e1", t.state().equals("LOADING"), "state " + t.state(), false);
        check(s, "read-not-coordinator-error", read.equals("error CoordinatorLoadInProgressException"),
            "read " + read, false);
        step("complete the e3 load");
        t.loader.loads.get(1).replayAndComplete(3);
        read = t.read();
        check(s, "active-after-e3-load", t.state().equals("ACTIVE") && read.endsWith(" 3 records"),
            "state " + t.state() + ", read " + read, false);
        t.runtime.close();
    }

    public static void main(String[] args) {
        try {
            controlOk();
            controlFailed();
            staleOk();
            staleFailed();
        } catch (Throwable e) {
            System.out.println("ERROR the test broke: " + e);
            e.printStackTrace(System.out);
            System.exit(1);
        }
        System.out.println("RESULT controls=" + (controlFailures == 0 ? "ok" : "broken")
            + " stale-completion=" + (staleFailures == 0 ? "rejected" : "accepted")
            + " failed-checks=" + failures);
        System.exit(0);
    }
}
