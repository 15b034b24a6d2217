#!/usr/bin/env python3
"""librdkafka#5511 and #5456 on librdkafka's mock cluster: ``send_offsets_to_transaction()``
blocks past its timeout when the cached group coordinator went away. No Kafka, no root:
``pip install confluent-kafka`` and this file next to mock_repro.py.

The issues (both open upstream when this was written):
  - confluentinc/librdkafka#5456: ``creq_ts_timeout`` of a coordinator request
    (src/rdkafka_coord.c, rd_kafka_coord_req) is never checked, so the TxnOffsetCommit step of
    ``send_offsets_to_transaction`` waits for its group coordinator however long it takes
    (the API call itself waits with RD_POLL_INFINITE, rdkafka_txnmgr.c).
  - confluentinc/librdkafka#5511 (fix PR #5512): since 2.10.0 (f7c42733, #4557) a broker missing
    from a Metadata response is decommissioned. When it is the cached group coordinator,
    rd_kafka_coord_req_fsm waits for a state change of that handle, which never comes, so no
    FindCoordinator is sent even when another broker is the coordinator now.

Each try: 3 mock brokers (ids 1..3), transaction coordinator broker 1, group G's coordinator
broker 2, topic T (1 partition) led by broker 1. A transactional producer commits transaction 0
with ``send_offsets_to_transaction`` for G (broker 2 becomes its cached coordinator of G, as in
a service that has committed before), begins transaction 1, produces one record (flushed), then:

  ``timeout`` (#5456's test): broker 2 down (rd_kafka_mock_broker_set_down). The mock leaves a
      down broker out of its Metadata responses (as KRaft leaves out a fenced broker), so the
      producer decommissions its handle of broker 2 here too; G's coordinator stays broker 2.
  ``decommission`` (#5511): broker 2 decommissioned (rd_kafka_mock_broker_decommission), G's
      coordinator moved to broker 3 (rd_kafka_mock_coordinator_set): a FindCoordinator would
      succeed.
  ``unreachable`` (#5456 without a decommission): broker 2 stays up and in Metadata but is
      advertised at a port that refuses connections (rd_kafka_mock_broker_set_host_port), so the
      producer's handle lives and keeps failing to connect.
  ``coordinator-up`` (control): nothing.
  ``decommission-uncached`` (control): as ``decommission`` without transaction 0 (no cached
      coordinator of G).

After the fault the producer refreshes its metadata (list_topics) and, where broker 2 left the
Metadata, the try waits for the producer's "Decommissioning this broker" line for broker 2.
Then ``send_offsets_to_transaction(offsets, group_metadata, timeout=2)`` runs in a daemon
thread (group metadata of a consumer of G that never joined: the mock's TxnOffsetCommit checks
no member). Reproduced when it has not returned within ``--bound`` seconds (default 20); the
documented outcome is an error (``_TIMED_OUT``) after about 2 s, or success when a coordinator
is reachable. Each try runs in its own process, which prints one JSON line and ends with
os._exit (a blocked call's handle cannot be destroyed); the parent kills a process that
overruns the bound by 60 s. Functions used, all from rdkafka_mock.h: those of mock_repro.py's
MockCluster plus rd_kafka_mock_broker_decommission and rd_kafka_mock_broker_set_host_port.

Usage: ``python mock_5511.py [--tries N] [--variant V ...] [--bound S] [--parallel] [--json]
[--debug-log FILE] [--lib PATH]``. One line per try and a summary (``--json``: one object per
try, then ``{"summary": ...}``). Exit 0 when every try ran, 2 on a setup or argument error.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

try:  # in the repository
    from harness.findings.mock_repro import MockCluster, SetupError, bundled_librdkafka
except ImportError:  # standalone, next to mock_repro.py
    from mock_repro import MockCluster, SetupError, bundled_librdkafka

VARIANTS = ("timeout", "decommission", "unreachable", "coordinator-up", "decommission-uncached")
CONTROLS = ("coordinator-up", "decommission-uncached")
CALL_TIMEOUT_S = 2          # the timeout given to send_offsets_to_transaction (#5456's test)
KILL_MARGIN_S = 60          # setup time a try's process may take on top of --bound
DECOMMISSIONED = r"/2: Decommissioning this broker"   # rdkafka_broker.c, the handle of broker 2
REQUERY = "querying for new coordinator"               # rdkafka_coord.c, rd_kafka_coord_req_fsm


class MockCluster5511(MockCluster):
    """mock_repro.MockCluster plus rd_kafka_mock_broker_decommission (since 2.10.0) and
    rd_kafka_mock_broker_set_host_port (rdkafka_mock.h). Raises SetupError when the library
    lacks them."""

    def __init__(self, lib: str, brokers: int):
        super().__init__(lib, brokers)
        vp, i32 = ctypes.c_void_p, ctypes.c_int32
        for name, res, args in (("rd_kafka_mock_broker_decommission", ctypes.c_int, [vp, i32]),
                                ("rd_kafka_mock_broker_set_host_port", None, [vp, i32, ctypes.c_char_p, ctypes.c_int])):
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                self.__exit__()
                raise SetupError(f"{lib} does not export {name} (librdkafka before 2.10?)") from None
            fn.restype, fn.argtypes = res, args

    def decommission(self, broker: int) -> None:
        """Remove ``broker``: its sockets close, it leaves Metadata, its partitions and
        coordinator assignments move to the remaining brokers."""
        self._ok("rd_kafka_mock_broker_decommission", self.lib.rd_kafka_mock_broker_decommission(self.mc, broker))

    def advertise(self, broker: int, host: str, port: int) -> None:
        """Metadata and FindCoordinator give ``host:port`` for ``broker`` (its listener is unchanged)."""
        self.lib.rd_kafka_mock_broker_set_host_port(self.mc, broker, host.encode(), port)


class _LogLines(logging.Handler):
    """The producer's librdkafka log lines as a poll thread serves them (also while the call
    blocks), stamped with the wall clock on arrival; also appended to ``path``, prefixed."""

    def __init__(self, path: str | None, prefix: str):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.prefix = prefix
        self.file = open(path, "a", buffering=1) if path else None  # noqa: SIM115 (open until os._exit)

    def emit(self, record: logging.LogRecord) -> None:
        line = f"{time.time():.3f} {record.getMessage()}"
        self.lines.append(line)
        if self.file is not None:
            self.file.write(f"{self.prefix} {line}\n")

    def wait_for(self, pattern: str, seconds: float, start: int) -> float | None:
        """Seconds until a line from index ``start`` on matched ``pattern`` (a regex), None
        when none did within ``seconds``."""
        t0 = time.monotonic()
        while True:
            if any(re.search(pattern, x) for x in self.lines[start:]):
                return round(time.monotonic() - t0, 3)
            if time.monotonic() - t0 > seconds:
                return None
            time.sleep(0.05)


def one_try(lib: str, i: int, variant: str, nonce: str, bound: float, debug_log: str | None = None) -> dict:
    """One try of ``variant`` (VARIANTS). Returns the try's dict: try, variant,
    coordinator_cached (transaction 0 ran), broker2_decommissioned_s (seconds from the fault
    to the producer's decommission line for broker 2, None when it logged none), returned,
    elapsed_s (the call's wall time; ``bound`` when it did not return), call_error (KafkaError
    name, None on success), coordinator_queries (rd_kafka_coord_req_fsm's "querying for new
    coordinator" lines while the call ran), bound_s, reproduced. Leaves the producer and the
    mock cluster alive (the caller ends the process). Raises SetupError or KafkaException when
    the setup fails."""
    name = f"m5511-{nonce}-{i}"
    topic, group, tid = name, f"{name}-g", f"{name}-txn"
    cached = variant != "decommission-uncached"
    lines = _LogLines(debug_log, f"[{variant} {i}]")
    log = logging.getLogger(name)
    log.propagate = False
    log.setLevel(logging.DEBUG)
    log.addHandler(lines)
    mc = MockCluster5511(lib, 3)
    mc.topic(topic, 1, 1)
    mc.leader(topic, 0, 1)
    mc.coordinator("transaction", tid, 1)
    mc.coordinator("group", group, 2)
    # "broker" debug for the decommission and re-query lines; metadata.max.age.ms stays at its
    # default (900 s), which is how long a cached coordinator lives (rd_kafka_coord_cache_expire)
    conf = {"bootstrap.servers": mc.bootstrap, "transactional.id": tid, "linger.ms": 0,
            "transaction.timeout.ms": 60000, "logger": log,
            "debug": "broker,eos,metadata,protocol" if debug_log else "broker"}
    c = Consumer({"bootstrap.servers": mc.bootstrap, "group.id": group, "enable.auto.commit": False})
    group_metadata = c.consumer_group_metadata()    # a copy, valid after close
    c.close()
    p = Producer(conf)

    def serve() -> None:      # log lines arrive through poll(); the call does not poll
        while True:
            p.poll(0.1)

    threading.Thread(target=serve, daemon=True, name="poll").start()
    p.init_transactions(10)
    if cached:                # transaction 0: broker 2 becomes the cached coordinator of G
        p.begin_transaction()
        p.produce(topic, b"t0", partition=0)
        p.flush(10)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], group_metadata, 10)
        p.commit_transaction(10)
    p.begin_transaction()
    p.produce(topic, b"t1", partition=0)
    p.flush(10)
    mark = len(lines.lines)
    refusing = None
    if variant == "timeout":
        mc.down(2)
    elif variant.startswith("decommission"):
        mc.decommission(2)
        mc.coordinator("group", group, 3)
    elif variant == "unreachable":
        refusing = socket.socket()                  # bound, not listening: connections refused
        refusing.bind(("127.0.0.1", 0))
        mc.advertise(2, "127.0.0.1", refusing.getsockname()[1])
    p.list_topics(timeout=5)  # a Metadata refresh in every variant (a closed connection also makes one)
    # where broker 2 left the Metadata, wait until the producer has decommissioned its handle
    gone = variant == "timeout" or variant.startswith("decommission")
    res: dict = {"try": i, "variant": variant, "coordinator_cached": cached,
                 "broker2_decommissioned_s": lines.wait_for(DECOMMISSIONED, 10 if gone else 1, mark)}
    time.sleep(0.5)
    outcome: dict = {}

    def call() -> None:
        t = time.monotonic()
        try:
            p.send_offsets_to_transaction([TopicPartition(topic, 0, 2)], group_metadata, CALL_TIMEOUT_S)
            outcome["error"] = None
        except KafkaException as exc:
            outcome["error"] = exc.args[0].name()
        outcome["elapsed_s"] = round(time.monotonic() - t, 3)

    start = len(lines.lines)
    th = threading.Thread(target=call, daemon=True, name="send_offsets_to_transaction")
    th.start()
    th.join(bound)
    res.update({"returned": not th.is_alive(), "elapsed_s": outcome.get("elapsed_s", bound),
                "call_error": outcome.get("error"),
                "coordinator_queries": sum(REQUERY in x for x in lines.lines[start:]), "bound_s": bound})
    res["reproduced"] = not res["returned"]
    return res


def verdict(res: dict) -> str:
    """One line for a try's dict (one_try)."""
    gone = res["broker2_decommissioned_s"]
    note = (f"; the producer decommissioned broker 2 ({gone:g} s after the fault)" if gone is not None
            else "; broker 2 not decommissioned")
    note += f", {res['coordinator_queries']} coordinator re-queries during the call"
    if res["reproduced"]:
        return (f"REPRODUCED: send_offsets_to_transaction(timeout={CALL_TIMEOUT_S}) had not returned after "
                f"{res['bound_s']:g} s{note}")
    how = f"error {res['call_error']}" if res["call_error"] else "success"
    return f"not reproduced: returned after {res['elapsed_s']:.2f} s with {how}{note}"


def _child(args) -> None:
    """``--one-try``: one try, its JSON line on stdout, then os._exit (a blocked call's threads
    would keep the process alive and destroying its handle would block)."""
    try:
        res = one_try(args.lib, args.try_index, args.one_try, args.nonce, args.bound, args.debug_log)
    except (SetupError, KafkaException) as exc:
        res = {"try": args.try_index, "variant": args.one_try, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(res), flush=True)
    sys.stderr.flush()
    os._exit(0)


def run_tries(variants: list[str], tries: int, bound: float, lib: str, parallel: bool = False,
              debug_log: str | None = None, on_result=None) -> list[dict]:
    """Every (variant, try) in its own process (this file with ``--one-try``), one after the
    other or all at once (``parallel``). Returns their dicts in (variant, try) order: one_try's,
    or {"try", "variant", "error"} when the setup failed, the process failed or it overran
    ``bound`` + 60 s (then it is killed). ``on_result(res)`` is called as each one is known."""
    nonce = uuid.uuid4().hex[:6]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}

    def start(v: str, i: int) -> subprocess.Popen:
        argv = [sys.executable, os.path.abspath(__file__), "--one-try", v, "--try-index", str(i),
                "--nonce", nonce, "--bound", str(bound), "--lib", lib]
        return subprocess.Popen(argv + (["--debug-log", debug_log] if debug_log else []), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(proc: subprocess.Popen, v: str, i: int) -> dict:
        try:
            out, err = proc.communicate(timeout=bound + KILL_MARGIN_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            res = {"try": i, "variant": v, "error": f"the try's process ran over {bound + KILL_MARGIN_S:g} s; killed"}
        else:
            found = [x for x in out.splitlines() if x.startswith("{")]
            if proc.returncode == 0 and found:
                res = json.loads(found[-1])
            else:
                tail = (err.strip().splitlines() or ["no output"])[-1]
                res = {"try": i, "variant": v, "error": f"the try's process exited {proc.returncode}: {tail}"}
        if on_result is not None:
            on_result(res)
        return res

    jobs = [(v, i) for v in variants for i in range(tries)]
    if parallel:
        procs = [(start(v, i), v, i) for v, i in jobs]
        return [finish(*job) for job in procs]
    return [finish(start(v, i), v, i) for v, i in jobs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tries", type=int, default=3, help="tries per variant (default 3)")
    ap.add_argument("--variant", action="append",
                    help=f"{', '.join(VARIANTS)}; repeatable; default all")
    ap.add_argument("--bound", type=float, default=20.0,
                    help="seconds the call may take before the try counts it as blocked (default 20)")
    ap.add_argument("--parallel", action="store_true", help="run all tries at once, each in its own process")
    ap.add_argument("--lib", help="librdkafka shared library (default: the one bundled with confluent-kafka)")
    ap.add_argument("--json", action="store_true", help="one JSON object per try, then a summary")
    ap.add_argument("--debug-log", help="append the producers' debug lines (broker,eos,metadata,protocol) to this file")
    ap.add_argument("--one-try", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("--try-index", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--nonce", default="x", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_try:
        _child(args)
    variants = args.variant or list(VARIANTS)
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        ap.error(f"unknown variant {bad}; known: {', '.join(VARIANTS)}")
    if args.tries < 1:
        ap.error("--tries must be >= 1")
    if not CALL_TIMEOUT_S < args.bound <= 3600:
        ap.error(f"--bound must be more than the call's timeout ({CALL_TIMEOUT_S} s) and at most 3600")
    try:
        lib = args.lib or bundled_librdkafka()
        MockCluster5511(lib, 1).__exit__()     # fail early, in one line, on an unusable library
    except SetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ck = confluent_kafka.version()            # a str in 2.16, a (str, int) tuple before
    versions = {"confluent_kafka": ck if isinstance(ck, str) else ck[0],
                "librdkafka": confluent_kafka.libversion()[0], "lib": lib}
    summary = {v: {"tries": 0, "reproduced": 0, "errors": 0} for v in dict.fromkeys(variants)}
    t0 = time.monotonic()

    def show(res: dict) -> None:
        s = summary[res["variant"]]
        s["tries"] += 1
        s["reproduced"] += bool(res.get("reproduced"))
        s["errors"] += "error" in res
        if args.json:
            print(json.dumps(res), flush=True)
        else:
            print(f"{res['variant']} try {res['try']}: {res.get('error') or verdict(res)}", flush=True)

    run_tries(list(summary), args.tries, args.bound, lib, args.parallel, args.debug_log, show)
    wall = round(time.monotonic() - t0, 1)
    if args.json:
        print(json.dumps({"summary": summary, "versions": versions, "wall_s": wall}), flush=True)
    else:
        print(f"confluent-kafka {versions['confluent_kafka']}, librdkafka {versions['librdkafka']} ({lib}); {wall} s")
        for v, s in summary.items():
            print(f"{v}{' (control)' if v in CONTROLS else ''}: reproduced {s['reproduced']} of {s['tries']} tries"
                  + (f" ({s['errors']} errors)" if s["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
