"""Two app runs that used to be judged as if nothing were wrong (issue 36), with real worker
processes started by the real pool on this machine (harness.run.pool on the local host):

* a batch app (``done: exit``) whose instances did not all exit 0: the verdict is unknown, its
  reason naming each unfinished instance and its last exit code (not valid as if it completed);
* every input producer crashing at start: the run stops with one line once the instances have
  started, or, when they crashed later, the verdict's reason says so; either with the crash's
  first lines from logs/producer-*.log and where they are (not only "nothing to judge")."""
import sys
import time
from pathlib import Path

import pytest

from checkers import check, load_history
from checkers.synthetic.build import HistoryBuilder
from harness.cluster.namespaces import LOCAL
from harness.run.history_writer import HistoryWriter
from harness.run.pool import Pool
from harness.workloads.app import App, AppError, AppSpec, start_failures
from harness.workloads.app_input_crash import crash_excerpt, input_crash

APP = {"input_keys": ["in/0"], "output_keys": ["out/0"], "semantics": "exactly-once", "order": "none",
       "lag_bound_s": None, "drain_complete": True, "caught_up": True}
# instance 0 finishes (exit 0), 1 fails (exit 3; restart: never keeps it down), 2 never ends
BATCH_CHILD = ("import sys, time; i = int(sys.argv[1]); time.sleep(0.5); "
               "time.sleep(60 if i == 2 else 0); sys.exit(0 if i == 0 else 3)")


def _pool(tmp_path: Path) -> tuple[Pool, HistoryWriter]:
    (tmp_path / "logs").mkdir(exist_ok=True)
    history = HistoryWriter(tmp_path / "history.jsonl")
    return Pool(LOCAL, history, tmp_path / "logs"), history


def _said(pool: Pool, worker: str, key: str) -> bool:
    return any(key in c for c in pool.workers[worker].control if isinstance(c, dict))


def _copied_once() -> list[dict]:
    """A history in which the one committed input (1, in/0@0) reached the output once."""
    b = HistoryBuilder()
    b.txn(0, [("in/0", 1, 0)], tid="p")
    b.assign(1, ["in/0", "out/0"])
    b.poll(1, {"in/0": [(0, 1)]}, final=True)
    b.invoke(1, "app-poll", [["poll"]], {"final": True})
    b.complete(1, "ok", [["poll", {"out/0": [[0, 1]]}]], {"final": True})
    return b.events


def test_a_batch_whose_instances_did_not_all_exit_0_is_unknown_with_their_exit_codes(tmp_path):
    spec = AppSpec.model_validate({"app": {"instances": 3, "done": "exit", "restart": "never", "startup_s": 0.2,
                                           "stop_grace_s": 1, "cwd": str(tmp_path),
                                           "command": [sys.executable, "-c", BATCH_CHILD, "{instance}"]}})
    w = App(spec, "127.0.0.1:1", seed=1)
    w.prepare(tmp_path)
    pool, history = _pool(tmp_path)
    try:
        for s in w.writers():
            if s.role == "app":
                pool.spawn(s)
        deadline = time.monotonic() + 30  # until instance 0 exited 0 and instance 1 exited 3 (a loaded machine)
        while not (_said(pool, "app-0", "app_done") and _said(pool, "app-1", "app_exit")) and time.monotonic() < deadline:
            time.sleep(0.1)
        problems = w.await_done(pool, 1.0)
    finally:
        pool.shutdown()
        history.close()
    assert problems and "app-1, app-2" in problems[0], problems
    batch = w.finish(tmp_path, None)["app"]["batch"]
    assert batch["done"] is False and batch["not_done"] == ["app-1", "app-2"], batch
    assert batch["last_exit"]["app-1"] == {"code": 3, "by": "self", "running": False, "worker": "app-1"}
    assert batch["last_exit"]["app-2"]["code"] is None and batch["last_exit"]["app-2"]["running"] is True

    h = load_history(_copied_once())
    assert check(h, meta={"app": APP}).valid is True  # the control: the same output, no batch meta
    v = check(h, meta={"app": dict(APP, batch=batch)})
    assert v.valid == "unknown", v
    why = next(r for r in v.unknown_reasons if "done: exit" in r)
    assert "app-1 had last exited with code 3" in why and "app-2 was still running" in why and "logs/app-1.log" in why, why
    # a finished batch stays valid
    assert check(h, meta={"app": dict(APP, batch={"done": True, "waited_s": 1.0, "not_done": []})}).valid is True


def test_an_instance_whose_restart_cannot_launch_is_reported(tmp_path):
    """The command launches once, removes itself and fails; the supervisor's restart then
    cannot launch it: the run's problems say which instance stayed down and why."""
    script = tmp_path / "app.sh"
    script.write_text("#!/bin/sh\nrm -f \"$0\"\nsleep 0.5\nexit 3\n")
    script.chmod(0o755)
    spec = AppSpec.model_validate({"app": {"instances": 1, "restart": "on-failure", "startup_s": 0.2,
                                           "stop_grace_s": 1, "cwd": str(tmp_path), "command": [str(script)]}})
    w = App(spec, "127.0.0.1:1", seed=1)
    w.prepare(tmp_path)
    pool, history = _pool(tmp_path)
    try:
        for s in w.writers():
            if s.role == "app":
                pool.spawn(s)
        deadline = time.monotonic() + 30
        while not _said(pool, "app-0", "app_failed") and time.monotonic() < deadline:
            time.sleep(0.1)
        problems = start_failures(pool)
    finally:
        pool.shutdown()
        history.close()
    assert len(problems) == 1 and problems[0].startswith("app instance app-0 could not be started again: "), problems
    assert "command not found" in problems[0] and "logs/app-0.log" in problems[0], problems


def test_input_producers_that_all_crash_at_start_are_named_in_the_verdict(tmp_path):
    # a producer property librdkafka does not know: each input producer dies constructing its client
    spec = AppSpec.model_validate({"input": {"producers": 2, "producer": {"no.such.property": "x"}},
                                   "app": {"command": [sys.executable, "-c", "pass"]}})
    w = App(spec, "127.0.0.1:1", seed=1)
    w.prepare(tmp_path)
    pool, history = _pool(tmp_path)
    names = [s.name for s in w.producers()]
    try:
        for s in w.producers():
            pool.spawn(s)
        deadline = time.monotonic() + 30
        while any(pool.workers[n].alive() for n in names) and time.monotonic() < deadline:
            time.sleep(0.1)
        crash = input_crash(pool, names, tmp_path / "logs")
    finally:
        pool.shutdown()
        history.close()
    assert crash is not None and sorted(crash["workers"]) == ["producer-0", "producer-1"], crash
    assert crash["logs"] == str(tmp_path / "logs" / "producer-*.log")
    first = crash["workers"]["producer-0"]
    assert first["code"] != 0 and any("no.such.property" in line for line in first["crash"]), first
    assert not any(line.startswith(("Traceback", "  File")) for line in first["crash"]), first  # no traceback

    v = check(tmp_path / "history.jsonl", meta={"app": dict(APP, input_crashed=crash)})
    assert v.valid == "unknown"
    why = v.unknown_reasons[0]  # first: the cause, before "nothing to judge"
    assert why.startswith("the input producers crashed before writing any input"), v.unknown_reasons
    assert "producer-0, producer-1 exited with code 1" in why and "no.such.property" in why and str(tmp_path / "logs") in why
    # without the harness's note the verdict said only that there was nothing to judge
    assert not any("producer" in r for r in check(tmp_path / "history.jsonl", meta={"app": APP}).unknown_reasons)


def test_input_producers_crashed_at_start_stop_the_run_with_one_line(tmp_path):
    # the same crash, seen when the instances have started: the run stops there, not at its end
    spec = AppSpec.model_validate({"input": {"producers": 2, "producer": {"no.such.property": "x"}},
                                   "app": {"startup_s": 5, "stop_grace_s": 1,
                                           "command": [sys.executable, "-c", "import time; time.sleep(60)"]}})
    w = App(spec, "127.0.0.1:1", seed=1)
    w.prepare(tmp_path)
    pool, history = _pool(tmp_path)
    try:
        for s in w.writers():
            pool.spawn(s)
        with pytest.raises(AppError) as err:
            w.check_started(pool)
    finally:
        pool.shutdown()
        history.close()
    msg = str(err.value)
    assert msg.startswith("the input producers crashed before writing any input, so the run is stopped: "), msg
    assert "producer-0, producer-1 exited with code 1" in msg and "no.such.property" in msg, msg
    assert str(tmp_path / "logs" / "producer-*.log") in msg and "Traceback" not in msg and "\n" not in msg


def test_a_running_producer_is_not_a_crash(tmp_path):
    spec = AppSpec.model_validate({"input": {"producers": 1}, "app": {"command": [sys.executable, "-c", "pass"]}})
    w = App(spec, "127.0.0.1:1", seed=1)
    pool, history = _pool(tmp_path)
    try:
        pool.spawn(w.producers()[0])
        time.sleep(1.5)  # no broker at 127.0.0.1:1: it keeps trying, alive
        assert input_crash(pool, ["producer-0"], tmp_path / "logs") is None
    finally:
        pool.shutdown()
        history.close()


def test_crash_excerpt_takes_the_exception_not_the_frames():
    log = ("[   0.101] starting\nTraceback (most recent call last):\n  File \"w.py\", line 3, in <module>\n"
           "    Producer(conf)\ncimpl.KafkaException: KafkaError{code=_INVALID_ARG,val=-186,"
           "str=\"No such configuration property: \\\"no.such.property\\\"\"}\n")
    assert crash_excerpt(log) == ['cimpl.KafkaException: KafkaError{code=_INVALID_ARG,val=-186,'
                                  'str="No such configuration property: \\"no.such.property\\""}']
    assert crash_excerpt("connecting\nERROR: bad config x\nbye\n") == ["ERROR: bad config x"]
    assert crash_excerpt("") == []
