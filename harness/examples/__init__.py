"""Applications written as users write them, shipped with the harness as examples of the ``app``
workload (docs/your-pipeline.md). None imports the harness: each is what a user would put under
test. ``eos-chaos init`` copies ``copy_service.py`` into a user's folder.

* ``copy_service.py``: a Python consume-transform-produce service on confluent-kafka
  (read_committed, transactions, ``send_offsets_to_transaction``); ``--commit-offsets-outside-txn``
  is its broken variant (duplicates under instance kills).
* ``streams/CopyStreams.java``: a Kafka Streams application (``processing.guarantee``
  exactly_once_v2, or at_least_once as the broken variant); ``streams_app.py`` builds it against
  kafka-streams from Maven and starts it.
* ``spark_jobs.py``: a PySpark job as a plain function ``transform(df) -> df``; the harness
  supplies the Kafka source and sink (``workload.app.pyspark``).
* ``flink_job.py``: a PyFlink DataStream job (KafkaSource read_committed, a Python map, KafkaSink
  EXACTLY_ONCE, checkpoints); ``flink_app.py`` deploys it on PyFlink's own venv with Flink's
  Kafka connector and restarts it from its newest retained checkpoint. Flags of the job get
  the source's isolation level, the sink's transaction timeout and its guarantee wrong on
  purpose (the zoo's app-flink-* entries).
"""
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent
