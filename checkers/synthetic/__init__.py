"""Synthetic histories: ``simulate`` (a simulated Kafka writing a correct, or deliberately
broken, history.jsonl; the benchmarks' and property tests' input) and ``build`` (a builder of
small hand-written histories for tests)."""
