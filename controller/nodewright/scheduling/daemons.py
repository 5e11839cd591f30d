"""Which DaemonSets run on a NodePool's nodes of each instance type, and what they take.

As Karpenter's `isDaemonPodCompatible` / `buildDaemonOverheadGroups` (scheduler.go): a
DaemonSet counts against an instance type only if its pod would schedule there: it
tolerates the NodePool's taints (PreferNoSchedule aside), and one of its ORed required
node-affinity terms (with its nodeSelector) is compatible with the NodePool's
requirements and intersects the instance type's own labels and offerings. Keys the
instance type does not define (custom labels) are left to the NodePool check. The
DaemonSets' host ports count only where they run. Types that run the same DaemonSets
share one `DaemonLoad`. A node Karpenter launches becomes registered and initialized, so
a DaemonSet selecting `karpenter.sh/registered` or `karpenter.sh/initialized` = true runs
there (Karpenter's schedulingSimulationKeys).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.nodepools import NodePoolTemplate, labels_compatible
from nodewright.scheduling.offering_labels import OFFERING_VALUES
from nodewright.scheduling.pods import DaemonSet, HostPort, untolerated
from nodewright.scheduling.requirements import (
    Requirement,
    Requirements,
)

# Labels every launched node gets once it joins: only DaemonSets are judged against them.
_JOINED = (Requirement.single("karpenter.sh/registered", "true"),
           Requirement.single("karpenter.sh/initialized", "true"))


@dataclass(frozen=True)
class DaemonLoad:
    """The DaemonSets that run on a node of some instance types, and what they take."""

    daemonsets: tuple[DaemonSet, ...]
    requests: Mapping[str, int]
    host_ports: tuple[HostPort, ...]

    def port_conflict(self, wanted: Sequence[HostPort]) -> HostPort | None:
        """The first of `wanted` one of these DaemonSets' pods already holds."""
        for port in wanted:
            if any(port.conflicts(taken) for taken in self.host_ports):
                return port
        return None


NO_DAEMONS = DaemonLoad((), {}, ())


def _offerings_intersect(instance_type: InstanceType, requirements: Requirements) -> bool:
    """Key by key, some available offering has a value each offering key allows (the
    instance type's requirements list every zone, capacity type and reservation it offers;
    an offering without a reservation offers the reservation labels' absence)."""
    available = [o for o in instance_type.offerings if o.available]
    for key, value in OFFERING_VALUES.items():
        wanted = requirements.get(key)
        if wanted is None:
            continue
        if not any(wanted.matches_label(v) for v in {value(o) for o in available}):
            return False
    return True


def type_intersects(instance_type: InstanceType, requirements: Requirements) -> bool:
    """Whether some node of this type could satisfy the requirements (custom keys aside)."""
    return labels_compatible(instance_type, requirements) and _offerings_intersect(
        instance_type, requirements)


def joined_requirements(template: NodePoolTemplate) -> Requirements:
    """The NodePool's requirements as its nodes' DaemonSets see them (registered and
    initialized)."""
    requirements = template.requirements.copy()
    for requirement in _JOINED:
        requirements.add(requirement)
    return requirements


def pool_alternatives(
    template: NodePoolTemplate, daemonset: DaemonSet, requirements: Requirements | None = None
) -> tuple[Requirements, ...] | None:
    """The DaemonSet's ORed node requirements compatible with the NodePool; None when its
    pod does not tolerate the NodePool's taints. An empty tuple: it never runs there."""
    hard_taints = tuple(t for t in template.taints if t.effect != "PreferNoSchedule")
    if untolerated(hard_taints, daemonset.pod.tolerations) is not None:
        return None
    joined = requirements if requirements is not None else joined_requirements(template)
    return tuple(
        alternative for alternative in daemonset.pod.strict_node_alternatives()
        if joined.conflict(alternative) is None
    )


def daemon_loads(
    template: NodePoolTemplate,
    instance_types: Sequence[InstanceType],
    daemonsets: Sequence[DaemonSet],
) -> dict[str, DaemonLoad]:
    """Each instance type's DaemonSets on this NodePool, by type name."""
    # Per DaemonSet: None (runs on every type), or the alternatives to check per type.
    checks: list[tuple[DaemonSet, tuple[Requirements, ...] | None]] = []
    joined = joined_requirements(template)
    for daemonset in daemonsets:
        alternatives = pool_alternatives(template, daemonset, joined)
        if not alternatives:
            continue
        checks.append((daemonset, None if any(not a for a in alternatives) else alternatives))
    loads: dict[tuple[int, ...], DaemonLoad] = {}
    by_type: dict[str, DaemonLoad] = {}
    for instance_type in instance_types:
        chosen = tuple(
            index for index, (_, alternatives) in enumerate(checks)
            if alternatives is None
            or any(type_intersects(instance_type, a) for a in alternatives)
        )
        load = loads.get(chosen)
        if load is None:
            load = _load([checks[index][0] for index in chosen])
            loads[chosen] = load
        by_type[instance_type.name] = load
    return by_type


def _load(daemonsets: Sequence[DaemonSet]) -> DaemonLoad:
    if not daemonsets:
        return NO_DAEMONS
    requests: dict[str, int] = {}
    for daemonset in daemonsets:
        for name, amount in daemonset.pod.requests.items():
            requests[name] = requests.get(name, 0) + amount
    ports = tuple(port for daemonset in daemonsets for port in daemonset.pod.host_ports)
    return DaemonLoad(tuple(daemonsets), requests, ports)


def least_overhead(loads: Sequence[DaemonLoad]) -> dict[str, int]:
    """Per resource, the least any of these loads takes (what a NodeClaim that may still
    become any of their types requests for its DaemonSets, as Karpenter's
    addDaemonRequests)."""
    if not loads:
        return {}
    names = set().union(*(load.requests for load in loads))
    return {
        name: least
        for name in sorted(names)
        if (least := min(load.requests.get(name, 0) for load in loads)) > 0
    }
