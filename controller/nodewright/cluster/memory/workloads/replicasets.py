"""The ReplicaSet controller: keeps `spec.replicas` active pods (replacing those deleted
or finished), deletes the surplus in Kubernetes' victim order, and reports
replicas/readyReplicas/availableReplicas. Pods are named `<replicaset>-<5 chars>`."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.cluster import objects
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.workloads.common import (
    BURST,
    controlled,
    create,
    delete,
    is_active,
    owner_keys,
    pod_from_template,
    ready_count,
    replicas,
)
from nodewright.cluster.memory.workloads.victims import deletion_order
from nodewright.runtime.reconciler import Result, Watch


class ReplicaSetController:
    name = "replicaset-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (Watch("ReplicaSet"), Watch("Pod", owner_keys("ReplicaSet")))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        replica_set = self.cluster.peek("ReplicaSet", name, namespace)
        if replica_set is None or objects.is_deleting(replica_set):
            return Result()
        wanted = replicas(replica_set)
        active = [pod for pod in controlled(self.cluster, replica_set) if is_active(pod)]
        missing = wanted - len(active)
        more_to_do = False
        if missing > 0:
            template = (replica_set.get("spec") or {}).get("template") or {}
            for _ in range(min(missing, BURST)):
                create(self.cluster, pod_from_template(replica_set, template))
            more_to_do = missing > BURST
        elif missing < 0:
            for victim in deletion_order(active)[:-missing]:
                delete(self.cluster, victim)
        if missing:
            # Read again after the writes; with nothing written the pods are those read.
            active = [pod for pod in controlled(self.cluster, replica_set) if is_active(pod)]
        ready = ready_count(active)
        write_status(self.cluster, replica_set, {
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": objects.meta(replica_set).get("generation"),
        })
        return Result(requeue_after=0) if more_to_do else Result()
