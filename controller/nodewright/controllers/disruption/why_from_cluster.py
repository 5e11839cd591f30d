"""Why a node is (not) being disrupted, and why a pod is pending, read from any ClusterAPI
(a real cluster through the kube adapter, or the in-memory one).

A node's explanation joins what the controllers wrote (the NodeClaim's `Disruptable`,
`Drifted`, `Consolidatable` and `DisruptionReason` conditions, and the Events about the
Node and the NodeClaim) with what can be worked out now from the cluster alone: what
blocks it (do-not-disrupt, a PDB naming the pod, not initialized, ...), its NodePool's
budgets per reason with their windows, when consolidateAfter lets it go, when it expires.

A pod's explanation says where it runs, or, when it is pending, what the solver answers
for it against every NodePool (the same problem the provisioner solves, with instance types
from the catalog the caller gives, by default the offline catalog of the cluster's region).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.formats import parse_duration_or_never
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.provider import CloudProviderError, Instance, RepairPolicy
from nodewright.cluster import objects
from nodewright.cluster.api import ClusterAPI, NotFoundError
from nodewright.controllers.common.podrules import PdbLimits, do_not_disrupt_until
from nodewright.controllers.disruption.budget_room import count_nodes
from nodewright.controllers.disruption.budgets import REASONS, UNLIMITED, allowed_disruptions
from nodewright.controllers.disruption.candidates import Blocked, CandidateContext, evaluate
from nodewright.controllers.nodeclaim.disruption_conditions import consolidatable_at
from nodewright.controllers.provisioning.problem import scheduling_problem
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.scheduling.catalog import InstanceType, offline_catalog
from nodewright.scheduling.offline_data import regions as offline_regions
from nodewright.scheduling.pods import Pod, SpecError
from nodewright.scheduling.solver import SchedulingProblem, solve
from nodewright.scheduling.volumes import zones_of
from nodewright.state import ClusterState
from nodewright.state.pods import pod_key
from nodewright.state.statenode import StateNode
from nodewright.state.wellknown import (
    CAPACITY_TYPE_LABEL,
    INSTANCE_TYPE_LABEL,
    ZONE_LABEL,
)

STATE_KINDS = ("NodePool", "EC2NodeClass", "NodeClaim", "Node", "Pod", "PodDisruptionBudget",
               "DaemonSet", "Namespace", "PersistentVolumeClaim", "PersistentVolume",
               "StorageClass")
CONDITIONS = ("Initialized", "Drifted", "Consolidatable", "Disruptable", "DisruptionReason")
REGION_LABEL = "topology.kubernetes.io/region"


class ExplainError(Exception):
    """The thing to explain does not exist, or cannot be explained (the message says what
    was looked for)."""


class OfflineCatalog:
    """A CloudProvider that only knows instance types: enough to plan, never to launch."""

    name = "offline"

    def __init__(self, region: str) -> None:
        known = offline_regions()
        if region not in known:
            raise ExplainError(f"region {region!r} is not in the offline instance-type data; "
                               f"pass --region (known: {', '.join(known)})")
        self.region = region

    def get_instance_types(self, node_class: EC2NodeClass) -> list[InstanceType]:
        return list(offline_catalog(self.region, node_class=node_class))

    def create(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> Instance:
        raise CloudProviderError("the offline catalog cannot launch instances")

    def get(self, provider_id: str) -> Instance:
        raise CloudProviderError("the offline catalog has no instances")

    def list(self) -> list[Instance]:
        return []

    def delete(self, provider_id: str) -> None:
        raise CloudProviderError("the offline catalog has no instances")

    def drift_reason(self, nodeclaim: NodeClaim, node_class: EC2NodeClass) -> str | None:
        return None

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return ()

    def capabilities(self) -> CloudCapabilities:
        return CloudCapabilities()


def load_state(cluster: ClusterAPI, now: datetime) -> ClusterState:
    """A state cache filled from one list of every kind it keeps."""
    state = ClusterState(VirtualClock(now))  # never advanced: time stands at `now`
    for kind in STATE_KINDS:
        for obj in cluster.list(kind):
            state.observe(WatchEvent("ADDED", obj))
    return state


@dataclass
class Line:
    label: str
    text: str

    def to_dict(self) -> dict[str, str]:
        return {"label": self.label, "text": self.text}


@dataclass
class Explanation:
    subject: str
    summary: str
    facts: list[Line] = field(default_factory=list)
    events: list[Line] = field(default_factory=list)

    def render(self) -> str:
        out = [f"{self.subject}: {self.summary}"]
        width = max((len(line.label) for line in self.facts), default=0)
        out.extend(f"  {line.label.ljust(width)}  {line.text}" for line in self.facts)
        if self.events:
            out.append("  Events (oldest first):")
            out.extend(f"    {line.label}  {line.text}" for line in self.events)
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "summary": self.summary,
                "facts": [line.to_dict() for line in self.facts],
                "events": [line.to_dict() for line in self.events]}


# ---------------------------------------------------------------------------------------
# Nodes


def _find_machine(state: ClusterState, name: str) -> StateNode:
    node = state.node_by_name(name) or state.node_for_nodeclaim(name)
    if node is None:
        raise ExplainError(f"no Node or launched NodeClaim is named {name!r}")
    return node


def _events(cluster: ClusterAPI, *about: Mapping[str, Any] | None, limit: int = 15
            ) -> list[Line]:
    wanted = {(str(o.get("kind")), objects.name(o)): objects.uid(o) for o in about if o}
    found: list[tuple[str, Line]] = []
    for event in cluster.list("Event"):
        regarding = event.get("regarding") or event.get("involvedObject") or {}
        key = (str(regarding.get("kind")), str(regarding.get("name")))
        if key not in wanted:
            continue
        if wanted[key] and regarding.get("uid") not in (None, "", wanted[key]):
            continue
        series = event.get("series") or {}
        when = str(series.get("lastObservedTime") or event.get("eventTime")
                   or event.get("lastTimestamp") or "")
        text = f"{key[0]} {event.get('reason')}: {event.get('note') or event.get('message')}"
        found.append((when, Line(when[:19].replace("T", " "), text)))
    found.sort(key=lambda item: item[0])
    return [line for _, line in found[-limit:]]


def _condition_lines(claim: Mapping[str, Any]) -> list[Line]:
    lines = []
    for kind in CONDITIONS:
        condition = objects.condition(claim, kind)
        if condition is None:
            continue
        text = f"{condition.get('status')}"
        if condition.get("reason") and condition.get("reason") != kind:
            text += f" ({condition.get('reason')})"
        if condition.get("message"):
            text += f": {condition.get('message')}"
        lines.append(Line(f"condition {kind}", text))
    return lines


def _budget_lines(state: ClusterState, node: StateNode, now: datetime) -> list[Line]:
    parsed = state.nodepool_model(node.nodepool)
    if parsed is None or parsed.model is None:
        return []
    total, disrupting = count_nodes(state.nodes()).get(node.nodepool, (0, 0))
    lines = []
    for reason in REASONS:
        limit = allowed_disruptions(parsed.model.spec.disruption.budgets, reason, total, now)
        allowed = "unlimited" if limit.allowed >= UNLIMITED else str(limit.allowed)
        left = "any" if limit.allowed >= UNLIMITED else str(max(limit.allowed - disrupting, 0))
        lines.append(Line(f"budget {reason}",
                          f"{allowed} of {total} node(s) may be disrupting, {disrupting} are, "
                          f"{left} more may start ({limit.describe()})"))
    return lines


def _timing_lines(node: StateNode, state: ClusterState, now: datetime) -> list[Line]:
    claim = node.nodeclaim
    if claim is None:
        return []
    lines = []
    parsed = state.nodepool_model(node.nodepool)
    if parsed is not None and parsed.model is not None:
        ready_at = consolidatable_at(claim, parsed.model)
        after = parsed.model.spec.disruption.consolidate_after
        policy = parsed.model.spec.disruption.consolidation_policy
        if ready_at is None:
            text = (f"never (consolidateAfter {after})" if after == "Never"
                    else "not until the node initializes")
        elif ready_at <= now:
            text = f"since {ready_at:%Y-%m-%dT%H:%M:%SZ} (consolidateAfter {after})"
        else:
            text = f"from {ready_at:%Y-%m-%dT%H:%M:%SZ} (consolidateAfter {after})"
        lines.append(Line("consolidatable", f"{text}; policy {policy}"))
    raw = str((claim.get("spec") or {}).get("expireAfter") or "Never")
    created = objects.creation_time(claim)
    try:
        seconds = parse_duration_or_never(raw)
    except ValueError:
        seconds = None
    if seconds is not None and created is not None:
        expires = created + timedelta(seconds=seconds)
        lines.append(Line("expires", f"{expires:%Y-%m-%dT%H:%M:%SZ} (expireAfter {raw})"))
    else:
        lines.append(Line("expires", f"never (expireAfter {raw})"))
    return lines


def explain_node(cluster: ClusterAPI, name: str, now: datetime) -> Explanation:
    state = load_state(cluster, now)
    node = _find_machine(state, name)
    labels = node.labels
    offering = (f"{labels.get(INSTANCE_TYPE_LABEL, '?')} {labels.get(CAPACITY_TYPE_LABEL, '?')}"
                f" in {labels.get(ZONE_LABEL, '?')}")
    facts = [
        Line("nodeclaim", node.nodeclaim_name or "(none: not managed by Nodewright)"),
        Line("nodepool", node.nodepool or "(none)"),
    ]
    if any(labels.get(key) for key in (INSTANCE_TYPE_LABEL, CAPACITY_TYPE_LABEL, ZONE_LABEL)):
        facts.append(Line("instance", offering))
    pods = state.pods_on(node.node_name) if node.node is not None else []
    facts.append(Line("pods", f"{len(pods)} bound"))
    pdbs, problems = PdbLimits.build(state.pdbs(), list(state.pods.objects.values()))
    facts.extend(Line("warning", problem) for problem in problems)
    nodepools = {}
    for raw in state.nodepools():
        parsed = state.nodepool_model(objects.name(raw))
        if parsed is not None and parsed.model is not None:
            nodepools[objects.name(raw)] = parsed.model
    context = CandidateContext(now=now, nodepools=nodepools, instance_types={}, pdbs=pdbs,
                               pods_on=state.pods_on)
    verdict = evaluate(node, context)
    if isinstance(verdict, Blocked):
        summary = f"cannot be disrupted now: {verdict.message}"
    elif node.nodeclaim is not None and objects.condition_is_true(node.nodeclaim,
                                                                    "DisruptionReason"):
        reason = (objects.condition(node.nodeclaim, "DisruptionReason") or {}).get("reason")
        summary = f"being disrupted ({reason})"
    else:
        disruptable = objects.condition(node.nodeclaim or {}, "Disruptable") or {}
        last = disruptable.get("message")
        summary = "may be disrupted" + (f"; last decision: {last}" if last else "")
    if node.nodeclaim is not None and objects.is_deleting(node.nodeclaim):
        summary = "being deleted"
    if node.nodeclaim is not None:
        facts.extend(_condition_lines(node.nodeclaim))
        facts.extend(_timing_lines(node, state, now))
        facts.extend(_budget_lines(state, node, now))
    return Explanation(f"Node {name}", summary, facts,
                       _events(cluster, node.node, node.nodeclaim))


# ---------------------------------------------------------------------------------------
# Pods


def _region(state: ClusterState) -> str:
    for node in state.nodes():
        region = node.labels.get(REGION_LABEL)
        if region:
            return str(region)
    return "us-east-1"


def _fits_without_volumes(problem: SchedulingProblem, model: Pod) -> bool:
    """Whether the pod could be placed if its volumes did not tie it to their zones."""
    free = replace(model, volume_requirements=())
    result = solve(replace(problem, pods=[free]))
    return free.key not in dict(result.unschedulable)


def explain_pod(cluster: ClusterAPI, namespace: str, name: str, now: datetime,
                cloud: Any = None) -> Explanation:
    try:
        pod = cluster.get("Pod", name, namespace)
    except NotFoundError:
        raise ExplainError(f"no Pod {namespace}/{name}") from None
    state = load_state(cluster, now)
    subject = f"Pod {namespace}/{name}"
    node_name = (pod.get("spec") or {}).get("nodeName")
    facts: list[Line] = []
    events = _events(cluster, pod)
    if node_name:
        facts.append(Line("node", str(node_name)))
        protected, how = do_not_disrupt_until(pod, now)
        if protected:
            facts.append(Line("blocks", f"its node's disruption ({how})"))
        pdbs, _ = PdbLimits.build(state.pdbs(), list(state.pods.objects.values()))
        why = pdbs.blocking(pod, now)
        if why is not None:
            facts.append(Line("blocks", f"its node's disruption: {why}"))
        phase = (pod.get("status") or {}).get("phase") or "Unknown"
        return Explanation(subject, f"bound to {node_name} ({phase})", facts, events)
    scheduled = objects.condition(pod, "PodScheduled") or {}
    if scheduled.get("message"):
        facts.append(Line("kube-scheduler", str(scheduled.get("message"))))
    try:
        model = state.pod_model(pod_key(pod))
    except SpecError as error:
        return Explanation(subject, f"pending; its spec cannot be read: {error}", facts, events)
    except KeyError:
        return Explanation(subject, "pending (not yet seen)", facts, events)
    volume_problem = state.volume_problem(model)
    if volume_problem is not None:
        return Explanation(subject, "pending; Karpenter does not plan for it until its "
                           f"volumes can be used: {volume_problem}", facts, events)
    volume_zones = zones_of(model.volume_requirements, ZONE_LABEL)
    if volume_zones is not None:
        facts.append(Line("volumes", f"its volumes can only be used in zone(s) "
                                     f"{', '.join(sorted(volume_zones))}"))
    built = scheduling_problem(state, cloud or OfflineCatalog(_region(state)), [model])
    for pool, why in sorted(built.skipped_pools.items()):
        facts.append(Line(f"NodePool {pool}", f"not used: {why}"))
    result = solve(built.problem)
    reasons = dict(result.unschedulable)
    if model.key in reasons and model.volume_requirements and _fits_without_volumes(
        built.problem, model
    ):
        where = (f"in zone(s) {', '.join(sorted(volume_zones))}" if volume_zones is not None
                 else "where its volumes are")
        summary = (f"pending: a volume's zone is why: its volumes can only be used {where}, "
                   f"and no node can take it there ({reasons[model.key]})")
    elif model.key in reasons:
        summary = f"pending: {reasons[model.key]}"
    else:
        placed = next((node for node, pods in result.existing if model.key in pods), None)
        claim = next((c for c in result.nodeclaims if model.key in c.pods), None)
        if placed is not None:
            summary = f"pending, but fits on {placed} (kube-scheduler should bind it soon)"
        elif claim is not None:
            types = ", ".join(n for n, _ in claim.instance_types[:5])
            summary = (f"pending; NodePool {claim.nodepool} can launch a node for it "
                       f"({types}); one is launching or will be within a batch window")
        else:
            summary = "pending"
    return Explanation(subject, summary, facts, events)
