"""The unavailable-offerings cache: (instance type, zone, capacity type) triples that just
failed with a capacity error, kept out of launches and marked unavailable in the catalog
for three minutes (Karpenter's ICE cache TTL). A failure inside a placement group counts
only for launches into that group (EC2 may have room for the type outside it). A whole
capacity type can be out too (spot, when the account may not create the Spot
service-linked role), for the same three minutes; and a whole zone, for one capacity type,
when its only subnets ran out of addresses (Karpenter's subnet-scoped ICE entries)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock

UNAVAILABLE_OFFERING_TTL_SECONDS: Final = 180.0

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


@dataclass
class UnavailableOfferings:
    clock: Seconds = system_clock
    ttl_seconds: float = UNAVAILABLE_OFFERING_TTL_SECONDS
    _cache: TTLCache[OfferingKey, str] = field(init=False)
    # (instance type, zone, capacity type, placement group id)
    _in_groups: TTLCache[tuple[str, str, str, str], str] = field(init=False)
    _capacity_types: TTLCache[str, str] = field(init=False)
    # (zone, capacity type)
    _zones: TTLCache[tuple[str, str], str] = field(init=False)

    def __post_init__(self) -> None:
        self._cache = TTLCache(self.ttl_seconds, self.clock)
        self._in_groups = TTLCache(self.ttl_seconds, self.clock)
        self._capacity_types = TTLCache(self.ttl_seconds, self.clock)
        self._zones = TTLCache(self.ttl_seconds, self.clock)

    def mark_capacity_type_unavailable(self, capacity_type: str, reason: str) -> None:
        """Every offering of `capacity_type` is out (Karpenter's MarkCapacityTypeUnavailable)."""
        self._capacity_types.put(capacity_type, reason)

    def mark_zone_unavailable(self, zone: str, capacity_type: str, reason: str) -> None:
        """Every offering of `capacity_type` in `zone` is out (its subnets are full)."""
        self._zones.put((zone, capacity_type), reason)

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, reason: str,
        placement_group: str | None = None,
    ) -> None:
        if placement_group:
            self._in_groups.put((instance_type, zone, capacity_type, placement_group), reason)
        else:
            self._cache.put((instance_type, zone, capacity_type), reason)

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str,
                       placement_group: str | None = None) -> bool:
        if self._cache.get((instance_type, zone, capacity_type)) is not None:
            return True
        if self._capacity_types.get(capacity_type) is not None:
            return True
        if self._zones.get((zone, capacity_type)) is not None:
            return True
        return bool(placement_group) and self._in_groups.get(
            (instance_type, zone, capacity_type, placement_group or "")) is not None

    def reason(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        return (self._cache.get((instance_type, zone, capacity_type))
                or self._capacity_types.get(capacity_type)
                or self._zones.get((zone, capacity_type)))

    def entries(self) -> list[OfferingKey]:
        return self._cache.live_keys()
