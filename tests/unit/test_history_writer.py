import json
import threading

from harness.run.history_writer import HistoryWriter
from harness.run.pool import ProcessNumbers


def test_indices_are_gapless_in_file_order_under_concurrency(tmp_path):
    w = HistoryWriter(tmp_path / "h.jsonl")
    threads = [threading.Thread(target=lambda i=i: [w.append({"process": i, "type": "invoke", "f": "poll"})
                                                      for _ in range(200)]) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (tmp_path / "h.jsonl").read_text().splitlines()
    w.close()
    assert [json.loads(line)["index"] for line in lines] == list(range(800))


def test_lines_are_on_disk_before_close(tmp_path):
    w = HistoryWriter(tmp_path / "h.jsonl")
    w.append({"process": 0, "type": "invoke", "f": "txn", "value": [["send", "t0/0", 1]], "time": 5})
    # a reader sees the whole line while the writer is still open (a crash would leave it)
    ev = json.loads((tmp_path / "h.jsonl").read_text())
    assert ev == {"index": 0, "time": 5, "process": 0, "type": "invoke", "f": "txn",
                  "value": [["send", "t0/0", 1]]}
    w.close()


def test_process_numbers_are_never_reused():
    n = ProcessNumbers()
    assert [n.get("p0", 0), n.get("p1", 0), n.get("p0", 1), n.get("p0", 0)] == [0, 1, 2, 0]
