"""Pure parts of candidate finding F5's reproducer (harness/findings/f5_repro.py): the group's
__consumer_offsets partition as Kafka computes it, and the search of the brokers' logs for the
stale load completion, on the lines of the soak and of the reproducer's first hit."""
from __future__ import annotations

import pytest

from harness.findings.f1_repro import txn_partition_for
from harness.findings.f5_repro import main, offsets_partition, scan_logs

RT = "(org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)"
# broker 2 of the 90-minute soak (2026-11-25), __consumer_offsets-25
SOAK = f"""\
[2026-11-25 21:55:26,200] INFO [GroupCoordinator id=2] Scheduling loading of metadata from __consumer_offsets-25 with epoch 102 {RT}
[2026-11-25 21:55:26,576] INFO [GroupCoordinator id=2] Scheduling unloading of metadata for __consumer_offsets-25 with epoch OptionalInt[103] {RT}
[2026-11-25 21:55:26,578] INFO [GroupCoordinator id=2] Started unloading metadata for __consumer_offsets-25 with epoch OptionalInt[103]. {RT}
[2026-11-25 21:55:26,616] INFO [GroupCoordinator id=2] Finished unloading metadata for __consumer_offsets-25 with epoch OptionalInt[103]. {RT}
[2026-11-25 21:55:27,873] INFO [GroupCoordinator id=2] Scheduling loading of metadata from __consumer_offsets-25 with epoch 104 {RT}
[2026-11-25 21:55:29,925] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-25 with epoch 102 in 3604ms where 61ms was spent in the scheduler. Loaded 43030 records which total to 3975805 bytes. {RT}
[2026-11-25 21:55:30,028] INFO [GroupCoordinator id=2] Ignored load completion from __consumer_offsets-25 because context is in ACTIVE state. {RT}
[2026-11-25 21:55:30,100] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-13 with epoch 100 in 9ms where 0ms was spent in the scheduler. Loaded 0 records which total to 0 bytes. {RT}
"""
# a correct sequence: the load ends before the unload, the next load completes its own context
CLEAN = f"""\
[2026-11-26 00:27:37,219] INFO [GroupCoordinator id=2] Scheduling loading of metadata from __consumer_offsets-43 with epoch 2 {RT}
[2026-11-26 00:27:41,308] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-43 with epoch 2 in 4077ms where 0ms was spent in the scheduler. Loaded 1768019 records which total to 150277470 bytes. {RT}
[2026-11-26 00:27:41,918] INFO [GroupCoordinator id=2] Finished unloading metadata for __consumer_offsets-43 with epoch OptionalInt[3]. {RT}
[2026-11-26 00:27:42,604] INFO [GroupCoordinator id=2] Scheduling loading of metadata from __consumer_offsets-43 with epoch 4 {RT}
[2026-11-26 00:27:42,861] INFO [GroupCoordinator id=2] Finished loading of metadata from __consumer_offsets-43 with epoch 4 in 256ms where 9ms was spent in the scheduler. Loaded 535031 records which total to 45477921 bytes. {RT}
"""


@pytest.mark.parametrize("group", ["eosc-proc", "f5-a3184c-0-g", "polygenelubricants", ""])
def test_offsets_partition_is_kafkas(group):
    # the same Utils.abs(hashCode) % n as a transactional.id's partition (f1_repro, tested there)
    assert offsets_partition(group, 50) == txn_partition_for(group, 50)


def test_the_soaks_stale_completion_is_found(tmp_path):
    log = tmp_path / "n2.log"
    log.write_text(SOAK)
    found = scan_logs([str(log)], offsets_partition("eosc-proc", 50))
    assert offsets_partition("eosc-proc", 50) == 25
    (s,) = found["stale_completion"]
    assert (s["node"], s["loaded_epoch"], s["unloaded_epoch"]) == (2, 102, 103)
    assert s["ignored_completion"] == [["2026-11-25 21:55:30,028", "ACTIVE"]]
    assert not any("__consumer_offsets-13" in x for x in found["lines"])  # another partition
    assert scan_logs([str(log)], 25, since="2026-11-25 21:56")["stale_completion"] == []


def test_a_clean_reload_is_not_a_stale_completion(tmp_path):
    log = tmp_path / "n2.log"
    log.write_text(CLEAN)
    found = scan_logs([str(log), str(tmp_path / "missing.log")], 43)
    assert found["stale_completion"] == [] and len(found["events"]) >= 3


def test_reproducer_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        main(["--bootstrap", "x:1"])  # neither --ctl nor --ctl-stdio
    assert "--ctl" in capsys.readouterr().err
