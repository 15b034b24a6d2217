"""Worker configs (harness.workers.configs): every config a shipped scenario's workload builds
fits its role's model, and a config that does not fit is one error, never a silent default."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cluster.client_access import cluster_workload, run_names, with_security
from harness.detect.zoo import load_entry
from harness.run.scenario import load_scenario
from harness.workers.configs import ROLE_CONFIGS, TxnProducerConfig, WorkerConfigError, check_config
from harness.workloads import WORKLOADS
from harness.workloads.base import WorkerSpec

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p for p in (ROOT / "scenarios").rglob("*.yaml")
                   if p.parent.name != "zoo" and "suite:" not in p.read_text()
                   and not p.read_text().lstrip().startswith("suite"))
ZOO = sorted((ROOT / "scenarios" / "zoo").glob("*.yaml"))


def _scenario(path: Path):
    return load_entry(path).scenario if path.parent.name == "zoo" else load_scenario(path)


class _Done(dict):
    def get(self, name, default=None):
        return type("H", (), {"control": [{"app_done": True}]})()


class _Pool:
    """Stands in for harness.run.pool.Pool in App.settle: records the catch-up's spec."""

    def __init__(self):
        self.specs: list[WorkerSpec] = []
        #: every instance already done (done: exit), so App.settle's wait ends at once
        self.workers = _Done()
        self.replacements: dict[str, str] = {}
        self.appended: list[dict] = []  # history events (App.preload's)

    def append(self, event: dict) -> None:
        self.appended.append(event)

    def stop(self, names, timeout=None):
        return []

    def spawn(self, spec):
        self.specs.append(spec)
        return type("H", (), {"wait": lambda *_a, **_k: True, "control": [], "kill": lambda *_a: None,
                               "name": spec.name})()


def _specs(scn, tmp_path: Path) -> list[WorkerSpec]:
    names = run_names(scn.cluster, "20261125T000000Z-s1")
    w = cluster_workload(WORKLOADS[scn.workload.name], scn.workload, "198.18.0.1:9092", scn.seed or 1, names, {})
    if hasattr(w, "prepare"):
        w.prepare(tmp_path, {"docker_network": "eosc-test"})
    specs = [*w.readers(), *w.writers()]
    if hasattr(w, "preload"):  # input.preload's producers (stop_after)
        pre = _Pool()
        w.preload(pre, pre)
        specs += pre.specs
    specs += [w.respawn(s) for s in specs]  # a restarted worker's config (fresh values, next spawn)
    specs.append(w.drain())
    if hasattr(w, "settle"):
        pool = _Pool()
        w.settle(pool)
        specs += pool.specs
    if getattr(w, "_temporary", False):  # the spark workload's work dir: never started, not cleaned by a run
        shutil.rmtree(w.work, ignore_errors=True)
    return specs


@pytest.mark.parametrize("path", SCENARIOS + ZOO, ids=lambda p: str(p.relative_to(ROOT / "scenarios")))
def test_every_shipped_scenario_builds_worker_configs_that_fit_their_roles(path, tmp_path):
    scn = _scenario(path)
    for spec in _specs(scn, tmp_path):
        cfg = check_config(spec.role, dict(spec.cfg, start_ns=1))
        assert type(cfg) is ROLE_CONFIGS[spec.role]
    # an external cluster's security settings ride along in every config
    secured = with_security(_specs(scn, tmp_path)[0], {"security.protocol": "SASL_SSL"}, {})
    check_config(secured.role, secured.cfg)


def test_a_misspelt_or_missing_key_is_one_error_naming_role_and_field():
    good = {"bootstrap": "b:9092", "keys": ["t0/0"], "seed": 1, "value_base": 0, "transactional_id": "t"}
    assert check_config("txn-producer", good).abort_probability == 0.1  # the default, written once
    with pytest.raises(WorkerConfigError, match=r"'txn-producer'.*abort_probabilty: Extra inputs"):
        check_config("txn-producer", {**good, "abort_probabilty": 0.5})
    with pytest.raises(WorkerConfigError, match=r"transactional_id: Field required"):
        check_config("txn-producer", {k: v for k, v in good.items() if k != "transactional_id"})
    with pytest.raises(WorkerConfigError, match=r"inflight_abort"):
        check_config("txn-producer", {**good, "inflight_abort": "retry"})
    with pytest.raises(WorkerConfigError, match=r"no worker role 'producer'"):
        check_config("producer", good)
    assert isinstance(check_config("txn-producer", good), TxnProducerConfig)
