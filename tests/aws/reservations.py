"""A fake EC2 DescribeCapacityReservations at the boto client seam: moto does not implement
capacity reservations. It answers with the reservations a test adds, filtered as EC2
filters them (ids, state, owner-id, tag:K, tag-key, instance-match-criteria)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from nodewright.cloud.aws.clients import AwsClients

from .world import ACCOUNT


@dataclass
class FakeReservation:
    id: str
    instance_type: str
    zone: str
    available: int = 1
    total: int = 1
    criteria: str = "targeted"
    reservation_type: str = "default"
    end: datetime | None = None
    state: str = "active"
    owner: str = ACCOUNT
    tags: dict[str, str] = field(default_factory=dict)
    interruptible: bool | None = None  # None: EC2 leaves the field out

    def to_api(self) -> dict[str, Any]:
        raw: dict[str, Any] = {
            "CapacityReservationId": self.id, "InstanceType": self.instance_type,
            "AvailabilityZone": self.zone, "AvailableInstanceCount": self.available,
            "TotalInstanceCount": self.total, "InstanceMatchCriteria": self.criteria,
            "ReservationType": self.reservation_type, "State": self.state,
            "OwnerId": self.owner, "Tags": [{"Key": k, "Value": v} for k, v in self.tags.items()],
        }
        if self.end is not None:
            raw["EndDate"] = self.end
        if self.interruptible is not None:
            raw["Interruptible"] = self.interruptible
        return raw

    def matches(self, name: str, values: list[str]) -> bool:
        if name == "state":
            return self.state in values
        if name == "owner-id":
            return self.owner in values
        if name == "instance-match-criteria":
            return self.criteria in values
        if name == "tag-key":
            return any(key in self.tags for key in values)
        if name.startswith("tag:"):
            return self.tags.get(name[4:]) in values
        raise AssertionError(f"the fake does not know the filter {name}")


class FakeCapacityReservations:
    def __init__(self, clients: AwsClients) -> None:
        self.reservations: list[FakeReservation] = []
        self.requests: list[dict[str, Any]] = []
        clients.ec2.meta.events.register(
            "provide-client-params.ec2.DescribeCapacityReservations", self._remember)
        clients.ec2.meta.events.register(
            "before-call.ec2.DescribeCapacityReservations", self._answer)

    def add(self, *reservations: FakeReservation) -> None:
        self.reservations.extend(reservations)

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        self.requests.append(dict(params))  # the API parameters, before serialisation

    def _answer(self, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        params = self.requests[-1]
        ids = params.get("CapacityReservationIds")
        found = [r for r in self.reservations if not ids or r.id in ids]
        if ids and not found:
            raise ClientError(
                {"Error": {"Code": "InvalidCapacityReservationId.NotFound",
                           "Message": f"The capacity reservation ID '{ids[0]}' does not exist"}},
                "DescribeCapacityReservations")
        for item in params.get("Filters", []):
            found = [r for r in found if r.matches(item["Name"], item["Values"])]
        response = AWSResponse("https://ec2.amazonaws.com", 200, {}, None)  # type: ignore[arg-type]
        return response, {"CapacityReservations": [r.to_api() for r in found]}
