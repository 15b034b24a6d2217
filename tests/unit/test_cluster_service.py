"""The cluster section of a scenario (backends), the external backend's command templates and
the service's teardown contract; no cluster."""
import pytest

from harness.cluster.external_backend import ExternalBackend, NodeCommandError
from harness.cluster.netns_backend import NetnsBackend
from harness.cluster.service import Backend, ClusterService, ServiceError
from harness.run.scenario import ExternalSpec, Scenario, ScenarioError, with_backend

EXT = {"bootstrap": "k1:9092,k2:9092,k3:9092"}
NODES = [{"id": i, "host": f"k{i}", "name": f"kafka-{i}"} for i in (1, 2, 3)]


def scenario(cluster: dict, faults=("kill-client",)) -> Scenario:
    return Scenario.model_validate({"name": "x", "cluster": cluster, "nemesis": {"faults": list(faults)}})


def error(cluster: dict, faults=("kill-client",)) -> str:
    with pytest.raises(ValueError) as exc:
        scenario(cluster, faults)
    return str(exc.value)


def test_netns_is_the_default_backend():
    assert scenario({}).cluster.backend == "netns"


def test_external_without_templates_offers_client_faults_only():
    ok = scenario({"backend": "external", "external": EXT}, ["kill-client", "pause-client", "zombie"])
    assert ok.cluster.external.bootstrap == EXT["bootstrap"]
    msg = error({"backend": "external", "external": EXT}, ["kill"])
    assert "cluster.external.commands.kill and .start" in msg and "(missing: kill, start)" in msg
    msg = error({"backend": "external", "external": dict(EXT, nodes=NODES, commands={"pause": "p {id}"})},
                ["pause"])
    assert "missing: resume" in msg
    msg = error({"backend": "external", "external": EXT}, ["partition"])
    assert "partition is not offered on the external backend" in msg and "iptables" in msg
    msg = error({"backend": "external", "external": EXT}, [{"fault": "toxic", "type": "latency"}])
    assert "advertise a listener at a toxiproxy proxy" in msg and "--backend netns or docker" in msg


def test_external_fields_are_checked_at_load():
    assert "needs cluster.external.bootstrap" in error({"backend": "external"})
    assert "read only with backend: external" in error({"external": EXT})
    assert "read only with backend: docker" in error({"backend": "external", "external": EXT, "docker": {}})
    assert "cannot be applied to an external cluster" in error(
        {"backend": "external", "external": EXT, "broker": {"a": "b"}})
    assert "commands need nodes" in error({"backend": "external", "external": dict(EXT, commands={"kill": "k"})})
    assert "placeholders are {id} {host} {name}" in error(
        {"backend": "external", "external": dict(EXT, nodes=NODES, commands={"kill": "kill {pid}"})})
    assert "only security settings" in error(
        {"backend": "external", "external": dict(EXT, client={"acks": "1"})})
    assert "lists 3" in error({"backend": "external", "nodes": 5, "external": dict(EXT, nodes=NODES)})
    full = scenario({"backend": "external", "external": dict(EXT, nodes=NODES, client={"security.protocol": "SSL"},
                                                            commands={"kill": "k {id}", "start": "s {id}"})}, ["kill"])
    assert full.cluster.nodes == 3


def test_with_backend_revalidates_in_one_line():
    smoke = scenario({}, ["kill"])
    assert with_backend(smoke, None) is smoke
    assert with_backend(smoke, "docker").cluster.backend == "docker"
    with pytest.raises(ScenarioError) as exc:
        with_backend(smoke, "external")
    assert "\n" not in str(exc.value) and "cluster.external.bootstrap" in str(exc.value)


def test_external_commands_fill_placeholders_and_report_failures(tmp_path):
    spec = ExternalSpec.model_validate(dict(EXT, nodes=NODES, commands={
        "kill": "echo killed {id} {host} {name} >> " + str(tmp_path / "out"), "start": "exit 3"}))
    backend = ExternalBackend(spec, tmp_path)
    assert isinstance(backend, Backend) and backend.network is None
    assert backend.node_ids() == [1, 2, 3]
    node = backend.node(2)
    assert node.kill() is True and not node.running()
    assert (tmp_path / "out").read_text() == "killed 2 k2 kafka-2\n"
    with pytest.raises(NodeCommandError, match="exited 3"):
        node.start()
    with pytest.raises(NodeCommandError, match="no pause command template"):
        node.pause()
    assert "exit 3" in (tmp_path / "commands.log").read_text()
    # teardown tries to leave the cluster as found, and says it could not
    assert backend.stop() == ["could not start external node n2: `exit 3` exited 3: "]


def test_names_with_shell_characters_are_quoted(tmp_path):
    spec = ExternalSpec.model_validate(dict(EXT, nodes=[{"id": 1, "host": "a; rm -rf /", "name": "x"}],
                                            commands={"kill": "ssh {host} kill"}))
    assert ExternalBackend(spec, tmp_path).node(1).command("kill") == "ssh 'a; rm -rf /' kill"


def test_toxiproxy_needs_a_test_network(tmp_path):
    service = ClusterService(ExternalBackend(ExternalSpec.model_validate(EXT), tmp_path), tmp_path, proxies=True)
    with pytest.raises(ServiceError, match="toxiproxy links need a test network"):
        service.start()


def test_netns_backend_knows_its_addresses_before_it_starts(tmp_path):
    from harness.cluster.artifacts import KafkaDist

    b = NetnsBackend(KafkaDist("4.3.1", tmp_path), tmp_path / "w", tmp_path / "l")
    assert isinstance(b, Backend)
    assert b.bootstrap == "198.18.0.11:9092,198.18.0.12:9092,198.18.0.13:9092"
    assert sorted(b.network.hosts) == ["c", "n1", "n2", "n3"]
    assert ClusterService(b, tmp_path).meta() == {"backend": "netns", "nodes": {
        "1": "198.18.0.11:9092", "2": "198.18.0.12:9092", "3": "198.18.0.13:9092"}}


def test_suite_backends_axis(tmp_path):
    from harness.detect.suite import SuiteError, expand, load_suite

    (tmp_path / "a.yaml").write_text("name: a\nnemesis: {faults: [kill]}\n")
    (tmp_path / "s.yaml").write_text("suite: s\nscenarios: [a.yaml]\nseeds: 1\nkafka_versions: [4.3.1]\n"
                                     "backends: [netns, docker]\n")
    cells = expand(load_suite(tmp_path / "s.yaml"), tmp_path)
    assert [c.id for c in cells] == ["a/s1/kafka-4.3.1", "a/s1/kafka-4.3.1/docker"]
    assert [c.scenario.cluster.backend for c in cells] == ["netns", "docker"]
    with pytest.raises(SuiteError, match="cluster.external.bootstrap"):
        expand(load_suite(tmp_path / "s.yaml"), tmp_path, backends=["external"])


def test_docker_backend_is_a_backend_before_it_has_a_network(tmp_path):
    from harness.cluster.docker_backend import DockerBackend
    from harness.run.scenario import ClusterSpec

    b = DockerBackend(ClusterSpec(backend="docker"), tmp_path / "w", tmp_path / "l", run_id="r1")
    assert isinstance(b, Backend)
    assert b.addresses() == {} and b.node_ids() == [1, 2, 3] and b.client_host is None


class _Freezer:
    """A container whose cgroup freezer refuses ``busy`` times, as docker's does right after a start."""

    def __init__(self, busy: int, error: str = "OCI runtime pause failed: unable to freeze: unknown"):
        self.busy, self.error, self.calls = busy, error, 0

    def pause(self) -> bool:
        self.calls += 1
        if self.calls <= self.busy:
            raise RuntimeError(self.error)
        return True


def test_docker_pause_retries_while_the_freezer_is_busy():
    from harness.cluster.docker_backend import DockerNode

    c = _Freezer(busy=2)
    assert DockerNode(1, c).pause(wait_s=0) is True and c.calls == 3
    with pytest.raises(RuntimeError, match="unable to freeze"):
        DockerNode(1, _Freezer(busy=5)).pause(tries=3, wait_s=0)
    other = _Freezer(busy=1, error="No such container")
    with pytest.raises(RuntimeError, match="No such container"):
        DockerNode(1, other).pause(wait_s=0)
    assert other.calls == 1  # only the freezer's refusal is retried


class _Node:
    def __init__(self, paused=False, up=True):
        self.paused, self.up, self.calls = paused, up, []

    def resume(self):
        self.calls.append("resume")
        self.paused = False

    def running(self):
        return self.up

    def start(self):
        self.calls.append("start")
        self.up = True


def test_heal_nodes_resumes_then_starts_in_node_order():
    from harness.cluster.service import heal_nodes

    nodes = {3: _Node(up=False), 1: _Node(paused=True), 2: _Node(paused=True, up=False), 4: _Node()}
    assert heal_nodes(nodes) == ["resumed n1", "resumed n2", "started n2", "started n3"]
    assert nodes[2].calls == ["resume", "start"] and nodes[4].calls == []
    assert heal_nodes(nodes) == []


def test_external_heal_starts_what_the_run_killed(tmp_path):
    b = ExternalBackend(ExternalSpec(bootstrap="k:1", nodes=NODES, commands={"kill": "true", "start": "true"}),
                        tmp_path)
    b.node(2).kill()
    assert b.heal() == ["started n2"] and b.node(2).running() and b.heal() == []
