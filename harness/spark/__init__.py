"""Spark support: reading what a Structured Streaming query left on disk (harness.spark.batches).

The query itself runs in harness.workers.spark_consumer; the workload that starts it and turns
its committed micro-batches into history ops is harness.workloads.spark.
"""
