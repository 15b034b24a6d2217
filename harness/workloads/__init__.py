"""Workloads by name (jepsen-io/redpanda ``core.clj`` workloads map).

``WorkloadSpec`` is the scenario's ``workload`` section: a union of the workloads' specs,
told apart by ``name``. ``WORKLOADS`` maps a name to the class the runner instantiates as
``cls(spec, bootstrap, seed)``; see harness.workloads.base for what it must provide.
"""
from typing import Annotated, Union

from pydantic import Field

from harness.workloads.app import App, AppSpec
from harness.workloads.client_choice import with_client
from harness.workloads.eos_pipeline import EosPipeline, EosPipelineSpec
from harness.workloads.idempotent import Idempotent, IdempotentSpec
from harness.workloads.share import Share, ShareSpec
from harness.workloads.spark import Spark, SparkSpec
from harness.workloads.txn_queue import TxnQueue, TxnQueueSpec

# workload.client (librdkafka | java) for the workloads whose workers exist in both clients
WORKLOADS = {"txn-queue": with_client(TxnQueue), "idempotent": with_client(Idempotent),
             "eos-pipeline": with_client(EosPipeline), "spark": Spark, "app": App,
             "share": with_client(Share)}

WorkloadSpec = Annotated[Union[TxnQueueSpec, IdempotentSpec, EosPipelineSpec, SparkSpec, AppSpec, ShareSpec],
                         Field(discriminator="name")]

__all__ = ["WORKLOADS", "WorkloadSpec", "AppSpec", "TxnQueueSpec", "IdempotentSpec", "EosPipelineSpec", "SparkSpec", "ShareSpec"]
