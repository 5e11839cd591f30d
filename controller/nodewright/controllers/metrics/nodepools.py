"""Karpenter's metrics.nodepool controller: per NodePool its usage (status.resources, what
its machines hold), its limits, and its cost (the cluster state's `ClusterCost`: the
hourly price of its NodeClaims' offerings), every 10 seconds and whenever the NodePool
changes; a deleted NodePool's series go away, and a NodePool on another provider's node
class has none."""

from __future__ import annotations

from collections.abc import Sequence

from nodewright import metrics
from nodewright.api.managed import nodepool_is_managed
from nodewright.api.quantity import parse_quantity
from nodewright.controllers.metrics.nodes import resource_label, value
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state import ClusterState

INTERVAL_SECONDS = 10.0


class NodePoolMetrics:
    name = "metrics.nodepool"

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.store = metrics.Store()
        self._watches = (Watch("NodePool"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        pool = self.state.nodepool(key)
        if pool is None or not nodepool_is_managed(pool):
            self.store.delete(key)
            return Result()
        series: list[metrics.Sample] = []
        for gauge, resources in (
            (metrics.NODEPOOLS_USAGE, (pool.get("status") or {}).get("resources") or {}),
            (metrics.NODEPOOLS_LIMIT, (pool.get("spec") or {}).get("limits") or {}),
        ):
            for name, raw in resources.items():
                try:
                    amount = parse_quantity(raw)
                except ValueError:
                    continue
                series.append((gauge, {metrics.RESOURCE_TYPE: resource_label(str(name)),
                                       metrics.NODEPOOL: key}, value(amount)))
        series.append((metrics.NODEPOOLS_COST, {metrics.NODEPOOL: key},
                       self.state.cost.nodepool_cost(key)))
        self.store.update(key, series)
        return Result(requeue_after=INTERVAL_SECONDS)
