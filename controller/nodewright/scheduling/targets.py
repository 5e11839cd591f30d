"""Where a pod can go: an existing node or a NodeClaim the solver is building.

Resources are held as fixed-length integer vectors (one slot per resource name of the
solve) so that fit checks are a handful of integer comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import add as _plus
from operator import le

from nodewright.scheduling.catalog import InstanceType
from nodewright.scheduling.daemons import DaemonLoad
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    cheapest_offering_of,
    cheapest_price,
    labels_compatible,
    min_values_problem,
    relaxed_min_values,
)
from nodewright.scheduling.pods import HostPort, Pod, Taint
from nodewright.scheduling.requirements import (
    LABEL_HOSTNAME,
    LABEL_PARTITION,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    Requirement,
    Requirements,
)
from nodewright.scheduling.topology import TopologyGroup
from nodewright.scheduling.volumes import limits_exceeded

Vector = tuple[int, ...]


class ResourceIndex:
    """Maps resource names to vector slots for one solve."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)

    def vector(self, resources: Mapping[str, int]) -> Vector:
        return tuple(resources.get(name, 0) for name in self.names)

    def add(self, a: Vector, b: Vector) -> Vector:
        # map() rather than a generator over zip(): the fit checks' hottest line.
        if len(a) != len(b):
            raise ValueError(f"vectors of {len(a)} and {len(b)} slots")
        return tuple(map(_plus, a, b))


def fits(need: Vector, have: Vector) -> bool:
    return all(map(le, need, have))


@dataclass(slots=True)
class Candidate:
    """An instance type a NodeClaim may still become, with its price under the claim's
    requirements."""

    instance_type: InstanceType
    # Its allocatable less what the DaemonSets that run on it take (`daemons`).
    allocatable: Vector
    price: float
    # What those DaemonSets take (added back for a node's whole room).
    overhead: Vector = ()
    # (name, price) as a planned NodeClaim lists it, built once and shared by every claim
    # (thousands of claims list hundreds of types each).
    entry: tuple[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.entry = (self.instance_type.name, self.price)


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
    volume_limits: Mapping[str, int] = field(default_factory=dict)
    # Claims mounted there, by CSI driver (counted against `volume_limits`).
    volumes: dict[str, frozenset[str]] = field(default_factory=dict)

    def copy(self) -> ExistingTarget:
        """The same target, its pods, ports, unrecorded pods and volumes a list (or dict)
        of its own; cheaper than building one (a disruption pass copies every node for
        each plan of each simulation)."""
        twin = object.__new__(ExistingTarget)
        state = twin.__dict__
        state.update(self.__dict__)
        state["pods"] = list(self.pods)
        state["host_ports"] = list(self.host_ports)
        state["unrecorded"] = list(self.unrecorded)
        state["volumes"] = dict(self.volumes)
        return twin

    def volume_limit_reason(self, pod: Pod) -> str | None:
        return limits_exceeded(self.volumes, self.volume_limits, pod.volumes)

    def add_volumes(self, pod: Pod) -> None:
        for driver, claim in pod.volumes:
            self.volumes[driver] = self.volumes.get(driver, frozenset()) | {claim}

    def domains(self, topology_key: str) -> list[str]:
        value = self.labels.get(topology_key)
        return [value] if value is not None else []


@dataclass(eq=False)
class PoolState:
    """A NodePool during one solve: compatible types (their allocatable already less
    their DaemonSets' requests), limits left."""

    template: NodePoolTemplate
    requirements: Requirements
    candidates: list[Candidate]
    zero: Vector  # no resources, in the solve's slots
    remaining: dict[str, int] | None
    # The DaemonSets each type runs, by type name, when some of them hold host ports.
    daemon_ports: Mapping[str, DaemonLoad] = field(default_factory=dict)
    port_cache: dict[tuple[HostPort, ...], frozenset[str]] = field(default_factory=dict)
    # Types left out because their DaemonSets take more than they hold.
    overfilled: int = 0
    values_cache: dict[tuple[int, int, str], tuple[list[Candidate], list[str] | None]] = field(
        default_factory=dict
    )
    filter_cache: dict[Requirements, list[Candidate]] = field(default_factory=dict)
    first_fit_cache: dict[tuple[int, int, Vector], tuple[list[Candidate], int | None]] = field(
        default_factory=dict
    )
    bounds_cache: dict[int, tuple[list[Candidate], Vector, Vector]] = field(default_factory=dict)
    within_cache: tuple[tuple[int, ...], list[Candidate]] | None = None
    restricted_cache: dict[
        tuple[int, int, Requirements], tuple[list[Candidate], list[Candidate]]
    ] = field(default_factory=dict)
    restricted_shared: dict[
        tuple[int, int, int], tuple[list[Candidate], list[Candidate], list[Candidate]]
    ] = field(default_factory=dict)
    # finish_claim's fitting types (and their entries) per (candidate list, start, used):
    # packed NodeClaims repeat a few patterns hundreds of times.
    fitting_cache: dict[
        tuple[int, int, Vector],
        tuple[list[Candidate], list[Candidate], tuple[tuple[str, float], ...]],
    ] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.template.name

    def port_blocked_types(self, pod: Pod) -> frozenset[str]:
        """The types on which a DaemonSet that runs there holds one of the pod's host
        ports (Karpenter skips those types' overhead group)."""
        cached = self.port_cache.get(pod.host_ports)
        if cached is None:
            cached = frozenset(
                name for name, load in self.daemon_ports.items()
                if load.port_conflict(pod.host_ports) is not None
            )
            self.port_cache[pod.host_ports] = cached
        return cached

    def label_values(self, candidates: list[Candidate], start: int, key: str) -> list[str] | None:
        """The values the label `key` takes over `candidates[start:]`, sorted (the topology
        domains a NodeClaim that may still become any of them has); None when none of
        them carries the label."""
        cache_key = (id(candidates), start, key)
        cached = self.values_cache.get(cache_key)
        if cached is not None and cached[0] is candidates:
            return cached[1]
        found = {
            value
            for candidate in candidates[start:]
            if (value := candidate.instance_type.labels.get(key)) is not None
        }
        values = sorted(found) if found else None
        # The list is kept in the value so that its id cannot be reused while cached.
        self.values_cache[cache_key] = (candidates, values)
        return values

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
                cached.append(Candidate(candidate.instance_type, candidate.allocatable, price,
                                        candidate.overhead))
            cached.sort(key=lambda c: (c.price, c.instance_type.name))
            self.filter_cache[cache_key] = cached
        return cached

    def bounds(self, candidates: list[Candidate]) -> tuple[Vector, Vector]:
        """Per-resource minimum and maximum allocatable over the candidates (memoised)."""
        cached = self.bounds_cache.get(id(candidates))
        if cached is not None and cached[0] is candidates:
            return cached[1], cached[2]
        width = len(self.zero)
        low = tuple(min(c.allocatable[i] for c in candidates) for i in range(width))
        high = tuple(max(c.allocatable[i] for c in candidates) for i in range(width))
        self.bounds_cache[id(candidates)] = (candidates, low, high)
        return low, high

    def restricted(
        self, candidates: list[Candidate], start: int, requirements: Requirements
    ) -> list[Candidate]:
        """`candidates[start:]` still allowed by `requirements`, repriced under them."""
        key = (id(candidates), start, requirements)
        cached = self.restricted_cache.get(key)
        if cached is not None and cached[0] is candidates:
            return cached[1]
        compatible = self.candidates_for(requirements)
        # Requirements that differ only in the hostname give the same list: one object
        # for all of them (thousands of open NodeClaims would otherwise each hold a copy).
        shared_key = (id(compatible), id(candidates), start)
        shared = self.restricted_shared.get(shared_key)
        if shared is not None and shared[0] is compatible and shared[1] is candidates:
            result = shared[2]
        else:
            allowed = {id(c.instance_type) for c in candidates[start:]}
            result = [c for c in compatible if id(c.instance_type) in allowed]
            self.restricted_shared[shared_key] = (compatible, candidates, result)
        self.restricted_cache[key] = (candidates, result)
        return result

    def first_fit(self, candidates: list[Candidate], start: int, need: Vector) -> int | None:
        """Index of the first candidate from `start` on that holds `need` (memoised: many
        NodeClaims start from the same list with the same first pod)."""
        key = (id(candidates), start, need)
        cached = self.first_fit_cache.get(key)
        if cached is not None and cached[0] is candidates:
            return cached[1]
        index = next(
            (i for i in range(start, len(candidates)) if fits(need, candidates[i].allocatable)),
            None,
        )
        # The list is kept in the value so that its id cannot be reused while cached.
        self.first_fit_cache[key] = (candidates, index)
        return index

    def candidates_within_limits(self) -> list[Candidate]:
        """The types a new NodeClaim may still take under the limits left; the same list
        while the room left is the same (a solve asks once per pod that opens one)."""
        if self.remaining is None:
            return self.candidates
        room = tuple(self.remaining.values())
        if self.within_cache is not None and self.within_cache[0] == room:
            return self.within_cache[1]
        within = [c for c in self.candidates if self.within_limits(c.instance_type)]
        self.within_cache = (room, within)
        return within

    def within_limits(self, instance_type: InstanceType) -> bool:
        if self.remaining is None:
            return True
        return all(
            limited_amount(instance_type, name) <= left for name, left in self.remaining.items()
        )

    def reserve(self, previous: Mapping[str, int], current: Mapping[str, int]) -> None:
        if self.remaining is None:
            return
        for name in self.remaining:
            self.remaining[name] += previous.get(name, 0) - current.get(name, 0)


LIMIT_NODES = "nodes"
"""`spec.limits.nodes`: a NodePool's limit on its number of nodes (Karpenter enforces it
beside the resource limits); each node counts as one."""


def limited_amount(instance_type: InstanceType, name: str) -> int:
    """What one node of this type counts against the limit `name` (milli-units)."""
    if name == LIMIT_NODES:
        return 1000
    return instance_type.capacity.get(name, 0)


def _without_hostname(requirements: Requirements) -> Requirements:
    if LABEL_HOSTNAME not in requirements:
        return requirements
    return Requirements(r for k, r in requirements.items() if k != LABEL_HOSTNAME)


@dataclass(slots=True)
class Narrowed:
    """The instance types a NodeClaim may still become: `candidates[start]` is the cheapest
    that holds the NodeClaim's pods; later entries are cheaper-first but only checked for
    room when they are needed (room only ever shrinks, so a skipped entry never returns)."""

    candidates: list[Candidate]
    start: int

    @property
    def cheapest(self) -> Candidate:
        return self.candidates[self.start]

    def fitting(self, need: Vector) -> list[Candidate]:
        return [c for c in self.candidates[self.start :] if fits(need, c.allocatable)]


@dataclass(eq=False)
class ClaimTarget(Target):
    """A NodeClaim being built: it may still become any of its candidate types that fit."""

    pool: PoolState | None = None
    requirements: Requirements = field(default_factory=Requirements)
    candidates: list[Candidate] = field(default_factory=list)
    start: int = 0
    min_allocatable: Vector = ()
    max_allocatable: Vector = ()
    reserved: dict[str, int] = field(default_factory=dict)
    version: int = 0
    committed: bool = False
    # Whether the claim ever grew past the price of a separate node (the efficiency rule).
    grew_by_efficiency: bool = False
    merge_cache: dict[object, tuple[Requirements, bool]] = field(default_factory=dict)
    # Why its pods are together (shown by `plan`).
    why: str = ""
    # The capacity reservations it holds an instance of (`reservations.ReservationBook`).
    held: frozenset[str] = frozenset()
    # Those it could have launched into but found taken (it launches outside them).
    kept_out: frozenset[str] = frozenset()

    @property
    def cheapest(self) -> Candidate:
        return self.candidates[self.start]

    def set_candidates(self, candidates: list[Candidate], start: int = 0) -> None:
        if candidates is not self.candidates:
            assert self.pool is not None
            self.candidates = candidates
            self.min_allocatable, self.max_allocatable = self.pool.bounds(candidates)
        self.start = start
        pool = self.pool
        if self.committed and pool is not None and pool.remaining is not None:
            fitting = Narrowed(self.candidates, start).fitting(self.used)
            reserved = {
                name: max(limited_amount(c.instance_type, name) for c in fitting)
                for name in pool.remaining
            }
            pool.reserve(self.reserved, reserved)
            self.reserved = reserved

    def set_requirements(self, requirements: Requirements) -> None:
        self.requirements = requirements
        self.version += 1
        self.merge_cache.clear()

    def domains(self, topology_key: str, universe: Sequence[str]) -> list[str]:
        """The domains of `topology_key` the NodeClaim may still land in: its requirement's
        values, else the values its instance types may still give it (any label of theirs,
        `kubernetes.io/arch` for one), else those of the solve's `universe`."""
        if topology_key == LABEL_HOSTNAME:
            return [self.hostname]
        requirement = self.requirements.get(topology_key)
        if requirement is not None and not requirement.complement:
            return sorted(requirement.values)
        if self.pool is not None:
            values = self.pool.label_values(self.candidates, self.start, topology_key)
            if values is not None:
                universe = values
        if requirement is None:
            return list(universe)
        return [domain for domain in universe if requirement.has(domain)]

    def _restricted(self, requirements: Requirements) -> list[Candidate]:
        assert self.pool is not None
        return self.pool.restricted(self.candidates, self.start, requirements)

    def narrow(
        self, requirements: Requirements, changed: bool, need: Vector
    ) -> tuple[Narrowed | None, str | None]:
        """Candidates that satisfy `requirements` and hold `need`; None and why if none."""
        assert self.pool is not None
        # minValues (Strict) is checked on every placement, the first one included: a
        # claim never launches with fewer distinct values than a requirement asks for.
        has_min_values = any(r.min_values is not None for r in requirements.values())
        if changed:
            base = self._restricted(requirements)
            if not base:
                return None, "no instance type satisfies the combined requirements"
            start = 0
        else:
            base, start = self.candidates, self.start
            if not has_min_values and fits(need, self.min_allocatable):
                return Narrowed(base, start), None
            if not fits(need, self.max_allocatable):
                return None, "no instance type has room"
        index = self.pool.first_fit(base, start, need)
        if index is None:
            return None, "no instance type has room"
        eager = self.pool.remaining is not None or has_min_values
        if not eager:
            return Narrowed(base, index), None
        kept = Narrowed(base, index).fitting(need)
        problem = min_values_problem([c.instance_type for c in kept], requirements)
        if problem is not None and not (kept and self.pool.template.relax_min_values):
            return None, problem
        return Narrowed(kept, 0), None


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
    # The price is an estimate (no listed price for this type, zone and capacity type).
    price_estimated: bool = False
    # Why this NodeClaim holds these pods (how the solver chose it).
    why: str = ""
    # MIN_VALUES_POLICY=BestEffort lowered a minValues of its requirements.
    min_values_relaxed: bool = False
    # Keys of `requirements` (zone, zone ID, placement group partition) that hold the
    # values the NodePool's offerings give them and nothing narrower: the solve made them
    # finite to pick topology domains, no pod, spread or volume asked for them.
    offered_only: frozenset[str] = frozenset()

    @property
    def instance_type(self) -> str:
        return self.instance_types[0][0]


# Keys a pool's setup narrows to the values its offerings have (see `offered_only`);
# capacity type too, but a NodeClaim's capacity types are those of its own types anyway.
OFFERED_DOMAIN_KEYS = (LABEL_ZONE, LABEL_ZONE_ID, LABEL_PARTITION)


def _single_value(requirement: Requirement | None) -> bool:
    return (
        requirement is not None and not requirement.complement and len(requirement.values) == 1
    )


def finish_claim(claim: ClaimTarget) -> PlannedNodeClaim:
    """Describe the claim: its fitting types cheapest first (each priced by its cheapest
    offering the claim's requirements allow) and the offering the cheapest one launches."""
    assert claim.pool is not None
    key = (id(claim.candidates), claim.start, claim.used)
    cached = claim.pool.fitting_cache.get(key)
    if cached is not None and cached[0] is claim.candidates:
        fitting, entries = cached[1], cached[2]
    else:
        fitting = Narrowed(claim.candidates, claim.start).fitting(claim.used)
        fitting.sort(key=lambda c: (c.price, c.instance_type.name))
        entries = tuple(c.entry for c in fitting)
        # The list is kept in the value so that its id cannot be reused while cached.
        claim.pool.fitting_cache[key] = (claim.candidates, fitting, entries)
    offering = cheapest_offering_of(fitting[0].instance_type, claim.requirements)
    assert offering is not None
    price, capacity_type, offered_zone = offering
    estimated = any(
        o.price_estimated
        for o in fitting[0].instance_type.offerings
        if (o.zone, o.capacity_type, o.price) == (offered_zone, capacity_type, price)
    )
    zone = None
    if _single_value(claim.requirements.get(LABEL_ZONE)):
        zone = offered_zone
    elif _single_value(claim.requirements.get(LABEL_ZONE_ID)):
        # One zone id is one zone: the one its offerings are in.
        zone = offered_zone
    requirements = claim.requirements
    relaxed = None
    if claim.pool.template.relax_min_values:
        relaxed = relaxed_min_values([c.instance_type for c in fitting], requirements)
    return PlannedNodeClaim(
        name=claim.hostname,
        nodepool=claim.pool.name,
        instance_types=entries,
        capacity_type=capacity_type,
        zone=zone,
        price=price,
        pods=tuple(pod.key for pod in claim.pods),
        requirements=relaxed if relaxed is not None else requirements,
        price_estimated=estimated,
        min_values_relaxed=relaxed is not None,
        offered_only=frozenset(
            key for key in OFFERED_DOMAIN_KEYS
            if key in claim.pool.requirements
            and requirements.get(key) == claim.pool.requirements[key]),
        why=claim.why or "greedy: the first pod's NodeClaim, grown while that was cheapest",
    )
