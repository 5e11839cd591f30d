"""The unavailable-offerings cache: (instance type, zone, capacity type) triples that just
failed with a capacity error, kept out of launches and marked unavailable in the catalog
for three minutes (Karpenter's ICE cache TTL)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from nodewright.cloud.aws.clock import Clock, TTLCache, system_clock

UNAVAILABLE_OFFERING_TTL_SECONDS: Final = 180.0

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)


@dataclass
class UnavailableOfferings:
    clock: Clock = system_clock
    ttl_seconds: float = UNAVAILABLE_OFFERING_TTL_SECONDS
    _cache: TTLCache[OfferingKey, str] = field(init=False)

    def __post_init__(self) -> None:
        self._cache = TTLCache(self.ttl_seconds, self.clock)

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, reason: str
    ) -> None:
        self._cache.put((instance_type, zone, capacity_type), reason)

    def is_unavailable(self, instance_type: str, zone: str, capacity_type: str) -> bool:
        return self._cache.get((instance_type, zone, capacity_type)) is not None

    def reason(self, instance_type: str, zone: str, capacity_type: str) -> str | None:
        return self._cache.get((instance_type, zone, capacity_type))

    def entries(self) -> list[OfferingKey]:
        return self._cache.live_keys()
