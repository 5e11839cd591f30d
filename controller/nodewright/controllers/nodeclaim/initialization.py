"""Initialization: a registered node is ready for pods when its Ready condition is True,
its startup taints and the known ephemeral taints are gone, and every resource the
NodeClaim requested is allocatable. The Node then gets karpenter.sh/initialized=true and
the NodeClaim Initialized=True."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nodewright.api.quantity import parse_quantity
from nodewright.cluster import conditions, objects
from nodewright.cluster.api import ConflictError, NotFoundError
from nodewright.cluster.conditions import NODECLAIM
from nodewright.controllers.common.logfields import nodeclaim_fields
from nodewright.controllers.common.patching import patch_object
from nodewright.controllers.nodeclaim.context import (
    CONFLICT_RETRY_SECONDS,
    LifecycleContext,
    Object,
    labels_of,
)
from nodewright.controllers.nodeclaim.registration import REGISTERED, find_nodes
from nodewright.state.wellknown import (
    INITIALIZED_LABEL,
    is_known_ephemeral,
    matches,
    taint_of,
)

log = logging.getLogger(__name__)

INITIALIZED = "Initialized"


def describe_taint(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    text = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{text}:{taint.get('effect')}"


def _node_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _missing_resource(node: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    for name, quantity in sorted(requests.items()):
        try:
            if parse_quantity(quantity) == 0:
                continue
            if parse_quantity(allocatable.get(name, 0)) == 0:
                return str(name)
        except ValueError:
            return str(name)
    return None


class Initialization:
    def __init__(self, context: LifecycleContext) -> None:
        self.context = context

    def reconcile(self, claim: Object) -> float | None:
        if conditions.status_of(claim, INITIALIZED) in (conditions.TRUE, conditions.FALSE):
            return None
        if not objects.condition_is_true(claim, REGISTERED):
            return None
        now = self.context.clock.now()
        # As Karpenter's NodeForNodeClaim: no Node, or several with its provider ID (an
        # invariant violated), is NodeNotFound.
        nodes = find_nodes(self.context, claim)
        node = nodes[0] if len(nodes) == 1 else None
        if node is None:
            NODECLAIM.set_unknown(claim, INITIALIZED, now, "NodeNotFound",
                                  "Node not registered with cluster")
            return None
        if not _node_ready(node):
            NODECLAIM.set_unknown(claim, INITIALIZED, now, "NodeNotReady",
                                  "Node status is NotReady")
            return None
        taints = (node.get("spec") or {}).get("taints") or []
        for startup in (claim.get("spec") or {}).get("startupTaints") or []:
            found = next((t for t in taints if matches(taint_of(t), taint_of(startup))), None)
            if found is not None:
                NODECLAIM.set_unknown(claim, INITIALIZED, now, "StartupTaintsExist",
                                      f'StartupTaint "{describe_taint(found)}" still exists')
                return None
        for taint in taints:
            if is_known_ephemeral(taint_of(taint)):
                NODECLAIM.set_unknown(claim, INITIALIZED, now, "KnownEphemeralTaintsExist",
                                      f'KnownEphemeralTaint "{describe_taint(taint)}" still '
                                      "exists")
                return None
        missing = _missing_resource(node, claim)
        if missing is not None:
            NODECLAIM.set_unknown(claim, INITIALIZED, now, "ResourceNotRegistered",
                                  f'Resource "{missing}" was requested but not registered')
            return None
        if labels_of(node).get(INITIALIZED_LABEL) != "true":
            metadata = dict(node.get("metadata") or {})
            metadata["labels"] = {**labels_of(node), INITIALIZED_LABEL: "true"}
            try:
                patch_object(self.context.cluster, node, {**node, "metadata": metadata})
            except ConflictError:
                return CONFLICT_RETRY_SECONDS
            except NotFoundError:
                return None
        NODECLAIM.set_true(claim, INITIALIZED, now)
        log.info("initialized nodeclaim", extra={
            **nodeclaim_fields(claim),
            "allocatable": (node.get("status") or {}).get("allocatable") or {}})
        return None
