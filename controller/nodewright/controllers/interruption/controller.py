"""Interruption (the AWS provider's interruption controller): act on what EC2 says is about
to happen to an instance.

A singleton that polls an interruption queue (the SQS consumer of `cloud.aws`, or the
simulated EC2's queue; both parse EventBridge messages the same way and delete a message
once its handler returned, unparsable ones at once with a warning). For each event naming
an instance one of our NodeClaims runs on:

| event                                   | action                                           |
|-----------------------------------------|--------------------------------------------------|
| spot interruption warning               | offering unavailable 3 min, NodeClaim deleted    |
| scheduled change (AWS Health)           | NodeClaim deleted                                |
| state change: stopping/stopped/shutting-down/terminated | NodeClaim deleted                |
| capacity reservation interruption       | NodeClaim deleted                                |
| rebalance recommendation                | event only                                       |

Deleting the NodeClaim starts the normal termination (cordon, drain through the Eviction
API) and the provisioner places the pods elsewhere, well within a spot notice's 2 minutes.

`InterruptionHandler` is that table and the acting on it; the instance status health checks
(`controllers.interruption.instance_status`) act through it too, with three more kinds:

| DescribeInstanceStatus reports                  | action                                |
|-------------------------------------------------|---------------------------------------|
| a failed instance or system status check        | NodeClaim terminated now              |
| a scheduled event                               | NodeClaim deleted                     |

"Terminated now" (Karpenter's ForcefulTermination) sets the NodeClaim's termination
timestamp to the present before deleting it, so the drain ignores PodDisruptionBudgets and
does not wait for volumes: the instance is broken and a graceful drain may never finish.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodewright import metrics
from nodewright.cloud.aws.interruption_events import EventKind, InterruptionEvent
from nodewright.cloud.capabilities import InterruptionSource, OfferingMarker, ReservationMarker
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, ConflictError, NotFoundError
from nodewright.cluster.events import Event, EventRecorder, EventType
from nodewright.controllers.common import decision_log as ex
from nodewright.runtime.clock import Clock, format_time, parse_time
from nodewright.runtime.reconciler import Result, Watch
from nodewright.scheduling.labels import RESERVATION_ID as RESERVATION_ID_LABEL
from nodewright.state import ClusterState
from nodewright.state.statenode import StateNode
from nodewright.state.wellknown import (
    INSTANCE_TYPE_LABEL,
    TERMINATION_TIMESTAMP_ANNOTATION,
    ZONE_LABEL,
)

log = logging.getLogger(__name__)

SPOT = "spot"
HANDLED_KEPT = 1000


@dataclass(frozen=True)
class Action:
    """What an event kind does: its event (reason, type, note), whether it deletes, and
    whether the deletion skips the graceful drain (`forceful`)."""

    reason: str
    event_type: EventType
    note: str
    deletes: bool
    forceful: bool = False


_MESSAGE_KINDS = {
    EventKind.SPOT_INTERRUPTION: "spot_interrupted",
    EventKind.SCHEDULED_CHANGE: "scheduled_change",
    EventKind.REBALANCE_RECOMMENDATION: "rebalance_recommendation",
    EventKind.CAPACITY_RESERVATION_INTERRUPTION: "capacity_reservation_interrupted",
    EventKind.INSTANCE_STATUS: "instance_status",
    EventKind.SYSTEM_STATUS: "system_status",
    EventKind.EVENT_STATUS: "event_status",
}
NO_OP = "no_op"
UNHEALTHY = ("InstanceUnhealthy", "An unhealthy warning was triggered for the instance")


def message_kind(event: InterruptionEvent) -> str:
    """Karpenter's name for the message kind, the metrics' message_type and reason."""
    if event.kind is EventKind.STATE_CHANGE:
        return "instance_stopped" if event.detail in ("stopping", "stopped") \
            else "instance_terminated"
    return _MESSAGE_KINDS[event.kind]


def action_for(event: InterruptionEvent) -> Action:
    kind = event.kind
    if kind is EventKind.SPOT_INTERRUPTION:
        return Action("SpotInterrupted", "Warning", "Spot interruption warning was triggered",
                      True)
    if kind is EventKind.REBALANCE_RECOMMENDATION:
        return Action("SpotRebalanceRecommendation", "Normal",
                      "Spot rebalance recommendation was triggered", False)
    if kind in (EventKind.SCHEDULED_CHANGE, EventKind.EVENT_STATUS):
        return Action(UNHEALTHY[0], "Warning", UNHEALTHY[1], True)
    if kind in (EventKind.INSTANCE_STATUS, EventKind.SYSTEM_STATUS):
        return Action(UNHEALTHY[0], "Warning", UNHEALTHY[1], True, forceful=True)
    if kind is EventKind.CAPACITY_RESERVATION_INTERRUPTION:
        return Action("CapacityReservationInstanceInterrupted", "Warning",
                      "Capacity Reservation interruption warning was triggered", True)
    if event.detail in ("stopping", "stopped"):
        return Action("InstanceStopping", "Warning", "Instance is stopping", True)
    return Action("InstanceTerminating", "Warning", "Instance is terminating", True)


def instance_id_of(provider_id: str) -> str:
    """aws:///us-west-2a/i-0123 -> i-0123."""
    return provider_id.rstrip("/").rsplit("/", 1)[-1]


class InterruptionHandler:
    """Acting on interruption events against our NodeClaims (the table above): what the
    queue's controller and the instance status health checks share. Call under the state
    lock."""

    name = "interruption"

    def __init__(
        self,
        cluster: ClusterAPI,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
        unavailable: OfferingMarker | None = None,
        decisions: ex.DecisionLog | None = None,
        *,
        reservations: ReservationMarker | None = None,
    ) -> None:
        self.cluster = cluster
        self.clock = clock
        self.state = state
        self.recorder = recorder
        self.unavailable = unavailable
        self.reservations = reservations
        self.decisions = decisions if decisions is not None else ex.DecisionLog()
        # The latest events acted on (bounded: the process runs for months).
        self.handled: deque[InterruptionEvent] = deque(maxlen=HANDLED_KEPT)

    def machines_by_instance(self) -> Mapping[str, StateNode]:
        """Our NodeClaims (with their Nodes, when registered) by EC2 instance ID."""
        return {
            instance_id_of(node.provider_id): node
            for node in self.state.nodes()
            if node.nodeclaim is not None and node.provider_id
        }

    def act(self, event: InterruptionEvent, node: StateNode) -> bool:
        """Do what `event` asks to `node`'s NodeClaim; whether it deleted the NodeClaim.
        Raising (an API error) leaves the event to be handled again."""
        action = action_for(event)
        claim = node.nodeclaim
        assert claim is not None
        for obj in (claim, node.node):
            if obj is not None:
                self._publish(obj, action.reason, action.event_type, action.note)
        labels = node.labels
        if event.kind is EventKind.SPOT_INTERRUPTION and self.unavailable is not None:
            instance_type, zone = labels.get(INSTANCE_TYPE_LABEL), labels.get(ZONE_LABEL)
            if instance_type and zone:
                self.unavailable.mark_unavailable(instance_type, zone, SPOT,
                                                  message_kind(event))
        reservation = labels.get(RESERVATION_ID_LABEL)
        if (event.kind is EventKind.CAPACITY_RESERVATION_INTERRUPTION and reservation
                and self.reservations is not None):
            # EC2 is reclaiming the reservation: launch nothing more into it.
            self.reservations.mark_unavailable(reservation)
        self.handled.append(event)
        if not action.deletes:
            self._decide(node, event, ex.KEPT, f"{action.note} (no action)")
            return False
        if action.forceful:
            self._terminate_now(node.nodeclaim_name, claim)
        if objects.is_deleting(claim):
            return False
        try:
            self.cluster.delete("NodeClaim", node.nodeclaim_name, uid=objects.uid(claim) or None)
        except (NotFoundError, ConflictError):
            return False
        note = "Interruption triggered termination for the {}"
        for obj in (claim, node.node):
            if obj is not None:
                self._publish(obj, "TerminatingOnInterruption", "Warning",
                              note.format(obj.get("kind")))
        # The NodeClaim's own capacity type, empty when it has none (as Karpenter).
        disrupted = metrics.disrupted_labels(claim, message_kind(event))
        metrics.NODECLAIMS_DISRUPTED.labels(**disrupted).inc()
        self._decide(node, event, ex.DISRUPTED, f"{action.note}: the NodeClaim is deleted")
        fields = {"controller": self.name, "NodeClaim": node.nodeclaim_name,
                  "NodePool": node.nodepool, "provider-id": node.provider_id}
        if node.node is not None:
            fields["Node"] = node.node_name
        log.info("interruption %s of %s: deleting nodeclaim %s", event.kind.value,
                 event.instance_id, node.nodeclaim_name, extra=fields)
        return True

    def _terminate_now(self, name: str, claim: Mapping[str, Any]) -> None:
        """Set the termination timestamp to now, unless the NodeClaim has one already (a
        deletion's grace deadline, or an earlier failure): the drain then skips
        PodDisruptionBudgets and the wait for volumes."""
        if TERMINATION_TIMESTAMP_ANNOTATION in objects.annotations(claim):
            return
        with contextlib.suppress(NotFoundError):
            self.cluster.patch("NodeClaim", name, {"metadata": {"annotations": {
                TERMINATION_TIMESTAMP_ANNOTATION: format_time(self.clock.now())}}})

    def _publish(self, obj: Mapping[str, Any], reason: str, event_type: EventType,
                 note: str) -> None:
        self.recorder.publish(Event(regarding=obj, type=event_type, reason=reason, note=note,
                                    dedupe_values=(objects.uid(obj), reason)))

    def _decide(self, node: StateNode, event: InterruptionEvent, outcome: str,
                message: str) -> None:
        self.decisions.record(ex.Decision(
            time=self.clock.now(), node=node.name, nodeclaim=node.nodeclaim_name,
            nodepool=node.nodepool, method=ex.INTERRUPTION, outcome=outcome,
            event_reason=action_for(event).reason, message=message, cause=event.kind.value,
            decision="delete" if outcome == ex.DISRUPTED else ""))


class Interruption(InterruptionHandler):
    """The interruption queue's controller."""

    name = "interruption"
    # A long poll waits outside the state lock (see `reconcile`).
    manages_state_lock = True

    def __init__(
        self,
        cluster: ClusterAPI,
        clock: Clock,
        state: ClusterState,
        recorder: EventRecorder,
        queue: InterruptionSource,
        unavailable: OfferingMarker | None = None,
        decisions: ex.DecisionLog | None = None,
        *,
        idle_requeue_seconds: float = 2.0,
        reservations: ReservationMarker | None = None,
    ) -> None:
        super().__init__(cluster, clock, state, recorder, unavailable, decisions,
                         reservations=reservations)
        self.queue = queue
        self.idle_requeue_seconds = idle_requeue_seconds

    @property
    def watches(self) -> Sequence[Watch]:
        # A polling singleton: the wiring starts it; a NodePool seen at startup does too.
        return (Watch("NodePool", lambda e: ("",) if e.type == "ADDED" else ()),)

    def reconcile(self, key: str) -> Result:
        """One receive. A queue that long-polls (`wait_seconds` > 0, as SQS does for the
        operator) waits in the receive outside the state lock, answers as soon as a
        message arrives, and is polled again at once (as Karpenter does); messages are
        handled under the lock. A queue that answers at once (the simulated EC2's, which
        its own timers fill under the lock) is read under it, every few seconds."""
        long_poll = self.queue.wait_seconds > 0
        if long_poll:
            result = self.queue.poll_once(self._handle_locked)
        else:
            with self.state.lock:
                result = self.queue.poll_once(self.handle)
        if result.ignored:
            # Karpenter's noop messages: received, nothing to do, deleted.
            metrics.INTERRUPTION_RECEIVED_MESSAGES.labels(message_type=NO_OP).inc(
                result.ignored)
        if result.deleted:
            metrics.INTERRUPTION_DELETED_MESSAGES.inc(result.deleted)
        if result.malformed:
            log.warning("deleted %d malformed interruption message(s)", result.malformed)
        if result.received or long_poll:
            return Result(requeue_after=0.0)
        return Result(requeue_after=self.idle_requeue_seconds)

    def _handle_locked(self, events: Sequence[InterruptionEvent]) -> None:
        with self.state.lock:
            self.handle(events)

    def handle(self, events: Sequence[InterruptionEvent]) -> None:
        """Act on one message's events (all of one kind, one per instance it names);
        raising leaves the message for redelivery. As Karpenter: the message is counted as
        received once, before acting, and its time on the queue observed once acted on."""
        if not events:
            return
        metrics.INTERRUPTION_RECEIVED_MESSAGES.labels(message_type=message_kind(events[0])).inc()
        machines = self.machines_by_instance()
        for event in events:
            node = machines.get(event.instance_id)
            if node is None:
                continue
            self.act(event, node)
        sent = next((event.time for event in events if event.time), "")
        if sent:
            with contextlib.suppress(ValueError):
                metrics.INTERRUPTION_MESSAGE_QUEUE_DURATION.observe(
                    max((self.clock.now() - parse_time(sent)).total_seconds(), 0.0))
