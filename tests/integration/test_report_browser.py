"""The report checked the way a person sees it: a real report (tests/data/real-read-uncommitted-s2,
an invalid run with aborted reads) rendered in headless Chromium, driven by selenium through the
Debian chromedriver. Asserts on the DOM (verdict banner, timeline, anomaly sections with their
explanations and op links, key plots, liveness), on screenshots (a non-blank PNG of the window's
size with the red banner in it), and that no request left the page (Chrome's performance log lists
every network request: all must be file: or data:).

Needs the Debian packages chromium and chromium-driver (`make test` installs them) and the PyPI
packages selenium and pillow (the `test` extra); skipped with the reason otherwise.
"""
from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import checkers
from harness.report import render_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
DATA = Path(__file__).resolve().parents[1] / "data" / "real-read-uncommitted-s2"
WIDTH, HEIGHT = 1400, 2400
BANNER_RED = (198, 40, 40)  # --bad: #c62828

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER),
    reason="needs the Debian packages chromium and chromium-driver (make test installs them)")
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install -e '.[test]')")
Image = pytest.importorskip("PIL.Image", reason="needs pillow (pip install -e '.[test]')")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The real run rendered in a temp dir: copy its files, check it, render its report."""
    run = tmp_path_factory.mktemp("real-read-uncommitted-s2")
    for f in ("history.jsonl", "meta.json", "scenario.yaml"):
        shutil.copy(DATA / f, run / f)
    import yaml

    meta = json.loads((run / "meta.json").read_text())
    allowed = (yaml.safe_load((run / "scenario.yaml").read_text()) or {}).get("expected", [])
    verdict = checkers.check(run / "history.jsonl", meta=meta, allowed=allowed)
    assert verdict.valid is False and "G1a" in verdict.failing
    (run / "verdict.json").write_text(verdict.to_json())
    # the run folder's files the report links to (broker log, config)
    (run / "logs").mkdir()
    (run / "logs" / "n1.log").write_text("[2026-11-21 10:00:00,000] INFO started (kafka.server.KafkaRaftServer)\n")
    (run / "nodes" / "n1").mkdir(parents=True)
    (run / "nodes" / "n1" / "server.properties").write_text("node.id=1\n")
    return render_report(run)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium Manager fetch a driver
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-extensions", "--disable-sync",
                "--no-first-run", "--no-default-browser-check", "--hide-scrollbars",
                "--host-resolver-rules=MAP * ~NOTFOUND",  # a request that tries to leave fails
                f"--window-size={WIDTH},{HEIGHT}",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    log = tmp_path_factory.mktemp("chromedriver") / "chromedriver.log"
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER, log_output=str(log)))
    driver.set_page_load_timeout(60)
    # the window's size includes the browser's frame: fix the page's viewport itself
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(browser, report):
    """The report opened once; the network requests it made while loading."""
    browser.get_log("performance")  # drop what the blank start page logged
    browser.get(report.as_uri())
    WebDriverWait(browser, 30).until(
        lambda d: d.execute_script("return document.readyState") == "complete")
    requests = []
    for entry in browser.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated"):
            p = msg["params"]
            requests.append(p.get("request", {}).get("url") or p.get("url"))
    return browser, requests


def _text(driver, css: str) -> str:
    return driver.find_element(By.CSS_SELECTOR, css).text


def test_verdict_banner_and_anomaly_sections(page):
    d, _ = page
    banner = _text(d, "#verdict .banner.invalid")
    assert "INVALID" in banner and "G1a" in banner
    # the anomaly that fails the run comes first, with its definition and explained examples
    sections = d.find_elements(By.CSS_SELECTOR, "#anomalies .anomaly")
    assert sections[0].get_attribute("id") == "anomaly-G1a"
    g1a = sections[0]
    assert "Aborted read" in g1a.find_element(By.CSS_SELECTOR, ".definition").text
    expl = g1a.find_elements(By.CSS_SELECTOR, ".example .expl")
    assert expl and all("which aborted" in e.text for e in expl if e.is_displayed())
    # every op link of the examples resolves to a row of the history table
    hrefs = {a.get_attribute("href").split("#", 1)[1]
             for a in g1a.find_elements(By.CSS_SELECTOR, "a.op-link")}
    assert hrefs
    missing = d.execute_script(
        "return arguments[0].filter(function (id) { return !document.getElementById(id); });",
        sorted(hrefs))
    assert missing == []
    # the allowed cycles are shown too, after it
    assert d.find_elements(By.CSS_SELECTOR, "#anomaly-G0 .tag")


def test_op_link_leads_to_its_row_and_the_filter_finds_rows(page):
    d, _ = page
    link = d.find_element(By.CSS_SELECTOR, "#anomaly-G1a .example a.op-link")
    target = link.get_attribute("href").split("#", 1)[1]
    link.click()
    WebDriverWait(d, 10).until(lambda d: d.execute_script("return location.hash") == "#" + target)
    row = d.find_element(By.ID, target)
    assert row.is_displayed() and row.tag_name == "tr" and "ref" in row.get_attribute("class")
    box = d.find_element(By.ID, "filter")
    box.send_keys("txn fail")
    shown = [r for r in d.find_elements(By.CSS_SELECTOR, "#hist tbody tr") if r.is_displayed()]
    assert shown and all("txn" in r.text and "fail" in r.text for r in shown)
    assert "matching rows" in _text(d, "#filter-count")
    box.clear()
    d.execute_script("document.getElementById('filter').dispatchEvent(new Event('input'))")


def test_timeline_key_plots_and_liveness_are_drawn(page):
    d, _ = page
    timeline = d.find_element(By.CSS_SELECTOR, "#timeline svg.timeline")
    labels = [t.text for t in timeline.find_elements(By.CSS_SELECTOR, "text.fault-label")]
    assert any(x.startswith("pause n") for x in labels) and any(x.startswith("kill n")
                                                                 for x in labels)
    assert timeline.find_elements(By.CSS_SELECTOR, "path.lat-txn")
    assert timeline.find_elements(By.CSS_SELECTOR, "path.lat-poll")
    assert timeline.size["width"] > 1000 and timeline.size["height"] > 300
    plot = d.find_element(By.CSS_SELECTOR, "#keys .keyplot svg.orders")
    assert plot.find_elements(By.CSS_SELECTOR, "circle.mark")
    # failing anomalies' keys come first (G1c-realtime's, then G1a's): some plot annotates G1a
    notes = [t.text for t in d.find_elements(By.CSS_SELECTOR, "#keys .keyplot svg.orders g.annotation text")]
    assert any(n.startswith("G1a: value") for n in notes)
    live = d.find_element(By.CSS_SELECTOR, "#liveness svg.liveness")
    assert live.find_elements(By.CSS_SELECTOR, "path.lag-pts")
    assert live.find_elements(By.CSS_SELECTOR, "polyline.unseen")
    assert d.find_element(By.CSS_SELECTOR, "#liveness svg.lag-hist").size["width"] > 300


def test_screenshots_are_not_blank_and_show_the_red_banner(page, tmp_path):
    d, _ = page
    d.execute_script("window.scrollTo(0, 0)")
    png = d.get_screenshot_as_png()
    (tmp_path / "report.png").write_bytes(png)
    img = Image.open(io.BytesIO(png)).convert("RGB")
    assert img.size == (WIDTH, HEIGHT)
    assert d.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]
    px = np.asarray(img, dtype=np.int16)
    var = float(np.asarray(img.convert("L"), dtype=np.float64).var())
    assert var > 200, f"screenshot looks blank (variance {var:.0f})"
    red = int((np.abs(px[:300] - np.array(BANNER_RED)).max(axis=2) <= 12).sum())
    assert red > 5000, "the red INVALID banner is not on screen"
    # the timeline, drawn where a person scrolls to it
    chart = d.find_element(By.CSS_SELECTOR, "#timeline .chart")
    d.execute_script("arguments[0].scrollIntoView()", chart)
    shot = Image.open(io.BytesIO(chart.screenshot_as_png)).convert("RGB")
    (tmp_path / "timeline.png").write_bytes(chart.screenshot_as_png)
    colours = np.unique(np.asarray(shot).reshape(-1, 3), axis=0)
    assert shot.width > 1000 and len(colours) > 50  # lines, shading, text


def test_no_request_left_the_page(page, report):
    d, requests = page
    assert report.as_uri() in requests  # the log works: it saw the page itself
    leaving = [u for u in requests if not (u.startswith("file:") or u.startswith("data:"))]
    assert leaving == []
    # and nothing in the document points elsewhere
    external = d.execute_script(r"""
        // links within the page and to the run folder's own files (relative) stay offline
        return Array.prototype.slice.call(document.querySelectorAll('[src],[href],[action]'))
          .map(function (e) { return e.getAttribute('src') || e.getAttribute('href')
                                     || e.getAttribute('action'); })
          .filter(function (u) { return /^([a-z][a-z0-9+.-]*:|\/\/)/i.test(u) && !/^data:/.test(u); });""")
    assert external == []
    errors = [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]
    assert errors == []


def _shot(el, tmp_path: Path, name: str):
    """A screenshot of one element, in the test's output (and in $EOS_CHAOS_SCREENSHOTS)."""
    el.parent.execute_script("arguments[0].scrollIntoView(); window.scrollBy(0, -60)", el)  # below the nav bar
    png = el.screenshot_as_png
    (tmp_path / name).write_bytes(png)
    if os.environ.get("EOS_CHAOS_SCREENSHOTS"):
        Path(os.environ["EOS_CHAOS_SCREENSHOTS"], name).write_bytes(png)
    return Image.open(io.BytesIO(png)).convert("RGB")


def test_process_lanes_cycle_graphs_and_run_files(page, tmp_path):
    d, _ = page
    lanes = d.find_element(By.CSS_SELECTOR, "#lanes svg.lanes")
    d.execute_script("arguments[0].scrollIntoView()", lanes)
    bars = lanes.find_elements(By.CSS_SELECTOR, "a rect")
    assert len(bars) > 20 and lanes.find_elements(By.CSS_SELECTOR, "rect.fault")
    colours = {b.get_attribute("fill") for b in bars}
    assert {"#2e7d32", "#c62828"} <= colours  # ok and failed ops
    img = _shot(d.find_element(By.CSS_SELECTOR, "#lanes"), tmp_path, "lanes.png")
    px = np.asarray(img, dtype=np.int16)
    assert int((np.abs(px - np.array((46, 125, 50))).max(axis=2) <= 12).sum()) > 2000  # green bars drawn
    # a failed op's bar leads to its history row
    link = lanes.find_element(By.XPATH, ".//*[local-name()='a'][*[local-name()='rect' and @fill='#c62828']]")
    target = link.get_dom_attribute("href").split("#", 1)[1]  # an SVG <a>: its attribute as written
    d.execute_script("location.hash = arguments[0]", target)
    row = d.find_element(By.ID, target)  # the op's invoke; its pair link names the completion
    assert row.is_displayed() and "invoke" in row.text
    done = row.find_element(By.CSS_SELECTOR, "td a[href^='#op-']:not([href='#" + target + "'])")
    assert "fail" in d.find_element(By.ID, done.get_attribute("href").split("#", 1)[1]).text
    # every cycle example of G0 drawn: ops as nodes, edges labelled by kind
    graph = d.find_element(By.CSS_SELECTOR, "#anomaly-G0 svg.cycle-graph")
    d.execute_script("arguments[0].scrollIntoView()", graph)
    assert len(graph.find_elements(By.CSS_SELECTOR, "g.node")) >= 2
    assert {t.text for t in graph.find_elements(By.CSS_SELECTOR, "g.edge text")} >= {"ww"}
    shot = _shot(graph, tmp_path, "cycle.png")
    assert shot.width > 100 and len(np.unique(np.asarray(shot).reshape(-1, 3), axis=0)) > 10
    files = [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, "#files a")]
    assert any(h.endswith("/logs/n1.log") for h in files) and any(h.endswith("/nodes/n1/server.properties")
                                                                  for h in files)
    print(f"screenshots: {tmp_path / 'lanes.png'}, {tmp_path / 'cycle.png'}")
