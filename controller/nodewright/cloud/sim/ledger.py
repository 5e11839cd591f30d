"""Accounting for the simulator's report: what ran, for how long, at what price.

EC2 bills Linux instances per second from the moment they are running until they begin
shutting down (or stopping), with a minimum of one minute.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from nodewright.cloud.sim.machines import SimInstance

MINIMUM_BILLED_SECONDS: Final = 60.0


@dataclass(frozen=True)
class LedgerEntry:
    instance_id: str
    nodeclaim: str
    nodepool: str
    instance_type: str
    zone: str
    capacity_type: str
    price: float  # USD per hour
    launched_at: datetime
    running_at: datetime | None
    billing_ended_at: datetime | None  # shutting down or stopping began
    terminated_at: datetime | None

    @staticmethod
    def of(instance: SimInstance) -> LedgerEntry:
        ends = [t for t in (instance.stopping_at, instance.shutting_down_at) if t is not None]
        return LedgerEntry(
            instance_id=instance.instance_id,
            nodeclaim=instance.nodeclaim,
            nodepool=instance.nodepool,
            instance_type=instance.instance_type.name,
            zone=instance.zone,
            capacity_type=instance.capacity_type,
            price=instance.price,
            launched_at=instance.launched_at,
            running_at=instance.running_at,
            billing_ended_at=min(ends) if ends else None,
            terminated_at=instance.terminated_at,
        )

    def running_seconds(self, now: datetime) -> float:
        """Seconds billed so far, before the one-minute minimum."""
        if self.running_at is None:
            return 0.0
        end = self.billing_ended_at or now
        return max(0.0, (end - self.running_at).total_seconds())

    def cost(self, now: datetime) -> float:
        seconds = self.running_seconds(now)
        if self.running_at is None:
            return 0.0
        return max(seconds, MINIMUM_BILLED_SECONDS) * self.price / 3600.0

    def billed_at(self, now: datetime) -> bool:
        return self.running_at is not None and self.billing_ended_at is None and (
            self.running_at <= now
        )


@dataclass(frozen=True)
class Ledger:
    entries: tuple[LedgerEntry, ...]

    @staticmethod
    def of(instances: Iterable[SimInstance]) -> Ledger:
        return Ledger(tuple(LedgerEntry.of(instance) for instance in instances))

    def total_cost(self, now: datetime) -> float:
        """Dollars spent up to `now`."""
        return sum(entry.cost(now) for entry in self.entries)

    def instance_hours(self, now: datetime) -> float:
        return sum(entry.running_seconds(now) for entry in self.entries) / 3600.0

    def hourly_cost(self, now: datetime) -> float:
        """The price per hour of the instances being billed now."""
        return sum(entry.price for entry in self.entries if entry.billed_at(now))


@dataclass
class SimCounters:
    create_calls: int = 0
    launched: int = 0
    ice_errors: int = 0  # offerings that answered InsufficientInstanceCapacity
    insufficient_capacity: int = 0  # create calls that launched nothing
    terminated: int = 0
    registered: int = 0
    interruptions: dict[str, int] = field(default_factory=dict)
