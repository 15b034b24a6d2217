"""Benchmarks, not tests (``eos-chaos bench ...``). On a real cluster: what exactly-once costs a
producer (harness.bench.eos_cost), how many transactions the harness's own workload commits
against Kafka's kafka-producer-perf-test (harness.bench.txn_rate), how long a cluster takes to come
up (harness.bench.cluster_ready). With no cluster, the checker's speed and memory on simulated
histories: in memory (harness.bench.checker), in parts (harness.bench.checker_parts) and on Spark
(harness.bench.checker_spark). Figures go to docs/benchmarks.md."""
