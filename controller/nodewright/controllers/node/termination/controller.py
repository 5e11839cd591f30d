"""Node termination (Karpenter's node.termination controller).

A Node being deleted that carries the karpenter.sh/termination finalizer: its NodeClaim
is deleted too; if the node is not Ready and the cloud no longer has its instance, the
finalizer comes off at once. Otherwise the node is tainted karpenter.sh/disrupted:
NoSchedule (and excluded from load balancers), drained through the Eviction API (see
`terminator` and `eviction`; the NodeClaim shows Drained=Unknown, then True once nothing
waits and at least 5 s have passed, so pods bound just before the taint are caught), its
VolumeAttachments are waited for until the attach-detach controller has deleted them
(VolumesDetached=Unknown AwaitingVolumeDetachment, then True; False
TerminationGracePeriodElapsed when the deadline passes first; attachments of volumes
that pods which are not drained still use do not count), its instance is terminated until
the cloud says it is gone (InstanceTerminating=True), and then the finalizer is removed.
The deadline for the drain and the detachment is the NodeClaim's
karpenter.sh/nodeclaim-termination-timestamp annotation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from datetime import datetime
from typing import Any

from nodewright import metrics
from nodewright.cloud.provider import CloudProvider, CloudProviderError, NodeClaimNotFoundError
from nodewright.cluster import conditions, objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.conditions import NODECLAIM
from nodewright.cluster.copying import deep_copy
from nodewright.cluster.events import Event, EventRecorder
from nodewright.controllers.common.logfields import node_fields
from nodewright.controllers.common.patching import patch_object, patch_status
from nodewright.controllers.node.termination.eviction import Evictor
from nodewright.controllers.node.termination.terminator import Terminator
from nodewright.controllers.node.termination.volumes import pending_attachments
from nodewright.controllers.nodeclaim.context import LifecycleContext
from nodewright.controllers.nodeclaim.finalize import INSTANCE_TERMINATING, instance_gone
from nodewright.runtime.clock import Clock, parse_time
from nodewright.runtime.concurrency import LinearScale, ScaledBucket
from nodewright.runtime.ratelimit import Backoff, RetryLimits
from nodewright.runtime.reconciler import Result, Watch, WatchEvent
from nodewright.state import ClusterState, podutil
from nodewright.state.wellknown import (
    DISRUPTED_TAINT,
    EXCLUDE_LOAD_BALANCERS_LABEL,
    NODECLASS_LABEL,
    NODEPOOL_LABEL,
    TERMINATION_FINALIZER,
    TERMINATION_TIMESTAMP_ANNOTATION,
    matches,
    taint_dict,
    taint_of,
)

log = logging.getLogger(__name__)

DRAINED = "Drained"
VOLUMES_DETACHED = "VolumesDetached"
AWAITING_DETACHMENT = "AwaitingVolumeDetachment"
GRACE_PERIOD_ELAPSED = "TerminationGracePeriodElapsed"
MIN_DRAIN_SECONDS = 5.0
DRAIN_RECHECK_SECONDS = 1.0
INSTANCE_CHECK_SECONDS = 5.0
CONFLICT_RETRY_SECONDS = 0.1
Object = dict[str, Any]


def _node_ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


class NodeTermination:
    name = "node.termination"
    # Karpenter's (100 workers at one core, 5,000 at 60; capped, runtime.concurrency): one
    # node's drain or TerminateInstances does not wait behind another's.
    max_concurrent_reconciles = LinearScale(100, 5000)
    # Karpenter's: a key retried after 100 ms doubling to 10 s, and all retries at 10 a
    # second per 100 workers (10 % of them), bursts of ten seconds' worth.
    retry_limits = RetryLimits(Backoff(initial=0.1, maximum=10.0),
                               ScaledBucket(10, max_concurrent_reconciles))

    def __init__(
        self,
        cluster: ClusterAPI,
        cloud: CloudProvider,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
    ) -> None:
        self.cluster = cluster
        self.cloud = cloud
        self.clock = clock
        self.state = state
        self.recorder = recorder
        self.context = LifecycleContext(cluster, cloud, clock, state, recorder)
        self.terminator = Terminator(state, Evictor(cluster, clock, recorder))
        self._watches = (
            Watch("Node"),
            Watch("Pod", keys=self._node_of_pod),
            Watch("NodeClaim", keys=self._node_of_nodeclaim),
            Watch("VolumeAttachment", keys=self._node_of_attachment),
        )

    @property
    def watches(self) -> Sequence[Watch]:
        return self._watches

    def size_for_cpu(self, cpu_requests: int) -> None:
        """The eviction queue's retry bucket follows the container's CPU request."""
        self.terminator.evictor.size_for_cpu(cpu_requests)

    def _node_of_pod(self, event: WatchEvent) -> Iterable[str]:
        node_name = podutil.node_name(event.object)
        if not node_name:
            return ()
        node = self.state.node_by_name(node_name)
        if node is None or node.node is None:
            return ()
        return (node_name,) if (node.node.get("metadata") or {}).get("deletionTimestamp") else ()

    @staticmethod
    def _node_of_attachment(event: WatchEvent) -> Iterable[str]:
        node_name = (event.object.get("spec") or {}).get("nodeName")
        return (str(node_name),) if node_name else ()

    def _node_of_nodeclaim(self, event: WatchEvent) -> Iterable[str]:
        node = self.state.node_for_nodeclaim(event.name)
        return (node.node_name,) if node is not None and node.node is not None else ()

    def reconcile(self, key: str) -> Result:
        machine = self.state.node_by_name(key)
        cached = machine.node if machine is not None else None
        if cached is not None and not (cached.get("metadata") or {}).get("deletionTimestamp"):
            return Result()  # the common case, decided without a read
        try:
            node = self.cluster.get("Node", key)
        except NotFoundError:
            return Result()
        metadata = node.get("metadata") or {}
        if not metadata.get("deletionTimestamp"):
            return Result()
        if TERMINATION_FINALIZER not in (metadata.get("finalizers") or []):
            return Result()
        if NODECLASS_LABEL not in (metadata.get("labels") or {}):
            return Result()  # not ours: Karpenter's IsManaged reads the node class label
        try:
            return self._finalize(node)
        except ConflictError:
            return Result(requeue_after=CONFLICT_RETRY_SECONDS)
        except NotFoundError:
            return Result()

    def _nodeclaim(self, node: Mapping[str, Any]) -> Object | None:
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        names = self.state.nodeclaim_names_for_provider_id(provider_id) if provider_id else []
        if len(names) != 1:
            return None
        try:
            return self.cluster.get("NodeClaim", names[0])
        except NotFoundError:
            return None

    def _finalize(self, node: Object) -> Result:
        claim = self._nodeclaim(node)
        if claim is not None and not (claim.get("metadata") or {}).get("deletionTimestamp"):
            # Gone already: the node is finalized all the same (Karpenter's IgnoreNotFound).
            with suppress(NotFoundError):
                self.cluster.delete("NodeClaim", str(claim["metadata"]["name"]))
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        if not _node_ready(node) and provider_id:
            try:
                self.cloud.get(provider_id)
            except NodeClaimNotFoundError:
                return self._remove_finalizer(node)
            except CloudProviderError as error:
                log.warning("looking up the instance of node %s: %s", node["metadata"]["name"],
                            error)
                return Result(requeue_after=INSTANCE_CHECK_SECONDS)
        deadline = self._deadline(node, claim)
        node = self._taint(node)
        claim_after = deep_copy(claim) if claim is not None else None
        result = self._drain(node, claim_after, deadline)
        if result is None:
            result = self._await_volume_detachment(node, claim_after, deadline)
        if result is None and claim_after is not None:
            result = self._terminate_instance(claim_after)
        if claim is not None and claim_after is not None:
            # The NodeClaim went meanwhile: the node's termination goes on.
            with suppress(NotFoundError):
                patch_status(self.cluster, claim, claim_after)
            if (not objects.condition_is_true(claim, DRAINED)
                    and objects.condition_is_true(claim_after, DRAINED)):
                metrics.NODES_DRAINED.labels(
                    nodepool=str((node["metadata"].get("labels") or {}).get(NODEPOOL_LABEL, ""))
                ).inc()
        if result is not None:
            return result
        return self._remove_finalizer(node)

    def _deadline(self, node: Mapping[str, Any], claim: Mapping[str, Any] | None
                  ) -> datetime | None:
        if claim is None:
            return None
        annotations = (claim.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(TERMINATION_TIMESTAMP_ANNOTATION)
        if not value:
            return None
        self.recorder.publish(Event(
            regarding=node, type="Warning", reason="TerminationGracePeriodExpiring",
            note=f"All pods will be deleted by {value}", action="Terminate",
            dedupe_values=(str(node["metadata"]["name"]),),
        ))
        try:
            return parse_time(str(value))
        except ValueError:
            log.warning("node %s: unreadable %s %r", node["metadata"]["name"],
                        TERMINATION_TIMESTAMP_ANNOTATION, value)
            return None

    def _taint(self, node: Object) -> Object:
        spec = node.get("spec") or {}
        taints = list(spec.get("taints") or [])
        labels = (node.get("metadata") or {}).get("labels") or {}
        if (any(matches(taint_of(t), DISRUPTED_TAINT) for t in taints)
                and labels.get(EXCLUDE_LOAD_BALANCERS_LABEL) == "karpenter"):
            return node
        after = deep_copy(node)
        if not any(matches(taint_of(t), DISRUPTED_TAINT) for t in taints):
            kept = [t for t in taints if t.get("key") != DISRUPTED_TAINT.key]
            after.setdefault("spec", {})["taints"] = [*kept, taint_dict(DISRUPTED_TAINT)]
        after["metadata"]["labels"] = {**labels, EXCLUDE_LOAD_BALANCERS_LABEL: "karpenter"}
        written = patch_object(self.cluster, node, after)
        log.info("tainted node", extra={
            **node_fields(node), "taint.Key": DISRUPTED_TAINT.key,
            "taint.Value": DISRUPTED_TAINT.value or "", "taint.Effect": DISRUPTED_TAINT.effect})
        return dict(written) if written is not None else after

    def _drain(self, node: Object, claim: Object | None, deadline: datetime | None
               ) -> Result | None:
        now = self.clock.now()
        if claim is not None and objects.condition(claim, DRAINED) is None:
            NODECLAIM.set_unknown(claim, DRAINED, now, "Draining", "Draining")
        reason = self._eviction_reason(claim)
        left = self.terminator.drain(node, deadline, reason)
        if left:
            self.recorder.publish(Event(
                regarding=node, type="Warning", reason="FailedDraining",
                note=f"Failed to drain node, {left} pods are waiting to be evicted",
                action="Drain", dedupe_values=(str(node["metadata"]["name"]),),
            ))
            return Result(requeue_after=self._drain_recheck(now))
        if claim is not None:
            if conditions.status_of(claim, DRAINED) == conditions.UNKNOWN:
                since = conditions.transition_time(claim, DRAINED) or now
                left_seconds = MIN_DRAIN_SECONDS - (now - since).total_seconds()
                if left_seconds > 0:
                    return Result(requeue_after=min(left_seconds, DRAIN_RECHECK_SECONDS))
            NODECLAIM.set_true(claim, DRAINED, now)
        return None

    def _await_volume_detachment(self, node: Object, claim: Object | None,
                                 deadline: datetime | None) -> Result | None:
        """Wait until the attach-detach controller has removed the node's
        VolumeAttachments (so the volumes can attach elsewhere at once, not after a
        multi-attach timeout), unless the termination grace period has run out."""
        now = self.clock.now()
        pending = pending_attachments(self.state, str(node["metadata"]["name"]), now)
        if not pending:
            if claim is not None:
                NODECLAIM.set_true(claim, VOLUMES_DETACHED, now)
            return None
        if deadline is None or now <= deadline:
            names = [str(a["metadata"]["name"]) for a in pending]
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} other(s)"
                                             if len(names) > 5 else "")
            self.recorder.publish(Event(
                regarding=node, type="Normal", reason="AwaitingVolumeDetachment",
                note=f"Awaiting deletion of bound volumeattachments ({shown})",
                action="Terminate", dedupe_values=(str(node["metadata"]["name"]),),
            ))
            if claim is not None:
                NODECLAIM.set_unknown(claim, VOLUMES_DETACHED, now, AWAITING_DETACHMENT,
                                      AWAITING_DETACHMENT)
            return Result(requeue_after=DRAIN_RECHECK_SECONDS)
        if claim is not None:
            NODECLAIM.set_false(claim, VOLUMES_DETACHED, now, GRACE_PERIOD_ELAPSED,
                                GRACE_PERIOD_ELAPSED)
        return None

    def _drain_recheck(self, now: datetime) -> float:
        next_attempt = self.terminator.evictor.next_attempt()
        if next_attempt is None:
            return DRAIN_RECHECK_SECONDS
        return max(min((next_attempt - now).total_seconds(), DRAIN_RECHECK_SECONDS), 0.01)

    @staticmethod
    def _eviction_reason(claim: Mapping[str, Any] | None) -> str:
        """Karpenter's evictionReason: the NodeClaim's DisruptionReason, "Forceful
        Termination" without one, and nothing for a node without a (single) NodeClaim."""
        if claim is None:
            return ""
        condition = objects.condition(claim, "DisruptionReason")
        if condition is not None and condition.get("status") == "True":
            return str(condition.get("reason"))
        return "Forceful Termination"

    def _terminate_instance(self, claim: Object) -> Result | None:
        provider_id = str((claim.get("status") or {}).get("providerID") or "")
        if not provider_id:
            return None
        try:
            gone = instance_gone(self.context, provider_id, claim)
        except CloudProviderError as error:
            log.warning("terminating instance %s: %s", provider_id, error)
            return Result(requeue_after=INSTANCE_CHECK_SECONDS)
        NODECLAIM.set_true(claim, INSTANCE_TERMINATING, self.clock.now())
        return None if gone else Result(requeue_after=INSTANCE_CHECK_SECONDS)

    def _remove_finalizer(self, node: Object) -> Result:
        metadata = deep_copy(node.get("metadata") or {})
        metadata["finalizers"] = [
            f for f in metadata.get("finalizers") or [] if f != TERMINATION_FINALIZER
        ]
        patch_object(self.cluster, node, {**node, "metadata": metadata})
        labels = metadata.get("labels") or {}
        pool = str(labels.get(NODEPOOL_LABEL, ""))
        metrics.NODES_TERMINATED.labels(
            nodepool=pool, zone=str(labels.get("topology.kubernetes.io/zone", "")),
        ).inc()
        now = self.clock.now()
        deleted, created = objects.deletion_time(node), objects.creation_time(node)
        if deleted is not None:
            metrics.NODES_TERMINATION_DURATION.labels(nodepool=pool).observe(
                (now - deleted).total_seconds())
        if created is not None:
            metrics.NODES_LIFETIME_DURATION.labels(nodepool=pool).observe(
                (now - created).total_seconds())
        log.info("deleted node", extra=node_fields(node))
        return Result()


