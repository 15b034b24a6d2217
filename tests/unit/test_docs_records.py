"""docs/ keeps reference apart from records (issue 45): docs/scenarios.md and docs/detection.md
explain and stay short; the dated measurements are docs/records/*.md, each listed in
docs/records/README.md; a section another file cites by its quoted heading
(docs/detection.md "Upstream bugs") is still a heading of the page it names; "time to detect"
is defined once, as harness/detect/zoo.py computes it."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = ROOT / "docs"
RECORDS = DOCS / "records"
REFERENCE_PAGES = ("scenarios.md", "detection.md")
MAX_LINES = 450

#: citations that name no heading of the page, each with where the text is
NOT_A_HEADING = {
    ("scenarios", "Finding F1, confirmed at the log level"): "moved to docs/findings/F1.md before issue 45",
    ("scenarios", "chaos"): "the chaos rows: 'Every scenario of issue 4' and its record",
}


def test_reference_pages_are_short():
    for name in REFERENCE_PAGES:
        n = len((DOCS / name).read_text().splitlines())
        assert n < MAX_LINES, f"docs/{name} has {n} lines: dated measurements go to docs/records/"


def _index_links() -> list[str]:
    text = (RECORDS / "README.md").read_text()
    return re.findall(r"\]\(([^)#]+\.md)\)", text)


def test_every_record_is_in_the_index_and_every_index_entry_is_a_record():
    files = sorted(p.name for p in RECORDS.iterdir() if p.is_file() and p.name != "README.md")
    links = _index_links()
    assert files, "docs/records/ holds no record"
    assert sorted(set(links)) == files, \
        f"not in the index: {sorted(set(files) - set(links))}; in the index, no file: {sorted(set(links) - set(files))}"
    assert len(links) == len(set(links)), "a record listed twice in docs/records/README.md"
    for p in RECORDS.glob("*.md"):
        if p.name != "README.md":
            assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", p.name), f"record not named by date and subject: {p.name}"
            date = p.name[:10]
            assert f"| {date} |" in (RECORDS / "README.md").read_text(), f"{p.name}: its date is not in the index"


def test_reference_pages_link_records_that_exist():
    for name in REFERENCE_PAGES:
        links = re.findall(r"\]\(records/([^)#]+)\)", (DOCS / name).read_text())
        assert links, f"docs/{name} links no record"
        missing = [l for l in links if not (RECORDS / l).is_file()]
        assert not missing, f"docs/{name} links missing records: {missing}"
    linked = {l for name in REFERENCE_PAGES
              for l in re.findall(r"\]\(records/([^)#]+)\)", (DOCS / name).read_text())}
    unlinked = [p.name for p in RECORDS.glob("*.md") if p.name != "README.md" and p.name not in linked]
    assert not unlinked, f"records no reference page links: {unlinked}"


def _headings(page: str) -> list[str]:
    text = (DOCS / f"{page}.md").read_text()
    return [l.lstrip("#").strip().replace("`", "") for l in text.splitlines() if l.startswith("#")]


def test_cited_sections_are_headings_of_the_page_they_name():
    cite = re.compile(r'docs/(scenarios|detection)\.md,?\s+\(?"([^"]{1,100})"')
    files = [ROOT / "README.md"] + [p for d in ("docs", "harness", "checkers", "nemesis", "scenarios", "tests")
                                    for p in sorted((ROOT / d).rglob("*"))
                                    if p.is_file() and p.suffix in (".md", ".py", ".yaml")
                                    and "__pycache__" not in p.parts]
    bad, seen = [], 0
    for f in files:
        lines = f.read_text(errors="replace").splitlines()
        if f.suffix != ".md":  # comments continue over lines: drop their markers
            lines = [re.sub(r"^\s*#:?\s?", "", l) for l in lines]
        text = " ".join(" ".join(lines).split())
        for m in cite.finditer(text):
            page, quoted = m[1], m[2].replace("`", "").replace("...", "").strip(" .")
            seen += 1
            if (page, quoted) in NOT_A_HEADING:
                continue
            if not any(h.startswith(quoted) or quoted in h for h in _headings(page)):
                bad.append(f'{f.relative_to(ROOT)}: docs/{page}.md "{m[2]}"')
    assert seen > 20, "the citation pattern found almost nothing: check the regex"
    assert not bad, f"cited sections that are no longer headings: {bad}"


def test_time_to_detect_is_defined_once_as_the_code_computes_it():
    from harness.detect import zoo

    assert "the completion of the latest op it names" in " ".join(zoo.__doc__.split())
    assert "the earliest such time over the examples" in " ".join(zoo.time_to_detect.__doc__.split())
    detection = (DOCS / "detection.md").read_text()
    assert "#### Time to detect" in detection
    flat = " ".join(detection.split())
    assert "the completion of the latest op it names" in flat and "the earliest such time over the examples" in flat
    # the other definition (the earliest op of the first example) is nowhere in docs/
    for p in [*DOCS.glob("*.md"), *RECORDS.glob("*.md"), ROOT / "README.md"]:
        flat = " ".join(p.read_text().split())
        assert "completion of the earliest op of the first" not in flat, p
        assert "Time to detect: from" not in flat, f"{p}: a second definition; point at docs/detection.md \"Time to detect\""
