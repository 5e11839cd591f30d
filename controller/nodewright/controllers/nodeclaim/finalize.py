"""NodeClaim termination (the lifecycle controller's finalizer, Karpenter's finalize).

A deleted NodeClaim first gets its termination deadline
(karpenter.sh/nodeclaim-termination-timestamp = deletion time + terminationGracePeriod)
when it has one. A registered NodeClaim then deletes its Node and waits for it to be gone
(the node termination controller drains it and terminates the instance first). Then the
instance is terminated (again: deleting is idempotent) until the cloud no longer has it,
and last the karpenter.sh/termination finalizer comes off.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from nodewright import metrics
from nodewright.api.formats import parse_duration
from nodewright.cloud.provider import CloudProviderError, NodeClaimNotFoundError
from nodewright.cluster import conditions, objects
from nodewright.cluster.api import ConflictError, NotFoundError
from nodewright.cluster.conditions import NODECLAIM
from nodewright.cluster.events import Event
from nodewright.controllers.common.logfields import nodeclaim_fields
from nodewright.controllers.common.patching import patch_object, patch_status
from nodewright.controllers.nodeclaim.context import (
    CONFLICT_RETRY_SECONDS,
    LifecycleContext,
    Object,
    labels_of,
    name_of,
    nodepool_of,
    provider_id_of,
)
from nodewright.controllers.nodeclaim.registration import REGISTERED
from nodewright.runtime.clock import format_time, parse_time
from nodewright.scheduling.requirements import LABEL_RESERVATION_ID
from nodewright.state.wellknown import TERMINATION_FINALIZER, TERMINATION_TIMESTAMP_ANNOTATION

log = logging.getLogger(__name__)

INSTANCE_TERMINATING = "InstanceTerminating"
INSTANCE_CHECK_SECONDS = 5.0


def instance_gone(context: LifecycleContext, provider_id: str, claim: Object) -> bool:
    """Terminate the instance (idempotent) and say whether the cloud no longer has it. An
    instance of a capacity reservation gives its slot back once gone (Karpenter's
    CloudProvider.Delete calls MarkTerminated when the instance is not found)."""
    context.cloud.delete(provider_id)
    try:
        gone = context.cloud.get(provider_id).state == "terminated"
    except NodeClaimNotFoundError:
        gone = True
    reservation = labels_of(claim).get(LABEL_RESERVATION_ID)
    reservations = context.cloud.capabilities().reservations
    if gone and reservation and reservations is not None:
        reservations.mark_terminated(reservation)
    return gone


class Finalizer:
    def __init__(self, context: LifecycleContext) -> None:
        self.context = context

    def reconcile(self, claim: Object) -> float | None:
        metadata = claim.get("metadata") or {}
        if TERMINATION_FINALIZER not in (metadata.get("finalizers") or []):
            return None
        context = self.context
        try:
            claim = self._ensure_deadline(claim)
        except ConflictError:
            return CONFLICT_RETRY_SECONDS
        except NotFoundError:
            return None
        if objects.condition_is_true(claim, REGISTERED):
            waiting = False
            provider_id = provider_id_of(claim)
            names = set(context.state.node_names_for_provider_id(provider_id))
            node_name = (claim.get("status") or {}).get("nodeName")
            if node_name:
                names.add(str(node_name))
            for name in sorted(names):
                try:
                    node = context.cluster.get("Node", name)
                except NotFoundError:
                    continue
                if (node.get("spec") or {}).get("providerID") != provider_id:
                    continue  # Karpenter lists the claim's Nodes by provider ID only
                waiting = True
                if not (node.get("metadata") or {}).get("deletionTimestamp"):
                    context.cluster.delete("Node", name)
            if waiting:
                return None  # the Node's deletion event brings us back
        provider_id = provider_id_of(claim)
        if provider_id:
            try:
                gone = instance_gone(context, provider_id, claim)
            except CloudProviderError as error:
                log.warning("terminating the instance of nodeclaim %s: %s", name_of(claim), error)
                return INSTANCE_CHECK_SECONDS
            after: Object = {**claim, "status": dict(claim.get("status") or {})}
            if NODECLAIM.set_true(after, INSTANCE_TERMINATING, context.clock.now()):
                try:
                    claim = dict(patch_status(context.cluster, claim, after) or claim)
                except ConflictError:
                    return CONFLICT_RETRY_SECONDS
                except NotFoundError:
                    return None
            if not gone:
                return INSTANCE_CHECK_SECONDS
            since = conditions.transition_time(claim, INSTANCE_TERMINATING)
            if since is not None:
                metrics.NODECLAIMS_INSTANCE_TERMINATION_DURATION.labels(
                    nodepool=nodepool_of(claim),
                ).observe((context.clock.now() - since).total_seconds())
        return self._remove_finalizer(claim)

    def _ensure_deadline(self, claim: Object) -> Object:
        metadata = claim.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        grace = (claim.get("spec") or {}).get("terminationGracePeriod")
        deleted = metadata.get("deletionTimestamp")
        if TERMINATION_TIMESTAMP_ANNOTATION in annotations or not grace or not deleted:
            return claim
        seconds = parse_duration(str(grace))
        deadline = format_time(parse_time(str(deleted)) + timedelta(seconds=seconds))
        after = {**claim, "metadata": {
            **metadata, "annotations": {**annotations, TERMINATION_TIMESTAMP_ANNOTATION: deadline}
        }}
        written = patch_object(self.context.cluster, claim, after)
        log.info("annotated nodeclaim", extra={
            **nodeclaim_fields(claim), TERMINATION_TIMESTAMP_ANNOTATION: deadline})
        self.context.recorder.publish(Event(
            regarding=claim, type="Warning", reason="TerminationGracePeriodExpiring",
            note=f"All pods will be deleted by {deadline}", action="Terminate",
            dedupe_values=(name_of(claim),),
        ))
        return dict(written) if written is not None else after

    def _remove_finalizer(self, claim: Object) -> float | None:
        metadata = dict(claim.get("metadata") or {})
        metadata["finalizers"] = [
            f for f in metadata.get("finalizers") or [] if f != TERMINATION_FINALIZER
        ]
        try:
            patch_object(self.context.cluster, claim, {**claim, "metadata": metadata})
        except ConflictError:
            return CONFLICT_RETRY_SECONDS
        except NotFoundError:
            return None
        labels = labels_of(claim)
        deleted = metadata.get("deletionTimestamp")
        if deleted:
            metrics.NODECLAIMS_TERMINATION_DURATION.labels(nodepool=nodepool_of(claim)).observe(
                (self.context.clock.now() - parse_time(str(deleted))).total_seconds())
        metrics.NODECLAIMS_TERMINATED.labels(
            nodepool=nodepool_of(claim),
            capacity_type=labels.get("karpenter.sh/capacity-type", ""),
            zone=labels.get("topology.kubernetes.io/zone", ""),
        ).inc()
        log.info("deleted nodeclaim", extra=nodeclaim_fields(claim))
        return None
