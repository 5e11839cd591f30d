"""The in-memory cluster: an API server (`InMemoryCluster`) and the actors that play the
rest of a Kubernetes cluster around it (kube-scheduler, the kubelet, the workload and
disruption controllers), each a reconciler the virtual driver runs:

    cluster = InMemoryCluster(clock)
    driver.add(*cluster_actors(cluster, ActorSettings(pod_start_delay=2.0)))
"""

from nodewright.cluster.memory.actors import ActorSettings, cluster_actors
from nodewright.cluster.memory.store import InMemoryCluster

__all__ = ["ActorSettings", "InMemoryCluster", "cluster_actors"]
