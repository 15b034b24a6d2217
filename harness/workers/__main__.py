import faulthandler
import signal
import sys

from harness.util import config_from
from harness.workers.consumer import ConsumerWorker, DrainWorker
from harness.workers.idempotent_producer import IdempotentProducerWorker
from harness.workers.pipeline_drain import PipelineDrainWorker
from harness.workers.processor import ProcessorWorker
from harness.workers.retire import RetirableTxnProducer
from harness.workers.txn_producers import TxnProducersWorker

# txn-producer is TxnProducerWorker plus retirement (harness.workers.retire): identical until a
# zombie fault retires it
ROLES = {"txn-producer": RetirableTxnProducer, "consumer": ConsumerWorker, "drain": DrainWorker,
         "idempotent-producer": IdempotentProducerWorker, "processor": ProcessorWorker,
         "pipeline-drain": PipelineDrainWorker, "txn-producers": TxnProducersWorker}

# Spark (harness.workloads.spark): the worker process is the Spark driver; its drain also waits
# for Spark to reach the end of the input
from harness.workers.spark_driver import SparkConsumerWorker  # noqa: E402
from harness.workers.spark_drain import SparkDrainWorker  # noqa: E402

ROLES.update({"spark-consumer": SparkConsumerWorker, "spark-drain": SparkDrainWorker})
# the app workload (harness.workloads.app): a supervisor of one instance of the user's
# application, and the wait for it to catch up after the load
from harness.workers.app_catch_up import AppCatchUpWorker  # noqa: E402
from harness.workers.app_instance import AppInstanceWorker  # noqa: E402
ROLES.update({"app": AppInstanceWorker, "app-catch-up": AppCatchUpWorker})
# the share workload (harness.workloads.share): a share group member (KIP-932)
from harness.workers.share_consumer import ShareConsumerWorker  # noqa: E402
from harness.workers.share_dlq_reader import DLQ_ROLE, ShareDlqReaderWorker  # noqa: E402
ROLES.update({"share-consumer": ShareConsumerWorker, DLQ_ROLE: ShareDlqReaderWorker})

if __name__ == "__main__":
    # a worker that does not answer `stop` is asked where it is stuck before it is killed
    # (harness.run.pool.WorkerHandle.dump_stacks): every thread's traceback goes to its log
    faulthandler.register(signal.SIGQUIT, all_threads=True)
    role, cfg = sys.argv[1], config_from(sys.argv, 2)  # harness.run.pool passes it in the environment
    ROLES[role](cfg).run()
