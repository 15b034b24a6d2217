"""PairedFault bookkeeping on a recording stand-in for the cluster (pure code: no processes)."""
from nemesis.core import NemesisContext
from nemesis.process import KillNemesis


class Node:
    def __init__(self, log, i):
        self.log, self.i = log, i

    def kill(self):
        self.log.append(("kill", self.i))
        return True

    def start(self):
        self.log.append(("start", self.i))
        return 100 + self.i


class Cluster:
    def __init__(self):
        self.log = []

    def node_ids(self):
        return [1, 2, 3]

    def node(self, i):
        return Node(self.log, i)


class Admin:
    def request(self, cmd, timeout=10.0, **args):
        return {"brokers": [1, 2, 3], "controller": 3, "topics": {}}


def test_role_resolved_at_start_is_undone_on_the_same_node_even_if_the_role_moved():
    c = Cluster()
    k = KillNemesis(NemesisContext(cluster=c, admin=Admin()))
    done = k.invoke({"f": "kill", "value": {"role": "controller"}})
    assert done["value"] == {"role": "controller", "node": 3, "result": "killed"}
    k.ctx.admin = None  # the end op must not need the admin API: it remembers node 3
    end = k.invoke({"f": "start", "value": {"role": "controller"}})
    assert end["value"]["node"] == 3 and end["value"]["result"] == "started pid 103"
    assert c.log == [("kill", 3), ("start", 3)]


def test_teardown_undoes_what_is_still_begun_and_only_that():
    c = Cluster()
    k = KillNemesis(NemesisContext(cluster=c))
    k.invoke({"f": "kill", "value": {"node": 1}})
    k.invoke({"f": "kill", "value": {"node": 2}})
    k.invoke({"f": "start", "value": {"node": 1}})
    assert k.teardown() == []
    assert c.log == [("kill", 1), ("kill", 2), ("start", 1), ("start", 2)]
    assert k.teardown() == [] and len(c.log) == 4
