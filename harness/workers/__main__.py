import json
import sys

from harness.workers.consumer import ConsumerWorker, DrainWorker
from harness.workers.txn_producer import TxnProducerWorker

ROLES = {"txn-producer": TxnProducerWorker, "consumer": ConsumerWorker, "drain": DrainWorker}

# Spark (harness.workloads.spark): the worker process is the Spark driver; its drain also waits
# for Spark to reach the end of the input
from harness.workers.spark_consumer import SparkConsumerWorker  # noqa: E402
from harness.workers.spark_drain import SparkDrainWorker  # noqa: E402

ROLES.update({"spark-consumer": SparkConsumerWorker, "spark-drain": SparkDrainWorker})

if __name__ == "__main__":
    role, cfg = sys.argv[1], json.loads(sys.argv[2])
    ROLES[role](cfg).run()
