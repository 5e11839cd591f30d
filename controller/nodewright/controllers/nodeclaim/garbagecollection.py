"""Garbage collection between the cluster and the cloud.

- `InstanceGarbageCollection` (the AWS provider's instance GC): an instance this cluster
  owns that no NodeClaim claims by provider ID (the NodeClaims the API server lists, as
  Karpenter lists them, never a cache still filling), launched more than 30 s ago, is
  terminated, and a Node left for it is deleted. An instance launched for a NodeClaim that
  still exists but has not recorded its provider ID yet (a controller that died between
  the launch and the status write) is left for the lifecycle controller to adopt. The
  orphans are terminated together (up to 100 at once, as Karpenter). Runs every 10 s for
  its first 20 passes, then every 2 minutes.
- `NodeClaimGarbageCollection` (Karpenter's nodeclaim.garbagecollection): a registered
  NodeClaim whose instance the cloud no longer lists, or lists shutting down, is deleted,
  unless its Node is still Ready (then the kubelet is alive and the cloud's list is
  behind). Every 2 minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

from nodewright import metrics
from nodewright.cloud.provider import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError, StoredObjects
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch
from nodewright.runtime.together import run_together
from nodewright.state import ClusterState, podutil

log = logging.getLogger(__name__)

INSTANCE_GRACE_SECONDS = 30.0
FAST_PASSES = 20
FAST_INTERVAL_SECONDS = 10.0
SLOW_INTERVAL_SECONDS = 120.0
NODECLAIM_INTERVAL_SECONDS = 120.0
PARALLEL_TERMINATIONS = 100
# Instance states the collectors treat as gone (Karpenter's aws instanceToNodeClaim sets a
# deletionTimestamp for both, and both collectors filter those out).
TERMINATING_STATES = ("shutting-down", "terminated")


def _node_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


class InstanceGarbageCollection:
    name = "instance.garbagecollection"
    watches: Sequence[Watch] = ()

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider, clock: Clock,
                 state: ClusterState) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self.passes = 0
        self.collected: list[str] = []

    def reconcile(self, key: str) -> Result:
        # The cloud is listed before the cluster: an instance launched in between is
        # younger than the grace period, so it cannot be mistaken for an orphan. The
        # NodeClaims come from the API server's list (a synced cache), not from the state,
        # which a controller that has just taken the Lease may not have filled yet: every
        # instance would look unclaimed to it.
        instances = self.cloud.list()
        claims = self._nodeclaims()
        claimed = {str((c.get("status") or {}).get("providerID") or "") for c in claims}
        unlaunched = {
            str(c["metadata"]["name"]) for c in claims
            if not (c.get("status") or {}).get("providerID")
        }
        now = self.clock.now()
        orphans = [
            instance.provider_id for instance in instances
            if instance.provider_id not in claimed
            and instance.state not in TERMINATING_STATES
            and not (instance.nodeclaim_name and instance.nodeclaim_name in unlaunched)
            and now - instance.launch_time > timedelta(seconds=INSTANCE_GRACE_SECONDS)
        ]
        # As Karpenter (ParallelizeUntil, 100 workers): a hundred orphans are a hundred
        # terminations, each waiting for its batch; one after another they took minutes.
        with self.state.lock.requesting():
            outcomes = run_together([partial(self._terminate, pid) for pid in orphans],
                                    parallel=self.state.lock.concurrent,
                                    ceiling=PARALLEL_TERMINATIONS)
        for provider_id, outcome in zip(orphans, outcomes, strict=True):
            if outcome is not True:
                continue
            self.collected.append(provider_id)
            for node_name in self.state.node_names_for_provider_id(provider_id):
                try:
                    self.cluster.delete("Node", node_name)
                except NotFoundError:
                    continue
        failed = [outcome for outcome in outcomes if isinstance(outcome, CloudProviderError)]
        if failed:
            raise failed[0]
        self.passes += 1
        return Result(requeue_after=FAST_INTERVAL_SECONDS if self.passes <= FAST_PASSES
                      else SLOW_INTERVAL_SECONDS)

    def _nodeclaims(self) -> Sequence[Mapping[str, Any]]:
        """The NodeClaims the API server holds. Only their names and provider IDs are read,
        so an in-memory server's stored objects are read as they are: copying every
        NodeClaim each pass was nearly all of this controller's work."""
        if isinstance(self.cluster, StoredObjects):
            return self.cluster.peek_all("NodeClaim")
        return self.cluster.list("NodeClaim")

    def _terminate(self, provider_id: str) -> bool | CloudProviderError:
        """True once terminated, False when the instance was gone already, or the error."""
        log.info("garbage collecting instance %s (no NodeClaim)", provider_id)
        try:
            self.cloud.delete(provider_id)
        except NodeClaimNotFoundError:
            return False
        except CloudProviderError as error:
            return error
        return True


class NodeClaimGarbageCollection:
    name = "nodeclaim.garbagecollection"
    watches: Sequence[Watch] = ()

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider, clock: Clock,
                 state: ClusterState) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self.collected: list[str] = []

    def reconcile(self, key: str) -> Result:
        # As Karpenter: an instance shutting down is already gone (the AWS provider's List
        # gives it a deletionTimestamp, which the collector filters out).
        alive = {instance.provider_id for instance in self.cloud.list()
                 if instance.state not in TERMINATING_STATES}
        for claim in self.state.nodeclaims():
            metadata = claim.get("metadata") or {}
            provider_id = str((claim.get("status") or {}).get("providerID") or "")
            if (metadata.get("deletionTimestamp") or not provider_id or provider_id in alive
                    or not objects.condition_is_true(claim, "Registered")):
                continue
            node_name = (claim.get("status") or {}).get("nodeName")
            if node_name:
                try:
                    if _node_ready(self.cluster.get("Node", str(node_name))):
                        continue
                except NotFoundError:
                    pass
            name = str(metadata.get("name"))
            log.info("garbage collecting nodeclaim %s: instance %s is gone", name, provider_id)
            try:
                self.cluster.delete("NodeClaim", name)
            except NotFoundError:
                continue
            self.collected.append(name)
            disrupted = metrics.disrupted_labels(claim, "garbage_collected")
            metrics.NODECLAIMS_DISRUPTED.labels(**disrupted).inc()
            pods = self.state.pods_on(str(node_name)) if node_name else []
            metrics.PODS_DISRUPTION_INITIATED.labels(**disrupted).inc(
                sum(1 for pod in pods if podutil.is_reschedulable(pod)))
        return Result(requeue_after=NODECLAIM_INTERVAL_SECONDS)
