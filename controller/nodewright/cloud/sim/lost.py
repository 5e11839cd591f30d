"""`--cloud sim` on a real cluster: NodeClaims whose simulated instance died with another
controller process.

A simulated instance lives in the memory of the process that launched it. When that
process dies (a leader killed, a pod restarted), its NodeClaims stay in the cluster with
providerIDs no simulated EC2 knows: for the new leader those instances are gone, as if
terminated behind Karpenter's back. Karpenter's answers to that are slow on purpose (its
registration timeout is 15 minutes; its NodeClaim garbage collection looks every 2
minutes), because a real instance that is merely slow to show up should not be replaced.
Here nothing can bring the instance back, so `LostInstances` replaces it at once:

- a NodeClaim whose Node never registered is deleted (its pods are provisioned again);
- a registered one is deleted once its Node stops being Ready (nothing renews its
  heartbeat, so the node lifecycle controller marks it within its grace period), as
  Karpenter's NodeClaim garbage collection does, so the Node goes without a drain that no
  kubelet could complete.

Only the leader reconciles, and the leader's own simulated EC2 knows every instance it
launched, so a NodeClaim it is launching is never taken for a lost one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from nodewright import metrics
from nodewright.cloud.sim.provider import SimulatedEC2
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.runtime.reconciler import Result, Watch, WatchEvent

log = logging.getLogger(__name__)

# How often a registered NodeClaim of a lost instance is looked at until its Node is
# marked not Ready (the Node's updates also bring it back).
RECHECK_SECONDS = 10.0


class LostInstances:
    name = "sim.lost-instances"

    def __init__(self, cluster: ClusterAPI, cloud: SimulatedEC2) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.collected: list[str] = []

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("NodeClaim"), Watch("Node", self._claims_of_node))

    def _claims_of_node(self, event: WatchEvent) -> list[str]:
        provider_id = (event.object.get("spec") or {}).get("providerID")
        if not provider_id:
            return []
        return [objects.name(claim) for claim in self.cluster.list("NodeClaim")
                if (claim.get("status") or {}).get("providerID") == provider_id]

    def _lost(self, provider_id: str) -> bool:
        """A simulated instance's providerID (aws:///<zone>/i-...) this EC2 never knew."""
        instance_id = provider_id.rpartition("/")[2]
        if not provider_id.startswith("aws:///") or not instance_id.startswith("i-"):
            return False
        return instance_id not in set(self.cloud.instance_ids())

    def reconcile(self, key: str) -> Result:
        try:
            claim = self.cluster.get("NodeClaim", key)
        except NotFoundError:
            return Result()
        provider_id = str((claim.get("status") or {}).get("providerID") or "")
        if objects.is_deleting(claim) or not provider_id or not self._lost(provider_id):
            return Result()
        if objects.condition_is_true(claim, "Registered"):
            node_name = str((claim.get("status") or {}).get("nodeName") or "")
            try:
                node = self.cluster.get("Node", node_name) if node_name else None
            except NotFoundError:
                node = None
            if node is not None and objects.condition_is_true(node, "Ready"):
                return Result(requeue_after=RECHECK_SECONDS)
        log.info("deleting nodeclaim %s: its simulated instance %s died with the controller "
                 "process that launched it", key, provider_id,
                 extra={"NodeClaim": key, "provider-id": provider_id})
        try:
            self.cluster.delete("NodeClaim", key)
        except NotFoundError:
            return Result()
        self.collected.append(key)
        metrics.NODECLAIMS_DISRUPTED.labels(
            **metrics.disrupted_labels(claim, "garbage_collected")).inc()
        return Result()
