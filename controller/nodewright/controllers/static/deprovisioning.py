"""Static deprovisioning (Karpenter's static.deprovisioning controller): a static NodePool
with more active NodeClaims than `spec.replicas` deletes the surplus, choosing

1. NodeClaims not launched yet (no provider ID), then
2. empty nodes (no pods, or only DaemonSet pods none of which has an active
   do-not-disrupt annotation), then
3. the cheapest to disrupt: nodes without do-not-disrupt pods first, then by the pods'
   eviction cost times the share of the node's lifetime still ahead.

Only active NodeClaims are counted, so a drift replacement in flight (its candidate is
already marked) never makes the pool look too big. The termination controller drains
what is deleted, PodDisruptionBudgets respected.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nodewright.api.managed import nodepool_is_managed
from nodewright.api.nodepool import NodePool
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI, NotFoundError
from nodewright.controllers.common.podrules import eviction_cost
from nodewright.controllers.nodeclaim.expiration import lifetime_remaining
from nodewright.controllers.static.counts import (
    DISRUPTION_REASON,
    is_deleting,
    node_counts,
    pool_claims,
)
from nodewright.controllers.static.provisioning import REQUEUE_SECONDS, static_pool_of_claim
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState, podutil

log = logging.getLogger(__name__)

TERMINATION_REASON = "overprovisioned"

Obj = Mapping[str, Any]


class StaticDeprovisioning:
    name = "static.deprovisioning"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self._watches = (
            Watch("NodePool"),
            Watch("NodeClaim", keys=self._on_nodeclaim),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _on_nodeclaim(self, event: WatchEvent) -> Iterable[str]:
        # A new static NodeClaim may be one too many.
        return static_pool_of_claim(self.state, event) if event.type == "ADDED" else ()

    def reconcile(self, key: str) -> Result:
        raw = self.state.nodepool(key)
        parsed = self.state.nodepool_model(key)
        if raw is None or parsed is None or parsed.model is None:
            return Result()
        nodepool = parsed.model
        if not nodepool.is_static or objects.is_deleting(raw) or not nodepool_is_managed(raw):
            return Result()
        desired = nodepool.spec.replicas or 0
        active = node_counts(self.state, key).active
        surplus = active - desired
        if surplus <= 0:
            return Result(requeue_after=REQUEUE_SECONDS)
        log.info("deprovisioning nodeclaims to satisfy replica count", extra={
            "NodePool": {"name": key}, "current": active, "desired": desired,
            "deprovision-count": surplus})
        failed = False
        for name, provider_id in self.candidates(nodepool, surplus):
            try:
                self.cluster.delete("NodeClaim", name)
            except NotFoundError:
                continue
            except ApiError as error:
                log.error("deleting NodeClaim %s of static NodePool %s: %s", name, key, error)
                failed = True
                continue
            log.info("deleting nodeclaim", extra={"NodeClaim": {"name": name},
                                                  "reason": TERMINATION_REASON})
            if provider_id:
                self.state.mark_for_deletion(provider_id)
            self._observe(name)
        return Result(requeue_after=1.0 if failed else REQUEUE_SECONDS)

    def _observe(self, name: str) -> None:
        """See the deletion at once (the next reconcile must not pick the same claim)."""
        with contextlib.suppress(NotFoundError):
            self.state.observe_written(self.cluster.get("NodeClaim", name))

    def candidates(self, nodepool: NodePool, count: int) -> list[tuple[str, str]]:
        """(NodeClaim name, provider ID) of the `count` NodeClaims to delete, in order."""
        now = self.clock.now()
        chosen: list[tuple[str, str]] = []
        resolved: list[tuple[Obj, Any]] = []
        for claim in sorted(pool_claims(self.state, nodepool.name), key=objects.name):
            if is_deleting(self.state, claim) or objects.condition_is_true(
                    claim, DISRUPTION_REASON):
                continue
            provider_id = str((claim.get("status") or {}).get("providerID") or "")
            if not provider_id:
                chosen.append((objects.name(claim), ""))
                continue
            machine = self.state.node_for_nodeclaim(objects.name(claim))
            if machine is not None:
                resolved.append((claim, machine))
        ranked = sorted(resolved, key=lambda entry: self._rank(entry[0], entry[1], now))
        chosen.extend((objects.name(claim), machine.provider_id) for claim, machine in ranked)
        return chosen[:count]

    def _rank(self, claim: Obj, machine: Any, now: datetime) -> tuple[int, int, float, str]:
        pods = [pod for pod in self.state.pods_on(machine.node_name) if podutil.is_active(pod)]
        protected = any(podutil.do_not_disrupt_active(pod, now) for pod in pods)
        empty = not protected and all(podutil.is_owned_by_daemonset(pod) for pod in pods)
        if empty:
            return (0, 0, 0.0, objects.name(claim))
        cost = sum(eviction_cost(pod) for pod in pods) * lifetime_remaining(claim, now)
        return (1, int(protected), cost, objects.name(claim))
