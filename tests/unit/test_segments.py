"""harness.segments.parse_dump on DumpLogSegments --print-data-log output (Kafka 4.3.1 format,
lines as printed for a run's t0-1; the ABORT batch and the two-record batch follow the same
format)."""
from harness.segments import Record, parse_dump

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
