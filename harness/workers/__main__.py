import json
import sys

from harness.workers.consumer import ConsumerWorker, DrainWorker
from harness.workers.txn_producer import TxnProducerWorker

ROLES = {"txn-producer": TxnProducerWorker, "consumer": ConsumerWorker, "drain": DrainWorker}

if __name__ == "__main__":
    role, cfg = sys.argv[1], json.loads(sys.argv[2])
    ROLES[role](cfg).run()
