"""server-error: a client op failed with an error a correct broker never returns to a valid request.

The workers send only well-formed requests: batches the client library built and checksummed
itself (CRC-32C over the batch, KIP-98 record format v2), small records on topics that are not
compacted. A few protocol errors then cannot be the client's doing, nor the network's (TCP
checksums every segment; no fault of the nemesis rewrites bytes): the broker failed. Such an
error shows in the history as a ``fail`` or ``info`` op whose ``error`` names it
(harness/workers/outcomes.py: a transactional produce's delivery error aborts the transaction,
a ``fail`` txn; docs/history.md).

Each name is kept for a reason from Kafka's protocol error table (the ``Errors`` enum of
kafka-clients, https://kafka.apache.org/protocol#protocol_error_codes):

* ``UNKNOWN_SERVER_ERROR`` (-1), "the server experienced an unexpected error when processing
  the request": the broker's request handler caught an exception it has no code for (e.g. a
  NullPointerException in ReplicaManager.appendToLocalLog). By definition a broker defect.
* ``CORRUPT_MESSAGE`` (2), "this message has failed its CRC checksum, exceeds the valid size,
  has a null key for a compacted topic, or is otherwise corrupt": the workers' batches carry a
  correct CRC, are far below any size limit and no topic is compacted, so the broker read
  something other than what was sent (e.g. decompressed into a buffer another thread was
  using).
* ``INVALID_RECORD`` (87), "this record has failed the validation on broker": the broker's
  record validation (LogValidator) rejected records the client built by the format's rules.

Not in the list: errors a correct broker returns to a valid request under faults or load
(NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, CONCURRENT_TRANSACTIONS, ...),
fencing (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH), KAFKA_STORAGE_ERROR (the disk failed, not the
broker's logic: the power-loss faults may cause it), and errors of invalid requests
(INVALID_REQUEST, UNSUPPORTED_VERSION, ...), which would point at the client.

The history's error name is the client's: librdkafka's (confluent-kafka ``KafkaError.name()``:
UNKNOWN, INVALID_MSG, INVALID_RECORD), the Java workers' exception class
(UnknownServerException, CorruptRecordException, InvalidRecordException), or the protocol name
itself (a history written by another tool).

Known cause: KAFKA-15653 (Kafka 3.6.0; fixed in 3.6.1): with KIP-890 transaction verification
a produce's append runs in a callback on another request handler thread, with the first
thread's RequestLocal, whose BufferSupplier is not thread-safe; compressed batches then fail
with UNKNOWN_SERVER_ERROR (a NullPointerException) or INVALID_RECORD.
"""

from __future__ import annotations

import polars as pl

from ..history import History

#: the protocol error each client name stands for (see the module docstring for why each is here)
SERVER_ERRORS: dict[str, str] = {
    # UNKNOWN_SERVER_ERROR (-1): an exception the broker has no error code for
    "UNKNOWN_SERVER_ERROR": "UNKNOWN_SERVER_ERROR",
    "UNKNOWN": "UNKNOWN_SERVER_ERROR",  # librdkafka RD_KAFKA_RESP_ERR_UNKNOWN = -1
    "UnknownServerException": "UNKNOWN_SERVER_ERROR",
    # CORRUPT_MESSAGE (2): a batch the broker could not read, although the client checksummed it
    "CORRUPT_MESSAGE": "CORRUPT_MESSAGE",
    "INVALID_MSG": "CORRUPT_MESSAGE",  # librdkafka RD_KAFKA_RESP_ERR_INVALID_MSG = 2
    "CorruptRecordException": "CORRUPT_MESSAGE",
    # INVALID_RECORD (87): records the broker's validation rejected, although built by the rules
    "INVALID_RECORD": "INVALID_RECORD",
    "InvalidRecordException": "INVALID_RECORD",
}


def server_error_cases(h: History) -> list[dict]:
    """server-error: ops that completed ``fail`` or ``info`` with an error in ``SERVER_ERRORS``
    (docs/anomalies.md, liveness). One case per op, in completion order (an op without a
    completion at its invoke). A liveness report: fails a run only when the scenario's
    ``fail_on`` lists it.

    Example: {"anomaly": "server-error", "op": {op reference: op, invoke_index,
    complete_index, process, f, type, transactional_id}, "error": the history's error name,
    "protocol_error": e.g. "UNKNOWN_SERVER_ERROR", "time_ns": its completion (ns since the
    run started), "node_faults": the nemesis events on a broker from ``FAULT_LEAD_S`` before
    the op's invoke to its completion (``node_faults_near``; a broker killed or restarted
    under the request is another cause than a broker defect, which the known-bug catalogue
    weighs), "explanation"}.
    """
    ops = h.ops
    if ops.is_empty():
        return []
    hit = (
        ops.filter(pl.col("type").is_in(["fail", "info"]) & pl.col("error").is_in(list(SERVER_ERRORS)))
        .with_columns(t=pl.coalesce("complete_time", "invoke_time"))
        .sort("t", "op")
    )
    out = []
    for op, err, t, t0 in hit.select("op", "error", "t", "invoke_time").iter_rows():
        ref = h.op_ref(int(op))
        proto = SERVER_ERRORS[err]
        who = f"process {ref['process']}" + (f" ({ref['transactional_id']})" if ref["transactional_id"] else "")
        faults = node_faults_near(h, t0, t)
        out.append({
            "anomaly": "server-error",
            "op": ref,
            "error": err,
            "protocol_error": proto,
            "time_ns": t,
            "node_faults": faults,
            "explanation": (
                f"{ref['f']} op {op} of {who} completed {ref['type']} with {err} ({proto}) "
                f"{t / 1e9:.1f} s into the run: an error a correct broker never returns to a "
                "valid request"
                + (f"; broker fault(s) while it was in flight: {', '.join(fault_text(e) for e in faults)}"
                   if faults else "")
            ),
        })
    return out


#: how long before an op's invoke a broker fault still counts as "while it was in flight": a
#: request the client sent before the fault is answered (or cut) after it, and a restarted
#: broker takes seconds to load its logs
FAULT_LEAD_S = 5.0


def node_faults_near(h: History, invoke_ns, complete_ns) -> list[dict]:
    """The nemesis events that act on a broker (their value names a ``node``: kill, pause,
    start, lose-unsynced, clock-skew, ...) from ``FAULT_LEAD_S`` before ``invoke_ns`` to
    ``complete_ns``, at most 5: {"index", "f", "value"}."""
    lo = (invoke_ns if invoke_ns is not None else complete_ns) - int(FAULT_LEAD_S * 1e9)
    hi = complete_ns if complete_ns is not None else invoke_ns
    out = []
    for e in h.nemesis:
        t, v = e.get("time"), e.get("value")
        if isinstance(t, int) and lo <= t <= hi and isinstance(v, dict) and v.get("node") is not None:
            out.append({"index": e.get("index"), "f": e.get("f"), "value": v})
    return out[:5]


def fault_text(e: dict) -> str:
    v = e.get("value") or {}
    return f"{e.get('f')} node {v.get('node')}" + (f" ({v['result']})" if v.get("result") else "")
