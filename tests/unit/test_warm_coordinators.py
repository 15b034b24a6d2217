"""ClusterService.warm_coordinators (harness.cluster.service): before the load, the brokers'
__transaction_state and __consumer_offsets exist and every partition has a leader and enough
replicas in sync to write; a failure is one problem line and the run goes on. The agent is a
stand-in here (pure code: what is asked and how answers are judged); the real path runs in
every integration test's cluster start (the lookups in a one-shot process, ``_warm``,
stood in for here too)."""
from __future__ import annotations

from harness.cluster.service import ClusterService


class Backend:
    def __init__(self, nodes: int):
        self.nodes = nodes

    def node_ids(self):
        return list(range(1, self.nodes + 1))


class Agent:
    def __init__(self, warm: dict, isr: int, nodes: int = 3):
        self.warm, self.isr, self.nodes, self.asked = warm, isr, nodes, []

    def request(self, cmd, timeout=10.0, **args):
        self.asked.append((cmd, args.get("topics")))
        parts = {str(p): {"leader": 1, "replicas": [1, 2, 3], "isr": list(range(1, self.isr + 1))} for p in range(3)}
        return {"brokers": list(range(1, self.nodes + 1)), "controller": 1,
                "topics": {t: {"error": None, "partitions": parts} for t in args.get("topics") or []}}


def _service(agent: Agent, nodes: int = 3) -> ClusterService:
    s = ClusterService(Backend(nodes), "/tmp")
    s.agent = agent

    def warm(timeout):
        agent.asked.append(("warm", None))
        return agent.warm

    s._warm = warm
    return s


def test_a_warm_cluster_is_no_problem_and_both_internal_topics_are_waited_for():
    agent = Agent({"transactions": "ok", "groups": "asked"}, isr=2)
    assert _service(agent).warm_coordinators({}, timeout=2) == []
    assert ("warm", None) in agent.asked
    asked = {t for c, ts in agent.asked if c == "describe" for t in ts}
    assert asked == {"__transaction_state", "__consumer_offsets"}


def test_an_isr_below_the_transaction_logs_min_isr_is_waited_for_then_one_problem():
    # ISR 1 < transaction.state.log.min.isr 2: InitProducerId would fail NOT_ENOUGH_REPLICAS
    problems = _service(Agent({"transactions": "ok", "groups": "asked"}, isr=1)).warm_coordinators({}, timeout=1)
    assert len(problems) == 1 and problems[0].startswith("coordinator warm-up: WaitTimeout")
    assert "__transaction_state and __consumer_offsets" in problems[0]


def test_the_scenarios_broker_overrides_lower_what_is_waited_for():
    low = {"transaction.state.log.min.isr": "1", "min.insync.replicas": "1"}
    assert _service(Agent({"transactions": "ok", "groups": "asked"}, isr=1)).warm_coordinators(low, timeout=1) == []
    # one node: one replica is all there is
    assert _service(Agent({"transactions": "ok", "groups": "asked"}, isr=1, nodes=1), nodes=1).warm_coordinators({}, timeout=1) == []


def test_an_init_that_failed_is_one_line_naming_it():
    problems = _service(Agent({"transactions": "KafkaException: _TIMED_OUT", "groups": "asked"}, isr=2)).warm_coordinators({}, timeout=1)
    assert problems == ["coordinator warm-up: transactions: KafkaException: _TIMED_OUT"]
