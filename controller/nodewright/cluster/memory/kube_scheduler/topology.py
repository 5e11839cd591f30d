"""Pod topology spread and inter-pod (anti-)affinity as kube-scheduler's filters judge
them, counted over the pass's snapshot.

Counting rules follow kube-scheduler. Spread (DoNotSchedule): only nodes carrying every
topology key of the pod's hard constraints and admitted by the constraint's
nodeAffinityPolicy/nodeTaintsPolicy count; terminating pods do not; the skew of a domain
is its count (plus one if the pod matches its own selector) minus the smallest count
over the counted domains, which is zero while fewer than minDomains domains exist.
Affinity: every pod bound to a node with the topology key counts. Selection of pods
(namespaces, namespaceSelector, label selector) is the scheduling package's
`TopologyGroup`. Counts are built on first use in a pass and kept current as the pass
binds pods; a pod shape looks its checks up once (`spread_checks`, `affinity_checks`)
and then judges each node with a few dictionary reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo
from nodewright.scheduling.pods import Pod, SpreadConstraint
from nodewright.scheduling.topology import (
    AFFINITY,
    ANTI_AFFINITY,
    INVERSE_ANTI_AFFINITY,
    GroupKey,
    TopologyGroup,
    affinity_key,
    spread_key,
)

SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_MISMATCH + " (missing required label)"
AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(slots=True)
class DomainCounts:
    """Matching pods per topology value of one group."""

    group: TopologyGroup
    required_keys: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    total: int = 0
    _minimum: int | None = None

    def counts_node(self, node: NodeInfo) -> bool:
        """For spread: whether pods on this node count at all."""
        return all(key in node.labels for key in self.required_keys) and self.group.counts_node(
            node.labels, node.taints
        )

    def add(self, domain: str, amount: int = 1) -> None:
        self.counts[domain] = self.counts.get(domain, 0) + amount
        self.total += amount
        self._minimum = None

    def minimum(self) -> int:
        if self._minimum is None:
            self._minimum = min(self.counts.values(), default=0)
        return self._minimum


@dataclass(frozen=True, slots=True)
class SpreadCheck:
    constraint: SpreadConstraint
    counts: DomainCounts
    own: int  # 1 when the pod matches its own constraint's selector


@dataclass(frozen=True, slots=True)
class AffinityChecks:
    affinity: tuple[tuple[str, DomainCounts], ...]  # (topology key, counts) per term
    anti_affinity: tuple[tuple[str, DomainCounts], ...]
    matches_own_affinity: bool


class PassTopology:
    def __init__(
        self, nodes: Mapping[str, NodeInfo], namespace_labels: Mapping[str, Mapping[str, str]]
    ) -> None:
        self._nodes = nodes
        self._namespace_labels = namespace_labels
        self._spread: dict[tuple[GroupKey, tuple[str, ...]], DomainCounts] = {}
        self._affinity: dict[GroupKey, DomainCounts] = {}
        # Required anti-affinity of placed pods: the domains each keeps matching pods out of.
        self._blocking: dict[GroupKey, DomainCounts] = {}
        self.blocking_version = 0
        for node in nodes.values():
            for placed in node.pods:
                self._block(placed.pod, node)

    def _group(self, key: GroupKey) -> TopologyGroup:
        return TopologyGroup(key, namespace_labels=self._namespace_labels)

    # -- spread --------------------------------------------------------------------------

    def spread_checks(self, pod: Pod) -> tuple[SpreadCheck, ...]:
        hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        required_keys = tuple(sorted({c.topology_key for c in hard}))
        checks = []
        for constraint in hard:
            counts = self._spread_counts(pod, constraint, required_keys)
            checks.append(SpreadCheck(constraint, counts, 1 if counts.group.selects(pod) else 0))
        return tuple(checks)

    @staticmethod
    def spread_failure(checks: tuple[SpreadCheck, ...], node: NodeInfo) -> str | None:
        for check in checks:
            constraint = check.constraint
            domain = node.labels.get(constraint.topology_key)
            if domain is None:
                return SPREAD_MISSING_LABEL
            counts = check.counts
            min_domains = constraint.min_domains
            minimum = (
                0 if min_domains is not None and len(counts.counts) < min_domains
                else counts.minimum()
            )
            if counts.counts.get(domain, 0) + check.own - minimum > constraint.max_skew:
                return SPREAD_MISMATCH
        return None

    def _spread_counts(
        self, pod: Pod, constraint: SpreadConstraint, required_keys: tuple[str, ...]
    ) -> DomainCounts:
        cache_key = (spread_key(pod, constraint), required_keys)
        found = self._spread.get(cache_key)
        if found is not None:
            return found
        spread = DomainCounts(self._group(cache_key[0]), required_keys)
        for node in self._nodes.values():
            if spread.counts_node(node):
                spread.add(node.labels[constraint.topology_key], sum(
                    1 for placed in node.pods
                    if not placed.deleting and spread.group.selects(placed.pod)
                ))
        self._spread[cache_key] = spread
        return spread

    # -- inter-pod affinity --------------------------------------------------------------

    def affinity_checks(self, pod: Pod) -> AffinityChecks | None:
        if not pod.pod_affinity and not pod.pod_anti_affinity:
            return None
        affinity = tuple(
            (term.topology_key, self._affinity_counts(affinity_key(AFFINITY, pod, term)))
            for term in pod.pod_affinity
        )
        return AffinityChecks(
            affinity,
            tuple(
                (term.topology_key, self._affinity_counts(affinity_key(ANTI_AFFINITY, pod, term)))
                for term in pod.pod_anti_affinity
            ),
            all(counts.group.selects(pod) for _, counts in affinity),
        )

    @staticmethod
    def affinity_failure(checks: AffinityChecks, node: NodeInfo) -> str | None:
        """The pod's own terms, in kube-scheduler's order: affinity, then anti-affinity."""
        if checks.affinity and not _affinity_satisfied(checks, node):
            return AFFINITY_MISMATCH
        for topology_key, counts in checks.anti_affinity:
            value = node.labels.get(topology_key)
            if value is not None and counts.counts.get(value):
                return ANTI_AFFINITY_MISMATCH
        return None

    def blocking_for(self, pod: Pod) -> list[DomainCounts]:
        """The placed pods' anti-affinity groups that select `pod`."""
        return [counts for counts in self._blocking.values() if counts.group.selects(pod)]

    @staticmethod
    def blocked(blocking: list[DomainCounts], node: NodeInfo) -> str | None:
        for counts in blocking:
            value = node.labels.get(counts.group.topology_key)
            if value is not None and counts.counts.get(value):
                return EXISTING_ANTI_AFFINITY
        return None

    def _affinity_counts(self, key: GroupKey) -> DomainCounts:
        found = self._affinity.get(key)
        if found is not None:
            return found
        affinity = DomainCounts(self._group(key))
        for node in self._nodes.values():
            value = node.labels.get(key.topology_key)
            if value is None:
                continue
            matching = sum(1 for placed in node.pods if affinity.group.selects(placed.pod))
            if matching:
                affinity.add(value, matching)
        self._affinity[key] = affinity
        return affinity

    # -- bookkeeping ---------------------------------------------------------------------

    def _block(self, pod: Pod, node: NodeInfo) -> None:
        for term in pod.pod_anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                continue
            key = affinity_key(INVERSE_ANTI_AFFINITY, pod, term)
            counts = self._blocking.get(key)
            if counts is None:
                counts = self._blocking[key] = DomainCounts(self._group(key))
            counts.add(value)
            self.blocking_version += 1

    def record(self, pod: Pod, node: NodeInfo) -> None:
        """`pod` was just bound to `node` (already added to it): keep the counts current."""
        for spread in self._spread.values():
            if spread.counts_node(node) and spread.group.selects(pod):
                spread.add(node.labels[spread.group.topology_key])
        for affinity in self._affinity.values():
            value = node.labels.get(affinity.group.topology_key)
            if value is not None and affinity.group.selects(pod):
                affinity.add(value)
        self._block(pod, node)


def _affinity_satisfied(checks: AffinityChecks, node: NodeInfo) -> bool:
    pods_exist = True
    for topology_key, counts in checks.affinity:
        value = node.labels.get(topology_key)
        if value is None:
            return False
        if not counts.counts.get(value):
            pods_exist = False
    if pods_exist:
        return True
    # The first of a set of pods that want to be together: nothing to be near yet.
    return checks.matches_own_affinity and all(counts.total == 0 for _, counts in checks.affinity)
