"""Reproducers of the harness's findings (docs/findings/): F1, librdkafka's abort with a record
in flight (f1_repro.py standalone, f1.py on the harness's cluster); F2, KAFKA-20734's skipped
transaction markers for a leaderless partition (f2.py); Kafka's find-hanging check (hanging.py).
``eos-chaos repro f1|f2`` runs them (harness.cli.repro_commands)."""
