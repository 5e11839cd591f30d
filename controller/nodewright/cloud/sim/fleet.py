"""Which offerings a simulated CreateFleet request carries and the order EC2 tries them.

This is the choice Karpenter's AWS provider and EC2 make together: the NodeClaim's
compatible, available offerings narrowed by Karpenter's launch-time filters (the same
`nodewright.scheduling.launch_filters` the AWS provider runs: requests fit, one kind of
reservation, exotic types only when nothing else is left, no spot dearer than on-demand);
spot when the NodeClaim allows it and any spot offering is available, on-demand otherwise;
at most 60 instance types, cheapest first. On-demand fleets use lowest-price; spot fleets
price-capacity-optimized, which picks, among the offerings priced close to the cheapest,
the one with the most capacity left. Exact ties are broken by the simulation's seeded
random generator.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from nodewright.cloud.aws.offerings import Choice, capacity_type_for
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.launch_filters import filter_for_launch
from nodewright.scheduling.offering_labels import OFFERING_VALUES, OfferingCheck
from nodewright.scheduling.requirements import Requirement, Requirements

MAX_INSTANCE_TYPES: Final = 60
SPOT: Final = "spot"
ON_DEMAND: Final = "on-demand"
# price-capacity-optimized weighs capacity among offerings at most this much dearer than
# the cheapest one left (EC2 does not publish its band; a fifth keeps the cheapest pools
# in play while letting deeper pools win).
PRICE_BAND: Final = 0.20

Remaining = Callable[[str, str, str], float]  # (type, zone, capacity type) -> launches left


def eligible(
    catalog: Sequence[InstanceType],
    requirements: Requirements,
    requests: Mapping[str, int],
    zones: Sequence[str],
) -> list[Choice]:
    """Available offerings, in the given zones, compatible with the requirements, narrowed
    by Karpenter's launch-time filters (fit, reservations, exotic types, dear spot)."""
    return EligibleOfferings(size=0)(catalog, requirements, requests, zones)


@dataclass(frozen=True, slots=True)
class _Admitted:
    """A type whose labels satisfy the requirements, with its admitted offerings."""

    instance_type: InstanceType
    choices: tuple[Choice, ...]


class EligibleOfferings:
    """`eligible`, remembering per (catalog, requirements, zones) which types and offerings
    the requirements admit, so that a launch only runs the launch filters on those.

    NodeClaims of one provisioning batch share a handful of requirement sets, and matching
    the catalog's types and offerings against them is most of a CreateFleet's work. The
    catalog is part of the key by identity: the simulated EC2 hands out a new catalog
    object whenever prices or unavailable offerings change, which retires the entries
    built on the old one. Entries share one `Choice` per available offering of the
    catalog; the least recently used go beyond `size`.
    """

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._entries: OrderedDict[
            tuple[int, frozenset[Requirement], tuple[str, ...]],
            tuple[Sequence[InstanceType], list[_Admitted]],
        ] = OrderedDict()
        self._catalog: Sequence[InstanceType] = ()
        self._offered: dict[str, tuple[Choice, ...]] = {}  # type name -> available offerings
        self.hits = 0
        self.misses = 0

    def __call__(
        self,
        catalog: Sequence[InstanceType],
        requirements: Requirements,
        requests: Mapping[str, int],
        zones: Sequence[str],
    ) -> list[Choice]:
        checks = tuple(requirements.items())  # read once: Requirements is a Mapping
        key = (id(catalog), frozenset(requirement for _, requirement in checks), tuple(zones))
        entry = self._entries.get(key)
        if entry is not None and entry[0] is catalog:
            self.hits += 1
            self._entries.move_to_end(key)
            admitted = entry[1]
        else:
            self.misses += 1
            admitted = self._admit(catalog, checks, zones)
            if self.size > 0:
                # The catalog is kept with its entry, so its id cannot be reused meanwhile.
                self._entries[key] = (catalog, admitted)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        choices = [choice for a in admitted for choice in a.choices]
        return filter_for_launch(choices, requirements, requests).choices

    def _admit(
        self,
        catalog: Sequence[InstanceType],
        checks: Sequence[tuple[str, Requirement]],
        zones: Sequence[str],
    ) -> list[_Admitted]:
        if self._catalog is not catalog:
            self._catalog, self._offered = catalog, {}
        allowed = _OfferingFilter(checks, zones)
        admitted = []
        for it in catalog:
            if not _satisfies(checks, it.labels):
                continue
            offered = self._offered.get(it.name)
            if offered is None:
                offered = self._offered[it.name] = tuple(
                    Choice(it, offering) for offering in it.offerings if offering.available
                )
            kept = tuple(choice for choice in offered if allowed(choice.offering))
            if kept:
                admitted.append(_Admitted(it, offered if len(kept) == len(offered) else kept))
        return admitted


def capacity_type(choices: Sequence[Choice]) -> str | None:
    """Spot when any eligible offering is spot, else on-demand; None when nothing is left."""
    return capacity_type_for(choices)


def overrides(choices: Sequence[Choice], chosen_capacity_type: str) -> list[Choice]:
    """The fleet's overrides: offerings of the capacity type on the 60 instance types with
    the cheapest offering, every zone of those types kept."""
    of_type = [c for c in choices if c.offering.capacity_type == chosen_capacity_type]
    best: dict[str, float] = {}
    for choice in of_type:
        name = choice.instance_type.name
        best[name] = min(choice.offering.price, best.get(name, choice.offering.price))
    kept = set(sorted(best, key=lambda name: (best[name], name))[:MAX_INSTANCE_TYPES])
    return [c for c in of_type if c.instance_type.name in kept]


def launch_sequence(
    candidates: Sequence[Choice], remaining: Remaining, rng: random.Random
) -> Iterator[Choice]:
    """The order a fleet tries its overrides (the first with capacity launches), produced
    as it is consumed: a fleet stops at the first offering
    with capacity, so usually only the first pick is worked out. The seeded tie breaks
    are drawn up front for every candidate, so the order does not depend on how far it
    is read."""
    ordered = sorted(candidates, key=lambda c: (c.instance_type.name, c.offering.zone))
    tie_break = {id(c): rng.random() for c in ordered}
    if not ordered or ordered[0].offering.capacity_type != SPOT:
        return iter(sorted(ordered, key=lambda c: (c.offering.price, tie_break[id(c)])))
    return _price_capacity_optimized(ordered, remaining, tie_break)


def _price_capacity_optimized(
    candidates: list[Choice], remaining: Remaining, tie_break: Mapping[int, float]
) -> Iterator[Choice]:
    left = list(candidates)
    while left:
        floor = min(c.offering.price for c in left)
        band = [c for c in left if c.offering.price <= floor * (1 + PRICE_BAND)]
        pick = min(
            band,
            key=lambda c: (
                -remaining(c.instance_type.name, c.offering.zone, c.offering.capacity_type),
                c.offering.price,
                tie_break[id(c)],
            ),
        )
        yield pick
        left.remove(pick)


def _satisfies(
    checks: Sequence[tuple[str, Requirement]], labels: Mapping[str, str]
) -> bool:
    """Requirements on keys these labels define must accept their value; other keys (the
    NodePool's own labels) are not the instance's business."""
    for key, requirement in checks:
        value = labels.get(key)
        if value is not None and not requirement.matches_label(value):
            return False
    return True


class _OfferingFilter:
    """Whether an offering is in the allowed zones and the requirements allow its offering
    labels (zone, zone ID, capacity type, capacity reservation, partition); judged once per
    distinct set of those, of which a region has a handful."""

    def __init__(self, checks: Sequence[tuple[str, Requirement]], zones: Sequence[str]) -> None:
        self._allowed = OfferingCheck(Requirements(
            requirement for key, requirement in checks if key in OFFERING_VALUES))
        self._zones = frozenset(zones)
        self._verdicts: dict[tuple[str | None, ...], bool] = {}

    def __call__(self, offering: Offering) -> bool:
        key = (offering.zone, offering.zone_id, offering.capacity_type, offering.reservation_id,
               offering.reservation_type, str(offering.reservation_interruptible),
               offering.partition)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = self._verdicts[key] = (
                offering.zone in self._zones and self._allowed(offering))
        return verdict
