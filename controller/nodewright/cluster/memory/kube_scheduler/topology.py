"""Pod topology spread and inter-pod (anti-)affinity as kube-scheduler's filters judge
them, counted over the pass's snapshot.

Counting rules follow kube-scheduler. Spread (DoNotSchedule): only nodes carrying every
topology key of the pod's hard constraints and admitted by the constraint's
nodeAffinityPolicy/nodeTaintsPolicy count; terminating pods do not; the skew of a domain
is its count (plus one if the pod matches its own selector) minus the smallest count
over the counted domains, which is zero while fewer than minDomains domains exist.
Affinity: every pod bound to a node with the topology key counts. Selection of pods
(namespaces, namespaceSelector, label selector) is the scheduling package's
`TopologyGroup`; counts are built on first use in a pass and kept current as the pass
binds pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo
from nodewright.scheduling.pods import AffinityTerm, Pod, SpreadConstraint
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
class _SpreadCounts:
    group: TopologyGroup
    required_keys: tuple[str, ...]
    counts: dict[str, int] = field(default_factory=dict)

    def counts_node(self, node: NodeInfo) -> bool:
        return all(key in node.labels for key in self.required_keys) and self.group.counts_node(
            node.labels, node.taints
        )


@dataclass(slots=True)
class _AffinityCounts:
    group: TopologyGroup
    counts: dict[str, int] = field(default_factory=dict)


class PassTopology:
    def __init__(
        self, nodes: Mapping[str, NodeInfo], namespace_labels: Mapping[str, Mapping[str, str]]
    ) -> None:
        self._nodes = nodes
        self._namespace_labels = namespace_labels
        self._spread: dict[tuple[GroupKey, tuple[str, ...]], _SpreadCounts] = {}
        self._affinity: dict[GroupKey, _AffinityCounts] = {}
        # Required anti-affinity of bound pods: group -> topology values it keeps others out of.
        self._blocked: dict[GroupKey, tuple[TopologyGroup, dict[str, int]]] = {}
        for node in nodes.values():
            for placed in node.pods:
                self._block(placed.pod, node)

    @property
    def has_blocking_pods(self) -> bool:
        """Whether any placed pod has required anti-affinity (that may keep others out)."""
        return bool(self._blocked)

    def _group(self, key: GroupKey) -> TopologyGroup:
        return TopologyGroup(key, namespace_labels=self._namespace_labels)

    # -- spread --------------------------------------------------------------------------

    def spread_failure(self, pod: Pod, node: NodeInfo) -> str | None:
        hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return None
        required_keys = tuple(sorted({c.topology_key for c in hard}))
        for constraint in hard:
            domain = node.labels.get(constraint.topology_key)
            if domain is None:
                return SPREAD_MISSING_LABEL
            spread = self._spread_counts(pod, constraint, required_keys)
            minimum = min(spread.counts.values(), default=0)
            if constraint.min_domains is not None and len(spread.counts) < constraint.min_domains:
                minimum = 0
            own = 1 if spread.group.selects(pod) else 0
            if spread.counts.get(domain, 0) + own - minimum > constraint.max_skew:
                return SPREAD_MISMATCH
        return None

    def _spread_counts(
        self, pod: Pod, constraint: SpreadConstraint, required_keys: tuple[str, ...]
    ) -> _SpreadCounts:
        cache_key = (spread_key(pod, constraint), required_keys)
        found = self._spread.get(cache_key)
        if found is not None:
            return found
        spread = _SpreadCounts(self._group(cache_key[0]), required_keys)
        for node in self._nodes.values():
            if not spread.counts_node(node):
                continue
            domain = node.labels[constraint.topology_key]
            spread.counts[domain] = spread.counts.get(domain, 0) + sum(
                1 for placed in node.pods
                if not placed.deleting and spread.group.selects(placed.pod)
            )
        self._spread[cache_key] = spread
        return spread

    # -- inter-pod affinity --------------------------------------------------------------

    def affinity_failure(self, pod: Pod, node: NodeInfo) -> str | None:
        """kube-scheduler's order: the pod's affinity, its anti-affinity, then the
        anti-affinity of the pods already placed."""
        if pod.pod_affinity and not self._affinity_satisfied(pod, node):
            return AFFINITY_MISMATCH
        for term in pod.pod_anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is not None and self._affinity_counts(ANTI_AFFINITY, pod, term).counts.get(
                value
            ):
                return ANTI_AFFINITY_MISMATCH
        for group, values in self._blocked.values():
            value = node.labels.get(group.topology_key)
            if value is not None and values.get(value) and group.selects(pod):
                return EXISTING_ANTI_AFFINITY
        return None

    def _affinity_satisfied(self, pod: Pod, node: NodeInfo) -> bool:
        pods_exist = True
        anywhere = 0
        for term in pod.pod_affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                return False
            counts = self._affinity_counts(AFFINITY, pod, term).counts
            anywhere += sum(counts.values())
            if not counts.get(value):
                pods_exist = False
        if pods_exist:
            return True
        # The first of a set of pods that want to be together: nothing to be near yet.
        return anywhere == 0 and all(
            self._affinity_counts(AFFINITY, pod, term).group.selects(pod)
            for term in pod.pod_affinity
        )

    def _affinity_counts(self, kind: str, pod: Pod, term: AffinityTerm) -> _AffinityCounts:
        key = affinity_key(kind, pod, term)
        found = self._affinity.get(key)
        if found is not None:
            return found
        affinity = _AffinityCounts(self._group(key))
        for node in self._nodes.values():
            value = node.labels.get(term.topology_key)
            if value is None:
                continue
            matching = sum(1 for placed in node.pods if affinity.group.selects(placed.pod))
            if matching:
                affinity.counts[value] = affinity.counts.get(value, 0) + matching
        self._affinity[key] = affinity
        return affinity

    # -- bookkeeping ---------------------------------------------------------------------

    def _block(self, pod: Pod, node: NodeInfo) -> None:
        for term in pod.pod_anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                continue
            key = affinity_key(INVERSE_ANTI_AFFINITY, pod, term)
            entry = self._blocked.get(key)
            if entry is None:
                entry = self._blocked[key] = (self._group(key), {})
            entry[1][value] = entry[1].get(value, 0) + 1

    def record(self, pod: Pod, node: NodeInfo) -> None:
        """`pod` was just bound to `node` (already added to it): keep the counts current."""
        for spread in self._spread.values():
            if spread.counts_node(node) and spread.group.selects(pod):
                domain = node.labels[spread.group.topology_key]
                spread.counts[domain] = spread.counts.get(domain, 0) + 1
        for affinity in self._affinity.values():
            value = node.labels.get(affinity.group.topology_key)
            if value is not None and affinity.group.selects(pod):
                affinity.counts[value] = affinity.counts.get(value, 0) + 1
        self._block(pod, node)

