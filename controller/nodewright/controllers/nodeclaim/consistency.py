"""The NodeClaim consistency check (Karpenter's nodeclaim.consistency controller).

Every ten minutes per NodeClaim (events in between wait for the rest of the period), a
launched NodeClaim managed by this provider is compared with its Node. The one check,
NodeShape, flags a Node that came up with less than 90 % of any resource the NodeClaim
requested and expected (a cloud handing out a smaller machine than its instance type
says), once the NodeClaim is initialized and while it is not deleting. Each issue is a
Warning FailedConsistencyCheck event on the NodeClaim and sets ConsistentStateFound=False
(ConsistencyCheckFailed); a clean check sets it True. A NodeClaim with no Node, or with
more than one, is left to the lifecycle controller.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from nodewright.api.managed import nodeclaim_is_managed
from nodewright.api.quantity import format_quantity, parse_quantity
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import FALSE, TRUE, set_condition
from nodewright.cluster.copying import copy_object
from nodewright.cluster.events import Event, EventRecorder
from nodewright.cluster.objects import condition_is_true, is_deleting, uid
from nodewright.controllers.common.patching import patch_status
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState

log = logging.getLogger(__name__)

SCAN_PERIOD_SECONDS = 600.0
CONFLICT_RETRY_SECONDS = 0.1
CONSISTENT_STATE_FOUND = "ConsistentStateFound"
FAILED_CONSISTENCY_CHECK = "FailedConsistencyCheck"
# NodeShape: a Node with less than this share of an expected resource is inconsistent.
MIN_SHARE = 0.90


def node_shape_issues(node: Mapping[str, Any], claim: Mapping[str, Any]) -> list[str]:
    """Karpenter's NodeShape check: resources requested by the NodeClaim of which the Node
    has less than 90 % of the NodeClaim's status capacity."""
    if is_deleting(claim) or not condition_is_true(claim, "Initialized"):
        return []
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    expected_capacity = (claim.get("status") or {}).get("capacity") or {}
    node_capacity = (node.get("status") or {}).get("capacity") or {}
    issues = []
    for resource, requested in requests.items():
        expected = parse_quantity(expected_capacity.get(resource, 0))
        if parse_quantity(requested) == 0 or expected == 0:
            continue
        found = parse_quantity(node_capacity.get(resource, 0))
        share = found / expected
        if share < MIN_SHARE:
            issues.append(
                f"expected {format_quantity(expected, resource)} of resource {resource}, but "
                f"found {format_quantity(found, resource)} ({share * 100:0.1f}% of expected)")
    return issues


class NodeClaimConsistency:
    name = "nodeclaim.consistency"

    def __init__(self, cluster: ClusterAPI, clock: Clock, state: ClusterState,
                 recorder: EventRecorder) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self.recorder = recorder
        self._last_scanned: dict[str, datetime] = {}
        self._swept: datetime | None = None
        self._watches = (Watch("NodeClaim"), Watch("Node", keys=self._nodeclaims_of_node))

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def _nodeclaims_of_node(self, event: WatchEvent) -> Iterable[str]:
        provider_id = (event.object.get("spec") or {}).get("providerID")
        if not provider_id:
            return ()
        return self.state.nodeclaim_names_for_provider_id(str(provider_id))

    def reconcile(self, key: str) -> Result:
        claim = self.state.nodeclaim(key)
        if claim is None:
            return Result()
        provider_id = str((claim.get("status") or {}).get("providerID") or "")
        if not nodeclaim_is_managed(claim) or not provider_id:
            return Result()
        now = self.clock.now()
        self._forget_expired(now)
        scanned = self._last_scanned.get(uid(claim))
        if scanned is not None and (now - scanned).total_seconds() < SCAN_PERIOD_SECONDS:
            return Result(requeue_after=SCAN_PERIOD_SECONDS - (now - scanned).total_seconds())
        self._last_scanned[uid(claim)] = now
        # Karpenter lists the Nodes by a providerID index; the state keys its machines by
        # providerID, so the one that can carry a Node of this providerID is looked up.
        machine = self.state.node(provider_id)
        nodes = [machine.node] if (machine is not None and machine.node is not None
                                   and machine.provider_id == provider_id) else []
        if len(nodes) != 1:
            return Result()
        (node,) = nodes
        issues = node_shape_issues(node, claim)
        for issue in issues:
            log.info("failed consistency check", extra={
                "NodeClaim": {"name": objects.name(claim)},
                "Node": {"name": objects.name(node)}, "issue": issue})
        self.recorder.publish(*(Event(
            regarding=claim, type="Warning", reason=FAILED_CONSISTENCY_CHECK, note=issue,
            dedupe_values=(uid(claim), issue)) for issue in issues))
        after = copy_object(claim)
        if issues:
            set_condition(after, CONSISTENT_STATE_FOUND, FALSE, now, "ConsistencyCheckFailed",
                          "Consistency Check Failed")
        elif not condition_is_true(claim, CONSISTENT_STATE_FOUND):
            set_condition(after, CONSISTENT_STATE_FOUND, TRUE, now)
        if after != claim:
            try:
                patch_status(self.cluster, claim, after)
            except ConflictError:
                return Result(requeue_after=CONFLICT_RETRY_SECONDS)
            except NotFoundError:
                return Result()
        return Result(requeue_after=SCAN_PERIOD_SECONDS)

    def _forget_expired(self, now: datetime) -> None:
        """go-cache's janitor: once a period, scans older than the period are dropped, so
        gone NodeClaims' entries do not stay forever."""
        period = timedelta(seconds=SCAN_PERIOD_SECONDS)
        if self._swept is not None and now - self._swept < period:
            return
        self._swept = now
        self._last_scanned = {key: when for key, when in self._last_scanned.items()
                              if now - when < period}
