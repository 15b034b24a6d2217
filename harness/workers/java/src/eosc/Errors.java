package eosc;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.UnsupportedVersionException;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;

/**
 * Errors of the Java client into history outcomes, with the table of harness/workers/outcomes.py (passed
 * in the config as "error_table": rows [phase, condition, action, replace], first match wins).
 * Only the facts come from here, the Java counterparts of librdkafka's fatal(), retriable()
 * and txn_requires_abort() (docs/java-client.md "Errors"):
 *
 * fatal: the producer's TransactionManager is in its fatal error state (it refuses every
 *   further call but close()), read through reflection, or, when that cannot be read, the
 *   exception is one of ProducerFencedException, FencedInstanceIdException,
 *   AuthorizationException, UnsupportedVersionException;
 * txn_requires_abort: the TransactionManager is in its abortable error state (only
 *   abortTransaction() is allowed), or the exception is InvalidProducerEpochException or
 *   TransactionAbortableException (KIP-890, KIP-1050);
 * retriable: the exception (or a cause) is a RetriableException, TimeoutException included
 *   (a call that timed out after max.block.ms may be called again, KafkaProducer javadoc).
 */
final class Errors {
    enum Action { RETRY, ABORT, FAIL, INFO }

    static final class Decision {
        final Action action;
        final boolean replace;

        Decision(Action action, boolean replace) {
            this.action = action;
            this.replace = replace;
        }
    }

    static final class Facts {
        final String name;
        final String message;
        final boolean fatal, retriable, txnRequiresAbort;

        Facts(String name, String message, boolean fatal, boolean retriable, boolean txnRequiresAbort) {
            this.name = name;
            this.message = message;
            this.fatal = fatal;
            this.retriable = retriable;
            this.txnRequiresAbort = txnRequiresAbort;
        }

        /** The history's error field: [name, message]. */
        List<String> pair() {
            return List.of(name, message == null ? "" : message);
        }

        boolean holds(String condition) {
            switch (condition) {
                case "fatal": return fatal;
                case "retriable": return retriable;
                case "txn_requires_abort": return txnRequiresAbort;
                case "other": return true;
                default: throw new IllegalArgumentException("unknown condition " + condition);
            }
        }
    }

    private static final class Row {
        final String phase, condition;
        final Decision decision;

        Row(String phase, String condition, Decision decision) {
            this.phase = phase;
            this.condition = condition;
            this.decision = decision;
        }
    }

    private final List<Row> rows = new ArrayList<>();

    Errors(JsonNode table) {
        if (table == null || !table.isArray() || table.size() == 0) {
            throw new IllegalArgumentException("config has no error_table (harness.workers.java adds it)");
        }
        for (JsonNode r : table) {
            rows.add(new Row(r.get(0).asText(), r.get(1).asText(),
                    new Decision(Action.valueOf(r.get(2).asText().toUpperCase()), r.get(3).asBoolean())));
        }
    }

    /** errors.classify: ``commitRequested`` turns an abort failure into info. */
    Decision classify(Facts facts, String phase, boolean commitRequested) {
        for (Row r : rows) {
            if (!r.phase.equals(phase) || !facts.holds(r.condition)) continue;
            if (phase.equals("abort") && commitRequested && r.decision.action == Action.FAIL) {
                return new Decision(Action.INFO, true);
            }
            return r.decision;
        }
        throw new IllegalArgumentException("unknown phase " + phase);
    }

    Decision classify(Facts facts, String phase) {
        return classify(facts, phase, false);
    }

    // -- facts ---------------------------------------------------------------------------------

    private static Field tmField;
    private static Method hasFatal, hasAbortable, v2Enabled;
    private static boolean reflectionTried;

    private static synchronized void reflect(Object tm) {
        if (reflectionTried) return;
        reflectionTried = true;
        try {
            hasFatal = tm.getClass().getDeclaredMethod("hasFatalError");
            hasFatal.setAccessible(true);
            hasAbortable = tm.getClass().getDeclaredMethod("hasAbortableError");
            hasAbortable.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("TransactionManager state not readable: " + e);
            hasFatal = hasAbortable = null;
        }
        try {
            v2Enabled = tm.getClass().getDeclaredMethod("isTransactionV2Enabled");
            v2Enabled.setAccessible(true);
        } catch (ReflectiveOperationException | RuntimeException e) {
            v2Enabled = null; // kafka-clients before 4.0: transaction protocol v1 only
        }
    }

    /** The producer's TransactionManager (null for a plain producer or when unreadable). */
    static Object transactionManager(KafkaProducer<?, ?> producer) {
        if (producer == null) return null;
        try {
            synchronized (Errors.class) {
                if (tmField == null) {
                    tmField = KafkaProducer.class.getDeclaredField("transactionManager");
                    tmField.setAccessible(true);
                }
            }
            Object tm = tmField.get(producer);
            if (tm != null) reflect(tm);
            return tm;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static Boolean ask(Object tm, Method m) {
        if (tm == null || m == null) return null;
        try {
            return (Boolean) m.invoke(tm);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** The transaction protocol version the producer uses now: 2 when KIP-890 part 2 is on
     *  (kafka-clients 4.x with a cluster whose transaction.version is 2), else 1. */
    static int transactionVersion(KafkaProducer<?, ?> producer) {
        Object tm = transactionManager(producer);
        Boolean v2 = ask(tm, v2Enabled);
        return v2 != null && v2 ? 2 : 1;
    }

    static Throwable unwrap(Throwable e) {
        while (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        return e;
    }

    private static boolean chainHas(Throwable e, Class<?>... classes) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            for (Class<?> c : classes) if (c.isInstance(t)) return true;
        }
        return false;
    }

    private static boolean chainHasName(Throwable e, String simpleName) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t.getClass().getSimpleName().equals(simpleName)) return true;
        }
        return false;
    }

    /** The facts of ``err``; ``producer`` (may be null) is asked for its error state. */
    static Facts facts(Throwable err, KafkaProducer<?, ?> producer) {
        Throwable e = unwrap(err);
        // the most specific Kafka exception of the chain names the error: the client wraps the
        // cause of an error state in a plain KafkaException ("... we are in an error state")
        Throwable named = e;
        for (Throwable t = e.getCause(); t != null && t != t.getCause(); t = t.getCause()) {
            if (t instanceof KafkaException && named.getClass() == KafkaException.class) named = t;
        }
        String message = e == named ? String.valueOf(e.getMessage())
                : e.getMessage() + ": " + named.getMessage();
        Object tm = transactionManager(producer);
        Boolean tmFatal = ask(tm, hasFatal);
        Boolean tmAbortable = ask(tm, hasAbortable);
        boolean fatalClass = chainHas(e, ProducerFencedException.class, FencedInstanceIdException.class,
                AuthorizationException.class, UnsupportedVersionException.class);
        boolean fatal = tmFatal != null ? tmFatal || fatalClass : fatalClass;
        boolean abortable = (tmAbortable != null && tmAbortable)
                || chainHas(e, InvalidProducerEpochException.class)
                || chainHasName(e, "TransactionAbortableException");
        boolean retriable = chainHas(e, RetriableException.class);
        return new Facts(named.getClass().getSimpleName(), message, fatal, retriable, abortable);
    }
}
