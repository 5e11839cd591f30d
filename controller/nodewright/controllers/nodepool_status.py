"""NodePool status (Karpenter's nodepool.counter and readiness controllers).

`status.resources` is what the pool's machines hold (capacity, with cpu, memory, pods,
ephemeral-storage and nodes always present), `status.nodes` their number; machines marked
for deletion do not count. Conditions: ValidationSucceeded (the NodePool validates),
NodeClassReady (its EC2NodeClass exists, is not being deleted and is not reported
unready), and Ready following both. Written only once the state is synced, so a
restarted controller never writes a smaller count than the truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.controllers.conditions import NODEPOOL
from nodewright.controllers.patching import copy_tree, patch_status
from nodewright.controllers.provisioning.problem import node_class_problem
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.scheduling.quantity import format_quantity
from nodewright.state import NODES_RESOURCE, ClusterState
from nodewright.state.wellknown import NODEPOOL_LABEL

BASE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", NODES_RESOURCE)
UNSYNCED_RETRY_SECONDS = 1.0


class NodePoolStatus:
    name = "nodepool.status"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self._watches = (
            Watch("NodePool"),
            Watch("EC2NodeClass", keys=self._pools_of_node_class),
            Watch("NodeClaim", keys=self._pool_label),
            Watch("Node", keys=self._pool_label),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    @staticmethod
    def _pool_label(event: WatchEvent) -> Iterable[str]:
        pool = ((event.object.get("metadata") or {}).get("labels") or {}).get(NODEPOOL_LABEL)
        return (str(pool),) if pool else ()

    def _pools_of_node_class(self, event: WatchEvent) -> Iterable[str]:
        return [
            str(pool["metadata"]["name"]) for pool in self.state.nodepools()
            if ((pool.get("spec") or {}).get("template") or {}).get("spec", {})
            .get("nodeClassRef", {}).get("name") == event.name
        ]

    def reconcile(self, key: str) -> Result:
        cached = self.state.nodepool(key)
        if cached is None:
            return Result()
        pool: dict[str, Any] = copy_tree(cached)
        if not self.state.synced(self.cluster):
            return Result(requeue_after=UNSYNCED_RETRY_SECONDS)
        after = copy_tree(pool)
        status = after.setdefault("status", {})
        usage = self.state.nodepool_resources(key)
        resources = {name: 0 for name in BASE_RESOURCES}
        resources.update(usage)
        status["resources"] = {
            name: format_quantity(max(amount, 0), name)
            for name, amount in sorted(resources.items())
        }
        status["nodes"] = max(resources.get(NODES_RESOURCE, 0), 0) // 1000
        now = self.clock.now()
        NODEPOOL.initialize(after, now)
        parsed = self.state.nodepool_model(key)
        if parsed is not None and parsed.model is None:
            NODEPOOL.set_false(after, "ValidationSucceeded", now, "NodePoolValidationFailed",
                               parsed.problem or "")
        else:
            NODEPOOL.set_true(after, "ValidationSucceeded", now)
        reference = (((pool.get("spec") or {}).get("template") or {}).get("spec") or {}).get(
            "nodeClassRef") or {}
        problem = node_class_problem(self.state, str(reference.get("name", "")))
        if problem is None:
            NODEPOOL.set_true(after, "NodeClassReady", now)
        else:
            NODEPOOL.set_false(after, "NodeClassReady", now, "NodeClassNotReady", problem)
        try:
            patch_status(self.cluster, pool, after)
        except ConflictError:
            return Result(requeue_after=0.1)
        except NotFoundError:
            return Result()
        return Result()
