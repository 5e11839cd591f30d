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


class Signatures:
    """Each pod object's signature, shared by the plans of one problem (the same pods).
    `earlier`: those of the pass before, looked up before working one out again (a pod
    model is kept from pass to pass while its object is unchanged); only the pods of
    this one and the one before are held."""

    def __init__(self, earlier: Signatures | None = None) -> None:
        # The pod is kept with its signature, so that its id is not reused meanwhile.
        self._by_pod: dict[int, tuple[Pod, tuple[object, ...]]] = {}
        self._earlier = earlier._by_pod if earlier is not None else {}

    def of(self, pod: Pod) -> tuple[object, ...]:
        known = self._by_pod.get(id(pod))
        if known is not None and known[0] is pod:
            return known[1]
        known = self._earlier.get(id(pod))
        if known is None or known[0] is not pod:
            known = (pod, signature(pod))
        self._by_pod[id(pod)] = known
        return known[1]


@dataclass
class PodContext:
    """What the solver works out once per distinct pod shape."""

    signature: tuple[object, ...]
    requirements: Requirements
    vector: Vector
    owned: list[tuple[TopologyGroup, SpreadConstraint | None]]
    spread_free: bool
    needs_company: bool
    # Targets this pod shape has tried and not found permanently closed (positions in the
    # solver's list of targets, in the order they opened), and the position up to which
    # it has tried them all (`Placement.place_on_targets`).
    open_targets: dict[int, None] = field(default_factory=dict)
    seen_targets: int = 0


class PodContexts:
    """Each pod shape's context, worked out the first time a pod of that shape is seen."""

    def __init__(self, topology: Topology, index: ResourceIndex,
                 signatures: Signatures | None = None) -> None:
        self.topology = topology
        self.index = index
        self.signatures = signatures if signatures is not None else Signatures()
        self.by_signature: dict[tuple[object, ...], PodContext] = {}
        # Each pod object's context: a plan asks for a pod's several times. The pod is
        # kept with it, so that its id is not reused meanwhile.
        self._by_pod: dict[int, tuple[Pod, PodContext]] = {}

    def of(self, pod: Pod) -> PodContext:
        known = self._by_pod.get(id(pod))
        if known is not None and known[0] is pod:
            return known[1]
        key = self.signatures.of(pod)
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
        self._by_pod[id(pod)] = (pod, context)
        return context
