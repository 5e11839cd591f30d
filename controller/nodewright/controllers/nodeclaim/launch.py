"""Launch: turn a NodeClaim into an instance through CloudProvider.create.

On success the NodeClaim gets the instance's labels (instance type, zone, capacity type
and the other well-known labels; its own labels win), the hash of the EC2NodeClass it
launched from and the launch's annotations (over those it was created with), providerID,
imageID, capacity and allocatable, and Launched=True. Insufficient capacity (the cloud has
already marked the offerings unavailable; an EC2NodeClass that is gone or being deleted
counts as that, as in Karpenter's provider) and an unready node class delete the
NodeClaim, so its pods are solved again against what is left; any other error leaves
Launched=Unknown with the error as message and is retried with backoff (1 s doubling to
1 min), until the launch timeout deletes the NodeClaim. `create` is idempotent per
NodeClaim, so a controller that died after launching and before writing status finds the
same instance again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from nodewright import metrics
from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import node_class_hash_annotations
from nodewright.api.nodeclaim import NodeClaim
from nodewright.api.quantity import Resources, format_resources
from nodewright.cloud.provider import (
    CloudProviderError,
    Instance,
    InsufficientCapacityError,
    NodeClassNotReadyError,
)
from nodewright.cluster import conditions
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.conditions import NODECLAIM
from nodewright.cluster.events import Event
from nodewright.controllers.common.logfields import nodeclaim_fields
from nodewright.controllers.common.node_class_events import failed_resolving_node_class
from nodewright.controllers.nodeclaim.context import (
    LifecycleContext,
    Object,
    labels_of,
    name_of,
)
from nodewright.controllers.provisioning.problem import node_class_problem
from nodewright.runtime.ratelimit import Backoff
from nodewright.scheduling.allocatable import AWS_EFA
from nodewright.scheduling.catalog import InstanceType
from nodewright.state.objects import describe_validation_error
from nodewright.state.wellknown import NODEPOOL_LABEL

log = logging.getLogger(__name__)

LAUNCHED = "Launched"
_MESSAGE_LIMIT = 300
# Launch retries: 1 s doubling to 1 min.
BACKOFF = Backoff(initial=1.0, maximum=60.0)
LAUNCH_CACHE_TTL = timedelta(minutes=1)


@dataclass
class LaunchResult:
    deleted: bool = False
    requeue_after: float | None = None
    # This pass launched the NodeClaim: what "launched nodeclaim" says, logged by the
    # lifecycle once the status saying so is written (a retry of a write that failed finds
    # the same instance again and must not log a second launch).
    launched: dict[str, object] | None = None


class Launch:
    def __init__(self, context: LifecycleContext) -> None:
        self.context = context
        self._failures: dict[str, int] = {}
        # NodeClaim uid -> (when, the instance created for it): a reconcile that reads the
        # NodeClaim before its Launched status is back from the API server reuses the
        # instance instead of asking the cloud again (Karpenter's launch cache, which keeps
        # an entry an hour; ours a minute, after which `create`, idempotent per NodeClaim,
        # finds the same instance again).
        self._launched: dict[str, tuple[datetime, Instance]] = {}
        # Guards the cache above (short sections, never around a request). With a cloud that
        # allows it the lifecycle's workers launch outside the state lock and side by side
        # (a NodeClaim is never reconciled by two at once), so a CreateFleet that takes
        # seconds holds up neither the other controllers nor the lifecycle's other work
        # (registrations, other launches).
        self._cache_lock = threading.Lock()

    def reconcile(self, claim: Object) -> LaunchResult:
        status = conditions.status_of(claim, LAUNCHED)
        if status in (conditions.TRUE, conditions.FALSE):
            self._failures.pop(name_of(claim), None)
            return LaunchResult()
        context = self.context
        reference = str(((claim.get("spec") or {}).get("nodeClassRef") or {}).get("name", ""))
        unresolved = _unresolved_node_class(context.state.node_class(reference), reference)
        if unresolved is not None:
            # Karpenter's provider: a node class that is gone (or being deleted, which it
            # treats as gone) fails the launch as insufficient capacity, after its
            # NodeClaimFailedToResolveNodeClass.
            context.recorder.publish(failed_resolving_node_class(claim, action="Launch"))
            return self._give_up(claim, InsufficientCapacityError(unresolved))
        problem = node_class_problem(context.state, reference)
        parsed = context.state.node_class_model(reference)
        if problem is not None or parsed is None or parsed.model is None:
            return self._give_up(claim, NodeClassNotReadyError(
                problem or f"EC2NodeClass {reference!r} is invalid"))
        try:
            model = NodeClaim.model_validate(
                {key: value for key, value in claim.items() if key != "status"}
            )
        except ValidationError as error:
            return self._failed(claim, "InvalidNodeClaim", describe_validation_error(error))
        try:
            instance = self._create(claim, model, parsed.model)
        except CloudProviderError as error:
            self._warn(claim, error)
            return self._launch_failed(claim, error)
        self._failures.pop(name_of(claim), None)
        self._populate(claim, instance, parsed.model)
        return LaunchResult(launched={
            **nodeclaim_fields(claim), "instance-type": instance.instance_type,
            "zone": instance.zone, "capacity-type": instance.capacity_type,
            "allocatable": (claim.get("status") or {}).get("allocatable") or {}})

    def _warn(self, claim: Object, error: CloudProviderError) -> None:
        for reason, note in error.warnings:
            self.context.recorder.publish(Event(
                regarding=claim, type="Warning", reason=reason, note=note, action="Launch",
                dedupe_values=(str((claim.get("metadata") or {}).get("uid") or name_of(claim)),),
            ))

    def _launch_failed(self, claim: Object, error: CloudProviderError) -> LaunchResult:
        if isinstance(error, InsufficientCapacityError | NodeClassNotReadyError):
            return self._give_up(claim, error)
        return self._failed(claim, error.reason or "LaunchFailed", str(error))

    def _create(self, claim: Object, model: NodeClaim, node_class: EC2NodeClass) -> Instance:
        now = self.context.clock.now()
        uid = str((claim.get("metadata") or {}).get("uid") or name_of(claim))
        asked = self._without_overlaid(model)
        cloud = self.context.cloud
        outside = cloud.capabilities().launches_outside_state_lock
        with self.context.state.lock.released() if outside else nullcontext():
            with self._cache_lock:
                self._launched = {key: entry for key, entry in self._launched.items()
                                  if now - entry[0] < LAUNCH_CACHE_TTL}
                cached = self._launched.get(uid)
            if cached is not None:
                return cached[1]
            instance = cloud.create(asked, node_class)
            with self._cache_lock:
                self._launched[uid] = (now, instance)
            return instance

    def _without_overlaid(self, model: NodeClaim) -> NodeClaim:
        """The NodeClaim as the cloud sees it: requests for extended resources a capacity
        NodeOverlay added are left out (the cloud's catalog does not list them; the solver
        already chose types that have them, as Karpenter's provider applies the overlays
        before its fit check)."""
        store = self.context.state.overlay_store
        resources = model.spec.resources
        if store is None or resources is None or not resources.requests:
            return model
        added = store.added_resources((model.metadata.labels or {}).get(NODEPOOL_LABEL, ""))
        if not added & set(resources.requests):
            return model
        kept = {k: v for k, v in resources.requests.items() if k not in added}
        spec = model.spec.model_copy(update={
            "resources": resources.model_copy(update={"requests": kept})})
        return model.model_copy(update={"spec": spec})

    def _overlaid(self, claim: Object, found: InstanceType) -> InstanceType:
        """The launched type with its NodePool's overlays, as Karpenter's provider reads
        the type's capacity for the NodeClaim's status from the overlaid list: the
        extended resources a capacity overlay adds are in status.capacity and
        allocatable. A NodeClaim without a NodePool gets none, as in Karpenter."""
        store = self.context.state.overlay_store
        pool = labels_of(claim).get(NODEPOOL_LABEL)
        if store is None or not pool:
            return found
        overlaid = store.apply(pool, [found])
        return overlaid[0] if overlaid else found

    def _populate(self, claim: Object, instance: Instance, node_class: EC2NodeClass) -> None:
        context = self.context
        metadata = claim.setdefault("metadata", {})
        metadata["labels"] = {**dict(instance.labels), **labels_of(claim)}
        # As Karpenter's Create: the hash of the node class the instance launched from (a
        # NodeClaim whose node class changed while its launch was retried is not drifted
        # from what it runs), then what the launch itself says (the instance profile).
        metadata["annotations"] = {
            **(metadata.get("annotations") or {}),
            **node_class_hash_annotations(node_class, context.state.ca_bundle),
            **instance.annotations}
        status = claim.setdefault("status", {})
        status["providerID"] = instance.provider_id
        if instance.image_id:
            status["imageID"] = instance.image_id
        found = context.instance_type(node_class, instance.instance_type)
        if found is not None:
            found = self._overlaid(claim, found)
            launched = _launched_resources(claim, node_class)
            status["capacity"] = format_resources(launched(found.capacity))
            status["allocatable"] = format_resources(launched(found.allocatable))
        NODECLAIM.set_true(claim, LAUNCHED, context.clock.now())

    def _failed(self, claim: Object, reason: str, message: str) -> LaunchResult:
        name = name_of(claim)
        attempts = self._failures.get(name, 0) + 1
        self._failures[name] = attempts
        log.warning("launching nodeclaim %s failed (%s): %s", name, reason, message)
        NODECLAIM.set_unknown(claim, LAUNCHED, self.context.clock.now(), reason,
                              _truncate(message))
        return LaunchResult(requeue_after=BACKOFF.delay(attempts))

    def _give_up(self, claim: Object,
                 error: InsufficientCapacityError | NodeClassNotReadyError) -> LaunchResult:
        """Delete the NodeClaim: its pods go back to the provisioner. Insufficient capacity
        is told in a Warning event on the NodeClaim (Karpenter's
        InsufficientCapacityErrorEvent); an unready node class only in the log, as
        Karpenter's launch does (it declares a NodeClassNotReady event and publishes none)."""
        context = self.context
        name = name_of(claim)
        self._failures.pop(name, None)
        if isinstance(error, InsufficientCapacityError):
            metric_reason = "insufficient_capacity"
            context.recorder.publish(Event(
                regarding=claim, type="Warning", reason="InsufficientCapacityError",
                note=f"NodeClaim {name} event: "
                     f"{_truncate(f'insufficient capacity, {error}')}",
                action="Launch",
                dedupe_values=(str((claim.get("metadata") or {}).get("uid") or name),),
            ))
        else:
            metric_reason = "nodeclass_not_ready"
        log.warning("deleting nodeclaim %s: %s", name, error)
        with contextlib.suppress(NotFoundError):
            context.cluster.delete("NodeClaim", name)
        metrics.NODECLAIMS_DISRUPTED.labels(**metrics.disrupted_labels(claim, metric_reason)).inc()
        return LaunchResult(deleted=True)


def _unresolved_node_class(node_class: Mapping[str, Any] | None, name: str) -> str | None:
    """Why the NodeClaim's EC2NodeClass cannot be resolved at all, in the words of
    Karpenter's resolution error (the API server's NotFound, and the one it makes for a
    node class being deleted); None when it can."""
    resource = "ec2nodeclasses.karpenter.k8s.aws"
    if node_class is None:
        return f'resolving nodeclass, {resource} "{name}" not found'
    if (node_class.get("metadata") or {}).get("deletionTimestamp"):
        return f'resolving nodeclass, {resource} "{name}" is terminating, treating as not found'
    return None


def _launched_resources(
    claim: Mapping[str, Any], node_class: EC2NodeClass
) -> Callable[[Resources], Resources]:
    """What the launched node offers of its type's resources. As Karpenter: EFA devices only
    when the NodeClaim asked for them or the EC2NodeClass lists its interfaces (else the
    instance boots with a plain ENI and has none to offer)."""
    requests = ((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}
    efa = AWS_EFA in requests or node_class.spec.network_interfaces is not None

    def launched(resources: Resources) -> Resources:
        return {name: value for name, value in resources.items()
                if value and (efa or name != AWS_EFA)}

    return launched


def log_launched(fields: dict[str, object]) -> None:
    log.info("launched nodeclaim", extra=fields)


def _truncate(message: str) -> str:
    return message if len(message) < _MESSAGE_LIMIT else message[:_MESSAGE_LIMIT] + "..."
