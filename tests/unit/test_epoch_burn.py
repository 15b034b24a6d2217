"""txn-queue's ``epoch_burn`` option (harness/workloads/txn_queue.py): epoch-burn workers on
the Java client, each with keys of its own, checked when the scenario loads; and the Java
worker's main switch knows the role."""
import pytest
from pydantic import ValidationError

from harness.run.scenario import Scenario
from harness.workers import java
from harness.workers.configs import check_config
from harness.workloads import WORKLOADS, TxnQueueSpec

BOOT = "198.18.0.11:9092"


@pytest.fixture
def no_build(monkeypatch):
    monkeypatch.setattr(java, "build", lambda version=None, fetch=True: "/x/classes:/x/libs/*")


def test_epoch_burn_writers_are_java_epoch_burn_workers_with_keys_of_their_own(no_build):
    spec = TxnQueueSpec(client="java", producers=3, topics=1, partitions=6,
                        epoch_burn={"burn_to_epoch": 32700, "reinit_at_epoch": 32766})
    w = WORKLOADS["txn-queue"](spec, BOOT, 5)
    ws = w.writers()
    assert [x.role for x in ws] == ["epoch-burn"] * 3
    assert [x.cfg["keys"] for x in ws] == [["t0/0", "t0/3"], ["t0/1", "t0/4"], ["t0/2", "t0/5"]]
    assert all(x.cfg["burn_to_epoch"] == 32700 and x.cfg["reinit_at_epoch"] == 32766 for x in ws)
    cfg = check_config("epoch-burn", ws[0].cfg)  # what harness.run.pool checks before it starts one
    assert cfg.burn_timeout_s == 240 and cfg.transactional_id == "eosc-txn-0"
    again = w.respawn(ws[1])  # a killed burner restarts as one, with its keys and transactional.id
    assert again.role == "epoch-burn" and again.cfg["keys"] == ws[1].cfg["keys"]
    assert w.drain().cfg["drain_timeout_s"] == 30  # a partition left open for good never drains
    assert ws[0].cfg["trigger"] == "reinit" and "drain_timeout_s" not in ws[0].cfg
    timeout = TxnQueueSpec(client="java", epoch_burn={"trigger": "timeout", "timeout_wait_s": 6})
    assert check_config("epoch-burn", WORKLOADS["txn-queue"](timeout, BOOT, 5).writers()[0].cfg).trigger == "timeout"
    # without the option: txn-producer workers over every key, as before
    plain = WORKLOADS["txn-queue"](TxnQueueSpec(client="java", producers=2), BOOT, 5).writers()
    assert [x.role for x in plain] == ["txn-producer"] * 2 and "burn_to_epoch" not in plain[0].cfg
    assert "drain_timeout_s" not in WORKLOADS["txn-queue"](TxnQueueSpec(client="java"), BOOT, 5).drain().cfg


@pytest.mark.parametrize("fields, says", [
    ({"epoch_burn": {}}, "epoch_burn needs client: java"),
    ({"client": "java", "epoch_burn": {"burn_to_epoch": 32765}}, "less than or equal to 32764"),
    ({"client": "java", "epoch_burn": {"burn_to_epoch": 32000, "reinit_at_epoch": 32000}},
     "must be above burn_to_epoch"),
    ({"client": "java", "producers": 9, "topics": 2, "partitions": 4, "epoch_burn": {}},
     "9 producers need at least as many keys"),
    ({"client": "java", "epoch_burn": {"burn_to": 1}}, "burn_to"),
    ({"client": "java", "epoch_burn": {"trigger": "kill"}}, "trigger"),
])
def test_bad_epoch_burn_fields_say_what_to_fix(fields, says):
    with pytest.raises(ValidationError, match=says):
        Scenario.model_validate({"name": "x", "workload": {"name": "txn-queue", **fields}})


def test_the_java_main_starts_the_role():
    src = (java.SRC / "eosc" / "Main.java").read_text()
    assert 'case "epoch-burn": w = new EpochBurn(cfg);' in src
