"""Anomaly examples as the report shows them: the explanation sentence with its op numbers linked
to the history table, then the data fields, with op references (`{op, invoke_index,
complete_index, process, f, type, ...}`, bare indices, cycle steps) turned into links."""
from __future__ import annotations

import json
import re
from typing import Any

from markupsafe import Markup, escape

from checkers.run import Verdict
from checkers.catalogue import LIVENESS_REPORTS as LIVENESS  # the liveness reports: one list

from .definitions import anomaly_definition

MAX_EXAMPLES = 50  # examples rendered per anomaly
OP_REF_KEYS = {"ops", "op", "op_index", "op_indices", "index", "indices", "invoke", "completion",
               "invoke_index", "completion_index", "complete_index", "prev_op", "fence"}
_OP_IN_TEXT = re.compile(r"\b(ops?) (\d+)\b")


def anchor(name: str) -> str:
    return "anomaly-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def anomalies(verdict: "Verdict | dict", known: set[int] | None = None,
              key_links: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The found anomalies, those that fail the run first (the verdict's order within each
    group). status: "fails" (``Verdict.failing_names``), "allowed" (allowed by the scenario)
    or "reported" (a liveness report that does not fail this run), "input side" (the app
    workload's input producers' cycles Kafka allows: ``Verdict.input_side``)."""
    verdict = Verdict.coerce(verdict)
    examples = verdict.anomalies
    counts = verdict.anomaly_counts
    allowed = set(verdict.allowed)
    failing = verdict.failing_names
    names = list(dict.fromkeys([*examples.keys(), *counts.keys()]))
    out = []
    for name in names:
        exs = examples.get(name) or []
        if not isinstance(exs, list):
            exs = [exs]
        count = counts.get(name, len(exs))
        if not exs and not count:
            continue
        name = str(name)
        status = ("fails" if name in failing else "allowed" if name in allowed
                  else "input side" if name in verdict.input_side else "reported")
        out.append({
            "name": name,
            "anchor": anchor(name),
            "count": count,
            "allowed": status != "fails",
            "status": status,
            "liveness": name in LIVENESS,
            "definition": anomaly_definition(name),
            "all_examples": exs,
            "examples": [example(ex, known, key_links) for ex in exs[:MAX_EXAMPLES]],
            "more": max(0, len(exs) - MAX_EXAMPLES),
            "unlisted": max(0, int(count) - len(exs)) if isinstance(count, int) else 0,
            "ranges": _ranges(verdict, known) if name == "eos-duplicate" else [],
        })
    out.sort(key=lambda a: a["status"] != "fails")
    return out


_RESTART = {"offset-reset": "reset to the log start", "behind-committed": "behind the committed offset"}


def _ranges(verdict: Verdict, known: set[int] | None = None) -> list[dict[str, Any]]:
    """eos-duplicate's reprocessed ranges (``stats.reprocessed_ranges``, checkers/finders/reprocessing.py)
    as table rows: key, offsets, inputs, and what restarted each (a sentence per restart;
    "none found" for the eos-pipeline, None for the app workload, which looks for none: the
    report then leaves the column out)."""
    rows = []
    for r in verdict.stats.get("reprocessed_ranges") or []:
        if not isinstance(r, dict):
            continue
        rs = r.get("restarts")
        why = "" if rs is None else ("; ".join(
            f"{_RESTART.get(s.get('kind'), s.get('kind'))}: assign op {s.get('assign_index')} read from offset "
            f"{s.get('first_offset')}, the group had committed {s.get('committed_offset')}"
            + (f", {s['pending']} other transaction(s) open across the assign" if s.get("pending") else "")
            for s in rs) or "no restart behind the committed offset found")
        rows.append({"key": r.get("key"), "span": f"{r.get('from_offset')}-{r.get('to_offset')}",
                     "inputs": r.get("inputs"), "why": None if rs is None else linkify(why, known)})
    return rows


def example(ex: Any, known: set[int] | None = None,
            key_links: dict[str, str] | None = None) -> dict[str, Any]:
    """key_links: key -> anchor of its plot; an example's key links there."""
    if not isinstance(ex, dict):
        return {"explanation": None, "fields": [("value", escape(compact(ex)), False)]}
    fields = []
    for k, v in ex.items():
        if k in ("explanation", "anomaly"):
            continue
        if k == "key" and isinstance(v, str) and key_links and v in key_links:
            html = Markup('<a class="key-link" href="#{}" title="offsets of {} over time">{}</a>'
                          ).format(key_links[v], v, v)
        else:
            html = field_html(str(k), v, known)
        # lists of explained steps take the example's whole width
        fields.append((str(k), html, html.startswith('<ol class="steps">')))
    expl = ex.get("explanation")
    return {"explanation": linkify(str(expl), known) if expl else None, "fields": fields}


def linkify(text: str, known: set[int] | None = None) -> Markup:
    """Escape text and link "op 181" (an event index, as the checkers write it) to its row."""
    out, at = [], 0
    for m in _OP_IN_TEXT.finditer(text):
        i = int(m.group(2))
        if known is not None and i not in known:
            continue
        out.append(escape(text[at:m.start()]))
        out.append(Markup('{0} <a class="op-link" href="#op-{1}">{1}</a>').format(m.group(1), i))
        at = m.end()
    out.append(escape(text[at:]))
    return Markup("").join(out)


def is_op_ref(v: Any) -> bool:
    """A checker's op reference: a dict naming its invoke and/or completion event."""
    return isinstance(v, dict) and any(_int(v.get(k)) is not None
                                       for k in ("invoke_index", "complete_index"))


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def is_op_ref_key(key: str) -> bool:
    k = key.lower()
    return k in OP_REF_KEYS or k.endswith("_op") or k.endswith("_ops")


def ints(v: Any) -> list[int] | None:
    """Event indices in a field value: an int, an op dict with an int index, or a list of those."""
    if _int(v) is not None:
        return [v]
    if isinstance(v, dict) and _int(v.get("index")) is not None:
        return [v["index"]]
    if isinstance(v, list) and v:
        out: list[int] = []
        for x in v:
            got = ints(x) if not isinstance(x, list) else None
            if got is None:
                return None
            out += got
        return out
    return None


def op_refs(ex: Any, depth: int = 0) -> set[int]:
    """Every event index an example names: op references, op fields, cycle steps' from/to,
    observed_by entries and "op N" in explanations."""
    refs: set[int] = set()
    if depth > 4:
        return refs
    if isinstance(ex, list):
        for x in ex[:200]:
            refs |= op_refs(x, depth + 1)
        return refs
    if not isinstance(ex, dict):
        return refs
    if is_op_ref(ex):
        return {i for i in (_int(ex.get("invoke_index")), _int(ex.get("complete_index")))
                if i is not None}
    step = "kind" in ex
    for k, v in ex.items():
        k = str(k)
        if k == "explanation" and isinstance(v, str):
            refs |= {int(m.group(2)) for m in _OP_IN_TEXT.finditer(v)}
        elif step and k in ("from", "to") and _int(v) is not None:
            refs.add(v)
        elif is_op_ref_key(k) and not is_op_ref(v) and ints(v) is not None:
            refs.update(ints(v) or [])
        elif k == "observed_by" and isinstance(v, dict):
            for x in v.values():
                for y in x if isinstance(x, list) else [x]:
                    i = _int(y) if not isinstance(y, dict) else _int(y.get("op"))
                    if i is not None:
                        refs.add(i)
        elif isinstance(v, (dict, list)):
            refs |= op_refs(v, depth + 1)
    return refs


def op_link(i: int) -> Markup:
    return Markup('<a class="op-link" href="#op-{0}">#{0}</a>').format(i)


def op_ref_html(ref: dict[str, Any]) -> Markup:
    """`txn fail p3 #181 → #184` with the indices linked and the rest in a tooltip."""
    inv, done = _int(ref.get("invoke_index")), _int(ref.get("complete_index"))
    head = " ".join(str(ref[k]) if k != "process" else f"p{ref[k]}"
                    for k in ("f", "type", "process") if ref.get(k) is not None)
    links = [op_link(i) for i in (inv, done) if i is not None]
    if inv is not None and done is not None and inv == done:
        links = links[:1]
    tip = compact({k: v for k, v in ref.items() if v is not None}, 300)
    return Markup('<span class="opref" title="{}">{} {}</span>').format(
        tip, head, Markup(" → ").join(links))


def field_html(key: str, v: Any, known: set[int] | None = None) -> Markup:
    if is_op_ref(v):
        return op_ref_html(v)
    if isinstance(v, list) and v and all(is_op_ref(x) for x in v):
        return Markup(", ").join(op_ref_html(x) for x in v)
    if isinstance(v, list) and v and all(isinstance(x, dict) and isinstance(x.get("explanation"),
                                                                              str) for x in v):
        items = Markup("").join(Markup("<li>{}</li>").format(linkify(x["explanation"], known))
                                for x in v[:30])
        more = Markup("<li>… {} more</li>").format(len(v) - 30) if len(v) > 30 else ""
        return Markup('<ol class="steps">{}{}</ol>').format(items, more)
    if key == "observed_by" and isinstance(v, dict):
        parts = []
        for k, x in list(v.items())[:20]:
            idx = []
            for y in x if isinstance(x, list) else [x]:
                i = _int(y) if not isinstance(y, dict) else _int(y.get("op"))
                if i is not None:
                    idx.append(i)
            parts.append(Markup("{}: {}").format(k, Markup(", ").join(op_link(i) for i in idx)))
        return Markup("; ").join(parts)
    got = ints(v) if is_op_ref_key(key) else None
    if got is not None:
        return Markup(", ").join(op_link(i) for i in got)
    if isinstance(v, str):
        return escape(v)
    return Markup("<code>{}</code>").format(compact(v, 600))


def compact(v: Any, limit: int | None = None) -> str:
    s = json.dumps(v, separators=(",", ":"), default=str, ensure_ascii=False)
    if limit and len(s) > limit:
        s = s[: limit - 1] + "…"
    return s
