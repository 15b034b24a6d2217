"""Benchmarks on a real cluster (``eos-chaos bench ...``): what exactly-once costs a producer
(harness.bench.eos_cost) and how many transactions the harness's own workload commits against
Kafka's kafka-producer-perf-test (harness.bench.txn_rate). Figures go to docs/benchmarks.md."""
