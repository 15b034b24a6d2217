"""The app workload's pure parts: the scenario section, placeholders, match functions, the
workers it asks for (issue 22)."""
import json
import textwrap
from pathlib import Path

import pytest

from harness.run.scenario import ScenarioError, load_scenario
from harness.workers.app_instance import write_client_properties
from harness.workers.app_match import compile_match
from harness.workloads.app import App, AppSpec, placeholders_in
from harness.workloads.base import WorkerSpec

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, app_yaml: str, output: str = "") -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(f"""\
        name: mine
        workload:
          name: app
          app:
        {textwrap.indent(textwrap.dedent(app_yaml), '    ')}
        """) + output)
    return p


def test_shipped_scenario_loads_and_runs_from_its_folder():
    scn = load_scenario(ROOT / "scenarios" / "app-copy-service.yaml")
    assert scn.workload.name == "app" and scn.workload.app.instances == 3
    assert scn.workload.app.cwd == str((ROOT / "scenarios").resolve())


def test_unknown_placeholder_is_an_error_at_load(tmp_path):
    p = write(tmp_path, 'command: ["python", "svc.py", "--id", "{instanse}"]')
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    assert "unknown placeholder {instanse}" in str(e.value) and "{instance}" in str(e.value)


def test_command_or_pyspark_exactly_one(tmp_path):
    with pytest.raises(ScenarioError, match="exactly one of command"):
        load_scenario(write(tmp_path, "instances: 2"))


def test_bad_match_is_an_error_at_load(tmp_path):
    p = write(tmp_path, 'command: ["x"]', "  output: {match: {jsn: id}}\n")
    with pytest.raises(ScenarioError, match="match"):
        load_scenario(p)


def test_same_topic_in_and_out_is_an_error(tmp_path):
    p = write(tmp_path, 'command: ["x"]', "  output: {topics: [in]}\n")
    with pytest.raises(ScenarioError, match="both input and output"):
        load_scenario(p)


def test_placeholders_filled_per_instance(tmp_path):
    spec = AppSpec.model_validate({"app": {"instances": 2, "cwd": str(tmp_path), "command": [
        "{python}", "svc.py", "--bootstrap", "{bootstrap}", "--tid", "{transactional_id}", "--n", "{instances}",
        "--props", "{client_properties}", "{{literal}}"], "env": {"WORK": "{work_dir}"}}})
    w = App(spec, "198.18.0.11:9092", seed=1)
    w.prepare(tmp_path / "run")
    apps = [s for s in w.writers() if s.role == "app"]
    assert [s.name for s in apps] == ["app-0", "app-1"]
    argv = apps[1].cfg["argv"]
    assert argv[2:] == ["--bootstrap", "198.18.0.11:9092", "--tid", "eosc-app-1", "--n", "2", "--props",
                        str(tmp_path / "run" / "app" / "1" / "client.properties"), "{literal}"]
    assert apps[1].cfg["env"] == {"WORK": str(tmp_path / "run" / "app" / "1")}
    assert apps[1].cfg["cwd"] == str(tmp_path)
    # a restarted instance keeps its arguments (the same transactional.id)
    assert w.respawn(apps[1]).cfg["argv"] == argv
    producers = [s for s in w.writers() if s.role == "txn-producer"]
    assert len(producers) == 2 and producers[0].cfg["keys"] == [f"in/{p}" for p in range(6)]
    assert w.drain().cfg["output_keys"] == [f"out/{p}" for p in range(6)]
    assert w.meta()["app"]["semantics"] == "exactly-once"


def test_placeholders_in():
    assert placeholders_in("a{b}c{{d}}{e}") == ["b", "e"]
    with pytest.raises(ValueError):
        placeholders_in("{unclosed")


def test_match_functions(tmp_path):
    assert compile_match("value")(None, b"123") == 123
    assert compile_match("value")(None, b"abc") is None
    assert compile_match("key")(b"77", b"x") == 77
    assert compile_match({"json": "src.ids.1"})(None, json.dumps({"src": {"ids": [5, "42"]}}).encode()) == 42
    assert compile_match({"json": "id"})(None, b"not json") is None
    assert compile_match({"regex": r"id=(\d+)"})(None, b"x id=9 y") == 9
    (tmp_path / "mymatch.py").write_text("def f(key, value):\n    return int(value) // 10\n")
    assert compile_match({"python": "mymatch:f"}, str(tmp_path))(None, b"120") == 12
    (tmp_path / "boom.py").write_text("def f(key, value):\n    raise KeyError('x')\n")
    assert compile_match({"python": "boom:f"}, str(tmp_path))(None, b"1") is None


def test_client_properties_file(tmp_path):
    p = write_client_properties(tmp_path / "a" / "client.properties", "h:1", {"security.protocol": "SASL_SSL"})
    assert p.read_text() == "bootstrap.servers=h:1\nsecurity.protocol=SASL_SSL\n"
    assert p.stat().st_mode & 0o077 == 0


def test_init_writes_a_runnable_starter_and_never_overwrites(tmp_path):
    from typer.testing import CliRunner

    from harness.cli.main import app as cli

    r = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert r.exit_code == 0, r.output
    scn = load_scenario(tmp_path / "eos-chaos.yaml")
    assert scn.workload.name == "app" and scn.workload.app.cwd == str(tmp_path.resolve())
    assert (tmp_path / "copy_service.py").read_text().startswith('"""An exactly-once consume-transform-produce')
    assert "eos_run" in (tmp_path / "EOS-CHAOS.md").read_text()
    again = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert again.exit_code == 2 and "exist" in again.output
    own = CliRunner().invoke(cli, ["init", str(tmp_path / "mine"), "--command", "java -jar app.jar {bootstrap}"])
    assert own.exit_code == 0
    assert load_scenario(tmp_path / "mine" / "eos-chaos.yaml").workload.app.command == ["java", "-jar", "app.jar", "{bootstrap}"]
    assert not (tmp_path / "mine" / "copy_service.py").exists()


def test_examples_are_user_code():
    """The shipped examples never import the harness (they stand for a user's own code), and the
    Streams example offers both guarantees (its negative control is at_least_once)."""
    ex = ROOT / "harness" / "examples"
    for f in ("copy_service.py", "spark_jobs.py"):
        assert "harness" not in (ex / f).read_text().replace("kafka-eos-chaos", "").split('"""', 2)[2], f
    java = (ex / "streams" / "CopyStreams.java").read_text()
    assert "exactly_once_v2" in java and "at_least_once" in java and "harness" not in java.split("import", 1)[1]


def test_security_reaches_every_app_worker_and_the_catch_up(tmp_path):
    """On a secured external cluster the instances' client.properties, the readers, the drain
    and the catch-up wait all carry the cluster's security settings."""
    from harness.cluster.client_access import RunNames, cluster_workload

    spec = AppSpec.model_validate({"app": {"command": ["x", "{client_properties}"], "cwd": str(tmp_path)}})
    sec = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}
    w = cluster_workload(App, spec, "h:9093", 1, RunNames.for_run("r1"), sec)
    w.prepare(tmp_path / "run")
    specs = w.readers() + w.writers() + [w.drain()]
    assert all(s.cfg.get("security") == sec for s in specs), [s.name for s in specs if s.cfg.get("security") != sec]
    catch_up = w.secure(WorkerSpec("c", "app-catch-up", {}))
    assert catch_up.cfg["security"] == sec
    assert all(t.startswith("eosc-r1-") for t in w.in_topics() + w.out_topics())


def test_pyspark_parquet_sink_reads_its_folder_not_a_topic(tmp_path):
    """sink: parquet: no output topic; the output key of instance i is its sink folder
    app/<i>/sink in the run folder, beside its checkpoint; the readers, the drain and the
    catch-up wait read that folder; the driver gets --sink parquet --path <work_dir>/sink."""
    import harness.cluster.artifacts

    spec = AppSpec.model_validate({"app": {"pyspark": {"job": "spark_jobs:transform", "sink": "parquet"},
                                           "cwd": str(tmp_path)}, "output": {"semantics": "exactly-once"}})
    w = App(spec, "h:9092", seed=1)
    w.prepare(tmp_path / "run")
    run = (tmp_path / "run").resolve()
    assert w.out_topics() == [] and [t.name for t in w.topics()] == ["in"]
    assert w.output_keys() == ["app/0/sink"] and w.keys() == [f"in/{p}" for p in range(6)]
    assert w.output_dirs() == {"app/0/sink": str(run / "app" / "0" / "sink")}
    for cfg in [w.drain().cfg, *(r.cfg for r in w.readers())]:
        assert cfg["output_dirs"] == w.output_dirs() and cfg["output_keys"] == [] and "app/0/sink" not in cfg["keys"]
    assert w.meta()["app"]["output_keys"] == ["app/0/sink"]
    orig = harness.cluster.artifacts.spark_connector_jars
    harness.cluster.artifacts.spark_connector_jars = lambda *a: [Path("/jars/a.jar")]
    try:
        argv = w.writers()[-1].cfg["argv"]
    finally:
        harness.cluster.artifacts.spark_connector_jars = orig
    assert argv[argv.index("--sink"):argv.index("--sink") + 4] == ["--sink", "parquet", "--path",
                                                                    str(run / "app" / "0" / "sink")]
    assert "--output" not in argv and argv[argv.index("--checkpoint") + 1] == str(run / "app" / "0" / "checkpoint")


def test_pyspark_parquet_sink_with_output_topics_is_one_short_error(tmp_path):
    app = 'pyspark: {job: "spark_jobs:transform", sink: parquet}'
    for output in ("  output: {topics: [out]}\n", "  output: {partitions: 3, semantics: exactly-once}\n"):
        with pytest.raises(ScenarioError) as e:
            load_scenario(write(tmp_path, app, output))
        msg = str(e.value).splitlines()[-1]
        assert "sink: parquet writes files, not a topic" in msg and "remove output." in msg
    with pytest.raises(ScenarioError, match="sink"):
        load_scenario(write(tmp_path, 'pyspark: {job: "spark_jobs:transform", sink: delta}'))
    assert load_scenario(write(tmp_path, app, "  output: {match: value}\n")).workload.app.pyspark.sink == "parquet"


def test_shipped_parquet_scenario_and_its_negative_control():
    from harness.detect.zoo import load_entry

    scn = load_scenario(ROOT / "scenarios" / "app-pyspark-parquet.yaml")
    assert scn.workload.app.pyspark.sink == "parquet" and scn.workload.output.semantics == "exactly-once"
    assert {f.fault for f in scn.nemesis.all_faults()} >= {"kill-client", "kill", "pause"}
    mutant = load_entry(ROOT / "scenarios" / "zoo" / "app-pyspark-parquet-read-uncommitted.yaml")
    assert list(mutant.must_find) == ["eos-aborted-read"]
    ps = mutant.scenario.workload.app.pyspark
    assert (ps.sink, ps.isolation_level) == ("parquet", "read_uncommitted")
    assert load_scenario(ROOT / "scenarios" / "app-pyspark.yaml").workload.app.pyspark.sink == "kafka"


def test_app_spec_survives_a_dump_and_reload():
    """Suites and the run folder's scenario.yaml dump a scenario and read it again: a parquet
    sink's unset output topics stay unset, a topic sink's defaults stay its defaults."""
    for sink in ("parquet", "kafka"):
        spec = AppSpec.model_validate({"app": {"pyspark": {"job": "m:f", "sink": sink}}})
        again = AppSpec.model_validate(spec.model_dump())
        assert again == spec
        assert (again.output.topics, again.output.partitions) == ((None, None) if sink == "parquet" else (["out"], 6))


# -- input.preload and done: exit (issue 36) ---------------------------------------------------
def test_transactional_copier_scenario_preloads_and_runs_one_copier_per_partition():
    scn = load_scenario(ROOT / "scenarios" / "app-transactional-copier.yaml")
    w = scn.workload
    assert w.input.preload == 15000 and w.input.producers == 0 and not w.input.transactional
    assert w.app.done == "exit" and w.app.instances == w.input.partitions
    assert "{kafka_tools}" in w.app.command and "{instance}" in w.app.command
    app = App(w, "b:9092", seed=1)
    assert app.producers() == []  # a pure batch run: no live input
    specs = [app._producer(i, "preload", n) for i, n in enumerate((5000, 5000, 5000))]
    assert [s.name for s in specs] == ["preload-0", "preload-1", "preload-2"]
    assert {s.role for s in specs} == {"idempotent-producer"} and specs[0].cfg["stop_after"] == 5000
    from harness.detect.zoo import load_entry

    for zoo in ("app-copier-fresh-txn-id", "control-app-transactional-copier"):
        assert load_entry(ROOT / "scenarios" / "zoo" / f"{zoo}.yaml").scenario.workload.input.preload == 15000


def test_no_live_input_needs_a_preload(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text('name: mine\nworkload: {name: app, input: {producers: 0}, app: {command: ["x"]}}\n')
    with pytest.raises(ScenarioError) as e:
        load_scenario(p)
    assert "producers: 0" in str(e.value) and "preload" in str(e.value)
    p.write_text(p.read_text().replace("{producers: 0}", "{producers: 0, preload: 100}"))
    assert load_scenario(p).workload.input.preload == 100


def test_live_input_after_a_preload_and_transactional_preload():
    spec = AppSpec.model_validate({"app": {"command": ["x"]}, "input": {"preload": 50, "producers": 2}})
    app = App(spec, "b:9092", seed=1)
    assert [p.name for p in app.producers()] == ["producer-0", "producer-1"]
    pre = app._producer(0, "preload", 25)
    assert pre.role == "txn-producer" and pre.cfg["stop_after"] == 25
    assert pre.cfg["transactional_id"].endswith("eosc-preload-0")
    assert app.producers()[0].cfg["transactional_id"].endswith("eosc-in-0")
    assert "stop_after" not in app.producers()[0].cfg


def test_the_copy_services_watchdog_ends_a_stuck_transactional_call(tmp_path):
    """A call that outlives its bound (here 1 s) ends the process with exit code 3 and the line
    harness.run.client_events reads as send-offsets-stuck (librdkafka#5511); a call that
    returns in time does not."""
    import subprocess
    import sys

    from harness.run.client_events import scan_client_logs

    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from copy_service import CallWatch; "
            "w = CallWatch(1, 1000); w('commit_transaction', time.sleep, 0.2); print('returned', flush=True); "
            "w('send_offsets_to_transaction', time.sleep, 30)")
    p = subprocess.run([sys.executable, "-c", code, str(ROOT / "harness" / "examples")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3 and p.stdout == "returned\n", (p.returncode, p.stdout, p.stderr)
    (tmp_path / "app-0.log").write_text(p.stderr)
    ev = scan_client_logs(tmp_path)["send-offsets-stuck"]
    assert ev["count"] == 1 and "transaction.timeout.ms 1000; librdkafka " in ev["first"], ev
