"""The in-memory cluster: an API server (`InMemoryCluster`) and the actors that play the
rest of a Kubernetes cluster around it (kube-scheduler, workload controllers, kubelet,
the disruption controller), each a reconciler run by the virtual driver."""

from nodewright.cluster.memory.store import InMemoryCluster

__all__ = ["InMemoryCluster"]
