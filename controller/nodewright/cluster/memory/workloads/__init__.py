"""The workload controllers of the in-memory cluster: Deployment, ReplicaSet,
StatefulSet, Job and DaemonSet, each a reconciler keyed by its object."""

from nodewright.cluster.memory.workloads.daemonsets import DaemonSetController
from nodewright.cluster.memory.workloads.deployments import DeploymentController
from nodewright.cluster.memory.workloads.jobs import JobController
from nodewright.cluster.memory.workloads.replicasets import ReplicaSetController
from nodewright.cluster.memory.workloads.statefulsets import StatefulSetController

__all__ = [
    "DaemonSetController",
    "DeploymentController",
    "JobController",
    "ReplicaSetController",
    "StatefulSetController",
]
