"""The Spark engine (checkers.engines.parts_spark, issue 25 section 2) gives the polars engine's verdict:
the same ``valid``, anomaly names, counts, examples (each anomaly's example list), unknown
reasons and stats, on every recorded real run under tests/data, on the simulated histories
tests/unit/test_checkers_parts.py uses, on histories with one injected anomaly of each kind
(tests/unit/test_checkers_model.py's ``inject``) and on the tiny multi-key ones whose cases sit
on an op a cut by key splits; both agree with the in-memory ``checkers.check`` on ``valid``
and counts. Plus the engine's own contract (item order, a task's exception raised as itself)
and the CLI's ``--engine spark``.

One local[2] session for the module (its JVM takes 10-20 s to start on 2 busy cores); about
1 min in all. Needs Java and pyspark; no root, no cluster."""
from __future__ import annotations

import json
import os
import random
from functools import partial
from pathlib import Path

import pytest

from checkers import check
from checkers.engines.parts import check_parts, check_run_parts, run_local
from checkers.synthetic.simulate import simulate
from checkers.verdict import check_run
from tests.unit.test_checkers_model import KINDS, inject, run
from tests.unit.test_checkers_parts import (
    test_a_multi_key_info_txn_read_on_one_key_is_committed_on_the_other as _info_txn,
    test_cases_on_each_key_of_a_multi_key_op_are_found_once as _multi_key)

pytestmark = pytest.mark.integration
pytest.importorskip("pyspark")

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = sorted(d for d in DATA.glob("real-*") if (d / "history.jsonl").is_file())


@pytest.fixture(scope="module")
def spark():
    from checkers.engines.parts_spark import spark_engine

    eng = spark_engine("local[2]")
    yield eng
    eng.close()


def same(polars, spark, memory=None) -> None:
    """The Spark engine's verdict is the polars engine's, whole (examples included); both agree
    with the in-memory check on valid and counts."""
    assert spark.anomaly_counts == polars.anomaly_counts
    for name, examples in polars.anomalies.items():
        assert spark.anomalies[name] == examples, name
    assert spark.model_dump() == polars.model_dump()
    if memory is not None:
        assert (polars.valid, polars.anomaly_counts) == (memory.valid, memory.anomaly_counts), \
            (memory.unknown_reasons, polars.unknown_reasons)


@pytest.mark.parametrize("run_dir", REAL, ids=lambda d: d.name)
def test_recorded_real_runs(spark, run_dir):
    memory = check_run(run_dir)
    same(check_run_parts(run_dir, 3), check_run_parts(run_dir, 3, engine=spark), memory)


@pytest.mark.parametrize("seed, kw, allowed", [
    (0, {}, []),
    (1, {"long_txn_rate": 0.2, "crash_rate": 0.01}, ["G0", "G0-process", "G0-realtime", "G1c-realtime"]),
    (2, {"n_keys": 3, "crash_rate": 0.05, "abort_rate": 0.3}, []),
])
def test_simulated_histories(spark, tmp_path, seed, kw, allowed):
    p = simulate(2000, seed, tmp_path / "history.jsonl", **kw)
    same(check_parts(p, allowed=allowed, n_parts=4),
         check_parts(p, allowed=allowed, n_parts=4, engine=spark), check(p, allowed=allowed))


def _program(rnd: random.Random, n: int = 25) -> list:
    """A program as test_checkers_model's ``programs`` strategy draws them (3 keys, 2
    transactional producers, 2 consumers), from a seeded Random instead of Hypothesis: each
    test here costs Spark jobs, so a few fixed histories, not a search."""
    prog: list = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.45:
            prog.append(("txn", rnd.randrange(2), [rnd.randrange(3) for _ in range(rnd.randint(1, 4))],
                         rnd.random() < 0.7))
        elif r < 0.6:
            prog.append(("send", [rnd.randrange(3) for _ in range(rnd.randint(1, 3))]))
        else:
            prog.append(("poll", rnd.randrange(2), rnd.randint(1, 4)))
    return prog


def _injected(kind: str, pick: int) -> list[dict]:
    """The first seeded program's history with one ``kind`` anomaly injected."""
    for seed in range(100):
        broken = inject(run(_program(random.Random(seed))), kind, pick)
        if broken is not None:
            return broken
    raise AssertionError(f"no program of 100 has room for {kind}")


@pytest.mark.parametrize("kind", KINDS)
def test_an_injected_anomaly(spark, tmp_path, kind):
    p = tmp_path / "history.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in _injected(kind, 7)))
    memory = check(p)
    assert kind in memory.anomaly_counts, memory.anomaly_counts  # the injection took
    same(check_parts(p, n_parts=2), check_parts(p, n_parts=2, engine=spark), memory)


@pytest.mark.parametrize("test", [_info_txn, _multi_key], ids=["info-txn-read-elsewhere", "multi-key-g1a"])
def test_the_tiny_multi_key_histories(spark, tmp_path, monkeypatch, test):
    # test_checkers_parts.py's own tests, their check_parts calls made with the Spark engine
    # and compared with the polars engine's verdict as well
    import tests.unit.test_checkers_parts as tcp

    def both(p, **kw):
        polars, on_spark = check_parts(p, **kw), check_parts(p, engine=spark, **kw)
        same(polars, on_spark)
        return on_spark

    monkeypatch.setattr(tcp, "check_parts", both)
    test(tmp_path)


def test_results_come_back_in_item_order(spark):
    items = [5, -3, 8, -1, 0, 7, -9, 2, 4, -6]
    assert spark(abs, items) == run_local(abs, items)
    assert spark(abs, []) == []


def test_a_task_exception_is_raised_as_itself(spark, tmp_path):
    with pytest.raises(FileNotFoundError):
        spark(partial(os.stat), [str(tmp_path), str(tmp_path / "missing")])


def test_the_cli_engine_spark(spark, tmp_path):
    # the CLI's own engine finds this module's session running (same master) and reuses it
    from typer.testing import CliRunner

    from harness.cli.main import app

    run_dir = DATA / "real-inflight-abort-s2"
    res = CliRunner().invoke(app, ["check", str(run_dir / "history.jsonl"), "--engine", "spark",
                                   "--parts", "3", "--json", "--workdir", str(tmp_path)])
    verdict = json.loads(res.stdout)
    polars = check_run_parts(run_dir, 3)
    assert res.exit_code == {True: 0, False: 1}.get(polars.valid, 2), res.output
    assert (verdict["valid"], verdict["anomaly_counts"]) == (polars.valid, polars.anomaly_counts)
    assert spark.spark is not None and not spark.spark.sparkContext._jsc.sc().isStopped()
    assert not list(tmp_path.iterdir())  # the parts folder is removed


def test_a_second_engine_reuses_the_session_and_leaves_no_folder(spark):
    # an engine on the running session's master reuses it (the CLI's in a test, a notebook's):
    # its close keeps that session, and its package folder goes at close, or when the engine
    # is dropped without one (a caller's exception skipped it)
    import gc

    from checkers.engines.parts_spark import spark_engine

    other = spark_engine("local[2]")
    folder = other._tmp
    assert folder is not None and folder.is_dir() and other.spark is spark.spark
    other.close()
    assert not folder.exists() and spark([1, 2].__contains__, [2, 3]) == [True, False]
    dropped = spark_engine("local[2]")
    folder = dropped._tmp
    del dropped
    gc.collect()
    assert not folder.exists()
