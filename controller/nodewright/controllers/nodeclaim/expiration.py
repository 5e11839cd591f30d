"""Expiration (Karpenter's nodeclaim.expiration controller): a NodeClaim older than its
`expireAfter` is deleted. Forceful and not budgeted: its pods are drained by the
termination controller (bounded by `terminationGracePeriod`, when set) and the provisioner
makes room for them by its normal path. `expireAfter: Never` never expires. As in
Karpenter, no Event is published (the recorder is kept for the wiring).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nodewright import metrics
from nodewright.api.formats import parse_duration_or_never
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.events import EventRecorder
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.common import logfields
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch
from nodewright.state import ClusterState, podutil
from nodewright.state.wellknown import NODEPOOL_LABEL

log = logging.getLogger(__name__)

EXPIRED = "Expired"


def lifetime_remaining(nodeclaim: Mapping[str, Any], now: datetime) -> float:
    """The share of the NodeClaim's expireAfter still ahead (1.0 when it never expires)."""
    spec = nodeclaim.get("spec") or {}
    try:
        seconds = parse_duration_or_never(str(spec.get("expireAfter") or "Never"))
    except ValueError:
        return 1.0
    created = objects.creation_time(nodeclaim)
    if seconds is None or seconds <= 0 or created is None:
        return 1.0
    age = (now - created).total_seconds()
    return min(1.0, max(0.0, (seconds - age) / seconds))


class Expiration:
    name = "nodeclaim.expiration"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState,
                 recorder: EventRecorder, decisions: ex.DecisionLog | None = None) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self.recorder = recorder
        self.decisions = decisions if decisions is not None else ex.DecisionLog()
        self._watches = (Watch("NodeClaim"),)

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def reconcile(self, key: str) -> Result:
        claim = self.state.nodeclaim(key)
        if claim is None or objects.is_deleting(claim):
            return Result()
        # Karpenter expires every managed NodeClaim, one without a NodePool label too.
        labels = objects.labels(claim)
        raw = str((claim.get("spec") or {}).get("expireAfter") or "Never")
        try:
            seconds = parse_duration_or_never(raw)
        except ValueError:
            log.warning("NodeClaim %s: expireAfter %r cannot be read; it never expires", key,
                        raw)
            return Result()
        created = objects.creation_time(claim)
        if seconds is None or created is None:
            return Result()
        expires = created + timedelta(seconds=seconds)
        now = self.clock.now()
        if now < expires:
            return Result(requeue_after=(expires - now).total_seconds())
        try:
            self.cluster.delete("NodeClaim", key, uid=objects.uid(claim) or None)
        except (NotFoundError, ConflictError):
            return Result()
        node = self.state.node_for_nodeclaim(key)
        pods = [p for p in self.state.pods_on(node.node_name) if podutil.is_reschedulable(p)] \
            if node is not None and node.node is not None else []
        pool = labels.get(NODEPOOL_LABEL, "")
        # Karpenter's labels: the NodeClaim's nodepool and capacity-type labels, "" when
        # missing (a NodeClaim that expires before it launched has no capacity type).
        disrupted = metrics.disrupted_labels(claim, "expired")
        metrics.NODECLAIMS_DISRUPTED.labels(**disrupted).inc()
        metrics.PODS_DISRUPTION_INITIATED.labels(**disrupted).inc(len(pods))
        message = f"expireAfter {raw} has passed (created {created:%Y-%m-%dT%H:%M:%SZ})"
        # No Event: Karpenter's expiration publishes none (expiry is no disruption method
        # since v1); the decision log and the log line say it.
        self.decisions.record(ex.Decision(
            time=now, node=node.name if node is not None else key, nodeclaim=key,
            nodepool=pool, method=ex.EXPIRATION, outcome=ex.DISRUPTED,
            event_reason=ex.DISRUPTION_TERMINATING, message=message, cause=EXPIRED,
            decision="delete"))
        # Karpenter logs it at V(1): debug.
        log.debug("deleting expired nodeclaim", extra={
            "controller": Expiration.name, **logfields.nodeclaim_fields(claim),
            "expireAfter": raw})
        return Result()
