"""harness/report/share_view.py: the share section draws a lane per record, the record a case
names first, and is absent from a report of another workload."""
from __future__ import annotations

from checkers import check
from harness.report.render import render_report_html

from tests.unit.test_checkers_share import SHARE, H


def test_share_lanes_in_the_report():
    h = (H().config(1).txn(10, 100, 0).txn(10, 101, 2).acquire(1, [(0, 100, 1), (2, 101, 1)], 1.0)
         .ack(1, "accept", [(0, 100)], 1.1).process(1, [(2, 101)], 1.2).ack(1, "release", [(2, 101)], 1.3)
         .acquire(2, [(2, 101, 2)], 2.0).process(2, [(2, 101)], 2.1).ack(2, "accept", [(2, 101)], 2.2)
         .drain([(0, 100), (2, 101)]))
    ev = h.events()
    meta = {"share": SHARE}
    v = check(ev, meta=meta)
    assert v.failing == ["share-lost"]
    html = render_report_html(ev, v, {"name": "share"}, meta)
    assert 'id="share"' in html and "Share group deliveries" in html
    sec = html.split('id="share"')[1].split("</section>")[0]
    assert sec.index("t0/0@0") < sec.index("t0/0@2")  # the lost record's lane first
    assert "delivery count 2" in sec and "release by process" in sec and "<script" not in sec
    assert 'id="share"' not in render_report_html(ev, check(ev), {"name": "x"}, {})
