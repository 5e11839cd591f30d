"""The unavailable-offerings cache: (instance type, zone, capacity type) triples that just
failed with a capacity error, kept out of launches and marked unavailable in the catalog
for three minutes (Karpenter's ICE cache TTL). A failure inside a placement group counts
only for launches into that group (EC2 may have room for the type outside it). A whole
capacity type can be out too (spot, when the account may not create the Spot
service-linked role), for the same three minutes; and a whole zone, for one capacity type,
when its only subnets ran out of addresses (Karpenter's subnet-scoped ICE entries).

Every change, an entry put or expired, bumps a sequence number (Karpenter's SeqNum): the
instance type's own for an offering, every type's for a capacity type or a zone. A catalog
built at one number is the catalog at that number."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from nodewright.api.formats import format_duration
from nodewright.cloud.aws.clock import Seconds, TTLCache, system_clock

UNAVAILABLE_OFFERING_TTL_SECONDS: Final = 180.0

OfferingKey = tuple[str, str, str]  # (instance type, zone, capacity type)

log = logging.getLogger(__name__)


def none_out(_type: str, _zone: str, _capacity_type: str) -> bool:
    """The snapshot of a cache where no offering is out (`UnavailableOfferings.snapshot`)."""
    return False


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
    # Changes: in all, to every type (capacity types, zones), and per instance type.
    _changes: int = field(init=False, default=0)
    _every_type_changes: int = field(init=False, default=0)
    _type_changes: dict[str, int] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        def of_type(key: tuple[str, ...]) -> None:
            self._changed(key[0])

        self._cache = TTLCache(self.ttl_seconds, self.clock, of_type)
        self._in_groups = TTLCache(self.ttl_seconds, self.clock, of_type)
        self._capacity_types = TTLCache(self.ttl_seconds, self.clock,
                                        lambda _: self._changed(None))
        self._zones = TTLCache(self.ttl_seconds, self.clock, lambda _: self._changed(None))

    def seqnum(self) -> int:
        """Changes with every entry put or expired (expired ones are dropped first)."""
        for cache in (self._cache, self._in_groups, self._capacity_types, self._zones):
            cache.drop_expired()
        with self._lock:
            return self._changes

    def type_seqnum(self, instance_type: str) -> int:
        """Changes with every entry put or expired that may change `instance_type`'s
        offerings (as of the last `seqnum`)."""
        with self._lock:
            return self._type_changes.get(instance_type, 0) + self._every_type_changes

    def _changed(self, instance_type: str | None) -> None:
        with self._lock:
            self._changes += 1
            if instance_type is None:
                self._every_type_changes += 1
            else:
                self._type_changes[instance_type] = self._type_changes.get(instance_type, 0) + 1

    def mark_capacity_type_unavailable(self, capacity_type: str, reason: str) -> None:
        """Every offering of `capacity_type` is out (Karpenter's MarkCapacityTypeUnavailable)."""
        self._capacity_types.put(capacity_type, reason)
        self._changed(None)

    def mark_zone_unavailable(self, zone: str, capacity_type: str, reason: str) -> None:
        """Every offering of `capacity_type` in `zone` is out (its subnets are full)."""
        self._zones.put((zone, capacity_type), reason)
        self._changed(None)

    def mark_unavailable(
        self, instance_type: str, zone: str, capacity_type: str, reason: str,
        placement_group: str | None = None,
    ) -> None:
        # Karpenter's MarkUnavailable log line (debug), with its fields.
        fields = {"reason": reason, "instance-type": instance_type, "zone": zone,
                  "capacity-type": capacity_type, "ttl": format_duration(self.ttl_seconds)}
        if placement_group:  # "<group id>" or "<group id>:<partition>"
            group, _, partition = placement_group.partition(":")
            fields["placement-group-id"] = group
            if partition:
                fields["placement-group-partition"] = partition
        log.debug("removing offering from offerings", extra=fields)
        if placement_group:
            self._in_groups.put((instance_type, zone, capacity_type, placement_group), reason)
        else:
            self._cache.put((instance_type, zone, capacity_type), reason)
        self._changed(instance_type)

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

    def snapshot(self, placement_group: str | None = None) -> Callable[[str, str, str], bool]:
        """`is_unavailable` for `placement_group` as of now, answered without a lock or a
        clock: what a catalog build asks a thousand times over. `none_out` itself when no
        offering is out."""
        offerings = frozenset(self._cache.live_keys())
        capacity_types = frozenset(self._capacity_types.live_keys())
        zones = frozenset(self._zones.live_keys())
        in_group = frozenset(key[:3] for key in self._in_groups.live_keys()
                             if placement_group and key[3] == placement_group)
        if not (offerings or capacity_types or zones or in_group):
            return none_out
        return lambda instance_type, zone, capacity_type: (
            (instance_type, zone, capacity_type) in offerings
            or capacity_type in capacity_types or (zone, capacity_type) in zones
            or (instance_type, zone, capacity_type) in in_group)
