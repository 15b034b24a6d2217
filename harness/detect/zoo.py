"""The bug zoo: broken configurations that must be caught, and correct ones that must not be.

A zoo file (``scenarios/zoo/*.yaml``) is a scenario written as a change to another one::

    # what is broken and why a run must catch it
    base: ../smoke.yaml            # optional: the scenario this one changes (relative to this file)
    must_find: [G1a]               # a mutant: anomalies that catch it (docs/anomalies.md names)
    name: read-uncommitted
    workload: {isolation_level: read_uncommitted}

``base`` is read as YAML and the file's own fields are merged onto it (mappings merge key by
key, anything else, lists included, is replaced); the result must be a valid scenario.
``must_find`` makes the file a *mutant*; ``control: true`` makes it a *control* (a correct
scenario: any invalid verdict is a false positive). A mutant run is *detected* when its
verdict is invalid and at least one ``must_find`` anomaly is among the failing ones; a
``must_find`` name the scenario also lists in ``expected`` is an error.

``run_zoo`` runs every entry ``runs`` times with seeds ``first_seed``, ``first_seed + 1``, ...,
seed-major (every entry once before any twice), through harness.detect.suite's loop: the zoo
folder (default ``<results>/suites/zoo``) holds the suite's runs.jsonl (resume), index.html,
junit.xml and summary.json, the merged scenarios as run (``scenarios/<name>.yaml``, which
the index's replay commands name), and the zoo's own ``zoo.json`` and ``zoo.html``:
detection rate per mutant with a 95 % Wilson interval, median time to detect, anomalies
seen; false-positive rate per control.

Time to detect (``time_to_detect_s``): from the start of the load (history time 0, moved to
the schedule's clock when schedule.json and a nemesis event allow) until the earliest listed
example of a failing ``must_find`` anomaly was complete, i.e. the completion of the latest
op it names (op references ``{op, invoke_index, complete_index, ...}``, docs/checkers.md);
None when no example names an op.
"""
from __future__ import annotations

import json
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from checkers.catalogue import describe_unknown
from checkers.run import RunDir, Verdict
from harness.run.scenario import (START_AFTER_OK, Scenario, ScenarioError, read_yaml_mapping, validate_model,
                                  with_overrides)
from harness.detect.suite import (FINISHED, INVALID, Cell, SuiteListener, current_record, read_records)
from harness.detect.suite_run import run_suite
from harness.detect.rates import wilson  # noqa: F401 - re-exported: zoo.wilson is the zoo's interval
from harness.detect.zoo_releases import (AFFECTED, FIXED, SIDES, UpstreamBug, epochs_reached, release_rows,
                                         side_differences, side_name, side_overrides, side_view, unsupported)

ZOO_KEYS = ("base", "must_find", "control", "upstream", "bar")
ZOO_JSON, ZOO_HTML = "zoo.json", "zoo.html"
MUTANT, CONTROL = "mutant", "control"


class ZooError(ValueError):
    """A zoo file is missing, not YAML, not a valid scenario once merged, or neither a mutant
    nor a control; the message says what to fix."""


@dataclass(frozen=True)
class ZooEntry:
    """One zoo file, or one side of a release entry: ``kind`` mutant or control, ``must_find``
    (mutants) and the merged scenario; for a release entry (harness.detect.zoo_releases) also
    the ``upstream`` block, the ``side`` (affected or fixed) and the ``release`` (the file's
    own name, shared by both sides)."""

    path: Path
    kind: str
    must_find: tuple[str, ...]
    scenario: Scenario
    upstream: UpstreamBug | None = None
    side: str | None = None
    release: str | None = None
    #: judged over nights (harness.detect.nights): the rate (caught, or valid for a control)
    #: below which the entry goes red; None: the default of its kind
    bar: float | None = None

    @property
    def name(self) -> str:
        return self.scenario.name


# ---------------------------------------------------------------- loading

def deep_merge(base: Any, over: Any) -> Any:
    """``over`` merged onto ``base``: mappings key by key (recursively), anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = deep_merge(base.get(k), v) if k in base else v
        return out
    return over


def _yaml(path: Path) -> Any:
    """A zoo or base file's YAML (harness.run.scenario.read_yaml_mapping: not a regular file,
    not UTF-8, not YAML, beyond the limits of checkers.safe_load: a ZooError in a line or two)."""
    return read_yaml_mapping(path, "zoo", ZooError)[1]


def load_entries(path: str | Path) -> list[ZooEntry]:
    """Read one zoo file (see the module docstring): one entry, or two for a release entry
    (its affected side, a mutant, then its fixed side, a control). Raises ZooError saying what
    to fix."""
    p = Path(path)
    data = _yaml(p)
    if not isinstance(data, dict):
        raise ZooError(f"{p} must be a YAML mapping (a scenario with must_find or control: true)")
    zoo = {k: data.pop(k) for k in ZOO_KEYS if k in data}
    must = zoo.get("must_find")
    control = zoo.get("control", False)
    upstream = None
    if "upstream" in zoo:
        upstream = validate_model(UpstreamBug, zoo["upstream"] if isinstance(zoo["upstream"], dict) else {},
                                  p, "release entry's upstream block", ZooError)
        if not must or control:
            raise ZooError(f"{p}: a release entry (upstream: ...) needs must_find: [anomaly, ...] for its "
                           "affected side; its fixed side is the control")
    bar = zoo.get("bar")
    if bar is not None and not (isinstance(bar, (int, float)) and not isinstance(bar, bool) and 0 < bar <= 1):
        raise ZooError(f"{p}: bar must be a rate from 0 (exclusive) to 1, e.g. bar: 0.5")
    if bool(must) == bool(control):
        raise ZooError(f"{p}: give either must_find: [anomaly, ...] (a mutant) or control: true")
    if must is not None and not (isinstance(must, list) and all(isinstance(x, str) for x in must)):
        raise ZooError(f"{p}: must_find must be a list of anomaly names, e.g. [G1a]")
    unknown = describe_unknown(must or [], "must_find")  # a mutant no finder can ever catch
    if unknown:
        raise ZooError(f"{p}: {unknown}")
    merged = data
    if zoo.get("base"):
        base_path = (p.parent / str(zoo["base"])).resolve()
        base = _yaml(base_path)
        if not isinstance(base, dict) or "suite" in base:
            raise ZooError(f"{p}: base {zoo['base']} is not a scenario file")
        merged = deep_merge(base, data)
    if upstream is None:
        return [ZooEntry(p, MUTANT if must else CONTROL, tuple(must or ()), _scenario(p, merged, must), bar=bar)]
    name = str(merged.get("name", p.stem))
    blocked = unsupported(upstream)  # a side this harness cannot set up (feature levels): never run
    if blocked and upstream.reproduced:
        raise ZooError(f"{p}: {blocked}; keep the entry as reproduced: false (with tried:) until it can run")
    out, views = [], {}
    for side in SIDES:
        fields = deep_merge(merged, side_overrides(getattr(upstream, side)))
        fields["name"] = side_name(name, side)
        scn = _scenario(p, fields, must if side == AFFECTED else None, f" ({side} side)")
        views[side] = side_view(scn, getattr(upstream, side))
        out.append(ZooEntry(p, MUTANT if side == AFFECTED else CONTROL, tuple(must) if side == AFFECTED else (),
                            scn, upstream=upstream, side=side, release=name, bar=bar))
    # the control must differ from the bug's side in the fix alone (harness.detect.zoo_releases)
    bad, fix_differs = side_differences(views[AFFECTED], views[FIXED], upstream.fix or "")
    if bad:
        raise ZooError(f"{p}: release entry {name}'s sides differ in {bad[0]}; only the fix "
                       f"({upstream.fix}) may differ" + (f" (and {len(bad) - 1} more field(s))" if len(bad) > 1 else ""))
    if not fix_differs:
        raise ZooError(f"{p}: release entry {name}'s sides do not differ in its fix ({upstream.fix})")
    return out


def _scenario(p: Path, merged: dict, must: list[str] | None, what: str = "") -> Scenario:
    scn = validate_model(Scenario, merged, p, f"zoo scenario (base merged){what}", ZooError)
    clash = sorted(set(must or ()) & set(scn.expected))
    if clash:
        raise ZooError(f"{p}: {clash} are both in must_find and in expected; a mutant must not "
                       "be allowed what catches it (set expected: [...] without them)")
    return scn


def load_entry(path: str | Path) -> ZooEntry:
    """The first entry of ``load_entries(path)``: the file's entry, or a release entry's
    affected side."""
    return load_entries(path)[0]


def load_zoo(folder: str | Path, only: Iterable[str] | None = None) -> list[ZooEntry]:
    """Every ``*.yaml`` of ``folder`` as a ZooEntry, mutants first, then by name; ``only``
    keeps the named entries (by scenario name or file stem). Raises ZooError for a bad file,
    two entries with one name, or an ``only`` name that matches nothing."""
    files = sorted(Path(folder).glob("*.yaml"))
    if not files:
        raise ZooError(f"no zoo files (*.yaml) in {folder}")
    entries = [e for f in files for e in load_entries(f)]
    seen: dict[str, Path] = {}
    for e in entries:
        if e.name in seen:
            raise ZooError(f"{seen[e.name]} and {e.path} both name {e.name!r}")
        seen[e.name] = e.path
    if only:
        wanted = list(dict.fromkeys(only))
        known = {e.name for e in entries} | {e.path.stem for e in entries} | {e.release for e in entries if e.release}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise ZooError(f"no zoo entry named {missing}; known: {sorted(e.name for e in entries)}")
        entries = [e for e in entries if e.name in wanted or e.path.stem in wanted or e.release in wanted]
        blocked = next(((e, why) for e in entries if e.upstream is not None and (why := unsupported(e.upstream))), None)
        if blocked:
            raise ZooError(f"{blocked[0].release} cannot run on this harness yet: {blocked[1]}")
    else:  # a release entry not reproduced so far is a measurement, run only when named
        entries = [e for e in entries if e.upstream is None or e.upstream.reproduced]
    return sorted(entries, key=lambda e: (e.kind != MUTANT, e.name))


def load_selection(path: str | Path) -> tuple[Path, list[str], int | None]:
    """A zoo selection file (scenarios/releases.yaml): ``{suite: NAME, zoo: FOLDER, entries:
    [entry names], runs: N}`` -> (the zoo folder, resolved against the file's folder; the
    entries, as ``--only`` takes them; runs per entry or None). The ``suite`` key makes every
    scenario lister skip it (harness.detect.suite.is_suite_file) and ``eos-chaos suite`` point
    at ``eos-chaos zoo --zoo``. Raises ZooError saying what to fix."""
    p = Path(path)
    data = _yaml(p)
    if not isinstance(data, dict) or "zoo" not in data or "suite" not in data:
        raise ZooError(f"{p} is not a zoo selection (a mapping with suite: NAME, zoo: FOLDER, entries: [...]); "
                       "--zoo takes a folder of zoo files or such a file")
    extra = sorted(set(data) - {"suite", "zoo", "entries", "runs", "description"})
    if extra:
        raise ZooError(f"{p}: unknown key(s) {extra}; a selection has suite, zoo, entries, runs, description")
    entries, runs = data.get("entries"), data.get("runs")
    if not (isinstance(entries, list) and entries and all(isinstance(e, str) for e in entries)):
        raise ZooError(f"{p}: entries must be a list of zoo entry names, e.g. [kafka-14402]")
    if runs is not None and not (isinstance(runs, int) and not isinstance(runs, bool) and 1 <= runs <= 10_000):
        raise ZooError(f"{p}: runs must be a whole number from 1 to 10000")
    return (p.parent / str(data.get("zoo") or "zoo")).resolve(), list(entries), runs


def cells(entries: list[ZooEntry], zoo_dir: str | Path, *, runs: int, duration: float | None = None,
          first_seed: int = 1, write: bool = True) -> list[Cell]:
    """The zoo's runs, seed-major: every entry at ``first_seed``, then at the next seed, ...;
    ``duration`` (s) replaces each scenario's own. The cells' source is the merged scenario
    as a runnable file, ``<zoo_dir>/scenarios/<name>.yaml``, written when ``write``."""
    if runs < 1:
        raise ZooError("--runs must be at least 1")
    d = Path(zoo_dir) / "scenarios"
    sources = {}
    for e in entries:
        f = d / f"{e.name}.yaml"
        if write:
            d.mkdir(parents=True, exist_ok=True)
            head = (f"# {e.kind} of the bug zoo, merged from {e.path}"
                    + (f"; {e.upstream.id} on its {e.side} side" if e.upstream else "")
                    + (f"; must find one of {list(e.must_find)}" if e.must_find else "") + "\n")
            f.write_text(head + yaml.safe_dump(e.scenario.model_dump(mode="json", exclude_none=True), sort_keys=False))
        sources[e.name] = str(f)
    out = []
    for seed in range(first_seed, first_seed + runs):
        for e in entries:
            try:  # validated like the file: --duration inf is one line
                scn = with_overrides(e.scenario, seed=seed, duration=float(duration) if duration else None)
            except ScenarioError as exc:
                raise ZooError(str(exc)) from None
            out.append(Cell(scn, sources[e.name], kind=e.kind, must_find=e.must_find, entry=e.name,
                            bar=e.bar))
    return out


# ---------------------------------------------------------------- figures

def op_refs(example: Any) -> list[dict]:
    """Every op reference (a dict with ``invoke_index`` or ``complete_index``) inside an example."""
    found: list[dict] = []

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if "complete_index" in x or "invoke_index" in x:
                found.append(x)
            for v in x.values():
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    walk(example)
    return found


def event_times(history: str | Path, indexes: set[int]) -> tuple[dict[int, int], int | None]:
    """(time in ns of each event whose ``index`` is in ``indexes``, time of the first nemesis
    fault event or None), from a history.jsonl read line by line (line i holds index i)."""
    times: dict[int, int] = {}
    first_fault = None
    want = set(indexes)
    with open(history) as f:
        for i, line in enumerate(f):
            nem = first_fault is None and '"nemesis"' in line
            if i not in want and not nem:
                if not want - times.keys() and first_fault is not None:
                    break
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            # heal and nemesis.start_after_ok's wait are not faults (harness.run.runner)
            if nem and ev.get("process") == "nemesis" and ev.get("f") not in ("heal", START_AFTER_OK, "preload"):
                first_fault = ev.get("time")
            idx = ev.get("index", i)
            if idx in want:
                times[idx] = ev.get("time")
    return times, first_fault


def time_to_detect(verdict: Verdict | dict, history: str | Path, schedule: list[dict] | None = None,
                   anomalies: Iterable[str] | None = None) -> float | None:
    """Seconds from the load's start until the earliest example of a failing anomaly (of
    ``anomalies`` when given) was complete: for each listed example, the completion of the
    latest op it names (an op without a completion counts at its invoke); the earliest such
    time over the examples. Examples are listed by key and value, not by time, and an
    example's first op (e.g. G1a's aborted write) is not yet an anomaly: what was observable
    is the example with all its ops done. The load starts at history time 0, or at (first
    nemesis event's time - the schedule's first step ``at``) when ``schedule``
    (schedule.json's list) has a step. None when no example names an op or the history is
    missing. ``verdict``: a Verdict or verdict.json's dict."""
    verdict = Verdict.coerce(verdict)
    names = [n for n in verdict.failing if anomalies is None or n in set(anomalies)]
    examples = [op_refs(ex) for n in names for ex in verdict.anomalies.get(n) or []]
    examples = [refs for refs in examples if refs]

    def idx(r: dict) -> int | None:
        i = r.get("complete_index") if isinstance(r.get("complete_index"), int) else r.get("invoke_index")
        return i if isinstance(i, int) else None

    want = {i for refs in examples for r in refs if (i := idx(r)) is not None}
    if not want or not Path(history).is_file():
        return None
    times, first_fault = event_times(history, want)
    start_ns = 0
    if schedule and first_fault is not None:
        start_ns = max(0, first_fault - int(float(schedule[0]["at"]) * 1e9))
    done = []
    for refs in examples:
        ts = [times.get(idx(r)) for r in refs]
        if ts and all(t is not None for t in ts):
            done.append(max(ts))
    return None if not done else round(max(0, min(done) - start_ns) / 1e9, 3)


def run_facts(zoo_dir: Path, rec: dict, entry: ZooEntry, cache: dict[str, dict]) -> dict:
    """What the zoo needs of one finished run: ``detected`` (mutants), ``invalid``,
    ``anomalies`` (failing names), ``time_to_detect_s``. Cached by run folder in ``cache``."""
    key = f"{rec.get('run_dir')}|{rec.get('fingerprint')}"
    if key in cache:
        return cache[key]
    failing = list(rec.get("failing") or [])
    hit = [n for n in failing if n in entry.must_find]
    facts: dict[str, Any] = {"invalid": rec.get("status") == INVALID, "anomalies": failing,
                             "detected": bool(entry.must_find) and rec.get("status") == INVALID and bool(hit),
                             "time_to_detect_s": None}
    run_dir = zoo_dir / rec["run_dir"] if rec.get("run_dir") else None
    verdict = RunDir(run_dir).read_verdict() if facts["detected"] and run_dir is not None else None
    if verdict is not None:
        try:
            sched_p = run_dir / "schedule.json"
            sched = json.loads(sched_p.read_text()) if sched_p.is_file() else None
            facts["time_to_detect_s"] = time_to_detect(verdict, run_dir / "history.jsonl", sched, hit)
        except (OSError, ValueError):  # no time to detect: the run still counts as detected
            pass
    if entry.upstream is not None and entry.side == FIXED and entry.upstream.must_reach_epoch is not None:
        # did the control reach the bug's boundary (harness.detect.zoo_releases.epoch_judgement)
        facts["epochs"] = epochs_reached(run_dir / "history.jsonl") if run_dir is not None else None
    cache[key] = facts
    return facts


def zoo_summary(entries: list[ZooEntry], all_cells: list[Cell], records: dict[str, dict],
                zoo_dir: str | Path, cache: dict[str, dict] | None = None) -> dict:
    """The zoo.json document: ``{"mutants": [{name, must_find, runs, detected, rate, ci95,
    median_time_to_detect_s, anomalies: {name: runs that found it}, errors}], "controls":
    [{name, runs, invalid, rate, ci95, anomalies, errors}], "releases": [upstream bug rows
    pairing a release entry's two sides: harness.detect.zoo_releases.release_rows],
    "complete"}``. ``runs`` counts
    runs with a verdict (valid, invalid, unknown); errored, interrupted and not-run cells are
    in ``errors`` / ``pending``."""
    zoo_dir = Path(zoo_dir)
    cache = {} if cache is None else cache
    by_name = {e.name: e for e in entries}
    per: dict[str, list[dict]] = {e.name: [] for e in entries}
    pending: dict[str, int] = {e.name: 0 for e in entries}
    errors: dict[str, int] = {e.name: 0 for e in entries}
    for c in all_cells:
        rec = current_record(c, records)
        if rec is None or rec.get("status") not in FINISHED:
            if rec is not None and rec.get("status") == "error":
                errors[c.name] += 1
            else:
                pending[c.name] += 1
            continue
        per[c.name].append(dict(run_facts(zoo_dir, rec, by_name[c.name], cache), seed=c.seed))
    mutants, controls = [], []
    for e in entries:
        fs = per[e.name]
        anomalies: dict[str, int] = {}
        for f in fs:
            for n in f["anomalies"]:
                anomalies[n] = anomalies.get(n, 0) + 1
        row: dict[str, Any] = {"name": e.name, "file": str(e.path), "runs": len(fs),
                               "anomalies": dict(sorted(anomalies.items())),
                               "errors": errors[e.name], "pending": pending[e.name]}
        if e.kind == MUTANT:
            k = sum(f["detected"] for f in fs)
            ttd = [f["time_to_detect_s"] for f in fs if f["detected"] and f["time_to_detect_s"] is not None]
            row.update(must_find=list(e.must_find), detected=k, rate=round(k / len(fs), 4) if fs else None,
                       ci95=wilson(k, len(fs)),
                       median_time_to_detect_s=round(statistics.median(ttd), 2) if ttd else None,
                       times_to_detect_s=ttd, missed_seeds=[f["seed"] for f in fs if not f["detected"]])
            mutants.append(row)
        else:
            k = sum(f["invalid"] for f in fs)
            row.update(invalid=k, rate=round(k / len(fs), 4) if fs else None, ci95=wilson(k, len(fs)),
                       invalid_seeds=[f["seed"] for f in fs if f["invalid"]])
            if e.upstream is not None and e.upstream.must_reach_epoch is not None:  # release_rows judges them
                row["epoch_runs"] = [{"seed": f["seed"], "invalid": f["invalid"], "epochs": f.get("epochs")} for f in fs]
            controls.append(row)
    total_controls = sum(c["runs"] for c in controls)
    releases = release_rows(entries, mutants, controls)
    total_fp = sum(c["invalid"] for c in controls)
    return {"mutants": mutants, "controls": controls, "releases": releases,
            "control_totals": {"runs": total_controls, "invalid": total_fp, "ci95": wilson(total_fp, total_controls)},
            "complete": not any(pending.values()) and not any(errors.values())}


def exit_code(summary: dict) -> int:
    """0 when every mutant run was detected and no control run was invalid; 1 when a mutant
    run escaped or a control run was invalid; 2 when nothing failed but runs are missing."""
    if any(m["detected"] < m["runs"] for m in summary["mutants"]) or any(c["invalid"] for c in summary["controls"]):
        return 1
    return 0 if summary["complete"] else 2


def zoo_html(summary: dict, meta: dict) -> str:
    """The zoo page (self-contained HTML, jinja2 with autoescaping)."""
    import jinja2

    from harness.detect.suite import fmt_s

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["dur"] = fmt_s
    return env.get_template("zoo_index.html.j2").render(z=summary, meta=meta)


def write_zoo_outputs(zoo_dir: str | Path, summary: dict, meta: dict) -> dict[str, Path]:
    """Write zoo.json (the summary plus ``meta``) and zoo.html into ``zoo_dir``."""
    d = Path(zoo_dir)
    paths = {"zoo": d / ZOO_JSON, "zoo_html": d / ZOO_HTML}
    doc = dict(summary, **meta)
    for p, text in ((paths["zoo"], json.dumps(doc, indent=1, default=str) + "\n"),
                    (paths["zoo_html"], zoo_html(summary, meta))):
        tmp = p.with_name(f".{p.name}.tmp")
        tmp.write_text(text)
        tmp.replace(p)
    return paths


class ZooListener(SuiteListener):
    """Forwards to the suite's listener (the terminal view) and rewrites zoo.json / zoo.html
    after every run."""

    def __init__(self, inner: SuiteListener, update: Callable[[], None]):
        self.inner, self.update = inner, update

    def begin(self, *a):
        self.inner.begin(*a)

    def run_started(self, *a):
        self.inner.run_started(*a)

    def run_finished(self, *a):
        self.inner.run_finished(*a)
        self.update()

    def end(self, *a):
        self.inner.end(*a)


def run_zoo(entries: list[ZooEntry], results_root: str | Path, zoo_dir: str | Path, *, runs: int,
            duration: float | None = None, first_seed: int = 1, runner: Callable[..., Any] | None = None,
            stop: threading.Event | None = None, listener: SuiteListener | None = None,
            fresh: bool = False, command: str = "", shard: tuple[int, int] | None = None,
            source: dict | None = None) -> tuple[dict, dict[str, Path]]:
    """Run the zoo (resuming) and write its outputs; returns (zoo summary, paths). ``runner``
    is harness.run.runner.run_scenario unless given (tests inject a fake). ``shard`` (K, N):
    only shard K's cells (harness.detect.shards), the folder then a shard folder whose summary
    carries ``source`` (how to load the entries again at the merge: ``{zoo, only}``)."""
    from harness.detect.shards import shard_cells, shard_meta
    from harness.detect.suite import DEFAULT_OVERHEAD_S

    zoo_dir = Path(zoo_dir)
    every = cells(entries, zoo_dir, runs=runs, duration=duration, first_seed=first_seed)
    all_cells = every if shard is None else shard_cells(every, shard, DEFAULT_OVERHEAD_S)
    suite_meta = None
    if shard is not None:
        suite_meta = shard_meta(every, shard, DEFAULT_OVERHEAD_S)
        suite_meta["shard"]["zoo"] = dict(source or {}, runs=runs, duration=duration, first_seed=first_seed)
    cache: dict[str, dict] = {}
    meta = {"command": command, "runs_per_entry": runs, "duration_s": duration, "first_seed": first_seed}
    paths: dict[str, Path] = {}

    def update() -> None:
        recs = read_records(zoo_dir / "runs.jsonl")
        paths.update(write_zoo_outputs(zoo_dir, zoo_summary(entries, all_cells, recs, zoo_dir, cache), meta))

    res = run_suite(all_cells, results_root, zoo_dir, name="zoo", source=command or "eos-chaos zoo",
                    runner=runner, stop=stop, listener=ZooListener(listener or SuiteListener(), update),
                    fresh=fresh, meta=suite_meta)
    update()
    summary = zoo_summary(entries, all_cells, read_records(zoo_dir / "runs.jsonl"), zoo_dir, cache)
    paths.update(res.paths)
    return summary, paths


def merge_zoo(out: str | Path, folders: list[str | Path]) -> tuple[dict, dict, list[str], dict[str, Path]]:
    """Merge zoo shard folders (``eos-chaos zoo --shard K/N``) into ``out``: the suite outputs
    (harness.detect.shards.merge) and zoo.json / zoo.html over every shard's runs, the entries
    loaded again from the zoo folder the shards ran (``shard.zoo`` of their summaries). Returns
    (zoo summary, suite summary, cells no shard ran, paths). Raises ShardError (bad shards) or
    ZooError (the zoo files cannot be loaded, or changed since the shards ran)."""
    from harness.detect.shards import ShardError, matrix_id, merge, read_shard
    from harness.detect.suite_outputs import write_outputs

    if not folders:
        raise ShardError("give at least one shard folder to merge")
    src = read_shard(folders[0])["shard"].get("zoo")
    if not isinstance(src, dict) or not src.get("zoo"):
        raise ShardError(f"{folders[0]} is not a zoo shard (no shard.zoo in its summary.json): "
                         "merge suite shards with `eos-chaos suite merge`")
    summary, missing = merge(out, folders)
    from harness.run.locate import ScenarioNotFound, find_scenario_path

    try:
        zoo_path = find_scenario_path(src["zoo"])
    except ScenarioNotFound as exc:
        raise ZooError(str(exc)) from None
    if zoo_path.is_file():
        zoo_path, chosen, _ = load_selection(zoo_path)
        entries = load_zoo(zoo_path, src.get("only") or chosen)
    else:
        entries = load_zoo(zoo_path, src.get("only") or None)
    every = cells(entries, out, runs=int(src["runs"]), duration=src.get("duration"),
                  first_seed=int(src.get("first_seed") or 1))
    if matrix_id(every) != summary["merged"]["matrix"]:
        raise ZooError(f"the zoo files in {src['zoo']} are not the ones the shards ran (another matrix): "
                       "merge with the same checkout the shards ran")
    zsum = zoo_summary(entries, every, read_records(Path(out) / "runs.jsonl"), out)
    paths = write_outputs(out, summary)
    paths.update(write_zoo_outputs(out, zsum, {"command": "eos-chaos zoo merge", "runs_per_entry": src["runs"],
                                               "duration_s": src.get("duration"),
                                               "first_seed": src.get("first_seed"), "merged": summary["merged"]}))
    return zsum, summary, missing, paths


def public_json(summary: dict) -> dict:
    """The ``--json`` shape: ``{"releases": [...], "mutants": [{name, runs, detected, rate, ci95,
    median_time_to_detect_s, anomalies}], "controls": [{name, runs, invalid}]}`` (plus the
    other zoo.json fields of each row; ``releases`` as zoo_summary's)."""
    keys_m = ("name", "runs", "detected", "rate", "ci95", "median_time_to_detect_s", "anomalies")
    keys_c = ("name", "runs", "invalid")
    return {"releases": summary.get("releases", []),
            "mutants": [{**{k: m[k] for k in keys_m}, **{k: v for k, v in m.items() if k not in keys_m}}
                        for m in summary["mutants"]],
            "controls": [{**{k: c[k] for k in keys_c}, **{k: v for k, v in c.items() if k not in keys_c}}
                         for c in summary["controls"]]}
