"""kube-scheduler's default filters, in its order, each naming why a node does not fit.

As in kube-scheduler a node is rejected by the first filter that fails (resources may
give several reasons at once); the reasons, counted over the nodes, make the
FailedScheduling message ("0/3 nodes are available: 1 Insufficient memory, 2 node(s)
didn't match Pod's node affinity/selector.").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from nodewright.api.quantity import PODS
from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo
from nodewright.cluster.memory.kube_scheduler.topology import DomainCounts, PassTopology
from nodewright.scheduling.pods import UNSCHEDULABLE_TAINT, Pod, Taint, untolerated
from nodewright.scheduling.requirements import Requirements

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
HOST_PORTS = "node(s) didn't have free ports for the requested pod ports"
VOLUME_NODE_AFFINITY = "node(s) had volume node affinity conflict"
TOO_MANY_PODS = "Too many pods"
# The DynamicResources plugin's verdict: the in-memory cluster runs no DRA driver, so no
# node publishes devices (ResourceSlices) a claim could be allocated from.
CANNOT_ALLOCATE_CLAIMS = "cannot allocate all claims"
HARD_EFFECTS = ("NoSchedule", "NoExecute")


class PodFilters:
    """The filters for one pod shape (its parsed requirements computed once).

    `static_reasons` are the filters whose verdict cannot change while a pass binds pods
    (cordon, taints, node affinity); `dynamic_reasons` the ones that can (ports,
    resources, spread, inter-pod affinity). Together, in that order, they are
    kube-scheduler's filter order. When the pod has no spread or affinity terms of its
    own (`node_local`), a node's verdict changes only when that node gets a pod or a
    placed pod's anti-affinity starts to select this one (`topology.blocking_version`).
    """

    def __init__(self, pod: Pod, topology: PassTopology) -> None:
        self.pod = pod
        self.topology = topology
        self._selector = Requirements.from_labels(pod.node_selector)
        self._tolerates_cordon = untolerated((UNSCHEDULABLE_TAINT,), pod.tolerations) is None
        self._requests = sorted(
            (resource, amount) for resource, amount in pod.requests.items() if amount > 0
        )
        self._spread = topology.spread_checks(pod)
        self._affinity = topology.affinity_checks(pod)
        self.node_local = not self._spread and self._affinity is None
        self._blocking_version = -1
        self._blocking: list[DomainCounts] = []

    def reasons(self, node: NodeInfo) -> Sequence[str]:
        """Why `pod` cannot go to `node`; empty when it can."""
        return self.static_reasons(node) or self.dynamic_reasons(node)

    def resource_key(self) -> tuple[tuple[str, int], ...]:
        """What `resource_reasons` depends on besides the node and the pod's host ports."""
        return tuple(self._requests)

    def static_reasons(self, node: NodeInfo) -> Sequence[str]:
        if node.unschedulable and not self._tolerates_cordon:
            return (UNSCHEDULABLE,)
        hard = [t for t in node.taints if t.effect in HARD_EFFECTS]
        taint = untolerated(hard, self.pod.tolerations) if hard else None
        if taint is not None:
            return (untolerated_taint(taint),)
        if not self._matches_node_affinity(node):
            return (NODE_AFFINITY,)
        volume_terms = self.pod.volume_requirements
        if volume_terms and not any(t.satisfied_by_labels(node.labels) for t in volume_terms):
            return (VOLUME_NODE_AFFINITY,)
        if self.pod.dra:
            return (CANNOT_ALLOCATE_CLAIMS,)
        return ()

    def dynamic_reasons(self, node: NodeInfo) -> Sequence[str]:
        return self.resource_reasons(node) or self.topology_reasons(node)

    def resource_reasons(self, node: NodeInfo) -> Sequence[str]:
        """Host ports and resources: they depend on this node's pods only."""
        pod = self.pod
        if pod.host_ports and any(
            used.conflicts(port) for port in pod.host_ports for used in node.ports
        ):
            return (HOST_PORTS,)
        requested, allocatable = node.requested, node.allocatable
        for resource, amount in self._requests:
            if requested.get(resource, 0) + amount > allocatable.get(resource, 0):
                return self._insufficient(node)
        return ()

    def topology_reasons(self, node: NodeInfo) -> Sequence[str]:
        """Spread and inter-pod affinity: they depend on the node's values of
        `topology_keys()` (and on the pass's counts)."""
        failure = None
        if self._spread:
            failure = self.topology.spread_failure(self._spread, node)
        if failure is None and self._affinity is not None:
            failure = self.topology.affinity_failure(self._affinity, node)
        if failure is None:
            failure = self.topology.blocked(self._blocking_groups(), node)
        return (failure,) if failure else ()

    def topology_free(self) -> bool:
        """No spread or inter-pod affinity term of the pod, and no placed pod's
        anti-affinity selecting it: `topology_reasons` is empty on every node."""
        return not self._spread and self._affinity is None and not self._blocking_groups()

    def topology_keys(self) -> tuple[str, ...]:
        keys = {check.constraint.topology_key for check in self._spread}
        if self._affinity is not None:
            keys.update(key for key, _ in self._affinity.affinity)
            keys.update(key for key, _ in self._affinity.anti_affinity)
        keys.update(counts.group.topology_key for counts in self._blocking_groups())
        return tuple(sorted(keys))

    def _blocking_groups(self) -> list[DomainCounts]:
        if self._blocking_version != self.topology.blocking_version:
            self._blocking = self.topology.blocking_for(self.pod)
            self._blocking_version = self.topology.blocking_version
        return self._blocking

    def _matches_node_affinity(self, node: NodeInfo) -> bool:
        if not self._selector.satisfied_by_labels(node.labels):
            return False
        terms = self.pod.required_terms
        return not terms or any(term.satisfied_by_labels(node.labels) for term in terms)

    def _insufficient(self, node: NodeInfo) -> list[str]:
        reasons = [
            TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"
            for resource, amount in self._requests
            if node.requested.get(resource, 0) + amount > node.allocatable.get(resource, 0)
        ]
        # kube-scheduler checks the pod count before the resources.
        reasons.sort(key=lambda reason: (reason != TOO_MANY_PODS, reason))
        return reasons


def untolerated_taint(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def unschedulable_message(total_nodes: int, reasons: Counter[str]) -> str:
    """kube-scheduler's FitError message."""
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    detail = f" {', '.join(parts)}" if parts else ""
    return f"0/{total_nodes} nodes are available:{detail}."
