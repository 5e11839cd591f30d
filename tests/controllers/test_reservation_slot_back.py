"""A NodeClaim launched into a capacity reservation gives the reservation its slot back
once its instance is gone, as Karpenter's CloudProvider.Delete does (MarkTerminated when
the instance is not found; aws pkg/cloudprovider/cloudprovider.go)."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.aws.capacity_reservations import Availability, Reservation
from nodewright.cloud.capabilities import CloudCapabilities
from nodewright.cloud.provider import NodeClaimNotFoundError
from nodewright.controllers.nodeclaim.finalize import instance_gone


class _Instance:
    def __init__(self, state: str) -> None:
        self.state = state


class _Cloud:
    """Only what `instance_gone` asks of a cloud: delete, get, capabilities."""

    def __init__(self, availability: Availability, state: str | None) -> None:
        self.availability = availability
        self.state = state  # None: EC2 no longer knows the instance
        self.deleted: list[str] = []

    def delete(self, provider_id: str) -> None:
        self.deleted.append(provider_id)

    def get(self, provider_id: str) -> _Instance:
        if self.state is None:
            raise NodeClaimNotFoundError(provider_id)
        return _Instance(self.state)

    def capabilities(self) -> CloudCapabilities:
        return CloudCapabilities(reservations=self.availability)


class _Context:
    def __init__(self, cloud: _Cloud) -> None:
        self.cloud = cloud


def _availability(count: int) -> Availability:
    availability = Availability()
    availability.sync([_reservation("cr-1", count)])
    return availability


def _reservation(reservation_id: str, available: int) -> Reservation:
    return Reservation(id=reservation_id, instance_type="m5.large", zone="us-east-1a",
                       owner_id="012345678901", match_criteria="targeted",
                       reservation_type="default", available_count=available)


def _claim(reservation: str | None) -> dict[str, Any]:
    labels = {"karpenter.k8s.aws/capacity-reservation-id": reservation} if reservation else {}
    return {"metadata": {"name": "claim", "labels": labels},
            "status": {"providerID": "aws:///us-east-1a/i-0123"}}


def test_a_reserved_instance_that_is_gone_gives_its_slot_back() -> None:
    availability = _availability(2)
    cloud = _Cloud(availability, state=None)
    assert instance_gone(_Context(cloud), "aws:///us-east-1a/i-0123", _claim("cr-1"))  # type: ignore[arg-type]
    assert availability.count("cr-1") == 3


def test_a_reserved_instance_still_shutting_down_keeps_its_slot() -> None:
    availability = _availability(2)
    cloud = _Cloud(availability, state="shutting-down")
    assert not instance_gone(_Context(cloud), "aws:///us-east-1a/i-0123", _claim("cr-1"))  # type: ignore[arg-type]
    assert availability.count("cr-1") == 2
    assert cloud.deleted == ["aws:///us-east-1a/i-0123"]


def test_an_instance_outside_any_reservation_changes_no_count() -> None:
    availability = _availability(2)
    cloud = _Cloud(availability, state="terminated")
    assert instance_gone(_Context(cloud), "aws:///us-east-1a/i-0123", _claim(None))  # type: ignore[arg-type]
    assert availability.count("cr-1") == 2
