"""The disruption controller: keeps each PodDisruptionBudget's status (expectedPods,
desiredHealthy, currentHealthy, disruptionsAllowed, the DisruptionAllowed condition)
current as pods and their controllers change, and forgets recorded evictions when the
pod is gone or after two minutes. The arithmetic is in `budgets`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.cluster import objects
from nodewright.cluster.memory import budgets
from nodewright.cluster.memory.actor_support import split_key, write_status
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.runtime.clock import parse_time
from nodewright.runtime.reconciler import Result, Watch, WatchEvent

SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet")


class DisruptionController:
    name = "disruption-controller"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self._watches = (
            Watch("PodDisruptionBudget"),
            Watch("Pod", self._budgets_of_pod),
            *(Watch(kind, self._budgets_in_namespace) for kind in SCALED_KINDS),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _budgets_of_pod(self, event: WatchEvent) -> Iterable[str]:
        return [objects.key(pdb)
                for pdb in self.cluster.peek_all("PodDisruptionBudget", event.namespace)
                if budgets.selects(pdb, event.object)]

    def _budgets_in_namespace(self, event: WatchEvent) -> Iterable[str]:
        return [objects.key(pdb)
                for pdb in self.cluster.peek_all("PodDisruptionBudget", event.namespace)]

    def reconcile(self, key: str) -> Result:
        namespace, name = split_key(key)
        pdb = self.cluster.peek("PodDisruptionBudget", name, namespace)
        if pdb is None:
            return Result()
        now = self.cluster.clock.now()
        computed = budgets.compute(pdb, self.cluster.peek_all("Pod", namespace),
                                   self.cluster.scale_of, now)
        generation = int(objects.meta(pdb).get("generation") or 1)
        write_status(self.cluster, pdb, computed.to_status(pdb.get("status") or {},
                                                           generation, now))
        if not computed.disrupted_pods:
            return Result()
        expiry = min(parse_time(when) for when in computed.disrupted_pods.values())
        wait = (expiry + budgets.DISRUPTED_POD_TIMEOUT - now).total_seconds()
        return Result(requeue_after=max(wait, 0.0))
