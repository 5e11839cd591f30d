"""kube-scheduler's default scores for the nodes that passed the filters.

NodeResourcesFit (least allocated) and NodeResourcesBalancedAllocation over cpu and
memory (pods without requests count as 100m and 200Mi), NodeAffinity (preferred terms)
and TaintToleration (PreferNoSchedule taints not tolerated), each 0-100 and weighted as
in the default profile. The highest total wins; ties go to the first node by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodewright.cluster.memory.kube_scheduler.snapshot import NodeInfo, scored_requests
from nodewright.scheduling.pods import Pod

MAX_SCORE = 100
FIT_WEIGHT = 1
BALANCED_WEIGHT = 1
NODE_AFFINITY_WEIGHT = 2
TAINT_TOLERATION_WEIGHT = 3


def _fraction_used(used: int, allocatable: int) -> float:
    return 1.0 if allocatable <= 0 else used / allocatable


def least_allocated(pod: Pod, node: NodeInfo) -> int:
    cpu, memory = scored_requests(pod)
    total = 0
    for used, allocatable in ((node.scored_cpu + cpu, node.allocatable_cpu),
                              (node.scored_memory + memory, node.allocatable_memory)):
        if allocatable > 0 and used <= allocatable:
            total += (allocatable - used) * MAX_SCORE // allocatable
    return total // 2


def balanced_allocation(pod: Pod, node: NodeInfo) -> int:
    cpu, memory = scored_requests(pod)
    cpu_fraction = min(1.0, _fraction_used(node.scored_cpu + cpu, node.allocatable_cpu))
    memory_fraction = min(1.0, _fraction_used(node.scored_memory + memory,
                                              node.allocatable_memory))
    deviation = abs(cpu_fraction - memory_fraction) / 2
    return int((1 - deviation) * MAX_SCORE)


def preferred_affinity(pod: Pod, node: NodeInfo) -> int:
    return sum(weight for weight, term in pod.preferred_terms
               if term.satisfied_by_labels(node.labels))


def intolerable_preferences(pod: Pod, node: NodeInfo) -> int:
    return sum(
        1 for taint in node.taints
        if taint.effect == "PreferNoSchedule"
        and not any(toleration.tolerates(taint) for toleration in pod.tolerations)
    )


def fit_score(pod: Pod, node: NodeInfo) -> int:
    """The resource scores (least allocated + balanced), weighted."""
    return FIT_WEIGHT * least_allocated(pod, node) + BALANCED_WEIGHT * balanced_allocation(
        pod, node)


def best_node(
    feasible: Sequence[tuple[NodeInfo, int]],
    affinity: Mapping[str, int],
    intolerable: Mapping[str, int],
) -> NodeInfo:
    """The highest scoring node, the first by name among equals. `feasible` holds
    (node, fit score); `affinity` and `intolerable` are the per-node raw
    preferred-affinity weights and untolerated PreferNoSchedule taint counts (a node
    missing from them has 0), normalized here over the feasible nodes as kube-scheduler
    does."""
    top_affinity = max(affinity.get(node.name, 0) for node, _ in feasible)
    top_taints = max(intolerable.get(node.name, 0) for node, _ in feasible)
    best, best_score = feasible[0][0], -1
    for node, score in feasible:
        if top_affinity:
            score += NODE_AFFINITY_WEIGHT * (affinity.get(node.name, 0) * MAX_SCORE
                                             // top_affinity)
        if top_taints:
            score -= TAINT_TOLERATION_WEIGHT * (intolerable.get(node.name, 0) * MAX_SCORE
                                               // top_taints)
        if score > best_score or (score == best_score and node.name < best.name):
            best, best_score = node, score
    return best
