"""Capacity reservations (On-Demand Capacity Reservations and capacity blocks), as Karpenter
v1.14's capacityreservation provider finds and counts them.

An EC2NodeClass's capacityReservationSelectorTerms become DescribeCapacityReservations
queries (active reservations only; an id alone, or tags / owner / instance match criteria);
expired ones are dropped. Each reservation becomes a `reserved` offering of its instance
type in its zone, priced at the on-demand price / 10,000,000 (free, but still ordered), and
available while the reservation has instances left and, for a capacity block, until 40
minutes before it ends. The count left comes from EC2 at each look-up, less the launches
made since (and any reservation that just answered with a capacity error counts as empty).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from nodewright.api.ec2nodeclass import CapacityReservationStatus
from nodewright.cloud.aws.errors import aws_call
from nodewright.scheduling.catalog import InstanceType, Offering

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.api.ec2nodeclass import CapacityReservationSelectorTerm

RESERVED: Final = "reserved"
CAPACITY_BLOCK: Final = "capacity-block"
DEFAULT: Final = "default"
# A capacity block's nodes are drained this long before it ends (EC2 starts reclaiming the
# instances 30 minutes before; Karpenter leaves 10 minutes for the drain).
EXPIRATION_LEAD: Final = timedelta(minutes=40)
# "Free", yet still ordered by what the instance type would cost on demand.
PRICE_DIVISOR: Final = 10_000_000.0
MATCH_CRITERIA: Final = ("open", "targeted")


@dataclass(frozen=True)
class Reservation:
    id: str
    instance_type: str
    zone: str
    owner_id: str
    match_criteria: str
    reservation_type: str  # default | capacity-block
    available_count: int
    end_time: datetime | None = None
    interruptible: bool = False

    @property
    def expires_at(self) -> datetime | None:
        """When a capacity block starts expiring (its nodes must go); None for the others."""
        if self.reservation_type != CAPACITY_BLOCK or self.end_time is None:
            return None
        return self.end_time - EXPIRATION_LEAD

    def expiring(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def to_status(self, now: datetime) -> CapacityReservationStatus:
        return CapacityReservationStatus.model_validate({
            "availabilityZone": self.zone,
            "endTime": self.end_time.strftime("%Y-%m-%dT%H:%M:%SZ") if self.end_time else None,
            "id": self.id,
            "instanceMatchCriteria": self.match_criteria,
            "instanceType": self.instance_type,
            "ownerID": self.owner_id,
            "reservationType": self.reservation_type,
            "interruptible": self.interruptible,
            "state": "expiring" if self.expiring(now) else "active",
        })


def queries(terms: Iterable[CapacityReservationSelectorTerm]) -> list[dict[str, Any]]:
    """DescribeCapacityReservations requests for the terms (Karpenter's QueriesFromSelectorTerms):
    an id is its own query; tags, owner and match criteria are AND'd filters of another."""
    active = {"Name": "state", "Values": ["active"]}
    found: list[dict[str, Any]] = []
    for term in terms:
        if term.id:
            found.append({"CapacityReservationIds": [term.id], "Filters": [active]})
        if term.tags or term.instance_match_criteria:
            filters: list[dict[str, Any]] = [active]
            if term.owner_id:
                filters.append({"Name": "owner-id", "Values": [term.owner_id]})
            for key, value in sorted((term.tags or {}).items()):
                filters.append({"Name": "tag-key", "Values": [key]} if value == "*"
                               else {"Name": f"tag:{key}", "Values": [value]})
            if term.instance_match_criteria:
                filters.append({"Name": "instance-match-criteria",
                                "Values": [term.instance_match_criteria]})
            found.append({"Filters": filters, "MaxResults": 1000})
    return found


def reservation_of(raw: Mapping[str, Any]) -> Reservation | None:
    """None for what Karpenter skips: match criteria or types it does not know."""
    criteria = str(raw.get("InstanceMatchCriteria", ""))
    kind = str(raw.get("ReservationType") or DEFAULT)
    if criteria not in MATCH_CRITERIA or kind not in (DEFAULT, CAPACITY_BLOCK):
        return None
    end = raw.get("EndDate")
    return Reservation(
        id=str(raw["CapacityReservationId"]),
        instance_type=str(raw.get("InstanceType", "")),
        zone=str(raw.get("AvailabilityZone", "")),
        owner_id=str(raw.get("OwnerId", "")),
        match_criteria=criteria,
        reservation_type=kind,
        available_count=int(raw.get("AvailableInstanceCount", 0)),
        end_time=end if isinstance(end, datetime) else None,
        interruptible=bool(raw.get("Interruptible", False)),
    )


def describe(ec2: EC2Client, terms: Sequence[CapacityReservationSelectorTerm],
             now: datetime) -> list[Reservation]:
    """The active, unexpired reservations the terms select, once each, sorted by id."""
    return _described(ec2, queries(terms), now)


def describe_ids(ec2: EC2Client, reservation_ids: Iterable[str],
                 now: datetime) -> list[Reservation]:
    """The active, unexpired reservations of these ids (one query per id, as Karpenter's
    List with id terms: an unknown id is skipped, not an error of the others)."""
    return _described(ec2, [{"CapacityReservationIds": [reservation_id],
                             "Filters": [{"Name": "state", "Values": ["active"]}]}
                            for reservation_id in sorted(set(reservation_ids))], now)


def _described(ec2: EC2Client, requests: Sequence[dict[str, Any]],
               now: datetime) -> list[Reservation]:
    found: dict[str, Reservation] = {}
    for request in requests:
        where = f"capacity reservations {request.get('CapacityReservationIds') or 'by filter'}"
        with aws_call("ec2:DescribeCapacityReservations", where):
            try:
                pages = list(ec2.get_paginator("describe_capacity_reservations")
                             .paginate(**request))
            except Exception as error:  # an unknown id is "not found": it selects nothing
                if "NotFound" in str(getattr(error, "response", {}).get("Error", {})):
                    continue
                raise
        for page in pages:
            for raw in page.get("CapacityReservations", []):
                reservation = reservation_of(raw)
                if reservation is None:
                    continue
                if reservation.end_time is not None and reservation.end_time <= now:
                    continue
                found.setdefault(reservation.id, reservation)
    return [found[key] for key in sorted(found)]


class Availability:
    """Instances left per reservation: EC2's count at the last look-up, less launches since."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def sync(self, reservations: Iterable[Reservation]) -> None:
        with self._lock:
            for reservation in reservations:
                self._counts[reservation.id] = reservation.available_count

    def count(self, reservation_id: str) -> int:
        with self._lock:
            return self._counts.get(reservation_id, 0)

    def mark_launched(self, reservation_id: str) -> None:
        with self._lock:
            if self._counts.get(reservation_id, 0) > 0:
                self._counts[reservation_id] -= 1

    def mark_terminated(self, reservation_id: str) -> None:
        """An instance of the reservation is gone: one more slot until the next lookup."""
        with self._lock:
            if reservation_id in self._counts:
                self._counts[reservation_id] += 1

    def mark_unavailable(self, *reservation_ids: str) -> None:
        with self._lock:
            for reservation_id in reservation_ids:
                if reservation_id in self._counts:
                    self._counts[reservation_id] = 0


def with_reserved_offerings(
    catalog: Sequence[InstanceType], reservations: Sequence[Reservation],
    availability: Availability, now: datetime,
) -> list[InstanceType]:
    """The catalog with one `reserved` offering per reservation of each instance type."""
    by_type: dict[str, list[Reservation]] = {}
    for reservation in reservations:
        by_type.setdefault(reservation.instance_type, []).append(reservation)
    result: list[InstanceType] = []
    for instance_type in catalog:
        mine = by_type.get(instance_type.name)
        if not mine:
            result.append(instance_type)
            continue
        # The type's zones: offered there, with a subnet of the node class.
        zones = {o.zone: o for o in instance_type.offerings if not o.no_subnet}
        on_demand = {o.zone: o.price for o in instance_type.offerings
                     if o.capacity_type == "on-demand"}
        od_price = min(on_demand.values(), default=0.0)
        added = [
            Offering(
                zone=r.zone,
                zone_id=zones[r.zone].zone_id if r.zone in zones else None,
                capacity_type=RESERVED,
                price=on_demand.get(r.zone, od_price) / PRICE_DIVISOR,
                available=(r.zone in zones and availability.count(r.id) > 0
                           and not r.expiring(now)),
                reservation_id=r.id,
                reservation_type=r.reservation_type,
                reservation_interruptible=r.interruptible,
                reservation_capacity=availability.count(r.id),
            )
            for r in mine
        ]
        result.append(replace(instance_type, offerings=(*instance_type.offerings, *added)))
    return result
