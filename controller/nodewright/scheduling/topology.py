"""Topology bookkeeping: pod counts per domain for spread constraints and pod (anti-)affinity.

A `TopologyGroup` is one counting rule: which pods it counts (namespaces, by name or by
Namespace labels, and a label selector) on which key (zone, hostname, capacity type, any
label). Counts only ever grow while one solve runs, so they are kept incrementally. For
a pod and a candidate node, each group the pod is subject to narrows the node's possible
domains for that key; the solver turns that into one more requirement on the node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.scheduling.pods import (
    AffinityTerm,
    LabelSelector,
    Pod,
    SpreadConstraint,
    Taint,
    Toleration,
    namespace_in_scope,
    namespace_labels,
    untolerated,
)
from nodewright.scheduling.requirements import LABEL_HOSTNAME, Requirement, Requirements

SPREAD = "spread"
AFFINITY = "affinity"
ANTI_AFFINITY = "anti-affinity"
# Pods placed with a required anti-affinity term keep matching pods out of their domain.
INVERSE_ANTI_AFFINITY = "inverse-anti-affinity"


@dataclass(frozen=True, slots=True)
class NodeFilter:
    """Which nodes a spread constraint counts (its nodeAffinityPolicy and nodeTaintsPolicy).

    `terms` are the owner pod's nodeSelector merged with each of its required node-affinity
    terms (ORed), or None when the affinity policy is Ignore. `tolerations` are the owner's
    tolerations, or None when the taint policy is Ignore. Only NoSchedule and NoExecute
    taints exclude a node, as in kube-scheduler.
    """

    terms: tuple[Requirements, ...] | None
    tolerations: tuple[Toleration, ...] | None

    @staticmethod
    def of(pod: Pod, constraint: SpreadConstraint) -> NodeFilter | None:
        """The filter of `pod`'s constraint; None when it would admit every node."""
        terms: tuple[Requirements, ...] | None = None
        if constraint.node_affinity_policy == "Honor":
            selector = Requirements.from_labels(pod.node_selector)
            if pod.required_terms:
                terms = tuple(selector.merged(term) for term in pod.required_terms)
            elif selector:
                terms = (selector,)
        tolerations = pod.tolerations if constraint.node_taints_policy == "Honor" else None
        if terms is None and tolerations is None:
            return None
        return NodeFilter(terms, tolerations)

    def admits_taints(self, taints: Sequence[Taint]) -> bool:
        if self.tolerations is None:
            return True
        hard = [t for t in taints if t.effect != "PreferNoSchedule"]
        return untolerated(hard, self.tolerations) is None

    def admits_labels(self, labels: Mapping[str, str], taints: Sequence[Taint]) -> bool:
        """Whether a concrete node (labels and taints) counts."""
        if not self.admits_taints(taints):
            return False
        return self.terms is None or any(t.satisfied_by_labels(labels) for t in self.terms)

    def admits_requirements(
        self,
        requirements: Requirements,
        taints: Sequence[Taint],
        key: str | None = None,
        domain: str | None = None,
    ) -> bool:
        """Whether a node launched from `requirements` could count (in `domain` of `key`)."""
        if not self.admits_taints(taints):
            return False
        if self.terms is None:
            return True
        for term in self.terms:
            if key is not None and domain is not None:
                wanted = term.get(key)
                if wanted is not None and not wanted.has(domain):
                    continue
            if requirements.conflict(term) is None:
                return True
        return False


@dataclass(frozen=True, slots=True)
class GroupKey:
    kind: str
    topology_key: str
    namespace: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    selector: LabelSelector
    max_skew: int = 0
    min_domains: int | None = None
    node_filter: NodeFilter | None = None


@dataclass(slots=True)
class TopologyGroup:
    key: GroupKey
    counts: dict[str, int] = field(default_factory=dict)
    # Labels of the Namespaces given with the problem (shared by all groups of a solve).
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    _in_scope: dict[str, bool] = field(default_factory=dict)

    @property
    def topology_key(self) -> str:
        return self.key.topology_key

    def selects(self, pod: Pod) -> bool:
        in_scope = self._in_scope.get(pod.namespace)
        if in_scope is None:
            key = self.key
            in_scope = namespace_in_scope(
                key.namespaces,
                key.namespace_selector,
                key.namespace,
                pod.namespace,
                namespace_labels(pod.namespace, self.namespace_labels),
            )
            self._in_scope[pod.namespace] = in_scope
        return in_scope and self.key.selector.matches(pod.labels)

    def counts_node(self, target_labels: Mapping[str, str], taints: Sequence[Taint]) -> bool:
        """Whether pods on this concrete node count (a spread constraint's node filter)."""
        node_filter = self.key.node_filter
        return node_filter is None or node_filter.admits_labels(target_labels, taints)

    def counts_claim(self, requirements: Requirements, taints: Sequence[Taint]) -> bool:
        """Whether pods on a NodeClaim with these requirements count."""
        node_filter = self.key.node_filter
        return node_filter is None or node_filter.admits_requirements(requirements, taints)

    def record(self, domains: Iterable[str]) -> None:
        for domain in domains:
            self.counts[domain] = self.counts.get(domain, 0) + 1

    def describe(self) -> str:
        key = self.key
        if key.kind == SPREAD:
            return f"topology spread on {key.topology_key} (maxSkew {key.max_skew})"
        if key.kind == AFFINITY:
            return f"pod affinity on {key.topology_key}"
        if key.kind == ANTI_AFFINITY:
            return f"pod anti-affinity on {key.topology_key}"
        return f"another pod's anti-affinity on {key.topology_key}"


def spread_key(pod: Pod, constraint: SpreadConstraint) -> GroupKey:
    return GroupKey(
        SPREAD,
        constraint.topology_key,
        pod.namespace,
        frozenset(),
        None,
        constraint.selector,
        constraint.max_skew,
        constraint.min_domains,
        NodeFilter.of(pod, constraint),
    )


def affinity_key(kind: str, pod: Pod, term: AffinityTerm) -> GroupKey:
    return GroupKey(
        kind,
        term.topology_key,
        pod.namespace,
        term.namespaces,
        term.namespace_selector,
        term.selector,
    )


@dataclass(frozen=True, slots=True)
class DomainSource:
    """Where a domain value comes from: a NodePool (its requirements) or a node (its labels)."""

    taints: tuple[Taint, ...]
    requirements: Requirements | None = None
    labels: tuple[tuple[str, str], ...] | None = None

    def admitted_by(self, node_filter: NodeFilter, key: str, domain: str) -> bool:
        if self.labels is not None:
            return node_filter.admits_labels(dict(self.labels), self.taints)
        if self.requirements is not None:
            return node_filter.admits_requirements(self.requirements, self.taints, key, domain)
        return node_filter.admits_taints(self.taints)


class Topology:
    """All topology groups of one solve, with the known domains per key.

    `namespace_labels` are the labels of the Namespaces given with the problem; affinity
    terms with a namespaceSelector match against them (a namespace not given has only its
    `kubernetes.io/metadata.name` label).
    """

    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.namespace_labels: Mapping[str, Mapping[str, str]] = dict(namespace_labels or {})
        self.groups: dict[GroupKey, TopologyGroup] = {}
        self._domains: dict[str, dict[str, list[DomainSource]]] = {}
        # Membership of each domain's sources: a list scan made 1,000 nodes quadratic.
        self._domain_sources: dict[tuple[str, str], set[DomainSource]] = {}
        # Existing nodes' labels, read as domains per key on demand (up to an index).
        self._unread_nodes: list[tuple[Mapping[str, str], DomainSource]] = []
        self._read_upto: dict[str, int] = {}
        self._selecting_cache: dict[tuple[object, ...], list[TopologyGroup]] = {}
        self._inverse: list[TopologyGroup] = []

    # -- universe of domains -------------------------------------------------------------

    def add_domain(
        self, topology_key: str, value: str, source: DomainSource = DomainSource(())
    ) -> None:
        self._materialize(topology_key)
        self._add(topology_key, value, source)

    def add_nodes_domains(self, nodes: Iterable[tuple[Mapping[str, str], DomainSource]]
                          ) -> None:
        """Existing nodes' labels (each with its source) as domains. Kept aside and read
        for a key only when that key is first asked for: a solve asks for a few keys, and
        a disruption pass solves once per candidate over every node, each carrying dozens
        of labels."""
        self._unread_nodes.extend(nodes)

    def domains(self, topology_key: str) -> dict[str, list[DomainSource]]:
        self._materialize(topology_key)
        return self._domains.get(topology_key, {})

    def _materialize(self, topology_key: str) -> None:
        """Read the nodes' labels for `topology_key` up to now, in the order they came."""
        start = self._read_upto.get(topology_key, 0)
        if start == len(self._unread_nodes):
            return
        for labels, source in self._unread_nodes[start:]:
            value = labels.get(topology_key)
            if value is not None:
                self._add(topology_key, value, source)
        self._read_upto[topology_key] = len(self._unread_nodes)

    def _add(self, topology_key: str, value: str, source: DomainSource) -> None:
        sources = self._domains.setdefault(topology_key, {}).setdefault(value, [])
        seen = self._domain_sources.setdefault((topology_key, value), set())
        if source not in seen:
            seen.add(source)
            sources.append(source)

    # -- groups --------------------------------------------------------------------------

    def group(self, key: GroupKey) -> TopologyGroup:
        group = self.groups.get(key)
        if group is None:
            group = TopologyGroup(key, namespace_labels=self.namespace_labels)
            self.groups[key] = group
            if key.kind == INVERSE_ANTI_AFFINITY:
                self._inverse.append(group)
            self._selecting_cache.clear()
        return group

    def register(self, pod: Pod) -> None:
        """Create the groups a pod (pending or bound) takes part in as an owner."""
        for constraint in pod.spread:
            self.group(spread_key(pod, constraint))
        for term in (*pod.pod_affinity, *pod.preferred_pod_affinity):
            self.group(affinity_key(AFFINITY, pod, term))
        for term in (*pod.pod_anti_affinity, *pod.preferred_pod_anti_affinity):
            self.group(affinity_key(ANTI_AFFINITY, pod, term))
        for term in pod.pod_anti_affinity:
            self.group(affinity_key(INVERSE_ANTI_AFFINITY, pod, term))

    def owned_groups(self, pod: Pod) -> list[tuple[TopologyGroup, SpreadConstraint | None]]:
        """The groups constraining where `pod` may go (its own terms and constraints)."""
        owned: list[tuple[TopologyGroup, SpreadConstraint | None]] = []
        for constraint in pod.spread:
            owned.append((self.group(spread_key(pod, constraint)), constraint))
        for term in (*pod.pod_affinity, *pod.preferred_pod_affinity):
            owned.append((self.group(affinity_key(AFFINITY, pod, term)), None))
        for term in (*pod.pod_anti_affinity, *pod.preferred_pod_anti_affinity):
            owned.append((self.group(affinity_key(ANTI_AFFINITY, pod, term)), None))
        return owned

    def inverse_groups(self, pod: Pod) -> list[TopologyGroup]:
        """Anti-affinity of already placed pods that keeps `pod` out of their domains."""
        return [
            group
            for group in self._selecting(pod)
            if group.key.kind == INVERSE_ANTI_AFFINITY and group.counts
        ]

    def _selecting(self, pod: Pod) -> list[TopologyGroup]:
        if not self.groups:
            # No group selects anything (most disruption simulations have none); a new
            # group clears the cache anyway.
            return []
        signature = (pod.namespace, tuple(sorted(pod.labels.items())))
        cached = self._selecting_cache.get(signature)
        if cached is None:
            cached = [
                group
                for _, group in sorted(self.groups.items(), key=lambda kv: repr(kv[0]))
                if group.key.kind != INVERSE_ANTI_AFFINITY and group.selects(pod)
            ]
            cached += [group for group in self._inverse if group.selects(pod)]
            self._selecting_cache[signature] = cached
        return cached

    def selecting_groups(self, pod: Pod) -> list[TopologyGroup]:
        """Every group whose selector picks `pod` (including other pods' anti-affinity)."""
        return self._selecting(pod)

    def counting_groups(self, pod: Pod) -> list[TopologyGroup]:
        """Groups whose counts a placed `pod` adds to (it matches their selector)."""
        return [g for g in self._selecting(pod) if g.key.kind != INVERSE_ANTI_AFFINITY]

    def owner_inverse_groups(self, pod: Pod) -> list[TopologyGroup]:
        """Inverse groups a placed `pod` adds to (its own required anti-affinity)."""
        return [
            self.group(affinity_key(INVERSE_ANTI_AFFINITY, pod, term))
            for term in pod.pod_anti_affinity
        ]

    # -- domain choice -------------------------------------------------------------------

    def eligible_domains(self, group: TopologyGroup) -> list[str]:
        """Domains that count for a spread constraint's minimum: those with a node (or a
        NodePool that can launch one) its node filter admits."""
        node_filter = group.key.node_filter
        topology_key = group.topology_key
        return [
            domain
            for domain, sources in sorted(self.domains(topology_key).items())
            if node_filter is None
            or any(source.admitted_by(node_filter, topology_key, domain) for source in sources)
        ]

    def allowed_domains(
        self,
        group: TopologyGroup,
        constraint: SpreadConstraint | None,
        pod: Pod,
        node_domains: Sequence[str],
        pod_requirement: Requirement | None,
    ) -> list[str]:
        """Which of the node's possible domains `pod` may take under `group`.

        Spread and affinity pick one domain (so that the count can be recorded);
        anti-affinity keeps every allowed domain without a matching pod.
        """
        kind = group.key.kind
        counts = group.counts
        if kind == SPREAD:
            assert constraint is not None
            return self._spread_domain(group, constraint, pod, node_domains, pod_requirement)
        if kind == AFFINITY:
            candidates = [d for d in node_domains if _allowed(pod_requirement, d)]
            with_pods = [d for d in candidates if counts.get(d, 0) > 0]
            if with_pods:
                return [max(with_pods, key=lambda d: (counts[d], _neg(d)))]
            if group.selects(pod) and candidates and not any(
                count > 0 and _allowed(pod_requirement, d) for d, count in counts.items()
            ):
                # The pod is one of its own kind and nothing it could be near exists (no
                # pod yet, or only in domains the pod's own requirements exclude): start a
                # domain (Karpenter's nextDomainAffinity bootstrap).
                return [candidates[0]]
            return []
        # Anti-affinity, the pod's own term or another pod's (inverse): every domain the
        # pod may take without a matching pod. The node is not narrowed to one of them
        # (Karpenter's late committal): the pod is counted in all of them until its node
        # launches in one, so a pod it repels waits for that (the "Schrödinger" case), and
        # pods with zonal anti-affinity among themselves are placed one per batch.
        return [d for d in node_domains
                if counts.get(d, 0) == 0 and _allowed(pod_requirement, d)]

    def valid_domains(self, group: TopologyGroup, constraint: SpreadConstraint | None,
                      pod: Pod, pod_requirement: Requirement | None) -> set[str]:
        """Every domain of the group `pod` could go to now, on a node that may be in any
        (Karpenter's TopologyGroup.Get validDomains with nodeDomains Exists): for a spread,
        those within the skew; for affinity, those holding a matching pod (else, for a pod of
        its own kind, the first one it may start); for anti-affinity, those without one."""
        kind = group.key.kind
        counts = group.counts
        if kind == SPREAD:
            assert constraint is not None
            eligible = self.eligible_domains(group)
            supported = [d for d in eligible if _allowed(pod_requirement, d)]
            minimum = min((counts.get(d, 0) for d in supported), default=None)
            if constraint.min_domains is not None and len(supported) < constraint.min_domains:
                minimum = 0
            if minimum is None:
                return set(eligible)
            own = 1 if group.selects(pod) else 0
            return {d for d in eligible
                    if counts.get(d, 0) + own - minimum <= constraint.max_skew}
        universe = sorted(self.domains(group.topology_key))
        if kind == AFFINITY:
            found = {d for d in universe if counts.get(d, 0) > 0 and _allowed(pod_requirement, d)}
            if not found and group.selects(pod):
                first = next((d for d in universe if _allowed(pod_requirement, d)), None)
                return {first} if first is not None else set()
            return found
        return {d for d in universe if counts.get(d, 0) == 0 and _allowed(pod_requirement, d)}

    def _spread_domain(
        self,
        group: TopologyGroup,
        constraint: SpreadConstraint,
        pod: Pod,
        node_domains: Sequence[str],
        pod_requirement: Requirement | None,
    ) -> list[str]:
        counts = group.counts
        if constraint.topology_key == LABEL_HOSTNAME:
            # A new node is always possible, so the least loaded hostname holds zero pods.
            minimum = 0
        else:
            eligible = self.eligible_domains(group)
            minimum = min((counts.get(d, 0) for d in eligible), default=0)
            if constraint.min_domains is not None and len(eligible) < constraint.min_domains:
                minimum = 0
        self_count = 1 if group.selects(pod) else 0
        best: str | None = None
        best_count = 0
        for domain in node_domains:
            if not _allowed(pod_requirement, domain):
                continue
            count = counts.get(domain, 0)
            if count + self_count - minimum <= constraint.max_skew and (
                best is None or count < best_count
            ):
                best, best_count = domain, count
        return [best] if best is not None else []


def _allowed(requirement: Requirement | None, domain: str) -> bool:
    return requirement is None or requirement.has(domain)


def _neg(text: str) -> tuple[int, ...]:
    """Sort key that orders strings descending (so max() prefers the first name)."""
    return tuple(-ord(ch) for ch in text)

