/*
 * Finding F7 (docs/findings/F7.md), the connector's part, deterministic: flink-connector-kafka's
 * KafkaWriter records a send failure that arrives after the task thread already threw the first
 * one, and its close() then rethrows it, during the failed task's cleanup (on Flink 2.2 that is
 * "FATAL - exception in exception handler of task" and the TaskManager goes down; that part is
 * the runtime's and is not exercised here).
 *
 * Plain Java against flink-connector-kafka 5.0.0-2.2 and its Flink 2.2.1 / kafka-clients 4.2.0
 * dependencies; no JUnit, no broker, no Flink runtime. It sits in the writer's package, as the
 * connector's own KafkaWriterTest does, to reach the package-private KafkaWriter and its
 * WriterCallback (the protected field deliveryCallback): the test plays the producer's I/O thread
 * by calling onCompletion(metadata, exception) itself, and the task thread by calling write(),
 * running the writer's mails and close().
 *
 * The writer is built the way the sink builds it (KafkaSink.builder()...createWriter(context)),
 * with DeliveryGuarantee.AT_LEAST_ONCE: ExactlyOnceKafkaWriter.initialize() aborts lingering
 * transactions (initTransactions, a broker round trip), which needs a cluster. Everything F7's
 * mechanism consists of is KafkaWriter's own code, shared by both: WriterCallback.onCompletion,
 * checkAsyncException (which sets the recorded failure back to null) and KafkaWriter.close()'s
 * final checkAsyncException(); ExactlyOnceKafkaWriter.close() marks the writer closed, aborts the
 * transaction and then calls super.close() (ExactlyOnceKafkaWriter.java:270-277 at v5.0.0), so
 * it rethrows whatever KafkaWriter.close() does. The producer points at 127.0.0.1:1 (nothing
 * listens there); no record is sent: write() throws before it reaches send().
 *
 * Scenarios (e1, e2: InvalidProducerEpochException, as in the runs; the metadata of a failed
 * batch, topic "out", partition 3, offset -1, as in the runs' "out-3@-1"):
 *   f7-after-write   onCompletion(e1); write() throws e1 (the task fails); onCompletion(e2) (a
 *                    second batch of the same transaction fails); close() must not throw
 *   f7-after-mail    the same with the first failure thrown by the writer's own mail ("Update
 *                    error metric", enqueued by onCompletion) instead of write()
 *   control-single   onCompletion(e1); write() throws e1; close() does not throw (one failed batch:
 *                    what every single-WARN failover of the runs did)
 *   control-before-close  onCompletion(e1); close() must throw e1: a failure that never surfaced
 *                    is still rethrown (FLINK-38790's contract, #247's
 *                    testClosePropagatesAsyncErrorReportedBeforeClose); a fix must keep this
 *
 * Output: one line per check, "PASS <scenario>.<check>: <what was seen>" or "FAIL ...", the
 * writer's own log lines (slf4j-simple, stderr), and a closing line "N passed, N failed". Exit 0
 * when every check passed, 1 when one failed, 2 when the test itself broke.
 *
 * Run: harness/findings/java/f7-connector-test.sh (fetches the jars with Maven, compiles, runs it
 * on 5.0.0 as shipped and with the one-line fix compiled from the 5.0.0 sources jar).
 */
package org.apache.flink.connector.kafka.sink;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfo;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.runtime.metrics.groups.InternalSinkWriterMetricGroup;
import org.apache.flink.runtime.metrics.groups.UnregisteredMetricGroups;
import org.apache.flink.util.UserCodeClassLoader;
import org.apache.flink.util.function.ThrowingRunnable;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;

import java.util.ArrayDeque;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.ScheduledFuture;
import java.util.function.Consumer;

public class F7KafkaWriterCloseTest {

    private static int passed;
    private static int failed;

    private static void check(String name, boolean ok, String seen) {
        System.out.println((ok ? "PASS " : "FAIL ") + name + ": " + seen);
        System.out.flush();
        if (ok) {
            passed++;
        } else {
            failed++;
        }
    }

    /** The task thread's mailbox: mails are queued and run by the test, in order. */
    static final class Mailbox implements MailboxExecutor {
        final ArrayDeque<ThrowingRunnable<? extends Exception>> mails = new ArrayDeque<>();

        @Override
        public void execute(
                MailOptions options,
                ThrowingRunnable<? extends Exception> command,
                String descriptionFormat,
                Object... descriptionArgs) {
            mails.add(command);
        }

        @Override
        public void yield() {
            throw new UnsupportedOperationException("yield");
        }

        @Override
        public boolean tryYield() {
            return false;
        }

        @Override
        public boolean shouldInterrupt() {
            return false;
        }

        /** Runs the next mail; returns what it threw, or null. */
        Exception runNext() {
            ThrowingRunnable<? extends Exception> mail = mails.poll();
            if (mail == null) {
                throw new IllegalStateException("no mail queued");
            }
            try {
                mail.run();
                return null;
            } catch (Exception e) {
                return e;
            }
        }
    }

    /** Timers are registered (the writer's metric sync) and never fired. */
    static final class NoTimers implements ProcessingTimeService {
        @Override
        public long getCurrentProcessingTime() {
            return 0;
        }

        @Override
        public ScheduledFuture<?> registerTimer(long time, ProcessingTimeCallback callback) {
            return null;
        }
    }

    /** Only what KafkaSink.createWriter and the KafkaWriter constructor read. */
    static final class Context implements WriterInitContext {
        final Mailbox mailbox = new Mailbox();
        final SinkWriterMetricGroup metrics =
                InternalSinkWriterMetricGroup.wrap(
                        UnregisteredMetricGroups.createUnregisteredOperatorMetricGroup());

        @Override
        public UserCodeClassLoader getUserCodeClassLoader() {
            throw new UnsupportedOperationException("getUserCodeClassLoader");
        }

        @Override
        public MailboxExecutor getMailboxExecutor() {
            return mailbox;
        }

        @Override
        public ProcessingTimeService getProcessingTimeService() {
            return new NoTimers();
        }

        @Override
        public SinkWriterMetricGroup metricGroup() {
            return metrics;
        }

        @Override
        public SerializationSchema.InitializationContext
                asSerializationSchemaInitializationContext() {
            return null;
        }

        @Override
        public boolean isObjectReuseEnabled() {
            return false;
        }

        @Override
        public <IN> TypeSerializer<IN> createInputSerializer() {
            throw new UnsupportedOperationException("createInputSerializer");
        }

        @Override
        public <MetaT> Optional<Consumer<MetaT>> metadataConsumer() {
            return Optional.empty();
        }

        @Override
        public OptionalLong getRestoredCheckpointId() {
            return OptionalLong.empty();
        }

        @Override
        public JobInfo getJobInfo() {
            return new JobInfoImpl(new JobID(), "f7");
        }

        @Override
        public TaskInfo getTaskInfo() {
            return new TaskInfoImpl("Writer", 2, 0, 2, 0);
        }
    }

    static final SinkWriter.Context WRITE_CONTEXT =
            new SinkWriter.Context() {
                @Override
                public long currentWatermark() {
                    return 0;
                }

                @Override
                public Long timestamp() {
                    return null;
                }
            };

    static final class Setup {
        final Context context = new Context();
        final KafkaWriter<Integer> writer;
        final Callback callback;

        Setup() throws Exception {
            Properties props = new Properties();
            props.setProperty("max.block.ms", "1000");
            KafkaSink<Integer> sink =
                    KafkaSink.<Integer>builder()
                            .setBootstrapServers("127.0.0.1:1")
                            .setKafkaProducerConfig(props)
                            .setDeliveryGuarantee(DeliveryGuarantee.AT_LEAST_ONCE)
                            .setRecordSerializer(
                                    (element, ctx, timestamp) ->
                                            new ProducerRecord<>("out", new byte[] {1}))
                            .build();
            writer = sink.createWriter(context);
            callback = writer.deliveryCallback;
        }
    }

    static RecordMetadata failedBatch() {
        return new RecordMetadata(new TopicPartition("out", 3), -1, 0, -1, 0, 0);
    }

    static InvalidProducerEpochException epochError(String which) {
        return new InvalidProducerEpochException(
                "Producer attempted to produce with an old epoch. (" + which + ")");
    }

    static Exception writeThrows(KafkaWriter<Integer> writer) {
        try {
            writer.write(1, WRITE_CONTEXT);
            return null;
        } catch (Exception e) {
            return e;
        }
    }

    static Exception closeThrows(KafkaWriter<Integer> writer) {
        try {
            writer.close();
            return null;
        } catch (Exception e) {
            return e;
        }
    }

    /** "IOException(... cause: <message of the root>)" or "nothing". */
    static String describe(Exception e) {
        if (e == null) {
            return "nothing";
        }
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return e.getClass().getSimpleName() + " '" + e.getMessage() + "', caused by "
                + root.getClass().getSimpleName() + " '" + root.getMessage() + "'";
    }

    static boolean causedBy(Exception e, String which) {
        Throwable t = e;
        while (t != null) {
            if (t instanceof InvalidProducerEpochException
                    && t.getMessage() != null
                    && t.getMessage().contains("(" + which + ")")) {
                return true;
            }
            t = t.getCause();
        }
        return false;
    }

    static void f7AfterWrite() throws Exception {
        Setup s = new Setup();
        s.callback.onCompletion(failedBatch(), epochError("e1"));
        Exception thrown = writeThrows(s.writer);
        check("f7-after-write.write-throws-e1", causedBy(thrown, "e1"), "write() threw " + describe(thrown));
        s.callback.onCompletion(failedBatch(), epochError("e2"));
        Exception atClose = closeThrows(s.writer);
        check("f7-after-write.close-does-not-throw", atClose == null,
                "close() after the task already failed on e1 threw " + describe(atClose));
    }

    static void f7AfterMail() throws Exception {
        Setup s = new Setup();
        s.callback.onCompletion(failedBatch(), epochError("e1"));
        Exception thrown = s.context.mailbox.runNext();
        check("f7-after-mail.mail-throws-e1", causedBy(thrown, "e1"), "the mail threw " + describe(thrown));
        s.callback.onCompletion(failedBatch(), epochError("e2"));
        Exception atClose = closeThrows(s.writer);
        check("f7-after-mail.close-does-not-throw", atClose == null,
                "close() after the task already failed on e1 threw " + describe(atClose));
    }

    static void controlSingle() throws Exception {
        Setup s = new Setup();
        s.callback.onCompletion(failedBatch(), epochError("e1"));
        Exception thrown = writeThrows(s.writer);
        check("control-single.write-throws-e1", causedBy(thrown, "e1"), "write() threw " + describe(thrown));
        Exception atClose = closeThrows(s.writer);
        check("control-single.close-does-not-throw", atClose == null, "close() threw " + describe(atClose));
    }

    static void controlBeforeClose() throws Exception {
        Setup s = new Setup();
        s.callback.onCompletion(failedBatch(), epochError("e1"));
        Exception atClose = closeThrows(s.writer);
        check("control-before-close.close-throws-e1", causedBy(atClose, "e1"),
                "close() with e1 recorded and never thrown threw " + describe(atClose));
    }

    public static void main(String[] args) {
        try {
            f7AfterWrite();
            f7AfterMail();
            controlSingle();
            controlBeforeClose();
        } catch (Throwable t) {
            System.out.println("BROKEN: the test itself failed: " + t);
            t.printStackTrace(System.out);
            System.exit(2);
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
