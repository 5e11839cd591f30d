"""Capacity reservations in the simulated EC2: On-Demand Capacity Reservations and capacity
blocks, each with an instance count, an optional end, and the instances launched into it.

A node class selects them with capacityReservationSelectorTerms as EC2 would answer
DescribeCapacityReservations (an id; or tags, `*` matching any value, and
instanceMatchCriteria). A launch into a reservation uses one of its instances until the
instance terminates; a full reservation offers nothing (the launch goes elsewhere), and a
capacity block's instances are reclaimed when it ends. An interruptible reservation (a
default one its owner may take capacity back from) launches into its own market; EC2 may
reclaim one of its instances with a two-minute warning, and the reservation is one
instance smaller from then on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Final

from nodewright.cloud.aws.capacity_reservations import Availability, Reservation

if TYPE_CHECKING:
    from nodewright.api.ec2nodeclass import CapacityReservationSelectorTerm

OWNER: Final = "123456789012"  # the simulated account


@dataclass(frozen=True)
class SimReservation:
    id: str
    instance_type: str
    zone: str
    count: int
    reservation_type: str = "default"  # or capacity-block
    end: datetime | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    match_criteria: str = "targeted"
    interruptible: bool = False

    def selected_by(self, term: CapacityReservationSelectorTerm) -> bool:
        if term.id:
            return term.id == self.id
        if term.owner_id and term.owner_id != OWNER:
            return False
        if term.instance_match_criteria and term.instance_match_criteria != self.match_criteria:
            return False
        return all(key in self.tags and value in ("*", self.tags[key])
                   for key, value in (term.tags or {}).items())


class ReservationBook:
    """The region's reservations and how many of each are in use."""

    def __init__(self, reservations: Iterable[SimReservation] = ()) -> None:
        self.reservations = {r.id: r for r in reservations}
        self._used = dict.fromkeys(self.reservations, 0)
        self._reclaimed = dict.fromkeys(self.reservations, 0)

    def left(self, reservation_id: str) -> int:
        reservation = self.reservations.get(reservation_id)
        if reservation is None:
            return 0
        return max(reservation.count - self._reclaimed[reservation_id]
                   - self._used[reservation_id], 0)

    def selected(self, terms: Sequence[CapacityReservationSelectorTerm],
                 now: datetime) -> list[Reservation]:
        """The unexpired reservations the terms select, as DescribeCapacityReservations
        describes them, sorted by id."""
        return self._described(lambda r: any(r.selected_by(t) for t in terms), now)

    def described(self, reservation_ids: Collection[str], now: datetime) -> list[Reservation]:
        """The unexpired reservations of these ids (unknown ones left out), sorted by id."""
        return self._described(lambda r: r.id in reservation_ids, now)

    def _described(self, wanted: Callable[[SimReservation], bool],
                   now: datetime) -> list[Reservation]:
        return [
            Reservation(id=r.id, instance_type=r.instance_type, zone=r.zone, owner_id=OWNER,
                        match_criteria=r.match_criteria, reservation_type=r.reservation_type,
                        available_count=self.left(r.id), end_time=r.end,
                        interruptible=r.interruptible)
            for r in sorted(self.reservations.values(), key=lambda r: r.id)
            if (r.end is None or r.end > now) and wanted(r)
        ]

    def reclaim(self, reservation_id: str) -> None:
        """The owner takes one instance's capacity back from an interruptible reservation."""
        if reservation_id in self._reclaimed:
            self._reclaimed[reservation_id] += 1

    def availability(self, reservations: Iterable[Reservation]) -> Availability:
        counts = Availability()
        counts.sync(reservations)
        return counts

    def take(self, reservation_id: str) -> bool:
        if self.left(reservation_id) <= 0:
            return False
        self._used[reservation_id] += 1
        return True

    def release(self, reservation_id: str) -> None:
        if self._used.get(reservation_id, 0) > 0:
            self._used[reservation_id] -= 1
