"""Whether pods an earlier solve promised to machines may still go there as topology now
stands (`refused_by_topology`).

kube-scheduler binds pods where they fit, not where a solve planned them, so the pods bound
since can leave a promised pod's machine in a domain its topology no longer allows (a zone
that became over-skewed, a node where a pod it repels landed). The rules are the solver's
(`topology`), for what Kubernetes enforces only: spread constraints that refuse a node
(DoNotSchedule, with their node filter, minDomains and matchLabelKeys as the solver reads
them), required pod affinity and anti-affinity, the pod's own and that of the pods already
placed toward it. Each promised pod is judged as a pod landing on an existing node,
against the pods bound now and the other promised pods still held (a solve that keeps
them counts them as bound).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from nodewright.scheduling.pods import ExistingNode, Pod, SpreadConstraint
from nodewright.scheduling.requirements import LABEL_HOSTNAME, Requirements
from nodewright.scheduling.solver.existing_nodes import node_taints
from nodewright.scheduling.solver.topology import TopologyTracker
from nodewright.scheduling.targets import ExistingTarget
from nodewright.scheduling.topology import (
    AFFINITY,
    ANTI_AFFINITY,
    SPREAD,
    DomainSource,
    GroupKey,
    Topology,
    TopologyGroup,
    affinity_key,
    spread_key,
)

Owned = list[tuple[TopologyGroup, SpreadConstraint | None]]


@dataclass(frozen=True, slots=True)
class Machine:
    """A machine with the pods bound to it that count. `settled`: its labels are final (its
    Node registered); a NodeClaim not launched yet has no zone label, and a pod promised
    to it is not judged on a key the machine has no label for yet."""

    node: ExistingNode
    bound: Sequence[Pod] = ()
    settled: bool = True


def is_bound_by_topology(pod: Pod) -> bool:
    """Whether the pod has a topology rule Kubernetes enforces (its own)."""
    return bool(pod.pod_affinity or pod.pod_anti_affinity or any(
        c.when_unsatisfiable == "DoNotSchedule" for c in pod.spread))


def refused_by_topology(
    machines: Iterable[Machine],
    promised: Sequence[tuple[Pod, str]],
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> set[int]:
    """The positions in `promised` ((pod, machine name)) of the pods whose machine their
    topology no longer allows. `machines`: every machine whose bound pods may count (the
    promised pods' machines among them); a promised pod whose machine is not given is not
    judged. A refused pod no longer counts for the others, who are judged again until
    none is refused; the last promised are judged first, so of two pods that exclude
    each other the one promised first keeps its place."""
    machines = list(machines)
    topology = Topology(namespaces)
    owned: dict[int, Owned] = {}
    for position, (pod, _) in enumerate(promised):
        if is_bound_by_topology(pod):
            owned[position] = _required_groups(topology, pod)
            topology.owner_inverse_groups(pod)
    for machine in machines:
        for pod in machine.bound:
            if pod.pod_anti_affinity:
                topology.owner_inverse_groups(pod)
    if not topology.groups:
        return set()
    judge = _Judge(topology, machines)
    judged: list[tuple[int, Pod, ExistingTarget, bool]] = []
    for position, (pod, name) in enumerate(promised):
        found = judge.targets.get(name)
        if found is None:
            continue
        judge.tracker.record(found[0], pod)
        judged.append((position, pod, *found))
    refused: set[int] = set()
    changed = True
    while changed:
        changed = False
        for position, pod, target, settled in reversed(judged):
            if position in refused:
                continue
            groups = owned.get(position, [])
            inverse = topology.inverse_groups(pod)
            if not groups and not inverse:
                continue
            judge.tracker.forget(target, pod)
            if judge.allowed(target, settled, pod,
                             chain(groups, ((group, None) for group in inverse))):
                judge.tracker.record(target, pod)
            else:
                refused.add(position)
                judge.left(target)
                changed = True
    return refused


def _required_groups(topology: Topology, pod: Pod) -> Owned:
    groups: Owned = [(topology.group(spread_key(pod, constraint)), constraint)
                     for constraint in pod.spread
                     if constraint.when_unsatisfiable == "DoNotSchedule"]
    groups += [(topology.group(affinity_key(AFFINITY, pod, term)), None)
               for term in pod.pod_affinity]
    groups += [(topology.group(affinity_key(ANTI_AFFINITY, pod, term)), None)
               for term in pod.pod_anti_affinity]
    return groups


class _Judge:
    """The machines as targets with their bound pods counted, and the judgement of one
    promised pod on its machine."""

    def __init__(self, topology: Topology, machines: Sequence[Machine]) -> None:
        self.topology = topology
        self.tracker = TopologyTracker(topology)
        # Spread on a key other than the hostname takes its minimum over the domains the
        # machines are in (those its node filter admits), as kube-scheduler over its nodes.
        spreads = [group for group in topology.groups.values()
                   if group.key.kind == SPREAD and group.topology_key != LABEL_HOSTNAME]
        # Which domains a node filter admits is read from the machines' labels.
        filtered = any(group.key.node_filter is not None for group in spreads)
        self.targets: dict[str, tuple[ExistingTarget, bool]] = {}
        for machine in machines:
            node = machine.node
            taints = node_taints(node)
            if spreads:
                topology.add_node_domains(node.labels, DomainSource(
                    taints, labels=tuple(sorted(node.labels.items())) if filtered else None))
            target = ExistingTarget(node.name, taints, (), labels=node.labels)
            self.targets[node.name] = (target, machine.settled)
            for pod in machine.bound:
                self.tracker.record(target, pod)
        # Per hostname spread, the fewest matching pods on a node it counts, and how many
        # nodes it counts (worked out when first asked for; counts only fall after).
        self._least: dict[GroupKey, tuple[TopologyGroup, int, int]] = {}

    def allowed(self, target: ExistingTarget, settled: bool, pod: Pod,
                groups: Iterable[tuple[TopologyGroup, SpreadConstraint | None]]) -> bool:
        """Whether every group lets the pod (not counted) into the machine's domain: the
        solver's `allowed_domains` for a node that is in one, but for a hostname spread,
        whose minimum is kube-scheduler's (the fewest on a registered node it counts)
        rather than the zero of a node a solve can always add."""
        requirements: Requirements | None = None
        for group, constraint in groups:
            key = group.topology_key
            domains = target.domains(key)
            if not domains:
                # kube-scheduler refuses a node without the key for spread and affinity;
                # a machine still coming up may get the label yet (its zone, at launch).
                if settled and group.key.kind in (SPREAD, AFFINITY):
                    return False
                continue
            if requirements is None:
                requirements = pod.strict_node_requirements()
            if group.key.kind == SPREAD and key == LABEL_HOSTNAME:
                assert constraint is not None
                if not self._hostname_spread_allows(group, constraint, pod, target, settled):
                    return False
            elif not self.topology.allowed_domains(group, constraint, pod, domains,
                                                   requirements.get(key)):
                return False
        return True

    def left(self, target: ExistingTarget) -> None:
        """A pod refused on `target` no longer counts there."""
        for key, (group, least, nodes) in self._least.items():
            if group.counts_node(target.labels, target.taints):
                self._least[key] = (group, min(least, _count_on(group, target)), nodes)

    def _hostname_spread_allows(self, group: TopologyGroup, constraint: SpreadConstraint,
                                pod: Pod, target: ExistingTarget, settled: bool) -> bool:
        least, nodes = self._minimum(group)
        own = _count_on(group, target)
        if group.counts_node(target.labels, target.taints):
            least = min(least, own)
            nodes += 0 if settled else 1
        if constraint.min_domains is not None and nodes < constraint.min_domains:
            least = 0
        return own + (1 if group.selects(pod) else 0) - least <= constraint.max_skew

    def _minimum(self, group: TopologyGroup) -> tuple[int, int]:
        found = self._least.get(group.key)
        if found is None:
            counts = [_count_on(group, target)
                      for target, settled in self.targets.values()
                      if settled and group.counts_node(target.labels, target.taints)]
            # No registered node counted: the machine judged is the only one (min()).
            found = (group, min(counts, default=1 << 30), len(counts))
            self._least[group.key] = found
        return found[1], found[2]


def _count_on(group: TopologyGroup, target: ExistingTarget) -> int:
    """The group's count on the node (by its hostname label)."""
    hostname = target.labels.get(LABEL_HOSTNAME)
    return group.counts.get(hostname, 0) if hostname is not None else 0
