"""Cost tracking: the controllers that keep the cluster state's `ClusterCost` (each
NodePool's cost) current, as Karpenter's state informers do
(pkg/controllers/state/informer/nodeclaim.go, nodepool.go, pricing.go): NodeClaims counted
once labelled and uncounted once gone, deleted NodePools forgotten, prices refreshed hourly.
A NodeClaim the tracker cannot count or uncount is logged and tried again later (the error
is counted in karpenter_nodepools_cost_tracker_errors_total), as is a NodePool whose prices
cannot be read."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from nodewright.api.managed import nodeclaim_is_managed
from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.cluster import objects
from nodewright.runtime.reconciler import Result, Watch
from nodewright.scheduling.catalog import InstanceType
from nodewright.state import ClusterState
from nodewright.state.cost import CostTrackingError

log = logging.getLogger(__name__)

PRICING_INTERVAL_SECONDS = 3600.0
RETRY_SECONDS = 30.0


class _NotResolvable(CloudProviderError):
    pass


def nodepool_instance_types(state: ClusterState, cloud: CloudProvider, nodepool: str
                            ) -> list[InstanceType]:
    """The NodePool's instance types as the cloud offers them (GetInstanceTypes)."""
    parsed = state.nodepool_model(nodepool)
    if parsed is None or parsed.model is None:
        raise _NotResolvable(f'NodePool "{nodepool}" cannot be read')
    reference = parsed.model.spec.template.spec.node_class_ref.name
    node_class = state.node_class_model(reference)
    if node_class is None or node_class.model is None:
        raise _NotResolvable(f'EC2NodeClass "{reference}" not found')
    return list(cloud.get_instance_types(node_class.model))


class NodeClaimCost:
    """Counts each managed NodeClaim once labelled, uncounts it once gone."""

    name = "state.cost.nodeclaim"

    def __init__(self, state: ClusterState, cloud: CloudProvider) -> None:
        self.state = state
        self.cloud = cloud
        self._watches = (Watch("NodeClaim"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        claim = self.state.nodeclaim(key)
        try:
            if claim is None:
                self.state.cost.delete_nodeclaim(key)
            elif nodeclaim_is_managed(claim):
                self.state.cost.update_nodeclaim(
                    key, objects.labels(claim),
                    nodepool_exists=lambda name: self.state.nodepool(name) is not None,
                    instance_types=lambda name: nodepool_instance_types(
                        self.state, self.cloud, name))
        except CostTrackingError as error:
            log.error("cost tracking: %s", error, extra={"NodeClaim": key})
            return Result(requeue_after=RETRY_SECONDS)
        return Result()


class NodePoolCost:
    """Forgets a deleted NodePool's NodeClaims and cost."""

    name = "state.cost.nodepool"

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._watches = (Watch("NodePool"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        if self.state.nodepool(key) is None:
            self.state.cost.delete_nodepool(key)
        return Result()


class Pricing:
    """Every hour, each NodePool's current prices (Karpenter's state.pricing)."""

    name = "state.pricing"

    def __init__(self, state: ClusterState, cloud: CloudProvider) -> None:
        self.state = state
        self.cloud = cloud

    @property
    def watches(self) -> Sequence[Watch]:
        return ()

    def reconcile(self, key: str) -> Result:
        failed = []
        for pool in self.state.nodepools():
            name = str(objects.meta(pool).get("name") or "")
            try:
                types = nodepool_instance_types(self.state, self.cloud, name)
            except CloudProviderError as error:
                failed.append(f"{name}: {error}")
                continue
            self.state.cost.update_offerings(name, types)
        if failed:
            log.warning("refreshing pricing info, %s", "; ".join(failed))
            return Result(requeue_after=RETRY_SECONDS)
        return Result(requeue_after=PRICING_INTERVAL_SECONDS)
