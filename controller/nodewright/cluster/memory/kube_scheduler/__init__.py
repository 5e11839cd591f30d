"""kube-scheduler for the in-memory cluster: the default profile's filters and scores
over a snapshot of nodes and bound pods, binding pending pods in one pass per tick."""

from nodewright.cluster.memory.kube_scheduler.scheduler import KubeScheduler

__all__ = ["KubeScheduler"]
