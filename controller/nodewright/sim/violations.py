"""The promises a run must keep, checked from outside the controllers.

- no eviction breaks a PodDisruptionBudget: before each eviction the simulator counts the
  budget's healthy pods itself (Kubernetes' arithmetic: percentages round up, expected
  pods are the matching pods not being deleted);
- no NodePool has more nodes disrupting than its disruption budget allows when the
  disruption controller starts a command (Karpenter's count: initialized nodes, those
  NotReady or marked for deletion are disrupting);
- no instance outlives its NodeClaim by more than the garbage-collection interval;
- no consolidation or drift drains a node before the replacements it launched are
  initialized.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from nodewright.api.formats import parse_duration_or_never
from nodewright.api.nodepool import NodePool
from nodewright.cloud.sim.ledger import Ledger
from nodewright.cluster import objects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.common.decision_log import Decision
from nodewright.controllers.disruption.budgets import allowed_disruptions
from nodewright.scheduling.pods import SpecError, parse_label_selector
from nodewright.sim.timeline import Violation
from nodewright.state.wellknown import DISRUPTED_TAINT, NODEPOOL_LABEL, has_taint

# Karpenter's instance garbage collection runs every 2 minutes and leaves instances younger
# than 30 seconds alone (karpenter-provider-aws nodeclaim/garbagecollection).
GC_INTERVAL = timedelta(minutes=2)
GC_MIN_AGE = timedelta(seconds=30)
REPLACING_REASONS = ("Underutilized", "Drifted")
INITIALIZED_LABEL = "karpenter.sh/initialized"
INSTANCE_TERMINATING = "InstanceTerminating"
_REASONS = {
    "emptiness": "Empty",
    "drift": "Drifted",
    "multi-node consolidation": "Underutilized",
    "single-node consolidation": "Underutilized",
}


@dataclass
class _Command:
    reason: str
    replacements: tuple[str, ...]
    checked: bool = False


@dataclass(frozen=True)
class _Counted:
    """A NodePool's nodes counted against its budget at some versions of the cluster (see
    `ViolationMonitor._count`); which of them a command took is read per decision."""

    versions: tuple[int, ...]
    pool: NodePool
    nodes: int
    disrupting: frozenset[str]  # whatever the marks
    names_by_uid: dict[str, tuple[str, ...]]


@dataclass
class ViolationMonitor:
    cluster: InMemoryCluster  # read without copies (peek): the monitor never writes
    now: Callable[[], datetime]
    start: datetime
    found: list[Violation] = field(default_factory=list)
    _pending_verdict: dict[str, str] = field(default_factory=dict)
    _commands: dict[str, _Command] = field(default_factory=dict)  # candidate node uid -> ...
    _marked: set[str] = field(default_factory=set)  # uids of nodes a command took
    _leaks: set[str] = field(default_factory=set)
    # A NodePool's budget and the nodes counted against it, by (pool, the versions of the
    # NodePool, NodeClaim and Node kinds): a command disrupting many nodes checks the
    # budget once per node, against the same cluster.
    _counted: dict[str, _Counted] = field(default_factory=dict)
    # Whether EC2 has taken (or is taking) an instance back, by provider ID: a node whose
    # instance was interrupted goes whatever a replacing command waits for.
    interrupted: Callable[[str], bool] = field(default=lambda provider_id: False)

    def _add(self, kind: str, message: str, when: datetime | None = None) -> None:
        at = ((when or self.now()) - self.start).total_seconds()
        self.found.append(Violation(at, kind, message))

    # -- PodDisruptionBudgets ------------------------------------------------------------

    def before_evict(self, name: str, namespace: str) -> None:
        self._pending_verdict.pop(f"{namespace}/{name}", None)  # a refused try left one
        budgets = self.cluster.peek_all("PodDisruptionBudget", namespace, sort=True)
        pod = self.cluster.peek("Pod", name, namespace)
        if not budgets or pod is None or not _healthy(pod):
            return
        pods = self.cluster.peek_all("Pod", namespace)
        for pdb in budgets:
            verdict = _budget_verdict(pdb, pod, pods, self._scale_of)
            if verdict is not None:
                self._pending_verdict[f"{namespace}/{name}"] = verdict
                return

    def after_evict(self, name: str, namespace: str) -> None:
        verdict = self._pending_verdict.pop(f"{namespace}/{name}", None)
        if verdict is not None:
            self._add("pdb", f"evicted pod {namespace}/{name} although {verdict}")

    def _scale_of(self, kind: str, namespace: str, name: str) -> int | None:
        """The replicas a pod's controller wants (a ReplicaSet's Deployment's)."""
        owner = self.cluster.peek(kind, name, namespace)
        if owner is None:
            return None
        parent = objects.controller_owner(owner)
        if kind == "ReplicaSet" and parent is not None and parent.get("kind") == "Deployment":
            return self._scale_of("Deployment", namespace, str(parent.get("name")))
        replicas = (owner.get("spec") or {}).get("replicas", 1)
        return replicas if isinstance(replicas, int) else None

    # -- disruption budgets and replacements ---------------------------------------------

    def on_decision(self, decision: Decision) -> None:
        reason = _REASONS.get(decision.method)
        if reason is None:
            return
        uid = self._uid_of(decision.node)
        if decision.outcome == "rejected":
            self._marked.discard(uid)
            self._commands.pop(uid, None)
            return
        if decision.outcome != "disrupted":
            return
        if uid:
            self._marked.add(uid)
            if reason in REPLACING_REASONS and decision.replacements:
                self._commands[uid] = _Command(reason, tuple(decision.replacements))
        self._check_budget(decision.nodepool, reason, decision.node)

    def _check_budget(self, pool_name: str, reason: str, node_name: str) -> None:
        versions = tuple(self.cluster.kind_version(kind)
                         for kind in ("NodePool", "NodeClaim", "Node"))
        known = self._counted.get(pool_name)
        if known is None or known.versions != versions:
            found = self._count(pool_name)
            if found is None:
                return
            known = _Counted(versions, *found)
            self._counted = {pool_name: known}
        # Only the marks change between the decisions of one cluster version.
        disrupting = set(known.disrupting)
        for uid in self._marked & known.names_by_uid.keys():
            disrupting.update(known.names_by_uid[uid])
        limit = allowed_disruptions(known.pool.spec.disruption.budgets, reason,
                                    known.nodes, self.now())
        if len(disrupting) > limit.allowed:
            self._add("budget", f"NodePool {pool_name}: {len(disrupting)} of {known.nodes} "
                                f"nodes disrupting for {reason} ({', '.join(sorted(disrupting))})"
                                f" when disrupting {node_name}, but {limit.describe()}")

    def _count(self, pool_name: str) -> tuple[NodePool, int, frozenset[str],
                                              dict[str, tuple[str, ...]]] | None:
        """The NodePool, how many of its nodes Karpenter counts against its budget
        (initialized, not terminating), the names of those disrupting whatever the marks
        (deleting, tainted, NotReady) and the names of all of them by uid; None when the
        NodePool is gone or unreadable."""
        stored = self.cluster.peek("NodePool", pool_name)
        try:
            pool = NodePool.model_validate(stored)
        except ValidationError:  # gone (None) or unreadable
            return None
        claims = {str((c.get("status") or {}).get("providerID") or ""): c
                   for c in self.cluster.peek_all("NodeClaim")}
        counted = 0
        disrupting: set[str] = set()
        names_by_uid: dict[str, tuple[str, ...]] = {}
        for node in self.cluster.peek_all("Node"):  # the order does not matter: names
            if objects.labels(node).get(NODEPOOL_LABEL) != pool_name:
                continue
            claim = claims.get(str((node.get("spec") or {}).get("providerID") or ""))
            if objects.labels(node).get(INITIALIZED_LABEL) != "true" or (
                    claim is not None and objects.condition_is_true(claim, INSTANCE_TERMINATING)):
                continue
            counted += 1
            name, uid = objects.name(node), objects.uid(node)
            names_by_uid[uid] = (*names_by_uid.get(uid, ()), name)
            if (objects.is_deleting(node) or (claim is not None and objects.is_deleting(claim))
                    or has_taint((node.get("spec") or {}).get("taints") or [], DISRUPTED_TAINT)
                    or not _ready(node)):
                disrupting.add(name)
        return pool, counted, frozenset(disrupting), names_by_uid

    def before_drain(self, node_name: str) -> None:
        """A candidate node is about to lose a pod or its NodeClaim."""
        command = self._commands.get(self._uid_of(node_name) or "-")
        if command is None or command.checked:
            return
        command.checked = True
        if self._taken_anyway(node_name):
            return
        waiting = [name for name in command.replacements if not self._initialized(name)]
        if waiting:
            self._add("drained-early", f"node {node_name} ({command.reason}) was drained "
                                       f"before its replacement(s) {', '.join(waiting)} were "
                                       "initialized")

    def _taken_anyway(self, node_name: str) -> bool:
        """The node goes for a reason of its own, the drift or consolidation command
        waiting for its replacements aside: its instance was interrupted, or its NodeClaim
        has expired (both drain at once, as in Karpenter)."""
        node = self.cluster.peek("Node", node_name)
        provider_id = str(((node or {}).get("spec") or {}).get("providerID") or "")
        if provider_id and self.interrupted(provider_id):
            return True
        claim = next((c for c in self.cluster.peek_all("NodeClaim")
                      if (c.get("status") or {}).get("nodeName") == node_name), None)
        if claim is None:
            return False
        created = objects.creation_time(claim)
        try:
            lifetime = parse_duration_or_never(
                str((claim.get("spec") or {}).get("expireAfter") or "Never"))
        except ValueError:
            return False
        return (created is not None and lifetime is not None
                and self.now() >= created + timedelta(seconds=lifetime))

    def before_pod_eviction(self, name: str, namespace: str) -> None:
        pod = self.cluster.peek("Pod", name, namespace)
        if pod is None:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name:
            self.before_drain(str(node_name))

    def before_delete(self, kind: str, name: str, namespace: str) -> None:
        if kind == "NodeClaim":
            node = self._node_of_claim(name)
            if node:
                self.before_drain(node)

    def _uid_of(self, node_name: str) -> str:
        node = self.cluster.peek("Node", node_name)
        return objects.uid(node) if node is not None else ""

    def _initialized(self, nodeclaim: str) -> bool:
        claim = self.cluster.peek("NodeClaim", nodeclaim)
        return claim is not None and objects.condition_is_true(claim, "Initialized")

    def _node_of_claim(self, nodeclaim: str) -> str:
        claim = self.cluster.peek("NodeClaim", nodeclaim)
        return str((claim.get("status") or {}).get("nodeName") or "") if claim else ""

    # -- leaked instances ----------------------------------------------------------------

    def check_instances(self, ledger: Ledger, claims_gone: Mapping[str, datetime]) -> None:
        """Instances whose NodeClaim is gone must stop within the GC interval."""
        now = self.now()
        for entry in ledger.entries:
            gone = claims_gone.get(entry.nodeclaim)
            if gone is None or entry.instance_id in self._leaks:
                continue
            since = max(gone, entry.launched_at + GC_MIN_AGE)
            end = entry.billing_ended_at or now
            if end - since > GC_INTERVAL:
                self._leaks.add(entry.instance_id)
                self._add("leaked-instance",
                          f"instance {entry.instance_id} ({entry.instance_type}) ran "
                          f"{int((end - since).total_seconds())}s after NodeClaim "
                          f"{entry.nodeclaim} was gone (garbage collection runs every "
                          f"{int(GC_INTERVAL.total_seconds())}s)", since + GC_INTERVAL)


def _healthy(pod: Mapping[str, Any]) -> bool:
    if objects.is_deleting(pod) or (pod.get("status") or {}).get("phase") != "Running":
        return False
    return objects.condition_is_true(pod, "Ready")


def _ready(node: Mapping[str, Any]) -> bool:
    return objects.condition_is_true(node, "Ready")


def _budget_verdict(
    pdb: Mapping[str, Any],
    pod: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    scale_of: Callable[[str, str, str], int | None],
) -> str | None:
    """Why evicting the (healthy) pod breaks this budget, or None when it may go.

    As Kubernetes counts: an integer minAvailable is against the matching pods; otherwise
    the expected pods are what the pods' controllers want (their scale)."""
    spec = pdb.get("spec") or {}
    try:
        selector = parse_label_selector(spec.get("selector") or {}, "spec.selector")
    except SpecError:
        return None
    if not spec.get("selector") or not selector.matches(objects.labels(pod)):
        return None
    matching = [p for p in pods if selector.matches(objects.labels(p))
                and not objects.is_deleting(p)
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    expected = len(matching)
    healthy = sum(1 for p in matching if _healthy(p))
    if not isinstance(spec.get("minAvailable"), int):
        # A controller scaled to 0 expects no pods (its pods may not be deleted yet): the
        # budget then allows every eviction, as Kubernetes' disruption controller counts.
        scale = _controllers_scale(matching, scale_of, objects.namespace(pdb))
        if scale is not None:
            expected = scale
    if "minAvailable" in spec:
        desired = _scaled(spec["minAvailable"], expected)
    elif "maxUnavailable" in spec:
        desired = expected - _scaled(spec["maxUnavailable"], expected)
    else:
        return None
    if healthy - 1 >= desired:
        return None
    return (f"PodDisruptionBudget {objects.name(pdb)} needs {desired} healthy pods and had "
            f"{healthy}")


def _controllers_scale(
    pods: Sequence[Mapping[str, Any]],
    scale_of: Callable[[str, str, str], int | None],
    namespace: str,
) -> int | None:
    owners = {(str(owner.get("kind")), str(owner.get("name")))
              for owner in (objects.controller_owner(p) for p in pods) if owner is not None}
    scales = [scale_of(kind, namespace, name) for kind, name in sorted(owners)]
    if not scales or any(scale is None for scale in scales):
        return None
    return sum(scale for scale in scales if scale is not None)


def _scaled(value: object, total: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(str(value))
