"""The zones a pending pod's own topology terms (zonal spread, pod affinity, pod
anti-affinity) leave it before anything is placed, from the pods already running (Karpenter's
Topology.GetTopologyZoneConstraints, read for
karpenter_scheduler_pending_pods_by_effective_zone_count)."""

from __future__ import annotations

from collections.abc import Iterable

from nodewright.scheduling.pods import Pod
from nodewright.scheduling.requirements import LABEL_ZONE
from nodewright.scheduling.solver.existing_nodes import PreparedNodes
from nodewright.scheduling.solver.placement import Placement
from nodewright.scheduling.solver.problem import SchedulingProblem
from nodewright.scheduling.solver.setup import Setup
from nodewright.scheduling.topology import Topology


def _zonal(pod: Pod) -> bool:
    terms = (*pod.pod_affinity, *pod.preferred_pod_affinity, *pod.pod_anti_affinity,
             *pod.preferred_pod_anti_affinity)
    return (any(c.topology_key == LABEL_ZONE for c in pod.spread)
            or any(t.topology_key == LABEL_ZONE for t in terms))


def zone_constraints(problem: SchedulingProblem, pods: Iterable[Pod],
                     prepared: PreparedNodes | None = None
                     ) -> dict[str, frozenset[str] | None]:
    """Per pod with a zonal term: the zones all of them allow (an empty set when they allow
    none in common, which Karpenter reads as no constraint), or None when one of them
    allows no zone at all. Pods without a zonal term are left out. `prepared`: the
    problem's prepared nodes, whose NodePool setups the solve of the same problem then
    takes as they are (each filters the whole catalog)."""
    wanted = [pod for pod in pods if _zonal(pod)]
    if not wanted:
        return {}
    placement = Placement(Setup(problem, prepared), Topology(problem.namespaces), True)
    topology = placement.topology
    found: dict[str, frozenset[str] | None] = {}
    for pod in wanted:
        requirement = placement.context(pod).requirements.get(LABEL_ZONE)
        valid: set[str] | None = None
        for group, constraint in topology.owned_groups(pod):
            if group.topology_key != LABEL_ZONE:
                continue
            domains = topology.valid_domains(group, constraint, pod, requirement)
            if not domains:
                valid = None
                found[pod.key] = None
                break
            valid = domains if valid is None else valid & domains
        else:
            if valid is not None:
                found[pod.key] = frozenset(valid)
    return found
