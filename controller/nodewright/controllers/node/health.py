"""Node auto-repair (Karpenter's node.health controller, behind the NodeRepair gate): a
managed node that has held one of the cloud provider's unhealthy conditions (its repair
policies: Ready False or Unknown for 30 minutes, AcceleratedHardwareReady False for 10,
...) for the policy's toleration has its NodeClaim deleted at once: the termination
timestamp annotation is set to now, so the drain ignores PodDisruptionBudgets,
do-not-disrupt and disruption budgets, and the provisioner replaces the capacity.

A guard keeps a systemic failure from replacing a fleet: while more than 20 % of a
NodePool's nodes (rounded up, as PodDisruptionBudgets round) are unhealthy, none of them
is repaired and each gets NodeRepairBlocked; NodeClaims without a NodePool are measured
against every node of the cluster.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import Counter

from nodewright import metrics
from nodewright.cloud.provider import CloudProvider, RepairPolicy
from nodewright.cluster import objects
from nodewright.cluster.api import ApiError, ClusterAPI, NotFoundError
from nodewright.cluster.events import Event, EventRecorder
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state import ClusterState, podutil
from nodewright.state.wellknown import NODEPOOL_LABEL, TERMINATION_TIMESTAMP_ANNOTATION

log = logging.getLogger(__name__)

ALLOWED_UNHEALTHY_PERCENT = 20
BLOCKED_REQUEUE_SECONDS = 300.0
NODE_REPAIR_BLOCKED = "NodeRepairBlocked"
UNHEALTHY = "unhealthy"

UNHEALTHY_DISRUPTED = Counter(
    "karpenter_nodeclaims_unhealthy_disrupted",
    "Number of unhealthy nodeclaims disrupted in total by Karpenter. Labeled by condition on "
    "the node was disrupted, the owning nodepool, and the image ID.",
    ["condition", metrics.NODEPOOL, metrics.CAPACITY_TYPE, "image_id"],
    registry=metrics.REGISTRY,
)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def unhealthy_condition(
    node: Mapping[str, Any], policies: Sequence[RepairPolicy]
) -> tuple[Mapping[str, Any], datetime] | None:
    """The node's condition a repair policy matches and when the node becomes repairable;
    of several, the one due first."""
    found: tuple[Mapping[str, Any], datetime] | None = None
    for policy in policies:
        condition = objects.condition(node, policy.condition_type)
        if condition is None or condition.get("status") != policy.condition_status:
            continue
        since = condition.get("lastTransitionTime")
        try:
            start = parse_time(str(since)) if since else None
        except ValueError:
            start = None
        if start is None:
            continue
        due = start + timedelta(seconds=policy.toleration_seconds)
        if found is None or due < found[1]:
            found = (condition, due)
    return found


def is_unhealthy(node: Mapping[str, Any], policies: Sequence[RepairPolicy]) -> bool:
    """Whether any repair policy's condition holds now, however recently."""
    return any(
        (objects.condition(node, p.condition_type) or {}).get("status") == p.condition_status
        for p in policies)


def unhealthy_allowed(total: int) -> int:
    """20 % of `total`, rounded up."""
    return math.ceil(total * ALLOWED_UNHEALTHY_PERCENT / 100)


class NodeHealth:
    name = "node.health"

    def __init__(self, cluster: ClusterAPI, cloud: CloudProvider, clock: Clock,
                 state: ClusterState, recorder: EventRecorder) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self.recorder = recorder
        self.policies = tuple(cloud.repair_policies())
        self._watches = (Watch("Node"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        machine = self.state.node_by_name(key)
        if machine is None or machine.node is None or machine.nodeclaim is None:
            return Result()
        node, claim = machine.node, machine.nodeclaim
        found = unhealthy_condition(node, self.policies)
        if found is None:
            return Result()
        condition, due = found
        now = self.clock.now()
        if now < due:
            return Result(requeue_after=(due - now).total_seconds())
        pool = objects.labels(claim).get(NODEPOOL_LABEL)
        if not self._healthy_enough(pool):
            self._blocked(node, claim, pool)
            return Result(requeue_after=BLOCKED_REQUEUE_SECONDS)
        # As Karpenter's Reconcile: the termination timestamp is brought forward before the
        # deletion check, so a NodeClaim already being deleted (a drain a PodDisruptionBudget
        # holds up, a termination grace period hours away) is forced out too.
        try:
            self._annotate(claim, now)
            if objects.is_deleting(claim):
                return Result()
            self.cluster.delete("NodeClaim", objects.name(claim), uid=objects.uid(claim) or None)
        except NotFoundError:
            return Result()
        except ApiError as error:
            log.error("repairing node %s: %s", key, error)
            return Result(requeue_after=1.0)
        log.info("deleting unhealthy node", extra={
            "Node": {"name": key}, "NodeClaim": {"name": objects.name(claim)},
            "condition": condition.get("type"), "status": condition.get("status")})
        labels = metrics.disrupted_labels(claim, UNHEALTHY)
        metrics.NODECLAIMS_DISRUPTED.labels(**labels).inc()
        moving = [pod for pod in self.state.pods_on(key) if podutil.is_reschedulable(pod)]
        metrics.PODS_DISRUPTION_INITIATED.labels(**labels).inc(len(moving))
        UNHEALTHY_DISRUPTED.labels(
            condition=_snake(str(condition.get("type", ""))),
            nodepool=str(pool or ""),
            capacity_type=objects.labels(claim).get("karpenter.sh/capacity-type", ""),
            image_id=str((claim.get("status") or {}).get("imageID") or "")).inc()
        return Result()

    def _healthy_enough(self, pool: str | None) -> bool:
        nodes = [m.node for m in self.state.nodes() if m.node is not None
                 and (pool is None or objects.labels(m.node).get(NODEPOOL_LABEL) == pool)]
        unhealthy = sum(1 for node in nodes if is_unhealthy(node, self.policies))
        return unhealthy <= unhealthy_allowed(len(nodes))

    def _blocked(self, node: Mapping[str, Any], claim: Mapping[str, Any],
                 pool: str | None) -> None:
        """Karpenter's NodeRepairBlocked events: every copy is on the Node, one deduplicated
        by the Node's UID, one by the NodeClaim's and, for a NodePool's node, one by the
        NodePool's (so a NodePool blocked on many nodes says so once per 15 minutes on
        each). Nothing when the NodePool is gone, as Karpenter's Get of it ignores
        NotFound; its cluster-wide message says "then"."""
        deduped_by: list[Mapping[str, Any]] = [node, claim]
        if pool:
            nodepool = self.state.nodepool(pool)
            if nodepool is None:
                return
            deduped_by.append(nodepool)
            note = f"more than {ALLOWED_UNHEALTHY_PERCENT}% nodes are unhealthy in the nodepool"
        else:
            note = f"more then {ALLOWED_UNHEALTHY_PERCENT}% nodes are unhealthy in the cluster"
        for obj in deduped_by:
            self.recorder.publish(Event(
                regarding=node, type="Warning", reason=NODE_REPAIR_BLOCKED, note=note,
                dedupe_values=(objects.uid(obj),), dedupe_seconds=15 * 60.0))

    def _annotate(self, claim: Mapping[str, Any], now: datetime) -> None:
        """Terminate now: the termination timestamp annotation set to this moment (kept
        when one already passed)."""
        current = objects.annotations(claim).get(TERMINATION_TIMESTAMP_ANNOTATION)
        if current:
            try:
                if parse_time(current) < now:
                    return
            except ValueError:
                pass
        stamp = format_time(now)
        if current == stamp:
            return
        self.cluster.patch("NodeClaim", objects.name(claim), {"metadata": {
            "annotations": {TERMINATION_TIMESTAMP_ANNOTATION: stamp}}})
        log.info("annotated nodeclaim", extra={
            "NodeClaim": {"name": objects.name(claim)}, TERMINATION_TIMESTAMP_ANNOTATION: stamp})
