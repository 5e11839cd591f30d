"""What the solver works out once per distinct pod shape (pods alike in everything the
solver looks at share it): node requirements, the request vector, the topology groups the
pod owns, and the targets it has not found permanently closed."""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.scheduling.pods import Pod, SpreadConstraint
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.targets import ResourceIndex, Vector
from nodewright.scheduling.topology import Topology, TopologyGroup


def signature(pod: Pod) -> tuple[object, ...]:
    return (
        pod.namespace,
        tuple(sorted(pod.labels.items())),
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        pod.required_terms,
        pod.preferred_terms,
        pod.tolerations,
        pod.pod_affinity,
        pod.pod_anti_affinity,
        pod.preferred_pod_affinity,
        pod.preferred_pod_anti_affinity,
        pod.spread,
        pod.host_ports,
        pod.volume_requirements,
    )


@dataclass
class PodContext:
    """What the solver works out once per distinct pod shape."""

    signature: tuple[object, ...]
    requirements: Requirements
    vector: Vector
    owned: list[tuple[TopologyGroup, SpreadConstraint | None]]
    spread_free: bool
    needs_company: bool
    # Targets this pod shape has not found permanently closed (positions in the solver's
    # list of targets, in the order they opened) and how many of that list it has seen.
    open_targets: dict[int, None] = field(default_factory=dict)
    seen_targets: int = 0


class PodContexts:
    """Each pod shape's context, worked out the first time a pod of that shape is seen."""

    def __init__(self, topology: Topology, index: ResourceIndex) -> None:
        self.topology = topology
        self.index = index
        self.by_signature: dict[tuple[object, ...], PodContext] = {}

    def of(self, pod: Pod) -> PodContext:
        key = signature(pod)
        context = self.by_signature.get(key)
        if context is None:
            owned = self.topology.owned_groups(pod)
            context = PodContext(
                signature=key,
                requirements=pod.node_requirements(),
                vector=self.index.vector(pod.requests),
                owned=owned,
                spread_free=not owned,
                needs_company=bool(pod.pod_affinity or pod.preferred_pod_affinity),
            )
            self.by_signature[key] = context
        return context
