"""pytest plugin ``eos_chaos`` (entry point pytest11): scenario files as test items, and fixtures.

Collection is opt-in: a YAML file becomes test items only when it is named on the pytest
command line (``pytest scenarios/smoke.yaml``; a suite file named with nothing but suite files
gives one item per cell), or lies under a named folder and inside a folder called
``scenarios`` below the rootdir (``pytest scenarios/``, ``pytest scenarios/more``,
``pytest .``) and looks like a scenario (a mapping with ``name`` and one of
workload/cluster/nemesis/duration/expected, no ``suite``, no zoo key, not a run folder's
scenario.yaml).
Paths from ``testpaths`` or the current folder are never searched, and ``pytest tests`` finds
no ``scenarios`` folder, so the project's own test run never starts a scenario. A named or
found file that looks like a scenario but does not load is a collection error saying what to
fix. Zoo files (base/must_find/control/upstream keys: scenarios/zoo/), zoo selections (suite
and zoo keys: scenarios/releases.yaml) and suite files, named or found (a suite file named
among scenario files or folders, as ``pytest scenarios/*.yaml`` names them), are skipped:
one skipped collection report each, with a one-line reason naming the eos-chaos command
that runs them (``-rs`` lists them).

Each scenario file gives one item per (seed, Kafka version) of the options below. An item runs
the scenario on a fresh real cluster (root needed) and fails unless the verdict is valid; the
failure lists the anomalies with their first examples and the path of the run's report. The
report path, run folder and verdict go into the JUnit XML as testcase properties.

Options::

    --eos-kafka-version V   Kafka version (repeatable: one item per version); default: the scenario's
    --eos-seed N            seed (repeatable: one item per seed); default: the scenario's, else random
    --eos-duration S        seconds of load and faults; default: the scenario's
    --eos-results DIR       results root; default: <rootdir>/results
    --eos-backend B         cluster backend (netns, docker, external) of the runs and of eos_cluster;
                            default: the scenario's (eos_cluster: netns)

Fixtures: ``eos_results`` (Path of the results root), ``eos_run`` (run a scenario, get a
harness.run.runner.RunResult), ``eos_check`` (check a history, get a ``checkers.Verdict``), ``eos_cluster``
(a session-scoped real 3-node KRaft cluster, a SessionCluster). ``assert_valid`` raises an
AssertionError listing the anomalies. See docs/pytest.md.

``eos_cluster`` holds the machine's cluster lock (harness.cluster.lock) from its first use until the
session ends, and a scenario run takes the same lock to make its own cluster: the two cannot
overlap. Tests that use ``eos_cluster`` are therefore moved to the end of the session, and a
scenario run attempted while the session cluster is up fails at once instead of waiting.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

_SCENARIO_KEYS = frozenset({"workload", "cluster", "nemesis", "duration", "expected"})
_CLUSTER_UP = pytest.StashKey[bool]()
_RUNS = pytest.StashKey[list]()


class SessionClusterActive(RuntimeError):
    """A scenario run was attempted while the session cluster (eos_cluster) holds the lock."""


def run_scenario(scn, results_root, **kwargs):
    """Indirection to harness.run.runner.run_scenario (imported when first used, so that loading
    the plugin in every pytest session stays cheap). Raises pytest.fail when not root."""
    if os.geteuid() != 0:
        pytest.fail("eos-chaos scenarios need root (network namespaces, iptables): run pytest with sudo",
                    pytrace=False)
    from harness.run.runner import run_scenario as real

    return real(scn, results_root, **kwargs)


# ---------------------------------------------------------------- options and collection

def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("eos-chaos", "kafka-eos-chaos scenarios (collected from YAML paths named on the command line)")
    g.addoption("--eos-kafka-version", action="append", default=None, metavar="V",
                help="Kafka version of the runs (repeatable: one item per version); default: the scenario's")
    g.addoption("--eos-seed", action="append", type=int, default=None, metavar="N",
                help="seed of the runs (repeatable: one item per seed); default: the scenario's, else random")
    g.addoption("--eos-duration", type=float, default=None, metavar="SECONDS",
                help="seconds of load and faults per run; default: the scenario's")
    g.addoption("--eos-results", default=None, metavar="DIR",
                help="results root of the runs; default: <rootdir>/results")
    g.addoption("--eos-backend", default=None, choices=("netns", "docker", "external"), metavar="B",
                help="cluster backend of the runs and of eos_cluster (netns, docker, external); "
                     "default: the scenario's (eos_cluster: netns)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "eos_scenario: an eos-chaos scenario file run on a real cluster (root)")
    config.stash[_RUNS] = []


def _named_paths(config: pytest.Config) -> list[Path]:
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return []
    base = Path(config.invocation_params.dir)
    return [(base / a.split("::")[0]).resolve() for a in config.args]


def _read(path: Path) -> Any:
    """The file's YAML (checkers.safe_load's limits), or None when it cannot be read; read once
    per session for an unchanged file (the collection asks about a file several times)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _read_cached(path.resolve(), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=1024)
def _read_cached(path: Path, mtime_ns: int, size: int) -> Any:
    from checkers.safe_load import file_problem, read_yaml

    if file_problem(path):
        return None
    try:
        return read_yaml(path)
    except (OSError, ValueError, yaml.YAMLError):
        return None


def kind_of(path: Path) -> str:
    """What a YAML file is: "selection" (a zoo selection: ``suite`` and ``zoo``, such as
    scenarios/releases.yaml), "suite" (a top-level ``suite``), "zoo" (a zoo file: one of
    harness.detect.zoo.ZOO_KEYS, such as base, must_find, control, upstream), "run" (a run
    folder's scenario.yaml: history.jsonl or logs/ beside it), "scenario" (a mapping with ``name`` and one of workload, cluster,
    nemesis, duration, expected) or "other" (anything else, unreadable files included)."""
    from harness.detect.zoo import ZOO_KEYS

    data = _read(path)
    if not isinstance(data, dict):
        return "other"
    if "suite" in data:
        return "selection" if "zoo" in data else "suite"
    if set(ZOO_KEYS) & set(data):
        return "zoo"
    if (path.parent / "history.jsonl").exists() or (path.parent / "logs").is_dir():
        return "run"
    return "scenario" if "name" in data and _SCENARIO_KEYS & set(data) else "other"


def _shown(config: pytest.Config, path: Path) -> str:
    """``path`` relative to the invocation folder when below it (as the user would type it)."""
    try:
        return str(path.relative_to(Path(config.invocation_params.dir).resolve()))
    except ValueError:
        return str(path)


def skip_reason(config: pytest.Config, path: Path, kind: str) -> str:
    """The one line a skipped zoo file, zoo selection or suite file is reported with."""
    shown = _shown(config, path)
    if kind == "zoo":
        from harness.detect.zoo import ZOO_KEYS

        data = _read(path)
        keys = [k for k in ZOO_KEYS if isinstance(data, dict) and k in data]
        return (f"zoo file ({'/'.join(keys)}), not a scenario to run alone: "
                f"eos-chaos zoo --zoo {_shown(config, path.parent)} --only {path.stem}")
    if kind == "selection":
        return f"zoo selection (suite + zoo keys), not a scenario: eos-chaos zoo --zoo {shown}"
    return (f"suite file, its scenarios are collected from their own files: eos-chaos suite {shown} "
            f"(or name only suite files for one item per cell)")


def _all_suites(config: pytest.Config) -> bool:
    """Every path named on the command line is a suite file (``pytest scenarios/nightly.yaml``)."""
    named = _named_paths(config)
    return bool(named) and all(p.is_file() and kind_of(p) == "suite" for p in named)


def wants(config: pytest.Config, path: Path) -> str | None:
    """How ``path`` is collected (the opt-in rule in the module docstring): "scenario",
    "suite" (a suite file named on the command line, with nothing but suite files named),
    "skip" (a zoo file, zoo selection or suite file named or found, reported as skipped with
    skip_reason), or None (not collected)."""
    if path.suffix not in (".yaml", ".yml"):
        return None
    path = path.resolve()
    named = _named_paths(config)
    if path in named:
        kind = kind_of(path)
        if kind in ("zoo", "selection"):
            return "skip"
        if kind == "suite":
            return "suite" if _all_suites(config) else "skip"
        return "scenario"  # a named file always counts: one that does not load is an error
    root = Path(config.rootpath).resolve()
    for p in named:
        if p in path.parents:
            base = root if root in path.parents else p.parent
            if "scenarios" in path.relative_to(base).parts[:-1]:
                kind = kind_of(path)
                if kind in ("zoo", "selection", "suite"):
                    return "skip"
                return "scenario" if kind == "scenario" else None  # run folders, other YAML: silent
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    kind = wants(parent.config, file_path)
    if kind == "scenario":
        return ScenarioFile.from_parent(parent, path=file_path)
    if kind == "suite":
        return SuiteFile.from_parent(parent, path=file_path)
    if kind == "skip":
        return SkippedFile.from_parent(parent, path=file_path)
    return None


def results_root(config: pytest.Config) -> Path:
    """--eos-results, else <rootdir>/results."""
    opt = config.getoption("eos_results")
    return Path(opt).resolve() if opt else Path(config.rootpath) / "results"


def merge_options(scn, *, seed: int | None = None, duration: float | None = None,
                  kafka_version: str | None = None, backend: str | None = None):
    """A copy of the Scenario with the given seed, duration (s), Kafka version and cluster
    backend set (None keeps). A backend change is validated again (ScenarioError, e.g.
    external without cluster.external)."""
    update: dict[str, Any] = {}
    if seed is not None:
        update["seed"] = seed
    if duration is not None:
        update["duration"] = float(duration)
    cluster: dict[str, Any] = {}
    if kafka_version is not None:
        cluster["kafka_version"] = kafka_version
    if backend is not None:
        from harness.run.scenario import with_backend

        scn = with_backend(scn, backend)
    if cluster:
        update["cluster"] = scn.cluster.model_copy(update=cluster)
    return scn.model_copy(update=update)


class ScenarioFile(pytest.File):
    """A scenario YAML file: one ScenarioItem per (seed, Kafka version) of the options."""

    def collect(self):
        from harness.run.scenario import ScenarioError, load_scenario

        try:
            scn = load_scenario(self.path)
        except ScenarioError as exc:
            raise self.CollectError(str(exc)) from exc
        opt = self.config.getoption
        seeds = opt("eos_seed") or [scn.seed]
        versions = list(dict.fromkeys(opt("eos_kafka_version") or [scn.cluster.kafka_version]))
        duration = opt("eos_duration")
        many = len(seeds) * len(versions) > 1
        for seed in seeds:
            for version in versions:
                try:
                    cell = merge_options(scn, seed=seed, duration=duration, kafka_version=version,
                                         backend=opt("eos_backend"))
                except ValueError as exc:
                    raise self.CollectError(f"{self.path} with --eos-backend {opt('eos_backend')}: {exc}") from exc
                seed_part = "" if seed is None else f"s{seed}-"  # no seed: a random one, drawn by the run
                name = f"{scn.name}[{seed_part}kafka-{version}]" if many else scn.name
                yield ScenarioItem.from_parent(self, name=name, scenario=cell)


class SkippedFile(pytest.File):
    """A zoo file, zoo selection or suite file under a named path: no items, one skipped
    collection report whose reason (skip_reason) says what runs it instead."""

    @functools.cached_property
    def reason(self) -> str:
        return skip_reason(self.config, Path(self.path).resolve(), kind_of(Path(self.path)))

    def collect(self):
        pytest.skip(self.reason)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A SkippedFile's skip is reported at the YAML file (not at the line of this plugin that
    raised it): ``SKIPPED [1] scenarios/zoo/x.yaml: zoo file ...`` under ``-rs``."""
    rep = yield
    if isinstance(collector, SkippedFile) and rep.skipped and isinstance(rep.longrepr, tuple):
        rep.longrepr = (str(collector.path), None, f"Skipped: {collector.reason}")
    return rep


class SuiteFile(pytest.File):
    """A suite file named on the command line: one ScenarioItem per cell of its matrix
    (--eos-seed / --eos-kafka-version / --eos-duration replace the suite's). No resume and no
    suite index here: that is ``eos-chaos suite``."""

    def collect(self):
        from harness.detect.suite import SuiteError, expand, load_suite

        opt = self.config.getoption
        try:
            backend = opt("eos_backend")
            cells = expand(load_suite(self.path), self.path.parent, seeds=opt("eos_seed"),
                           kafka_versions=opt("eos_kafka_version"), duration=opt("eos_duration"),
                           backends=[backend] if backend else None)
        except SuiteError as exc:
            raise self.CollectError(str(exc)) from exc
        for cell in cells:
            yield ScenarioItem.from_parent(self, name=cell.id, scenario=cell.scenario)


class VerdictFailure(AssertionError):
    """A run or history whose verdict is not valid; ``str()`` lists anomalies and the report."""


def _title(scn) -> str:
    seed = "random seed" if scn.seed is None else f"seed {scn.seed}"
    return f"{scn.name} ({seed}, Kafka {scn.cluster.kafka_version}, {scn.duration:g} s)"


def _record_run(node: pytest.Item, config: pytest.Config, res, title: str) -> None:
    v = res.verdict
    node.user_properties += [("report", str(res.report) if res.report else ""), ("run_dir", str(res.run_dir)),
                             ("verdict", v.status)]
    config.stash[_RUNS].append((title, v.valid, res.report or res.run_dir))


def assert_valid(verdict_or_result: Any, title: str = "verdict") -> None:
    """Raise VerdictFailure (an AssertionError) unless the verdict is valid. Accepts a
    ``checkers.Verdict`` (what ``eos_check`` returns), a verdict.json dict, or a RunResult (its
    report path goes into the message)."""
    from checkers import Verdict
    from harness.detect.suite import describe_verdict

    res = verdict_or_result
    direct = isinstance(res, (Verdict, dict))
    verdict = Verdict.coerce(res if direct else res.verdict)
    if verdict.valid is not True:
        kw = {} if direct else {"report": res.report, "run_dir": res.run_dir,
                                "problems": res.problems}
        raise VerdictFailure(describe_verdict(title, verdict, max_examples=1, **kw))


def _guard(config: pytest.Config) -> None:
    if config.stash.get(_CLUSTER_UP, False):
        raise SessionClusterActive(
            "the session cluster (eos_cluster fixture) holds the machine's cluster lock, and a scenario "
            "run takes the same lock: it would wait forever. Run scenarios and eos_cluster tests in "
            "separate pytest sessions (the plugin orders eos_cluster tests last to avoid this).")


class ScenarioItem(pytest.Item):
    """One run of a scenario on a fresh real cluster; passes when the verdict is valid."""

    def __init__(self, *, scenario, **kwargs):
        super().__init__(**kwargs)
        self.scenario = scenario
        self.result = None
        self.add_marker(pytest.mark.eos_scenario)

    def runtest(self) -> None:
        _guard(self.config)
        self.result = res = run_scenario(self.scenario, results_root(self.config), source=str(self.path))
        title = _title(res_scenario(self.scenario, res))
        _record_run(self, self.config, res, title)
        assert_valid(res, title)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (VerdictFailure, SessionClusterActive)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"scenario {_title(self.scenario)}"


def res_scenario(scn, res):
    """The scenario with the seed the run actually used (a random one is in scenario.yaml)."""
    if scn.seed is not None:
        return scn
    try:
        from checkers.safe_load import read_yaml

        seed = read_yaml(Path(res.run_dir) / "scenario.yaml").get("seed")
    except Exception:  # the title only loses the seed
        return scn
    return scn.model_copy(update={"seed": seed})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that use eos_cluster go last, after every scenario run (they share the lock)."""
    items.sort(key=lambda it: "eos_cluster" in getattr(it, "fixturenames", ()))


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    runs = config.stash.get(_RUNS, [])
    if not runs:
        return
    terminalreporter.section("eos-chaos runs")
    for title, valid, where in runs:
        label = {True: "VALID", False: "INVALID"}.get(valid, "UNKNOWN")
        terminalreporter.write_line(f"{label:<8} {title}  {where}")


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def eos_results(pytestconfig: pytest.Config) -> Path:
    """The results root of this session's runs (--eos-results, else <rootdir>/results)."""
    return results_root(pytestconfig)


@pytest.fixture
def eos_run(request: pytest.FixtureRequest, eos_results: Path) -> Callable[..., Any]:
    """``eos_run(scenario, *, seed=None, duration=None, kafka_version=None, stop=None) -> RunResult``.

    ``scenario`` is a Scenario, a path to a scenario file, or a dict of scenario fields. Seed,
    duration (s) and Kafka version come from the arguments, else from --eos-seed /
    --eos-duration / --eos-kafka-version (first value), else from the scenario. Runs on a
    fresh real cluster (root) under --eos-results; records report, run_dir and verdict as
    JUnit properties of the test. Does not judge: use ``assert_valid(result)``. Raises
    SessionClusterActive when eos_cluster is up in this session, ScenarioError for a bad
    scenario, and what harness.run.runner.run_scenario raises.
    """
    from harness.run.scenario import Scenario, load_scenario

    config = request.config

    def run(scenario, *, seed: int | None = None, duration: float | None = None,
            kafka_version: str | None = None, stop=None):
        source = None
        if isinstance(scenario, (str, Path)):
            source, scenario = str(scenario), load_scenario(scenario)
        elif isinstance(scenario, dict):
            scenario = Scenario.model_validate(scenario)
        first = lambda name: (config.getoption(name) or [None])[0]  # noqa: E731
        scn = merge_options(scenario, seed=seed if seed is not None else first("eos_seed"),
                            duration=duration if duration is not None else config.getoption("eos_duration"),
                            kafka_version=kafka_version or first("eos_kafka_version"),
                            backend=config.getoption("eos_backend"))
        _guard(config)
        res = run_scenario(scn, eos_results, source=source, stop=stop)
        _record_run(request.node, config, res, _title(res_scenario(scn, res)))
        return res

    return run


@pytest.fixture
def eos_check() -> Callable[..., "checkers.Verdict"]:
    """``eos_check(history, meta=None, allowed=None, max_examples=10) -> checkers.Verdict``.

    ``history`` is a run folder (its history.jsonl, with meta.json and the ``expected`` list of
    scenario.yaml when ``meta`` / ``allowed`` are not given), a history.jsonl path, a list of
    event dicts or a checkers.History. Read the verdict by attribute (``v.valid``,
    ``v.anomaly_counts``; fields in checkers.run.Verdict). Pure: no cluster.
    """
    import checkers
    from checkers.run import RunDir
    from checkers.verdict import check_run

    def check(history, meta: dict | None = None, allowed=None, max_examples: int = 10) -> checkers.Verdict:
        if isinstance(history, (str, Path)) and Path(history).is_dir():
            d = RunDir(history)
            if meta is None and allowed is None:
                return check_run(d.path, max_examples=max_examples)
            history = d.history
            if meta is None:
                meta, _ = d.read_meta()
            if allowed is None:
                allowed = d.expected()
        return checkers.check(history, meta=meta, allowed=allowed or (), max_examples=max_examples)

    return check


@dataclass
class SessionCluster:
    """The session's real cluster: ``service`` (harness.cluster.service.ClusterService: its
    lifecycle, ``node(i)`` control, ``nemesis_context``), ``network`` (the backend's test
    network, harness.cluster.namespaces.TestNetwork on netns; None on external), ``cluster`` (the netns
    backend's harness.cluster.Cluster; else the backend), ``agent`` (harness.cluster.agent.Agent: admin
    requests such as ``describe`` and ``create_topics``), ``workdir`` (node data and logs)."""

    service: Any
    workdir: Path
    kafka_version: str
    problems: list[str] = field(default_factory=list)

    @property
    def network(self) -> Any:
        return self.service.backend.network

    @property
    def cluster(self) -> Any:
        return getattr(self.service.backend, "cluster", None) or self.service.backend

    @property
    def agent(self) -> Any:
        return self.service.agent

    @property
    def bootstrap(self) -> str:
        """host:port,... of the brokers; reachable from the client host only (run clients with
        ``service.client_host.exec_prefix()`` or through harness.run.pool)."""
        return self.service.bootstrap


@pytest.fixture(scope="session")
def eos_cluster(pytestconfig: pytest.Config, tmp_path_factory) -> Iterator[SessionCluster]:
    """A real 3-node KRaft cluster for the whole session, on Kafka --eos-kafka-version (first
    value) or the default, on --eos-backend netns (default: each node in its own network
    namespace) or docker (each node a container); root needed.

    Holds the machine's cluster lock until the session ends: no scenario run (item or eos_run)
    can happen meanwhile; such tests are ordered first. Startup waits up to 180 s for 3
    registered brokers and a controller. The lock, leftovers, start and teardown are
    harness.cluster.session.ClusterSession's; teardown stops the nodes, the agent and the
    network, and fails the session's last test teardown with what it could not undo.
    """
    if os.geteuid() != 0:
        pytest.skip("eos_cluster needs root (network namespaces)")
    from harness.cluster.artifacts import DEFAULT_KAFKA_VERSION
    from harness.cluster.backends import make_backend
    from harness.cluster.service import ClusterService
    from harness.cluster.session import ClusterSession
    from harness.run.scenario import ClusterSpec

    version = (pytestconfig.getoption("eos_kafka_version") or [DEFAULT_KAFKA_VERSION])[0]
    backend = pytestconfig.getoption("eos_backend") or "netns"
    if backend == "external":
        pytest.skip("eos_cluster starts a cluster itself: --eos-backend netns or docker")
    workdir = tmp_path_factory.mktemp("eos-cluster")
    (workdir / "logs").mkdir()
    spec = ClusterSpec(kafka_version=version, backend=backend)
    service = ClusterService(make_backend(spec, workdir / "nodes", workdir / "logs",
                                          run_id=f"pytest-{os.getpid()}"), workdir / "logs")
    cluster = SessionCluster(service, workdir, version)
    with ClusterSession(service, problems=cluster.problems) as session:  # the lock until the end
        pytestconfig.stash[_CLUSTER_UP] = True
        try:
            yield cluster
        finally:
            pytestconfig.stash[_CLUSTER_UP] = False
    if session.left:
        pytest.fail("eos_cluster teardown could not undo: " + "; ".join(session.left), pytrace=False)
