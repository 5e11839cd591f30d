"""Turning what happens in the simulated cluster into the timeline and the fleet samples.

The recorder is fed by four sources: every watch event (the driver's listeners), what
the simulated EC2 does (its listeners), the disruption decisions (the decision log's
subscribers) and the Events the controllers write (a watch of its own, read after each
callback of the clock). It keeps only what the outputs need: one line per thing a user
cares about, counters for `expect`, and a sample of the fleet whenever it changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nodewright.cloud.sim.ledger import Ledger
from nodewright.cloud.sim.provider import SimEvent, SimulatedEC2
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, WatchStream
from nodewright.cluster.events import REPORTING_CONTROLLER
from nodewright.controllers.common.decision_log import Decision
from nodewright.runtime.reconciler import WatchEvent
from nodewright.sim.durations import format_offset
from nodewright.sim.timeline import DecisionRecord, Sample, TimelineEvent
from nodewright.state.wellknown import (
    CAPACITY_TYPE_LABEL,
    DISRUPTED_TAINT,
    INSTANCE_TYPE_LABEL,
    NODEPOOL_LABEL,
    ZONE_LABEL,
    has_taint,
)

LAUNCHED = "Launched"
INITIALIZED = "Initialized"
REASON_BY_METHOD = {
    "emptiness": "Empty",
    "drift": "Drifted",
    "multi-node consolidation": "Underutilized",
    "single-node consolidation": "Underutilized",
    "expiration": "Expired",
    "interruption": "Interrupted",
}
# EC2 happenings worth a line of their own (launches show up as NodeClaims).
_EC2_LINES = ("insufficient-capacity", "interrupt-spot", "interrupt-scheduled", "interrupt-stop",
              "interrupt-terminate", "interrupt-rebalance", "stopped")
# Warning events of our controllers worth a line, by the controller that writes them
# (FailedDraining is left out: it is written on every pass while a drain waits).
_EVENT_SOURCES = {
    "FailedScheduling": "provisioner",
    "NoCompatibleInstanceTypes": "provisioner",
    "FailedTermination": "termination",
    "TerminationGracePeriodExpiring": "termination",
    "InsufficientCapacityError": "lifecycle",
    "UnregisteredTaintMissing": "lifecycle",
}
# Warnings already told by a line of their own (the disruption decision, the drain).
_QUIET_REASONS = ("FailedDraining", "TerminatingOnInterruption", "InstanceTerminating")
_BILLING_EVENTS = ("running", "shutting-down", "stopping", "terminated")

Line = Callable[[TimelineEvent], None]
NominationLookup = Callable[[str], int | None]


@dataclass
class ClaimRecord:
    name: str
    nodepool: str
    created: float
    launched: float | None = None
    initialized: float | None = None
    gone: float | None = None
    instance_type: str = ""
    capacity_type: str = ""
    zone: str = ""


class Recorder:
    def __init__(
        self,
        start: datetime,
        now: Callable[[], datetime],
        ec2: SimulatedEC2,
        cluster: ClusterAPI,
        nominations: NominationLookup | None = None,
    ) -> None:
        self._start = start
        self._now = now
        self._ec2 = ec2
        self._nominations = nominations
        self.events: list[TimelineEvent] = []
        self.samples: list[Sample] = []
        self.decisions: list[DecisionRecord] = []
        self.claims: dict[str, ClaimRecord] = {}
        self.launched = 0
        self.disrupted: dict[str, set[str]] = {}
        self.last_change = start
        self._listeners: list[Line] = []
        self._nodes: dict[str, str] = {}  # managed, live node name -> instance type
        # What keeps the cluster from being quiet: NodeClaims launching, registering or
        # terminating; nodes being deleted or tainted for disruption.
        self.busy_claims: set[str] = set()
        self.busy_nodes: set[str] = set()
        self._pending: set[str] = set()
        self._nodes_changed = 0  # bumped whenever `_nodes` changes
        self._last_counts: tuple[int, float, int] | None = None
        self._hourly_cost = 0.0
        self._event_stream: WatchStream = cluster.watch(["Event"])

    # -- output --------------------------------------------------------------------------

    def listen(self, line: Line) -> None:
        self._listeners.append(line)

    def note(self, source: str, kind: str, message: str, **data: Any) -> TimelineEvent:
        event = TimelineEvent(self.offset(), source, kind, message, data)
        self.events.append(event)
        for listener in self._listeners:
            listener(event)
        return event

    def offset(self, when: datetime | None = None) -> float:
        return ((when or self._now()) - self._start).total_seconds()

    # -- counters for `expect` and the summary --------------------------------------------

    def disruptions(self) -> dict[str, int]:
        return {reason: len(nodes) for reason, nodes in sorted(self.disrupted.items())}

    @property
    def node_count(self) -> int:
        return len(self._nodes)

    @property
    def pending_pods(self) -> int:
        return len(self._pending)

    @property
    def hourly_cost(self) -> float:
        return self._hourly_cost

    def ledger(self) -> Ledger:
        return self._ec2.ledger()

    # -- sources -------------------------------------------------------------------------

    def on_watch(self, event: WatchEvent) -> None:
        kind = event.kind
        if kind == "NodeClaim":
            self._on_nodeclaim(event)
        elif kind == "Node":
            self._on_node(event)
        elif kind == "Pod":
            self._on_pod(event)
        if kind not in ("Event", "Lease"):
            self.last_change = self._now()

    def on_ec2(self, event: SimEvent) -> None:
        if event.kind in _BILLING_EVENTS:
            self._hourly_cost = self._ec2.hourly_cost(self._now())
        if event.kind in _EC2_LINES or event.kind.startswith("interrupt-"):
            self.note("ec2", f"ec2.{event.kind}", event.message, instance=event.instance_id)

    def on_decision(self, decision: Decision) -> None:
        reason = REASON_BY_METHOD.get(decision.method, "")
        record = DecisionRecord(
            at=self.offset(decision.time), node=decision.node, nodeclaim=decision.nodeclaim,
            nodepool=decision.nodepool, method=decision.method, outcome=decision.outcome,
            reason=reason, decision=decision.decision, message=decision.message,
            cause=decision.cause, replacements=tuple(decision.replacements),
            savings=decision.savings,
        )
        self.decisions.append(record)
        if decision.outcome == "disrupted":
            self.disrupted.setdefault(reason, set()).add(decision.node or decision.nodeclaim)
            self.note("disruption", "disruption.disrupted", self._disruption_line(record),
                      node=decision.node, nodeclaim=decision.nodeclaim, reason=reason,
                      method=decision.method, decision=decision.decision,
                      replacements=list(decision.replacements))
        elif decision.outcome == "rejected":
            self.note("disruption", "disruption.rejected",
                      f"{decision.method} rejected: {decision.message}",
                      node=decision.node, method=decision.method)

    def _disruption_line(self, record: DecisionRecord) -> str:
        claim = self.claims.get(record.nodeclaim)
        what = f"NodeClaim {record.nodeclaim}" + (
            f", {claim.instance_type}" if claim is not None and claim.instance_type else "")
        action = record.decision or "disrupt"
        text = f"{record.reason or record.method}: {action} node {record.node} ({what})"
        if record.replacements:
            text += f" with {', '.join(record.replacements)}"
        if record.savings:
            text += f", saving ${record.savings:.4f}/hour"
        return text

    def after_callback(self) -> None:
        """Run after each clock callback: read new Events, sample the fleet."""
        self._read_events()
        self.sample()

    def sample(self) -> None:
        counts = (self._nodes_changed, round(self._hourly_cost, 6), len(self._pending))
        if counts == self._last_counts:
            return  # nothing that a sample shows has changed
        self._last_counts = counts
        nodes = Counter(self._nodes.values())
        sample = Sample(self.offset(), dict(sorted(nodes.items())), round(self._hourly_cost, 6),
                        len(self._pending))
        if self.samples:
            last = self.samples[-1]
            if (last.nodes, last.hourly_cost, last.pending_pods) == (
                    sample.nodes, sample.hourly_cost, sample.pending_pods):
                return
            if last.at == sample.at:
                self.samples[-1] = sample
                return
        self.samples.append(sample)

    def close(self) -> None:
        self._event_stream.close()

    # -- NodeClaims ----------------------------------------------------------------------

    def _on_nodeclaim(self, event: WatchEvent) -> None:
        claim = event.object
        name = objects.name(claim)
        record = self.claims.get(name)
        if record is None:
            created = objects.creation_time(claim) or self._now()
            record = ClaimRecord(name, objects.labels(claim).get(NODEPOOL_LABEL, ""),
                                 self.offset(created))
            self.claims[name] = record
        if event.type == "DELETED":
            record.gone = self.offset()
            self.busy_claims.discard(name)
            self._claim_gone(record)
            return
        if objects.is_deleting(claim) or not objects.condition_is_true(claim, INITIALIZED):
            self.busy_claims.add(name)
        else:
            self.busy_claims.discard(name)
        labels = objects.labels(claim)
        record.instance_type = labels.get(INSTANCE_TYPE_LABEL, record.instance_type)
        record.capacity_type = labels.get(CAPACITY_TYPE_LABEL, record.capacity_type)
        record.zone = labels.get(ZONE_LABEL, record.zone)
        if record.launched is None and objects.condition_is_true(claim, LAUNCHED):
            record.launched = self.offset()
            self.launched += 1
            self._claim_launched(record, static=not (claim.get("spec") or {}).get("resources"))
        if record.initialized is None and objects.condition_is_true(claim, INITIALIZED):
            record.initialized = self.offset()
            node = (claim.get("status") or {}).get("nodeName") or "?"
            self.note("lifecycle", "nodeclaim.initialized",
                      f"NodeClaim {name} initialized: node {node} is ready",
                      nodeclaim=name, node=node)

    def _claim_launched(self, record: ClaimRecord, *, static: bool = False) -> None:
        """`static`: the NodeClaim asks for no resources, a static NodePool's (its replicas
        or a drift replacement from its template)."""
        pods = self._nominations(record.name) if self._nominations else None
        source = "provisioner" if pods is not None else "disruption"
        purpose = f" for {pods} pod{'s' if pods != 1 else ''}" if pods is not None else \
            " as a replacement"
        if pods is None and static:
            source, purpose = "static", f" for NodePool {record.nodepool}'s replicas"
        self.note(
            source, "nodeclaim.launched",
            f"created NodeClaim {record.name} ({record.instance_type}, {record.capacity_type}, "
            f"{record.zone}){purpose}",
            nodeclaim=record.name, nodepool=record.nodepool, instanceType=record.instance_type,
            capacityType=record.capacity_type, zone=record.zone, pods=pods,
        )

    def _claim_gone(self, record: ClaimRecord) -> None:
        if record.launched is None:
            self.note("lifecycle", "nodeclaim.deleted",
                      f"NodeClaim {record.name} deleted before it launched",
                      nodeclaim=record.name)
            return
        lived = self.offset() - record.launched
        self.note(
            "termination", "nodeclaim.terminated",
            f"NodeClaim {record.name} terminated ({record.instance_type}, ran "
            f"{format_offset(lived)})",
            nodeclaim=record.name, instanceType=record.instance_type, ran=round(lived, 3),
        )

    # -- Nodes and Pods ------------------------------------------------------------------

    def _on_node(self, event: WatchEvent) -> None:
        node = event.object
        name = objects.name(node)
        labels = objects.labels(node)
        counted = (event.type != "DELETED" and NODEPOOL_LABEL in labels
                   and not objects.is_deleting(node))
        before = self._nodes.get(name)
        if counted:
            self._nodes[name] = labels.get(INSTANCE_TYPE_LABEL, "unknown")
        else:
            self._nodes.pop(name, None)
        if self._nodes.get(name) != before:
            self._nodes_changed += 1
        disrupting = has_taint((node.get("spec") or {}).get("taints") or [], DISRUPTED_TAINT)
        if event.type != "DELETED" and (objects.is_deleting(node) or disrupting):
            self.busy_nodes.add(name)
        else:
            self.busy_nodes.discard(name)

    def _on_pod(self, event: WatchEvent) -> None:
        pod = event.object
        key = objects.key(pod)
        status = pod.get("status") or {}
        waiting = (
            event.type != "DELETED"
            and not (pod.get("spec") or {}).get("nodeName")
            and not objects.is_deleting(pod)
            and status.get("phase") not in ("Succeeded", "Failed")
        )
        if waiting:
            self._pending.add(key)
        else:
            self._pending.discard(key)

    # -- Events --------------------------------------------------------------------------

    def _read_events(self) -> None:
        warnings = [event.object for event in self._event_stream.poll()
                    if event.type == "ADDED" and event.object.get("type") == "Warning"
                    and event.object.get("reportingController") == REPORTING_CONTROLLER
                    and event.object.get("reason") not in _QUIET_REASONS]
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for body in warnings:
            groups.setdefault((str(body.get("reason", "")), _general(body)), []).append(body)
        for (reason, note), bodies in groups.items():
            subject = _subject(bodies)
            source = _EVENT_SOURCES.get(reason, "karpenter")
            self.note(source, f"event.{reason}", f"{reason} {subject}: {note}",
                      reason=reason, count=len(bodies))


def _general(body: Mapping[str, Any]) -> str:
    return str(body.get("note", ""))


def _subject(bodies: list[Mapping[str, Any]]) -> str:
    """'Pod default/web-1', 'NodeClaim a and Node b', or '(12 Pods)'."""
    references = [body.get("regarding") or {} for body in bodies]
    if len(references) <= 2:
        return " and ".join(_reference(ref) for ref in references)
    kinds = sorted({str(ref.get("kind", "")) for ref in references})
    if len(kinds) == 1:
        return f"({len(references)} {kinds[0]}s)"
    return f"({len(references)} objects: {', '.join(kinds)})"


def _reference(ref: Mapping[str, Any]) -> str:
    namespace = ref.get("namespace")
    where = f"{namespace}/" if namespace else ""
    return f"{ref.get('kind', '')} {where}{ref.get('name', '')}"
