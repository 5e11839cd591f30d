"""The ReplicaSet controller: keeps `spec.replicas` active pods (replacing those deleted
or finished), deletes the surplus in Kubernetes' victim order, and reports
replicas/readyReplicas/availableReplicas. Pods are named `<replicaset>-<5 chars>`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.cluster import objects
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.pod_status import is_ready
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.workloads.common import (
    BURST,
    controlled_by,
    create,
    delete,
    is_active,
    owner_keys,
    pod_from_template,
    replicas,
)
from nodewright.cluster.memory.workloads.victims import deletion_order
from nodewright.runtime.reconciler import Result, Watch

# A pod as last read: the stored version, controlled by the ReplicaSet and active, ready.
_Read = tuple[dict[str, Any], bool, bool]


class ReplicaSetController:
    name = "replicaset-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (Watch("ReplicaSet"), Watch("Pod", owner_keys("ReplicaSet")))
        # Per ReplicaSet key: its uid and, per dependent pod, the stored version last read
        # (held, so that its id is not reused) with whether the ReplicaSet controls it,
        # it is active and it is ready. The server replaces a pod on every write and never
        # changes one, so a pod that is the same object reads the same: each pod event
        # reads the pod written, not the ReplicaSet's hundreds of others again.
        self._read: dict[str, tuple[str, dict[tuple[str, str], _Read]]] = {}

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        replica_set = self.cluster.peek("ReplicaSet", name, namespace)
        if replica_set is None or objects.is_deleting(replica_set):
            self._read.pop(key, None)
            return Result()
        wanted = replicas(replica_set)
        active, ready = self._active(key, replica_set)
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
            active, ready = self._active(key, replica_set)
        write_status(self.cluster, replica_set, {
            "replicas": len(active),
            "fullyLabeledReplicas": len(active),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": objects.meta(replica_set).get("generation"),
        })
        return Result(requeue_after=0) if more_to_do else Result()

    def _active(self, key: str, replica_set: Mapping[str, Any]
                ) -> tuple[list[dict[str, Any]], int]:
        """The active pods the ReplicaSet controls, in the order they became its
        dependents, and how many of them are ready."""
        uid = replica_set["metadata"]["uid"]
        held = self._read.get(key)
        known = held[1] if held is not None and held[0] == uid else {}
        read: dict[tuple[str, str], _Read] = {}
        active: list[dict[str, Any]] = []
        ready = 0
        for pod in self.cluster.dependents(uid, "Pod"):
            metadata = pod["metadata"]
            pod_key = (str(metadata.get("namespace") or ""), str(metadata.get("name")))
            entry = known.get(pod_key)
            if entry is None or entry[0] is not pod:
                entry = (pod, controlled_by(pod, uid) and is_active(pod), is_ready(pod))
            read[pod_key] = entry
            if entry[1]:
                active.append(pod)
                ready += entry[2]
        self._read[key] = (uid, read)
        return active, ready
