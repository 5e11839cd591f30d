"""Capacity reservations while a plan is built, as Karpenter's scheduler counts them
(pkg/controllers/provisioning/scheduling/reservationmanager.go and NodeClaim
offeringsToReserve).

`ReservationBook` is Karpenter's ReservationManager: the instances each reservation has
left (the least any NodePool's catalog says), and the reservations each NodeClaim (by
hostname) holds one instance of. A NodeClaim holds one instance of every reservation it
could still launch into ("pessimistically": the launch may pick any of its types), and
gives back those its pods rule out as they are added.

`to_reserve` is offeringsToReserve: the reservations a NodeClaim may hold once a pod is
added. In strict mode (the provisioner's, Karpenter's DisableReservedCapacityFallback) a
NodeClaim that could launch into a reservation but can hold none, or that would lose all it
held, refuses the pod (`ReservedOfferingError`): the pod waits for a later simulation rather
than falling back to on-demand, spot or a lower-weight NodePool. In fallback mode
(disruption's) the NodeClaim takes the pod and launches outside the reservations it could
not hold.

`pin` finishes a planned NodeClaim as Karpenter's FinalizeScheduling does: one holding
reservations is restricted to them (`karpenter.sh/capacity-type In [reserved]` and
`karpenter.k8s.aws/capacity-reservation-id In [...]`), so that its launch goes there.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from nodewright.scheduling.catalog import RESERVED, InstanceType, Offering
from nodewright.scheduling.nodepools import (
    NodePoolTemplate,
    allowed_offerings,
    min_values_problem,
)
from nodewright.scheduling.requirements import (
    LABEL_CAPACITY_TYPE,
    LABEL_RESERVATION_ID,
    LABEL_ZONE,
    LABEL_ZONE_ID,
    Requirement,
    Requirements,
)
from nodewright.scheduling.targets import PlannedNodeClaim

# Karpenter's messages (nodeclaim.go offeringsToReserve).
NONE_RESERVABLE = ("one or more instance types with compatible reserved offerings are "
                   "available, but could not be reserved")
ALL_REMOVED = ("satisfying updated nodeclaim constraints would remove all compatible "
               "reserved offering options")


class ReservationError(ValueError):
    """Karpenter panics here: a reservation no catalog offers, or one held beyond its
    instances. Either is a bug in the solver."""


class ReservationBook:
    """Instances left per reservation and the reservations each NodeClaim holds."""

    def __init__(self, capacity: dict[str, int]) -> None:
        self.capacity = dict(capacity)
        self.held: dict[str, set[str]] = {}

    @classmethod
    def of(cls, templates: Iterable[NodePoolTemplate]) -> ReservationBook:
        """From the NodePools' catalogs: a reservation two catalogs offer (NodePools that
        share it, read at different times) counts its least capacity."""
        capacity: dict[str, int] = {}
        for template in templates:
            for rid, left in _catalog_capacity(template.instance_types).items():
                capacity[rid] = min(left, capacity.get(rid, left))
        return cls(capacity)

    def __bool__(self) -> bool:
        return bool(self.capacity)

    def copy(self) -> ReservationBook:
        book = ReservationBook(self.capacity)
        book.held = {host: set(ids) for host, ids in self.held.items()}
        return book

    def can_reserve(self, hostname: str, reservation: str) -> bool:
        if reservation in self.held.get(hostname, ()):
            return True
        if reservation not in self.capacity:
            raise ReservationError(
                f"attempted to reserve non-existent offering with reservation id "
                f"{reservation!r}")
        return self.capacity[reservation] > 0

    def reserve(self, hostname: str, reservations: Iterable[str]) -> None:
        for reservation in reservations:
            held = self.held.setdefault(hostname, set())
            if reservation in held:
                continue
            if reservation not in self.capacity:
                raise ReservationError(
                    f"attempted to reserve non-existent offering with reservation id "
                    f"{reservation!r}")
            if self.capacity[reservation] <= 0:
                raise ReservationError(
                    f"attempted to over-reserve an offering with reservation id "
                    f"{reservation!r}")
            self.capacity[reservation] -= 1
            held.add(reservation)

    def release(self, hostname: str, reservations: Iterable[str]) -> None:
        held = self.held.get(hostname)
        if held is None:
            return
        for reservation in reservations:
            if reservation in held:
                held.discard(reservation)
                self.capacity[reservation] += 1

    def remaining(self, reservation: str) -> int:
        return self.capacity.get(reservation, 0)

    def to_reserve(
        self, hostname: str, held: Collection[str], types: Iterable[InstanceType],
        requirements: Requirements, strict: bool,
    ) -> tuple[frozenset[str], frozenset[str], str | None]:
        """offeringsToReserve for a NodeClaim that may become any of `types` under
        `requirements`: the reservations it can hold, those it could launch into (available
        reserved offerings the requirements allow), and, in strict mode, why it must refuse
        the pod (None when it need not)."""
        compatible = reservations_of(types, requirements)
        reservable = frozenset(r for r in compatible if self.can_reserve(hostname, r))
        if strict:
            if compatible and not reservable:
                return reservable, compatible, NONE_RESERVABLE
            if held and not reservable:
                return reservable, compatible, ALL_REMOVED
        return reservable, compatible, None


_CACHED_CATALOGS = 64
# Capacity per reservation, by catalog (kept with the catalog so that its id is not reused
# while cached): most catalogs have none, and a disruption pass solves many times against
# the same ones.
_CAPACITY: dict[int, tuple[Sequence[InstanceType], dict[str, int]]] = {}


def _catalog_capacity(instance_types: Sequence[InstanceType]) -> dict[str, int]:
    cached = _CAPACITY.get(id(instance_types))
    if cached is not None and cached[0] is instance_types:
        return cached[1]
    capacity: dict[str, int] = {}
    for instance_type in instance_types:
        for offering in instance_type.offerings:
            if offering.capacity_type != RESERVED or not offering.reservation_id:
                continue
            rid = offering.reservation_id
            left = offering.reservation_capacity
            capacity[rid] = min(left, capacity.get(rid, left))
    if len(_CAPACITY) >= _CACHED_CATALOGS:
        _CAPACITY.pop(next(iter(_CAPACITY)))
    _CAPACITY[id(instance_types)] = (instance_types, capacity)
    return capacity


def reservations_of(types: Iterable[InstanceType], requirements: Requirements) -> frozenset[str]:
    """The reservations of available reserved offerings of `types` the requirements allow."""
    return frozenset(
        offering.reservation_id
        for instance_type in types
        for offering in allowed_offerings(instance_type, requirements)
        if offering.capacity_type == RESERVED and offering.reservation_id
    )


def with_reservations(types: Iterable[InstanceType]) -> frozenset[str]:
    """The names of the types with a reserved offering."""
    return frozenset(instance_type.name for instance_type in types
                     if any(offering.capacity_type == RESERVED and offering.reservation_id
                            for offering in instance_type.offerings))


def outside(requirements: Requirements, reservations: Collection[str]) -> Requirements:
    """The requirements kept out of `reservations` (a NodeClaim that could not hold them
    launches elsewhere, priced there)."""
    return _with(requirements, Requirement(LABEL_RESERVATION_ID, True, frozenset(reservations)))


@dataclass(frozen=True)
class Pinned:
    """A finished NodeClaim, or why its pods can launch nowhere (`claim` None)."""

    claim: PlannedNodeClaim | None
    reason: str = ""


def pin(claim: PlannedNodeClaim, types: Sequence[InstanceType], held: Collection[str],
        kept_out: Collection[str] = ()) -> Pinned:
    """FinalizeScheduling: a NodeClaim holding reservations is restricted to them; one that
    could launch into reservations it does not hold is kept out of them (`kept_out`: those
    it was kept out of while pods were added). When its minValues cannot be met inside its
    reservations it launches outside all of them."""
    compatible = reservations_of(types, claim.requirements)
    if not compatible:
        if kept_out:
            note = _taken(kept_out)
            return Pinned(replace(claim, why=f"{claim.why}; {note}" if claim.why else note))
        return Pinned(claim)
    if held:
        reserved = _with(_with(claim.requirements,
                               Requirement.single(LABEL_CAPACITY_TYPE, RESERVED)),
                         Requirement(LABEL_RESERVATION_ID, False, frozenset(held)))
        kept = _priced(types, reserved)
        if kept and min_values_problem([it for _, it in kept], reserved) is None:
            ids = ", ".join(sorted(held))
            return Pinned(_planned(claim, kept, reserved,
                                   f"launches into capacity reservation {ids}"))
        note = "its minValues cannot be met inside a capacity reservation"
    else:
        note = _taken(compatible)
    requirements = outside(claim.requirements, compatible)
    priced = _priced(types, requirements)
    if not priced:
        return Pinned(None, "the capacity reservations it may launch into have no instances "
                            "left: " + ", ".join(sorted(compatible)))
    return Pinned(_planned(claim, priced, requirements, note))


def _taken(reservations: Collection[str]) -> str:
    return (f"capacity reservation(s) {', '.join(sorted(reservations))} taken by earlier "
            "NodeClaims")


def _cheapest(offerings: Sequence[Offering]) -> Offering:
    return min(offerings, key=lambda o: (o.price, o.capacity_type, o.zone,
                                         o.reservation_id or ""))


def _with(requirements: Requirements, requirement: Requirement) -> Requirements:
    narrowed = requirements.copy()
    narrowed.add(requirement)
    return narrowed


def _priced(
    types: Sequence[InstanceType], requirements: Requirements,
) -> list[tuple[float, InstanceType]]:
    """The types with an allowed offering, cheapest first, each at its cheapest price."""
    priced = []
    for instance_type in types:
        offerings = allowed_offerings(instance_type, requirements)
        if offerings:
            priced.append((min(o.price for o in offerings), instance_type))
    priced.sort(key=lambda entry: (entry[0], entry[1].name))
    return priced


def _single_value(requirement: Requirement | None) -> bool:
    return (
        requirement is not None and not requirement.complement and len(requirement.values) == 1
    )


def _planned(
    claim: PlannedNodeClaim, priced: Sequence[tuple[float, InstanceType]],
    requirements: Requirements, note: str,
) -> PlannedNodeClaim:
    """The claim re-priced under narrowed requirements (as `targets.finish_claim` prices)."""
    best = _cheapest(allowed_offerings(priced[0][1], requirements))
    one_zone = (_single_value(requirements.get(LABEL_ZONE))
                or _single_value(requirements.get(LABEL_ZONE_ID)))
    return replace(
        claim,
        instance_types=tuple((it.name, price) for price, it in priced),
        capacity_type=best.capacity_type,
        zone=best.zone if one_zone else None,
        price=best.price,
        requirements=requirements,
        price_estimated=best.price_estimated,
        why=f"{claim.why}; {note}" if claim.why else note,
    )
