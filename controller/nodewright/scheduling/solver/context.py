"""What the solver works out once per distinct pod shape (pods alike in everything the
solver looks at share it): node requirements, the request vector, the topology groups the
pod owns, and the targets it has not found permanently closed."""

from __future__ import annotations

from dataclasses import dataclass, field

from nodewright.scheduling.pods import Pod, SpreadConstraint
from nodewright.scheduling.requirements import Requirements
from nodewright.scheduling.solver.open_nodes import OpenNodes
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


class Shape:
    """What the solver reads alike from every pod of one signature, in any plan: the
    signature, the node requirements, whether it needs company (pod affinity), and its
    request vector per resource slots. One object per signature (`Signatures` interns
    them), so a plan keys its pod contexts, and its caches per pod shape, by the object
    itself; each is worked out once for every plan and every problem of a pass, and for
    the next pass while a pod of it is kept. Never changed once made (the vectors are
    only added to)."""

    __slots__ = ("_requests", "_vectors", "needs_company", "requirements", "signature")

    def __init__(self, key: tuple[object, ...], pod: Pod) -> None:
        self.signature = key
        # All three read fields the signature holds: alike for every pod of the shape.
        self.requirements: Requirements = pod.node_requirements()
        self.needs_company = bool(pod.pod_affinity or pod.preferred_pod_affinity)
        self._requests = pod.requests
        self._vectors: dict[tuple[str, ...], Vector] = {}

    def vector(self, index: ResourceIndex) -> Vector:
        vector = self._vectors.get(index.names)
        if vector is None:
            vector = index.vector(self._requests)
            self._vectors[index.names] = vector
        return vector


class Signatures:
    """Each pod object's signature and shape (`Shape`, one per signature), shared by the
    plans of one problem (the same pods) and by every problem cut from the same prepared
    nodes. `earlier`: those of the pass before, looked up before working one out again (a
    pod model is kept from pass to pass while its object is unchanged); only the pods of
    this one and the one before are held."""

    def __init__(self, earlier: Signatures | None = None) -> None:
        # The pod is kept with its shape, so that its id is not reused meanwhile.
        self._by_pod: dict[int, tuple[Pod, Shape]] = {}
        self._shapes: dict[tuple[object, ...], Shape] = {}
        self._earlier = earlier._by_pod if earlier is not None else {}

    def of(self, pod: Pod) -> tuple[object, ...]:
        return self.shape(pod).signature

    def shape(self, pod: Pod) -> Shape:
        known = self._by_pod.get(id(pod))
        if known is not None and known[0] is pod:
            return known[1]
        earlier = self._earlier.get(id(pod))
        if earlier is not None and earlier[0] is pod:
            # The earlier pass's shape serves while no other of this signature is known
            # in this one (then that one does: one shape per signature).
            shape = self._shapes.setdefault(earlier[1].signature, earlier[1])
        else:
            key = signature(pod)
            found = self._shapes.get(key)
            shape = found if found is not None else self._shapes.setdefault(key, Shape(key, pod))
        self._by_pod[id(pod)] = (pod, shape)
        return shape


@dataclass
class PodContext:
    """What the solver works out once per distinct pod shape."""

    signature: tuple[object, ...]
    requirements: Requirements
    vector: Vector
    owned: list[tuple[TopologyGroup, SpreadConstraint | None]]
    spread_free: bool
    needs_company: bool
    # The shape it is the context of (in one plan): a key for what is kept per shape.
    shape: Shape
    # Targets this pod shape has tried and not found permanently closed (positions in the
    # solver's list of targets, in the order they opened), and the position up to which
    # it has tried them all (`Placement.place_on_targets`).
    open_targets: dict[int, None] = field(default_factory=dict)
    seen_targets: int = 0
    # The existing nodes still open to its request vector and tolerations (one plan's).
    open_nodes: OpenNodes | None = None


class PodContexts:
    """Each pod shape's context, worked out the first time a pod of that shape is seen."""

    def __init__(self, topology: Topology, index: ResourceIndex,
                 signatures: Signatures | None = None) -> None:
        self.topology = topology
        self.index = index
        self.signatures = signatures if signatures is not None else Signatures()
        self.by_shape: dict[Shape, PodContext] = {}
        # Each pod object's context: a plan asks for a pod's several times. The pod is
        # kept with it, so that its id is not reused meanwhile.
        self._by_pod: dict[int, tuple[Pod, PodContext]] = {}

    def of(self, pod: Pod) -> PodContext:
        known = self._by_pod.get(id(pod))
        if known is not None and known[0] is pod:
            return known[1]
        shape = self.signatures.shape(pod)
        context = self.by_shape.get(shape)
        if context is None:
            owned = self.topology.owned_groups(pod)
            context = PodContext(
                signature=shape.signature,
                requirements=shape.requirements,
                vector=shape.vector(self.index),
                owned=owned,
                spread_free=not owned,
                needs_company=shape.needs_company,
                shape=shape,
            )
            self.by_shape[shape] = context
        self._by_pod[id(pod)] = (pod, context)
        return context
