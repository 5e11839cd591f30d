"""Node hydration (Karpenter's node.hydration controller): a Node whose NodeClaim is ours
(its nodeClassRef names an EC2NodeClass) gets the karpenter.k8s.aws/ec2nodeclass label
naming that node class when it lacks it or names another. Nodes launched before that
label existed (an older Karpenter, or a label removed by hand) would otherwise never be
finalized by node termination, which recognizes its Nodes by that label. A Node without
exactly one NodeClaim is left alone."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nodewright.api.managed import nodeclaim_is_managed
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState
from nodewright.state.wellknown import NODECLASS_LABEL


class NodeHydration:
    name = "node.hydration"

    def __init__(self, cluster: ClusterAPI, state: ClusterState) -> None:
        self.cluster = cluster
        self.state = state
        self._watches = (Watch("Node"), Watch("NodeClaim", keys=self._node_of_nodeclaim))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    @staticmethod
    def _node_of_nodeclaim(event: WatchEvent) -> Iterable[str]:
        node_name = (event.object.get("status") or {}).get("nodeName")
        return (str(node_name),) if node_name else ()

    def reconcile(self, key: str) -> Result:
        machine = self.state.node_by_name(key)
        if machine is None or machine.node is None:
            return Result()
        node = machine.node
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        names = self.state.nodeclaim_names_for_provider_id(provider_id) if provider_id else []
        if len(names) != 1:
            return Result()
        claim = self.state.nodeclaim(names[0])
        reference = ((claim or {}).get("spec") or {}).get("nodeClassRef") or {}
        if claim is None or not reference or not nodeclaim_is_managed(claim):
            return Result()
        # As Karpenter's lo.Assign: a label naming another node class is set right too.
        wanted = str(reference.get("name") or "")
        if objects.labels(node).get(NODECLASS_LABEL) == wanted:
            return Result()
        try:
            self.cluster.patch("Node", key, {"metadata": {
                "labels": {NODECLASS_LABEL: wanted}}})
        except NotFoundError:
            return Result()
        except ConflictError:
            return Result(requeue_after=0.1)
        return Result()
