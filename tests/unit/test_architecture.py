"""The layout docs/architecture.md describes, checked on the source (ast, nothing imported):
no import cycle among the modules of harness, checkers and nemesis (function-local imports
count), checkers imports neither harness nor nemesis, nemesis does not import harness,
harness.cluster (the lowest stage) imports none of harness.workloads, workers, examples, at most
6 modules at the top of harness/, one file name per module, no pointer to the design notes
outside the repository, and no version numbers compared outside the release object and the
version parser, and checkers by role (its top level the entry points only, finders importing
neither engines nor the known-bug catalogue, history the ground floor)."""
from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "checkers", "nemesis")
#: file names several packages may each have
SHARED_NAMES = {"__init__.py", "__main__.py", "cli.py", "base.py"}
MAX_TOP_MODULES = 6


def _files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the three packages."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


FILES = _files()


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The project modules an import statement of ``module`` loads (``from P import name``:
    the submodule P.name when there is one, else P)."""
    if isinstance(node, ast.Import):
        names = {a.name for a in node.names}
    else:
        if node.level:  # relative: from the module's package, one level up per extra dot
            package = module.split(".")
            if FILES[module].name != "__init__.py":
                package.pop()
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = {f"{base}.{a.name}" if f"{base}.{a.name}" in FILES else base for a in node.names}
    out = set()
    for name in names:
        while name not in FILES and "." in name:  # an attribute of a module: the module
            name = name.rsplit(".", 1)[0]
        if name in FILES and name != module:
            out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its source (top level, functions,
    ``if TYPE_CHECKING`` blocks: every import statement)."""
    graph = {}
    for module, path in FILES.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps |= _imported(module, node)
        graph[module] = deps
    return graph


GRAPH = import_graph()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _edges_into(source: str, target: str) -> list[str]:
    return sorted(f"{m} -> {d}" for m, ds in GRAPH.items() if m.split(".")[0] == source
                  for d in ds if d.split(".")[0] == target)


def test_the_graph_sees_every_kind_of_import():
    """The parser itself: relative, ``from P import module``, function-local imports."""
    assert "checkers.history" in GRAPH["checkers.verdict"]  # from .history import ...
    assert "checkers.history.model" in GRAPH["checkers.history.reader"]  # from .model import ...
    assert "harness.cluster.namespaces" in GRAPH["harness.cluster.netns_backend"]  # from P import module
    assert "harness.run.runner" in GRAPH["harness.pytest_plugin"]  # imported inside a function
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_harness_checkers_nemesis():
    found = cycles(GRAPH)
    assert not found, "import cycles (function-local imports count): " + "; ".join(" <-> ".join(c) for c in found)


def test_checkers_imports_neither_harness_nor_nemesis():
    bad = _edges_into("checkers", "harness") + _edges_into("checkers", "nemesis")
    assert not bad, f"checkers must stay pure functions of a history: {bad}"


#: checkers/ top level: its public entry points only (docs/architecture.md "checkers/ by role")
CHECKERS_TOP = {"__init__.py", "catalogue.py", "run.py", "safe_load.py", "timing.py", "verdict.py",
                "version_numbers.py"}
#: the rooms of checkers/, each a package
CHECKERS_ROOMS = {"engines", "finders", "history", "known_bugs", "synthetic"}


def _checkers_edges(source: str, targets: tuple[str, ...]) -> list[str]:
    return sorted(f"{m} -> {d}" for m, ds in GRAPH.items() if m == source or m.startswith(source + ".")
                  for d in ds if d.startswith(targets))


def test_checkers_top_level_holds_only_the_entry_points():
    top = sorted(p.name for p in (ROOT / "checkers").glob("*.py"))
    assert set(top) <= CHECKERS_TOP, \
        f"checkers/ holds {sorted(set(top) - CHECKERS_TOP)} beside its entry points: a finder goes to finders/, " \
        "an engine to engines/, a history-derived frame to history/ (docs/architecture.md)"
    rooms = {p.name for p in (ROOT / "checkers").iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert rooms == CHECKERS_ROOMS


def test_finders_import_neither_engines_nor_known_bugs():
    # a finder is a function of a history: the engines run it and the known-bug catalogue reads
    # its cases, never the other way round
    bad = _checkers_edges("checkers.finders", ("checkers.engines", "checkers.known_bugs", "checkers.verdict",
                                               "checkers.synthetic"))
    assert not bad, f"a finder imports an engine, the known-bug catalogue or the verdict: {bad}"


def test_checkers_history_imports_no_room_above_it():
    bad = [e for e in _checkers_edges("checkers.history", ("checkers.",))
           if not e.split(" -> ")[1].startswith(("checkers.history", "checkers.timing"))]
    assert not bad, f"checkers.history is the ground floor of checkers (only checkers.timing beside it): {bad}"


def test_only_tests_and_benchmarks_use_the_synthetic_histories():
    bad = [e for e in _checkers_edges("checkers", ("checkers.synthetic",)) if not e.startswith("checkers.synthetic")]
    bad += [e for e in _edges_into("harness", "checkers") if e.split(" -> ")[1].startswith("checkers.synthetic")
            and not e.startswith("harness.bench.")]
    assert not bad, f"the simulated Kafka and the history builder are for tests and benchmarks: {bad}"


def test_nemesis_does_not_import_harness():
    bad = _edges_into("nemesis", "harness")
    assert not bad, f"nemesis reaches the cluster through nemesis.core's protocols only: {bad}"


def test_harness_cluster_imports_no_stage_above_it():
    # the cluster stage is the ground floor: the workloads, the workers and the examples build on
    # it (jars from harness.cluster.artifacts), never the other way round; what both need lives
    # low (harness.util.ErrorFacts) or is passed in (setup_docker's ``images``)
    above = ("harness.workloads", "harness.workers", "harness.examples")
    bad = sorted(f"{m} -> {d}" for m, ds in GRAPH.items() if m.startswith("harness.cluster")
                 for d in ds if d.startswith(above))
    assert not bad, f"harness.cluster imports a stage above it: {bad}"


def test_few_modules_at_the_top_of_harness():
    top = sorted(p.name for p in (ROOT / "harness").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, \
        f"{len(top)} modules at the top of harness/ (a stage package is the place): {top}"


def test_one_file_name_per_module():
    names = Counter(p.name for p in FILES.values() if p.name not in SHARED_NAMES)
    twice = {n: sorted(str(p.relative_to(ROOT)) for p in FILES.values() if p.name == n)
             for n, k in names.items() if k > 1}
    assert not twice, f"modules sharing a file name: {twice}"


def test_nothing_points_at_the_design_notes_outside_the_repository():
    needle = "shared" + "/design"  # spelled apart: this file is scanned too
    roots = [ROOT / "README.md"] + [ROOT / d for d in ("docs", "harness", "checkers", "nemesis", "scenarios", "tests")]
    files = [r for r in roots if r.is_file()] + [p for r in roots if r.is_dir() for p in sorted(r.rglob("*"))
                                                 if p.is_file() and "__pycache__" not in p.parts]
    hits = [str(p.relative_to(ROOT)) for p in files if needle.encode() in p.read_bytes()]
    assert not hits, f"{needle} is not part of this repository (docs/history.md, docs/anomalies.md, " \
                     f"docs/architecture.md are): {hits}"


def test_one_default_isolation_level():
    # a worker config or a workload model that restates the default drifts from it; a missing
    # key must read checkers.run.DEFAULT_ISOLATION_LEVEL, written once
    import re

    from checkers.run import DEFAULT_ISOLATION_LEVEL
    from harness.workloads.app import AppPySpark
    from harness.workloads.idempotent import IdempotentSpec
    from harness.workloads.spark import SparkSpec
    from harness.workloads.txn_queue import TxnQueueSpec

    for model in (AppPySpark, IdempotentSpec, SparkSpec, TxnQueueSpec):
        assert model.model_fields["isolation_level"].default == DEFAULT_ISOLATION_LEVEL, model
    restated = re.compile(r"""isolation_level["']?\s*,\s*["']read_(un)?committed["']\)|"""
                          r"""isolation_level:[^=\n]*=\s*["']read_|--isolation-level["'], default=["']""")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in FILES.values()
            for i, line in enumerate(p.read_text().splitlines(), 1) if restated.search(line)]
    assert not hits, f"isolation_level's default restated (use checkers.run.DEFAULT_ISOLATION_LEVEL): {hits}"


def _code_only(text: str) -> str:
    """``text`` with its strings and comments blanked (positions kept), so a docstring's
    example is no hit."""
    import io
    import tokenize

    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    chars = list(text)
    blank = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in blank:
            for i in range(starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1]):
                if chars[i] != "\n":
                    chars[i] = " "
    return "".join(chars)


#: a comparison with a version tuple written out (``>= (4, 0``, ``(2, 10, 0) >``) or of parsed
#: versions (``parse(v) < parse(SINCE)``); a call's arguments (``f.seek(0, 2) < pos``) are none
_OP = r"(?<![-<>=!])(?:<=|>=|==|!=|<|>)(?![<>=])"
_TUPLE = r"(?<![\w)\]])\(\s*\d+\s*,\s*\d+(?:\s*,\s*\d+)*\s*,?\s*\)"
VERSION_COMPARED = re.compile(rf"{_OP}\s*{_TUPLE}|{_TUPLE}\s*{_OP}|"
                              rf"\b(?:parse|version_tuple|release)\([^()]*\)\s*{_OP}")
#: the release object (harness) and the one version parser (checkers may own it)
VERSION_PLACES = {"harness/cluster/releases.py", "checkers/version_numbers.py"}


def test_no_version_tuple_compared_outside_the_release_object_and_the_parser():
    # a caller asks harness.cluster.releases' Release (supports_consumer_group_protocol(), ...)
    # or, in checkers, checkers.version_numbers (older_than, between): never compares numbers
    assert VERSION_COMPARED.search("if (release(kafka) or (9,)) < (4, 0, 0):")
    assert VERSION_COMPARED.search("old = parse(kafka_version) < parse(SINCE)")
    assert VERSION_COMPARED.search("if r is not None and r >= (2, 10):")
    assert not VERSION_COMPARED.search("if f.seek(0, 2) < pos:") and not VERSION_COMPARED.search("x < (1 << 62)")
    assert not VERSION_COMPARED.search(_code_only('"""release("3.5.2") < release("3.6.0")"""\n'))
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in FILES.values() if str(p.relative_to(ROOT)) not in VERSION_PLACES
            for i, line in enumerate(_code_only(p.read_text()).splitlines(), 1) if VERSION_COMPARED.search(line)]
    assert not hits, f"version numbers compared outside {sorted(VERSION_PLACES)} (ask the Release): {hits}"
