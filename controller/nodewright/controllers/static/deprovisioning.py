"""Static deprovisioning (Karpenter's static.deprovisioning controller): a static NodePool
with more active NodeClaims than `spec.replicas` deletes the surplus, choosing

1. NodeClaims not launched yet (no provider ID), then
2. empty nodes (no pods, or only DaemonSet pods none of which has an active
   do-not-disrupt annotation), then
3. the cheapest to disrupt: nodes without do-not-disrupt pods first, then by the pods'
   eviction cost times the share of the node's lifetime still ahead.

Only active NodeClaims are counted, so a drift replacement in flight (its candidate is
already marked) never makes the pool look too big. The termination controller drains
what is deleted, PodDisruptionBudgets respected. Looking at a pod's do-not-disrupt
annotation publishes what Karpenter's IsDoNotDisruptActive does (DoNotDisruptUntil,
DoNotDisruptGracePeriodElapsed, InvalidDoNotDisruptAnnotation); a refused delete fails the
reconcile, as Karpenter returns the error.
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
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common.podrules import do_not_disrupt_event, eviction_cost
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

Obj = Mapping[str, Any]


class DeletesFailed(ApiError):
    """Some of the surplus NodeClaims could not be deleted (Karpenter's "failed to
    deprovision nodeclaims"); the others were."""

    def __init__(self, errors: Sequence[ApiError]) -> None:
        super().__init__("failed to deprovision nodeclaims, "
                         + "; ".join(str(error) for error in errors))
        self.errors = tuple(errors)
        self.status = errors[0].status
        self.reason = errors[0].reason


class StaticDeprovisioning:
    name = "static.deprovisioning"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState,
                 recorder: EventRecorder | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self.recorder = recorder
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
        errors: list[ApiError] = []
        for name, provider_id in self.candidates(nodepool, surplus):
            try:
                self.cluster.delete("NodeClaim", name)
            except NotFoundError:
                continue
            except ApiError as error:
                errors.append(error)
                continue
            # Karpenter's line is V(1): debug.
            log.debug("deleting nodeclaim", extra={"NodeClaim": name})
            if provider_id:
                self.state.mark_for_deletion(provider_id)
            self._observe(name)
        if errors:
            raise DeletesFailed(errors)
        return Result(requeue_after=REQUEUE_SECONDS)

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
        if len(chosen) >= count:
            return chosen[:count]  # Karpenter looks at no node then (nor at its pods)
        ranked = sorted(resolved, key=lambda entry: self._rank(entry[0], entry[1], now))
        chosen.extend((objects.name(claim), machine.provider_id) for claim, machine in ranked)
        return chosen[:count]

    def _protected(self, pods: Sequence[Obj], now: datetime) -> bool:
        """Karpenter's lo.SomeBy(pods, IsDoNotDisruptActive): the pods in turn up to the
        first protected one, each look publishing its event."""
        for pod in pods:
            if self.recorder is not None:
                told = do_not_disrupt_event(pod, now)
                if told is not None:
                    self.recorder.publish(told)
            if podutil.do_not_disrupt_active(pod, now):
                return True
        return False

    def _rank(self, claim: Obj, machine: Any, now: datetime) -> tuple[int, int, float, str]:
        pods = [pod for pod in self.state.pods_on(machine.node_name) if podutil.is_active(pod)]
        # The empty test first (DaemonSet pods only, none protected), then, for the others,
        # whether any pod is protected: Karpenter looks twice at a DaemonSet-only node.
        if all(podutil.is_owned_by_daemonset(pod) for pod in pods) and not self._protected(
                pods, now):
            return (0, 0, 0.0, objects.name(claim))
        protected = self._protected(pods, now)
        cost = sum(eviction_cost(pod) for pod in pods) * lifetime_remaining(claim, now)
        return (1, int(protected), cost, objects.name(claim))
