"""harness.cluster.segments.parse_dump on DumpLogSegments --print-data-log output (Kafka 4.3.1 format,
lines as printed for a run's t0-1; the ABORT batch and the two-record batch follow the same
format)."""
from harness.cluster.segments import Record, parse_dump

DUMP = """Dumping results/x/nodes/n1/data/t0-1/00000000000000000000.log
Log starting offset: 0
baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1795263607097 size: 77 magic: 2 compresscodec: none crc: 1213930585 isvalid: true
| offset: 0 CreateTime: 1795263607097 keySize: -1 valueSize: 9 sequence: 0 headerKeys: [] payload: 400000005
baseOffset: 1 lastOffset: 2 count: 2 baseSequence: 0 lastSequence: 1 producerId: 2000 producerEpoch: 3 partitionLeaderEpoch: 0 isTransactional: true isControl: false deleteHorizonMs: OptionalLong.empty position: 77 CreateTime: 1795263615910 size: 90 magic: 2 compresscodec: none crc: 1909005812 isvalid: true
| offset: 1 CreateTime: 1795263615910 keySize: -1 valueSize: 9 sequence: 0 headerKeys: [] payload: 300000006
| offset: 2 CreateTime: 1795263615910 keySize: -1 valueSize: 9 sequence: 1 headerKeys: [] payload: 300000007
baseOffset: 3 lastOffset: 3 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1000 producerEpoch: 0 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 167 CreateTime: 1795263616135 size: 78 magic: 2 compresscodec: none crc: 2984371697 isvalid: true
| offset: 3 CreateTime: 1795263616135 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 0
baseOffset: 4 lastOffset: 4 count: 1 baseSequence: -1 lastSequence: -1 producerId: 2000 producerEpoch: 3 partitionLeaderEpoch: 0 isTransactional: true isControl: true deleteHorizonMs: OptionalLong.empty position: 245 CreateTime: 1795263616169 size: 78 magic: 2 compresscodec: none crc: 1089606038 isvalid: true
| offset: 4 CreateTime: 1795263616169 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: ABORT coordinatorEpoch: 0
"""


def test_records_and_markers_with_their_producer():
    recs = parse_dump(DUMP)
    assert recs == [
        Record(0, 1000, 0, True, value="400000005"),
        Record(1, 2000, 3, True, value="300000006"),
        Record(2, 2000, 3, True, value="300000007"),
        Record(3, 1000, 0, True, marker="COMMIT"),
        Record(4, 2000, 3, True, marker="ABORT"),
    ]


def test_lines_outside_a_batch_and_other_text_are_ignored():
    assert parse_dump("Dumping x\nLog starting offset: 0\n| offset: 0 payload: 1\n") == []
    assert parse_dump("") == []


def test_aligned_marks_offsets_where_replicas_disagree():
    from harness.cluster.segments import Replica, aligned

    a = Replica("n1", [], parse_dump(DUMP))
    b = Replica("n2", [], parse_dump(DUMP)[:2])  # a replica that is behind
    rows = aligned([a, b])
    assert [(o, differs) for o, _, differs in rows] == [
        (0, False), (1, False), (2, True), (3, True), (4, True)]
    assert rows[2][1][1] is None and rows[2][1][0].value == "300000007"


def test_node_data_is_kept_only_when_it_is_worth_reading(tmp_path):
    from harness.run.runner import settle_node_data

    def run(name, valid, events=None, keep=False):
        d = tmp_path / name
        (d / "nodes" / "n1" / "data" / "t0-0").mkdir(parents=True)
        (d / "nodes" / "n1" / "data" / "t0-0" / "0.log").write_bytes(b"x" * 10)
        said = settle_node_data(d, {"valid": valid}, {"broker_events": events or {}}, keep)
        return (d / "nodes" / "n1" / "data").exists(), said

    assert run("valid", True) == (False, [])
    kept, said = run("invalid", False)
    assert kept and said[0].startswith("run not valid") and "eos-chaos dump-log" in said[0]
    kept, said = run("risky", True, {"unclean-leader-election": {"count": 1}})
    assert kept and said[0].startswith("the brokers logged unclean-leader-election")
    kept, said = run("asked", True, keep=True)
    assert kept and said[0].startswith("asked to keep them")
