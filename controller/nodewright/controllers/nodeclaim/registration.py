"""Registration: the Node of a launched NodeClaim joined the cluster (matched by provider
ID). The Node gets the NodeClaim's labels, annotations and taints (startup taints too,
unless it is labelled karpenter.sh/do-not-sync-taints), an owner reference to the
NodeClaim and the karpenter.sh/termination finalizer; then, once the provider's
registration hooks are all ready (until then Registered=Unknown, RegistrationHookPending),
the karpenter.sh/unregistered:NoExecute taint comes off and karpenter.sh/registered=true
goes on. The NodeClaim records Registered=True and its node's name. Two Nodes with its
provider ID are an invariant violated: Registered=False, MultipleNodesFound."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from nodewright import metrics
from nodewright.cloud.provider import RegistrationHook
from nodewright.cluster import conditions
from nodewright.cluster.api import ConflictError, NotFoundError
from nodewright.cluster.conditions import NODECLAIM
from nodewright.cluster.events import Event
from nodewright.cluster.names import CREATE_ID_ANNOTATION
from nodewright.controllers.common.logfields import nodeclaim_fields
from nodewright.controllers.common.patching import patch_object
from nodewright.controllers.nodeclaim.context import (
    CONFLICT_RETRY_SECONDS,
    LifecycleContext,
    Object,
    labels_of,
    name_of,
    nodepool_of,
    provider_id_of,
)
from nodewright.state.wellknown import (
    DO_NOT_SYNC_TAINTS_LABEL,
    REGISTERED_LABEL,
    TERMINATION_FINALIZER,
    UNREGISTERED_TAINT,
    matches,
    taint_of,
)

log = logging.getLogger(__name__)

REGISTERED = "Registered"
# A launched NodeClaim whose Node is not found is looked at again this often, besides the
# Node's events (mapped to it by providerID): a Node event that came before the NodeClaim's
# providerID reached the cache cannot leave it unregistered until the liveness timeout.
REGISTRATION_RECHECK_SECONDS = 10.0


def find_nodes(context: LifecycleContext, claim: Mapping[str, Any]) -> list[Object]:
    """Every Node with the NodeClaim's provider ID (fresh copies)."""
    provider_id = provider_id_of(claim)
    if not provider_id:
        return []
    found = []
    for node_name in context.state.node_names_for_provider_id(provider_id):
        try:
            found.append(context.cluster.get("Node", node_name))
        except NotFoundError:
            continue
    return found


def merge_taints(current: list[Mapping[str, Any]], wanted: list[Mapping[str, Any]]
                 ) -> list[Mapping[str, Any]]:
    """Kubernetes' Taints.Merge: add the wanted taints the node lacks (key and effect)."""
    merged = list(current)
    for taint in wanted:
        if not any(matches(taint_of(have), taint_of(taint)) for have in merged):
            merged.append(dict(taint))
    return merged


def sync_node(claim: Mapping[str, Any], node: Object) -> None:
    metadata = node.setdefault("metadata", {})
    finalizers = list(metadata.get("finalizers") or [])
    if TERMINATION_FINALIZER not in finalizers:
        metadata["finalizers"] = [*finalizers, TERMINATION_FINALIZER]
    claim_meta = claim.get("metadata") or {}
    # As Karpenter's UpdateNodeOwnerReferences: appended unless the Node already has one to
    # this NodeClaim (same kind and uid), every other reference left as it is.
    references = list(metadata.get("ownerReferences") or [])
    if not any(ref.get("apiVersion") == "karpenter.sh/v1" and ref.get("kind") == "NodeClaim"
               and ref.get("uid") == claim_meta.get("uid") for ref in references):
        metadata["ownerReferences"] = [*references, {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "name": claim_meta.get("name"),
            "uid": claim_meta.get("uid"),
            "blockOwnerDeletion": True,
        }]
    labels = metadata.get("labels") or {}
    if labels.get(DO_NOT_SYNC_TAINTS_LABEL) != "true":
        spec = node.setdefault("spec", {})
        claim_spec = claim.get("spec") or {}
        taints = merge_taints(list(spec.get("taints") or []), list(claim_spec.get("taints") or []))
        taints = merge_taints(taints, list(claim_spec.get("startupTaints") or []))
        spec["taints"] = taints
    metadata["annotations"] = {
        **(metadata.get("annotations") or {}),
        **{key: value for key, value in (claim_meta.get("annotations") or {}).items()
           if key != CREATE_ID_ANNOTATION},
    }
    metadata["labels"] = {**labels, **labels_of(claim)}


class Registration:
    def __init__(self, context: LifecycleContext,
                 hooks: Sequence[RegistrationHook] = ()) -> None:
        self.context = context
        self.hooks = list(hooks)

    def reconcile(self, claim: Object) -> float | None:
        if conditions.status_of(claim, REGISTERED) in (conditions.TRUE, conditions.FALSE):
            return None
        now = self.context.clock.now()
        nodes = find_nodes(self.context, claim)
        if not nodes:
            NODECLAIM.set_unknown(claim, REGISTERED, now, "NodeNotFound",
                                  "Node not registered with cluster")
            return REGISTRATION_RECHECK_SECONDS if provider_id_of(claim) else None
        if len(nodes) > 1:
            NODECLAIM.set_false(claim, REGISTERED, now, "MultipleNodesFound",
                                "Invariant violated, matched multiple nodes")
            return None
        (node,) = nodes
        node_labels = labels_of(node)
        spec_taints = (node.get("spec") or {}).get("taints") or []
        has_unregistered = any(matches(taint_of(t), UNREGISTERED_TAINT) for t in spec_taints)
        if REGISTERED_LABEL not in node_labels and not has_unregistered:
            # Karpenter's registration.go: an error line and UnregisteredTaintMissingEvent,
            # deduplicated by the NodeClaim's UID.
            log.error("node claim registration error", extra={
                **nodeclaim_fields(claim), "Node": {"name": name_of(node)},
                "taint": UNREGISTERED_TAINT.key,
                "error": "missing taint prevents registration-related race conditions on "
                         "Karpenter-managed nodes"})
            self.context.recorder.publish(Event(
                regarding=claim, type="Warning", reason="UnregisteredTaintMissing",
                note=f"Missing {UNREGISTERED_TAINT.key} taint which prevents registration "
                     "related race conditions on Karpenter-managed nodes",
                action="Register",
                dedupe_values=(str((claim.get("metadata") or {}).get("uid") or name_of(claim)),),
            ))
        before = node
        after: Object = {**node, "metadata": dict(node.get("metadata") or {}),
                         "spec": dict(node.get("spec") or {})}
        sync_node(claim, after)
        pending, wait = self._pending_hooks(claim)
        if not pending:
            # Again: a hook may have labelled the NodeClaim.
            sync_node(claim, after)
            after["spec"]["taints"] = [
                t for t in after["spec"].get("taints") or []
                if not matches(taint_of(t), UNREGISTERED_TAINT)
            ]
            after["metadata"]["labels"] = {**after["metadata"]["labels"],
                                           REGISTERED_LABEL: "true"}
        try:
            if after != before:
                patch_object(self.context.cluster, before, after)
        except ConflictError:
            return CONFLICT_RETRY_SECONDS
        except NotFoundError:
            return None
        if pending:
            NODECLAIM.set_unknown(claim, REGISTERED, now, "RegistrationHookPending",
                                  ", ".join(pending))
            return wait
        NODECLAIM.set_true(claim, REGISTERED, now)
        claim.setdefault("status", {})["nodeName"] = name_of(node)
        metrics.NODES_CREATED.labels(
            nodepool=nodepool_of(claim),
            zone=labels_of(claim).get("topology.kubernetes.io/zone", ""),
        ).inc()
        log.info("registered nodeclaim", extra=nodeclaim_fields(claim))
        if self.context.health is not None:
            self.context.health.registered(claim)
        return None

    def _pending_hooks(self, claim: Object) -> tuple[list[str], float]:
        """The names of the hooks not ready yet (every hook is asked), and the shortest
        wait any of them asked for."""
        pending: list[str] = []
        waits: list[float] = []
        for hook in self.hooks:
            try:
                wait = hook.registered(claim)
            except Exception as error:  # a provider's failure: pending, asked again later
                log.warning("registration hook %s of nodeclaim %s failed: %s", hook.name,
                            name_of(claim), error)
                pending.append(hook.name)
                waits.append(REGISTRATION_RECHECK_SECONDS)
                continue
            if wait is not None:
                pending.append(hook.name)
                waits.append(wait)
        return pending, min(waits, default=REGISTRATION_RECHECK_SECONDS)
