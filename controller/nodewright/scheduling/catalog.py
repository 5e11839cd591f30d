"""The instance catalog: every launchable instance type with its labels, resources and offerings.

`build_catalog` turns DescribeInstanceTypes / DescribeInstanceTypeOfferings-shaped data plus a
price source into `InstanceType`s; `offline_catalog` feeds it the data set moto ships, so the
catalog works with no AWS account.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass, KubeletConfiguration
from nodewright.api.quantity import Resources
from nodewright.scheduling import allocatable as alloc
from nodewright.scheduling import labels as well_known
from nodewright.scheduling import offline_data
from nodewright.scheduling.allocatable import NodeSettings, Overhead
from nodewright.scheduling.ec2_info import InstanceTypeFacts, read_instance_type
from nodewright.scheduling.pricing import (
    OfflinePriceSource,
    PriceSource,
    estimate_on_demand,
    estimate_spot,
    estimates_unpriced,
)

ON_DEMAND = "on-demand"
SPOT = "spot"
RESERVED = "reserved"
CAPACITY_TYPES = (ON_DEMAND, SPOT)

UnavailableOfferings = Callable[[str, str, str], bool] | Collection[tuple[str, str, str]]
"""Offerings known to be out of capacity, keyed by (instance type, zone, capacity type)."""


@dataclass(frozen=True, slots=True)
class Offering:
    """One way to buy an instance type: a zone and a capacity type, at an hourly price."""

    zone: str
    zone_id: str | None
    capacity_type: str
    price: float
    available: bool = True
    price_estimated: bool = False
    # A NodeOverlay set or adjusted the price.
    price_overlaid: bool = False
    # A `reserved` offering: the capacity reservation it launches into, and its type
    # (default or capacity-block), whether EC2 may reclaim it (an interruptible reservation),
    # and how many instances it has left (what a plan may launch into it).
    reservation_id: str | None = None
    reservation_type: str | None = None
    reservation_interruptible: bool = False
    reservation_capacity: int = 0
    # The partition of a partition placement group this offering launches into (AWS).
    partition: str | None = None
    # Unavailable only because no price is known (a live price source without one, as
    # Karpenter); a NodeOverlay that sets a price makes it available again.
    unpriced: bool = False
    # In a zone where EC2 offers the type but the node class has no subnet: listed (and
    # priced) as Karpenter lists every zone of the region, never available, and not one of
    # the type's zones (scheduling and topology see only the subnets' zones).
    no_subnet: bool = False


@dataclass(frozen=True, slots=True)
class InstanceType:
    """An instance type as scheduling sees it. `allocatable` is capacity minus overhead.

    `labels` holds the labels every node of this type carries (instance type, arch, os, region,
    karpenter.k8s.aws/instance-*); zone, zone id and capacity type vary per offering.
    """

    name: str
    labels: dict[str, str]
    capacity: Resources
    overhead: Overhead
    offerings: tuple[Offering, ...]
    # A NodeOverlay added extended resources to the capacity.
    capacity_overlaid: bool = False
    allocatable: Resources = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allocatable", alloc.allocatable(self.capacity, self.overhead))

    def cheapest_offering(
        self,
        zones: Collection[str] | None = None,
        capacity_types: Collection[str] | None = None,
    ) -> Offering | None:
        """The cheapest available offering, optionally within some zones and capacity types."""
        candidates = [
            offering
            for offering in self.offerings
            if offering.available
            and (zones is None or offering.zone in zones)
            and (capacity_types is None or offering.capacity_type in capacity_types)
        ]
        if not candidates:
            return None
        return min(candidates, key=lambda o: (o.price, o.capacity_type, o.zone))

    def zones(self) -> list[str]:
        """The zones nodes of this type can be launched in (offered, with a subnet)."""
        return sorted({offering.zone for offering in self.offerings if not offering.no_subnet})

    def capacity_types(self) -> list[str]:
        return sorted({offering.capacity_type for offering in self.offerings
                       if not offering.no_subnet})


def build_catalog(
    instance_types: Iterable[Mapping[str, Any]] | Mapping[str, Any],
    offerings: Iterable[Mapping[str, Any]] | Mapping[str, Any],
    region: str,
    prices: PriceSource | None = None,
    kubelet: KubeletConfiguration | None = None,
    *,
    node_class: EC2NodeClass | None = None,
    settings: NodeSettings | None = None,
    provider: alloc.ProviderSettings | None = None,
    zone_ids: Mapping[str, str] | None = None,
    zones: Collection[str] | None = None,
    subnet_zones: Collection[str] | None = None,
    unavailable: UnavailableOfferings | None = None,
) -> list[InstanceType]:
    """Build the catalog, sorted by name.

    instance_types: DescribeInstanceTypes entries (or a whole response with "InstanceTypes").
    offerings: DescribeInstanceTypeOfferings entries with LocationType availability-zone (or a
    response with "InstanceTypeOfferings"); a type is offered where it has an entry.
    prices: where prices come from; a missing price is estimated and marked so when the
    source says so (`estimates_unpriced`: offline sources), else the offering is unavailable
    (live prices, as Karpenter: an offering without a price is never launched).
    kubelet / node_class / settings / provider: what changes allocatable (see
    allocatable.node_settings; `settings` wins over the others).
    zone_ids: zone name -> zone id; zones: keep only these zones; subnet_zones: the zones the
    node class has a subnet in (None: every zone): offerings elsewhere are listed unavailable
    (`no_subnet`), as Karpenter lists every zone; unavailable: offerings known to be out of
    capacity (a predicate or a set of (type, zone, capacity type)).
    Types without an offering in a subnet's zone, or with an architecture Kubernetes cannot
    run, are left out.
    """
    resolved = (settings if settings is not None
                else alloc.node_settings(kubelet, node_class, provider))
    zones_by_type = offered_zones(offerings, zones)
    return catalog_from_facts(
        read_instance_types(instance_types),
        zones_by_type,
        region,
        prices,
        resolved,
        zone_ids=zone_ids,
        subnet_zones=subnet_zones,
        unavailable=unavailable,
    )


def read_instance_types(
    instance_types: Iterable[Mapping[str, Any]] | Mapping[str, Any],
) -> tuple[InstanceTypeFacts, ...]:
    """DescribeInstanceTypes entries (or a whole response) read into facts, in order."""
    facts: list[InstanceTypeFacts] = []
    for index, info in enumerate(_entries(instance_types, "InstanceTypes")):
        try:
            facts.append(read_instance_type(info))
        except ValueError as error:
            raise ValueError(f"InstanceTypes[{index}]: {error}") from None
    return tuple(facts)


def offered_zones(
    offerings: Iterable[Mapping[str, Any]] | Mapping[str, Any],
    zones: Collection[str] | None = None,
) -> dict[str, frozenset[str]]:
    """Instance type -> the zones DescribeInstanceTypeOfferings offers it in (only `zones`,
    when given)."""
    by_type = _zones_by_type(_entries(offerings, "InstanceTypeOfferings"), zones)
    return {name: frozenset(found) for name, found in by_type.items()}


def catalog_from_facts(
    facts: Iterable[InstanceTypeFacts],
    zones_by_type: Mapping[str, AbstractSet[str]],
    region: str,
    prices: PriceSource | None,
    settings: NodeSettings,
    *,
    zone_ids: Mapping[str, str] | None = None,
    subnet_zones: Collection[str] | None = None,
    unavailable: UnavailableOfferings | None = None,
) -> list[InstanceType]:
    """`build_catalog` from types already read (`read_instance_types`) and their zones
    (`offered_zones`). Which types are listed depends on the settings and zones only, never
    on prices or unavailable offerings: a type rebuilt alone is the one a whole build lists."""
    price_source = prices if prices is not None else OfflinePriceSource()
    estimate = estimates_unpriced(price_source)
    is_unavailable = _unavailable_predicate(unavailable)
    catalog: list[InstanceType] = []
    for fact in facts:
        type_zones = zones_by_type.get(fact.name)
        if (not type_zones or not _schedulable(fact, settings)
                or (subnet_zones is not None and type_zones.isdisjoint(subnet_zones))):
            continue
        catalog.append(
            _instance_type(
                fact, region, sorted(type_zones), price_source, settings, zone_ids or {},
                is_unavailable, estimate, subnet_zones,
            )
        )
    catalog.sort(key=lambda it: it.name)
    return catalog


def offline_catalog(
    region: str = "us-east-1",
    zones: Sequence[str] | None = None,
    kubelet: KubeletConfiguration | None = None,
    *,
    node_class: EC2NodeClass | None = None,
    prices: PriceSource | None = None,
    unavailable: UnavailableOfferings | None = None,
) -> list[InstanceType]:
    """The catalog for a region from moto's bundled EC2 data (no AWS account needed).

    zones: zone names ("us-east-1a") or bare letters ("a"); default: the region's first three.
    Built catalogs are cached per region, zones and node settings.
    """
    settings = alloc.node_settings(kubelet, node_class)
    chosen = offline_data.resolve_zones(region, zones)
    if prices is not None or unavailable is not None:
        return _offline_build(region, chosen, settings, prices, unavailable)
    key = (region, chosen, settings.cache_key())
    if key not in _OFFLINE_CATALOGS:
        if len(_OFFLINE_CATALOGS) >= _CACHED_OFFLINE_CATALOGS:
            _OFFLINE_CATALOGS.pop(next(iter(_OFFLINE_CATALOGS)))
        _OFFLINE_CATALOGS[key] = tuple(_offline_build(region, chosen, settings, None, None))
    return list(_OFFLINE_CATALOGS[key])


_CACHED_OFFLINE_CATALOGS = 16
# Built catalogs by (region, zones, node settings); instance types are shared, so read-only.
_OFFLINE_CATALOGS: dict[tuple[object, ...], tuple[InstanceType, ...]] = {}


def _offline_build(
    region: str,
    zones: tuple[str, ...],
    settings: NodeSettings,
    prices: PriceSource | None,
    unavailable: UnavailableOfferings | None,
) -> list[InstanceType]:
    offerings = offline_data.offerings(region)
    wanted = {entry["InstanceType"] for entry in offerings}
    return build_catalog(
        [info for info in offline_data.instance_types() if info["InstanceType"] in wanted],
        offerings,
        region,
        prices if prices is not None else OfflinePriceSource(),
        settings=settings,
        zone_ids=offline_data.zone_ids(region),
        zones=zones,
        unavailable=unavailable,
    )


def _instance_type(
    facts: InstanceTypeFacts,
    region: str,
    zones: list[str],
    prices: PriceSource,
    settings: NodeSettings,
    zone_ids: Mapping[str, str],
    is_unavailable: Callable[[str, str, str], bool],
    estimate: bool,
    subnet_zones: Collection[str] | None = None,
) -> InstanceType:
    listed = prices.on_demand(facts.name, region)
    on_demand_price = listed if listed is not None else estimate_on_demand(facts, region)
    offerings: list[Offering] = []
    capacity_types = [ct for ct in CAPACITY_TYPES if ct in facts.usage_classes]
    for zone in zones:
        no_subnet = subnet_zones is not None and zone not in subnet_zones
        for capacity_type in capacity_types:
            if capacity_type == ON_DEMAND:
                price, estimated = on_demand_price, listed is None
            else:
                spot = prices.spot(facts.name, zone)
                price = spot if spot is not None else estimate_spot(facts, on_demand_price)
                estimated = spot is None
            unavailable = no_subnet or is_unavailable(facts.name, zone, capacity_type)
            unpriced = estimated and not estimate and not unavailable
            offerings.append(
                Offering(
                    zone=zone,
                    zone_id=zone_ids.get(zone),
                    capacity_type=capacity_type,
                    price=price,
                    available=not unavailable and not unpriced,
                    price_estimated=estimated,
                    unpriced=unpriced,
                    no_subnet=no_subnet,
                )
            )
    return InstanceType(
        name=facts.name,
        labels=well_known.instance_type_labels(facts, region, settings.ami_family),
        capacity=alloc.capacity(facts, settings),
        overhead=alloc.overhead(facts, settings),
        offerings=tuple(offerings),
    )


def _schedulable(facts: InstanceTypeFacts, settings: NodeSettings) -> bool:
    if not facts.architecture:
        return False
    if not any(ct in facts.usage_classes for ct in CAPACITY_TYPES):
        return False
    if settings.nested_virtualization and "nested-virtualization" not in facts.processor_features:
        return False
    if settings.network_interfaces is not None and not _takes_interfaces(facts, settings):
        return False
    if (settings.placement_strategy is not None
            and settings.placement_strategy not in facts.placement_strategies):
        return False
    # Karpenter's compatibility checks: AL2023 does not boot on a1 (Graviton 1) types, and
    # EC2 takes connection tracking timeouts only on Nitro types.
    if settings.ami_family == "AL2023" and facts.name.startswith("a1."):
        return False
    if settings.connection_tracking and facts.hypervisor != "nitro":
        return False
    # Windows nodes only run on amd64.
    return not (settings.ami_family.startswith("Windows") and facts.architecture != "amd64")


def _takes_interfaces(facts: InstanceTypeFacts, settings: NodeSettings) -> bool:
    """Whether the type has the network cards, device slots and EFA devices the listed
    interfaces need (Karpenter's network interface compatibility check)."""
    if not facts.network_cards or not facts.ena_supported:
        return False
    cards = dict(facts.network_cards)
    for card, device, _ in settings.network_interfaces or ():
        if card >= len(facts.network_cards) or device >= cards.get(card, 0):
            return False
    efa_only = settings.efa_only_interfaces
    return efa_only == 0 or efa_only <= facts.efa_interfaces


def _entries(data: Iterable[Mapping[str, Any]] | Mapping[str, Any], key: str) -> list[Any]:
    if isinstance(data, Mapping):
        entries = data.get(key)
        if not isinstance(entries, list):
            raise ValueError(f"{key}: expected a list in the response")
        return entries
    return list(data)


def _zones_by_type(
    offerings: list[Any], wanted: Collection[str] | None
) -> dict[str, set[str]]:
    wanted_set = set(wanted) if wanted is not None else None
    result: dict[str, set[str]] = {}
    for index, entry in enumerate(offerings):
        if not isinstance(entry, Mapping) or "InstanceType" not in entry or "Location" not in entry:
            raise ValueError(
                f"InstanceTypeOfferings[{index}]: expected InstanceType and Location, got {entry!r}"
            )
        if entry.get("LocationType", "availability-zone") != "availability-zone":
            raise ValueError(
                f"InstanceTypeOfferings[{index}].LocationType: expected availability-zone, "
                f"got {entry['LocationType']!r}"
            )
        zone = str(entry["Location"])
        if wanted_set is None or zone in wanted_set:
            result.setdefault(str(entry["InstanceType"]), set()).add(zone)
    return result


def _unavailable_predicate(
    unavailable: UnavailableOfferings | None,
) -> Callable[[str, str, str], bool]:
    if unavailable is None:
        return lambda _type, _zone, _capacity_type: False
    if callable(unavailable):
        return unavailable
    keys = frozenset(unavailable)
    return lambda name, zone, capacity_type: (name, zone, capacity_type) in keys
