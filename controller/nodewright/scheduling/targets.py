"""Where a pod can go: an existing node or a NodeClaim the solver is building.

Resources are held as fixed-length integer vectors (one slot per resource name of the
solve) so that fit checks are a handful of integer comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    cheapest_offering_of,
    cheapest_price,
    labels_compatible,
    min_values_problem,
)
from nodewright.scheduling.pods import HostPort, Pod, Taint
from nodewright.scheduling.requirements import LABEL_HOSTNAME, LABEL_ZONE, Requirements
from nodewright.scheduling.topology import TopologyGroup

Vector = tuple[int, ...]


class ResourceIndex:
    """Maps resource names to vector slots for one solve."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)

    def vector(self, resources: Mapping[str, int]) -> Vector:
        return tuple(resources.get(name, 0) for name in self.names)

    def add(self, a: Vector, b: Vector) -> Vector:
        return tuple(x + y for x, y in zip(a, b, strict=True))


def fits(need: Vector, have: Vector) -> bool:
    return all(n <= h for n, h in zip(need, have, strict=True))


@dataclass(slots=True)
class Candidate:
    """An instance type a NodeClaim may still become, with its price under the claim's
    requirements."""

    instance_type: InstanceType
    allocatable: Vector
    price: float


@dataclass(eq=False)
class Target:
    """State shared by existing nodes and new NodeClaims."""

    hostname: str
    taints: tuple[Taint, ...]
    used: Vector
    pods: list[Pod] = field(default_factory=list)
    host_ports: list[HostPort] = field(default_factory=list)
    # Pods counted by a spread/affinity group whose domain is not decided yet.
    unrecorded: list[tuple[TopologyGroup, Pod]] = field(default_factory=list)

    def port_conflict(self, pod: Pod) -> HostPort | None:
        for wanted in pod.host_ports:
            for taken in self.host_ports:
                if wanted.conflicts(taken):
                    return wanted
        return None


@dataclass(eq=False)
class ExistingTarget(Target):
    labels: Mapping[str, str] = field(default_factory=dict)
    allocatable: Vector = ()

    def domains(self, topology_key: str) -> list[str]:
        value = self.labels.get(topology_key)
        return [value] if value is not None else []


@dataclass(eq=False)
class PoolState:
    """A NodePool during one solve: compatible types, DaemonSet overhead, limits left."""

    template: NodePoolTemplate
    requirements: Requirements
    candidates: list[Candidate]
    daemon_overhead: Vector
    remaining: dict[str, int] | None
    filter_cache: dict[Requirements, list[Candidate]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.template.name

    def candidates_for(self, requirements: Requirements) -> list[Candidate]:
        """Types compatible with the requirements, cheapest first (cached per requirements)."""
        cache_key = _without_hostname(requirements)
        cached = self.filter_cache.get(cache_key)
        if cached is None:
            cached = []
            for candidate in self.candidates:
                if not labels_compatible(candidate.instance_type, requirements):
                    continue
                price = cheapest_price(candidate.instance_type, requirements)
                if price is None:
                    continue
                cached.append(Candidate(candidate.instance_type, candidate.allocatable, price))
            cached.sort(key=lambda c: (c.price, c.instance_type.name))
            self.filter_cache[cache_key] = cached
        return cached

    def within_limits(self, instance_type: InstanceType) -> bool:
        if self.remaining is None:
            return True
        capacity = instance_type.capacity
        return all(capacity.get(name, 0) <= left for name, left in self.remaining.items())

    def reserve(self, previous: Mapping[str, int], current: Mapping[str, int]) -> None:
        if self.remaining is None:
            return
        for name in self.remaining:
            self.remaining[name] += previous.get(name, 0) - current.get(name, 0)


def _without_hostname(requirements: Requirements) -> Requirements:
    if LABEL_HOSTNAME not in requirements:
        return requirements
    return Requirements(r for k, r in requirements.items() if k != LABEL_HOSTNAME)


@dataclass(eq=False)
class ClaimTarget(Target):
    """A NodeClaim being built: it may still become any of its candidate types."""

    pool: PoolState | None = None
    requirements: Requirements = field(default_factory=Requirements)
    candidates: list[Candidate] = field(default_factory=list)
    min_allocatable: Vector = ()
    max_allocatable: Vector = ()
    reserved: dict[str, int] = field(default_factory=dict)
    version: int = 0
    committed: bool = False
    merge_cache: dict[object, tuple[Requirements, bool]] = field(default_factory=dict)

    def set_candidates(self, candidates: list[Candidate]) -> None:
        self.candidates = candidates
        width = len(self.used)
        self.min_allocatable = tuple(
            min(c.allocatable[i] for c in candidates) for i in range(width)
        )
        self.max_allocatable = tuple(
            max(c.allocatable[i] for c in candidates) for i in range(width)
        )
        pool = self.pool
        if self.committed and pool is not None and pool.remaining is not None:
            reserved = {
                name: max(c.instance_type.capacity.get(name, 0) for c in candidates)
                for name in pool.remaining
            }
            pool.reserve(self.reserved, reserved)
            self.reserved = reserved

    def set_requirements(self, requirements: Requirements) -> None:
        self.requirements = requirements
        self.version += 1
        self.merge_cache.clear()

    def domains(self, topology_key: str, universe: Sequence[str]) -> list[str]:
        if topology_key == LABEL_HOSTNAME:
            return [self.hostname]
        requirement = self.requirements.get(topology_key)
        if requirement is None:
            return list(universe)
        if not requirement.complement:
            return sorted(requirement.values)
        return [domain for domain in universe if requirement.has(domain)]

    def narrow(
        self, requirements: Requirements, changed: bool, need: Vector
    ) -> tuple[list[Candidate] | None, str | None]:
        """Candidates that satisfy `requirements` and hold `need`; None and why if none."""
        assert self.pool is not None
        if not changed:
            if fits(need, self.min_allocatable):
                return self.candidates, None
            if not fits(need, self.max_allocatable):
                return None, "no instance type has room"
            pool_candidates = self.candidates
        else:
            allowed = {id(c.instance_type) for c in self.candidates}
            pool_candidates = [
                c for c in self.pool.candidates_for(requirements) if id(c.instance_type) in allowed
            ]
            if not pool_candidates:
                return None, "no instance type satisfies the combined requirements"
        kept = [c for c in pool_candidates if fits(need, c.allocatable)]
        if not kept:
            return None, "no instance type has room"
        if changed or len(kept) != len(self.candidates):
            problem = min_values_problem([c.instance_type for c in kept], requirements)
            if problem is not None:
                return None, problem
        return kept, None


@dataclass(frozen=True)
class PlannedNodeClaim:
    """A NodeClaim the solver would launch."""

    name: str
    nodepool: str
    instance_types: tuple[tuple[str, float], ...]
    capacity_type: str
    zone: str | None
    price: float
    pods: tuple[str, ...]
    requirements: Requirements

    @property
    def instance_type(self) -> str:
        return self.instance_types[0][0]


def finish_claim(claim: ClaimTarget) -> PlannedNodeClaim:
    """Order the candidates by their cheapest allowed offering and describe the claim."""
    assert claim.pool is not None
    priced = []
    for candidate in claim.candidates:
        offering = cheapest_offering_of(candidate.instance_type, claim.requirements)
        if offering is not None:
            priced.append((offering, candidate.instance_type.name))
    priced.sort(key=lambda item: (item[0][0], item[1]))
    (price, capacity_type, _), _name = priced[0]
    zone_requirement = claim.requirements.get(LABEL_ZONE)
    zone = None
    if (
        zone_requirement is not None
        and not zone_requirement.complement
        and len(zone_requirement.values) == 1
    ):
        zone = next(iter(zone_requirement.values))
    return PlannedNodeClaim(
        name=claim.hostname,
        nodepool=claim.pool.name,
        instance_types=tuple((name, offering[0]) for offering, name in priced),
        capacity_type=capacity_type,
        zone=zone,
        price=price,
        pods=tuple(pod.key for pod in claim.pods),
        requirements=claim.requirements,
    )
