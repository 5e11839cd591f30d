"""The labels an offering gives the node launched into it, and whether requirements allow an
offering: Karpenter's offering requirements (AWS v1.14.1 pkg/providers/instancetype/offering),
read straight from the offering instead of built as a Requirements per offering.

On-demand and spot offerings carry a DoesNotExist requirement on each capacity reservation
label (id, type, interruptible), reserved ones the reservation's values; so requirements
that need a reservation label (In, Exists, Gt, Lt) rule out every unreserved offering, and
NotIn or DoesNotExist admit it. Any offering label a requirement names is judged so: a
value the offering lacks is the label's absence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from nodewright.scheduling import labels
from nodewright.scheduling.catalog import Offering
from nodewright.scheduling.requirements import Requirement, Requirements

DEFAULT_RESERVATION: Final = "default"

OfferingValue = Callable[[Offering], str | None]


def interruptible_value(interruptible: bool) -> str:
    """The capacity-reservation-interruptible label's value, as Go formats a bool."""
    return "true" if interruptible else "false"


def _reservation_type(offering: Offering) -> str | None:
    if offering.reservation_id is None:
        return None
    return offering.reservation_type or DEFAULT_RESERVATION


def _reservation_interruptible(offering: Offering) -> str | None:
    if offering.reservation_id is None:
        return None
    return interruptible_value(offering.reservation_interruptible)


# Each label an offering decides, and its value for an offering (None: absent).
OFFERING_VALUES: Final[dict[str, OfferingValue]] = {
    labels.ZONE: lambda offering: offering.zone,
    labels.CAPACITY_TYPE: lambda offering: offering.capacity_type,
    labels.ZONE_ID: lambda offering: offering.zone_id,
    labels.RESERVATION_ID: lambda offering: offering.reservation_id,
    labels.RESERVATION_TYPE: _reservation_type,
    labels.RESERVATION_INTERRUPTIBLE: _reservation_interruptible,
    labels.PLACEMENT_GROUP_PARTITION: lambda offering: offering.partition,
}


def offering_labels(offering: Offering) -> dict[str, str]:
    """The offering's labels on a node launched into it (those it has)."""
    found = {key: value(offering) for key, value in OFFERING_VALUES.items()}
    return {key: value for key, value in found.items() if value is not None}


class OfferingCheck:
    """Whether requirements allow an offering, their offering keys read once (it runs for
    every offering of every candidate type in a solve)."""

    __slots__ = ("_checks",)

    def __init__(self, requirements: Requirements) -> None:
        self._checks: tuple[tuple[OfferingValue, Requirement], ...] = tuple(
            (OFFERING_VALUES[key], requirements[key])
            for key in requirements if key in OFFERING_VALUES)

    def __call__(self, offering: Offering) -> bool:
        for value, requirement in self._checks:
            if not requirement.matches_label(value(offering)):
                return False
        return True
