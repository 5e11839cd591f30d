"""CreateFleet: choosing the offerings to hand EC2, sending the request, reading the answer.

The request is an instant fleet for one instance. Overrides are the NodeClaim's instance
types (cheapest first, at most 60) x one subnet per allowed zone (the one with the most free
IPs), each override's Priority its offering's price. Spot asks for price-capacity-optimized,
on-demand for lowest-price; when NodeOverlay prices chose the NodeClaim's types
(karpenter.sh/price-overlay-applied), EC2 follows the priorities instead: spot
capacity-optimized-prioritized, on-demand prioritized (Karpenter's CreateFleetInputBuilder)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from nodewright.cloud.aws import provider_metrics
from nodewright.cloud.aws import tags as tag_keys
from nodewright.cloud.aws.capacity_reservations import Availability
from nodewright.cloud.aws.ec2_batcher import EC2Batcher
from nodewright.cloud.aws.errors import (
    CAPACITY_ERROR_CODES,
    SPOT_SERVICE_LINKED_ROLE,
    aws_call,
    describe_failure,
    reason_message,
)
from nodewright.cloud.aws.offerings import CAPACITY_TYPE_LABEL, ZONE_ID_LABEL, ZONE_LABEL
from nodewright.cloud.aws.unavailable import UnavailableOfferings
from nodewright.cloud.provider import CloudProviderError, InsufficientCapacityError

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client

    from nodewright.scheduling.launch_filters import Choice

MAX_INSTANCE_TYPES: Final = 60
ON_DEMAND: Final = "on-demand"
SPOT: Final = "spot"
RESERVED: Final = "reserved"
CAPACITY_BLOCK: Final = "capacity-block"
RESERVED_CAPACITY: Final = "reserved-capacity"
INTERRUPTIBLE_CAPACITY_RESERVATION: Final = "interruptible-capacity-reservation"
CLIENT_TOKEN_MAX: Final = 64
# How EC2 words a spread placement group's seven-instances-per-zone limit (its error code is
# InsufficientInstanceCapacity).
SPREAD_LIMIT: Final = "limit of instances in this spread placement group"
# Karpenter's event when the account may not create the Spot service-linked role.
SPOT_SLR_EVENT: Final = "SpotServiceLinkedRoleCreationFailure"
NO_FREE_ADDRESSES: Final = "InsufficientFreeAddressesInSubnet"
SPOT_SLR_NOTE: Final = (f"Attempted to launch a spot instance but failed due to "
                        f"\"{SPOT_SERVICE_LINKED_ROLE}\"")
# What an instant fleet creates. The fleet itself is tagged too: the controller's IAM
# policy only allows creating resources that carry the cluster's ownership tags. As
# Karpenter, network interfaces (and spot requests) are tagged by the launch template.
TAGGED_RESOURCE_TYPES: Final = ("instance", "volume", "fleet")


@dataclass(frozen=True)
class Candidate:
    """One launchable (instance type, zone) at a price, for one capacity type."""

    instance_type: str
    zone: str
    subnet_id: str
    price: float
    template_name: str
    image_id: str
    reservation_id: str | None = None
    # The override's Priority (lower goes first): the offering's price, NodeOverlay's where
    # one applies, as Karpenter's getOverrides. None: not sent.
    priority: float | None = None


@dataclass(frozen=True)
class FleetRequest:
    nodeclaim_name: str
    nodeclaim_uid: str
    capacity_type: str
    candidates: tuple[Candidate, ...]
    tags: Mapping[str, str] = field(default_factory=dict)
    # A reserved launch: the reservations' type (default or capacity-block), and whether they
    # are interruptible reservations (EC2's reserved-capacity target).
    reservation_type: str | None = None
    reservation_interruptible: bool = False
    # spec.context: the reserved-capacity context (EC2 Context) the fleet launches in.
    context: str | None = None
    # The placement group the launch templates launch into: capacity errors count there only.
    placement_group_id: str | None = None
    # The partition of a partition group the launch targets: capacity errors count there.
    placement_partition: int | None = None
    # NodeOverlay prices chose the NodeClaim's types: EC2 allocates by the overrides'
    # priorities (prioritized, capacity-optimized-prioritized).
    prioritized: bool = False

    @property
    def placement_scope(self) -> str | None:
        """Where a capacity error counts: the group, or the group's targeted partition."""
        if self.placement_group_id and self.placement_partition is not None:
            return f"{self.placement_group_id}:{self.placement_partition}"
        return self.placement_group_id

    @property
    def target_capacity_type(self) -> str:
        """EC2's name for what is asked: a reservation is on-demand capacity (or a capacity
        block, or for an interruptible reservation reserved capacity); the launch template
        names the reservation."""
        if self.capacity_type != RESERVED:
            return self.capacity_type
        if self.reservation_type == CAPACITY_BLOCK:
            return CAPACITY_BLOCK
        return RESERVED_CAPACITY if self.reservation_interruptible else ON_DEMAND

    def overrides_by_template(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for candidate in self.candidates:
            override: dict[str, Any] = {
                "InstanceType": candidate.instance_type,
                "SubnetId": candidate.subnet_id,
                "AvailabilityZone": candidate.zone,
                "ImageId": candidate.image_id,
            }
            if candidate.priority is not None:
                override["Priority"] = candidate.priority
            grouped.setdefault(candidate.template_name, []).append(override)
        return grouped

    def client_token(self) -> str:
        """The NodeClaim UID plus a digest of what is asked for.

        Retrying the same request (a lost response, a botocore retry) reuses the token, so EC2
        returns the first fleet instead of launching again. A request that changed (offerings
        dropped after a capacity error) gets a new token, because EC2 refuses a reused token
        with different parameters (IdempotentParameterMismatch); the provider's look-up of an
        instance already tagged with the NodeClaim covers that case.
        """
        digest = hashlib.sha256(
            json.dumps([self.capacity_type, self.overrides_by_template()], sort_keys=True).encode()
        ).hexdigest()
        return f"{self.nodeclaim_uid}-{digest}"[:CLIENT_TOKEN_MAX]

    def to_api(self) -> dict[str, Any]:
        tag_list = tag_keys.as_aws(self.tags)
        request: dict[str, Any] = {
            "Type": "instant",
            "ClientToken": self.client_token(),
            "TargetCapacitySpecification": {
                "TotalTargetCapacity": 1,
                "DefaultTargetCapacityType": self.target_capacity_type,
            },
            "LaunchTemplateConfigs": [
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateName": template,
                        "Version": "$Latest",
                    },
                    "Overrides": overrides,
                }
                for template, overrides in self.overrides_by_template().items()
            ],
            "TagSpecifications": [
                {"ResourceType": kind, "Tags": tag_list} for kind in TAGGED_RESOURCE_TYPES
            ],
        }
        if self.context:
            request["Context"] = self.context
        if self.capacity_type == SPOT:
            request["SpotOptions"] = {"AllocationStrategy": (
                "capacity-optimized-prioritized" if self.prioritized
                else "price-capacity-optimized")}
        elif self.target_capacity_type == RESERVED_CAPACITY:
            request["ReservedCapacityOptions"] = {
                "ReservationTypes": [INTERRUPTIBLE_CAPACITY_RESERVATION]}
        elif self.target_capacity_type != CAPACITY_BLOCK:
            request["OnDemandOptions"] = {"AllocationStrategy": (
                "prioritized" if self.prioritized else "lowest-price")}
        return request



def unmet_min_values(choices: Sequence[Choice], min_values: Mapping[str, int],
                     max_types: int = MAX_INSTANCE_TYPES) -> dict[str, int]:
    """The minValues (key -> values found) that the `max_types` cheapest instance types of
    `choices` no longer meet (Karpenter's InstanceTypes.Truncate then SatisfiesMinValues):
    cutting a fleet to 60 types must not undo the flexibility a NodePool asked for."""
    cheapest: dict[str, float] = {}
    values: dict[str, dict[str, set[str]]] = {}
    for choice in choices:
        name = choice.instance_type.name
        cheapest[name] = min(choice.offering.price, cheapest.get(name, choice.offering.price))
        found = values.setdefault(name, {})
        for key in min_values:
            if key == ZONE_LABEL:
                found.setdefault(key, set()).add(choice.offering.zone)
            elif key == ZONE_ID_LABEL and choice.offering.zone_id:
                found.setdefault(key, set()).add(choice.offering.zone_id)
            elif key == CAPACITY_TYPE_LABEL:
                found.setdefault(key, set()).add(choice.offering.capacity_type)
            elif key in choice.instance_type.labels:
                found.setdefault(key, set()).add(choice.instance_type.labels[key])
    kept = sorted(cheapest, key=lambda name: (cheapest[name], name))[:max_types]
    seen = {key: set[str]().union(*(values[name].get(key, set()) for name in kept))
            for key in min_values}
    return {key: len(seen[key]) for key, wanted in min_values.items()
            if len(seen[key]) < wanted}


def cheapest_first(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Instance types ordered by their cheapest zone, cut to 60 types, all their zones kept."""
    best: dict[str, float] = {}
    for candidate in candidates:
        best[candidate.instance_type] = min(
            candidate.price, best.get(candidate.instance_type, candidate.price)
        )
    kept = sorted(best, key=lambda name: (best[name], name))[:MAX_INSTANCE_TYPES]
    rank = {name: index for index, name in enumerate(kept)}
    chosen = [c for c in candidates if c.instance_type in rank]
    return sorted(chosen, key=lambda c: (rank[c.instance_type], c.price, c.zone))


@dataclass(frozen=True)
class Launched:
    instance_id: str
    instance_type: str
    zone: str
    subnet_id: str
    capacity_type: str
    image_id: str
    reservation_id: str | None = None


def launch(ec2: EC2Client, request: FleetRequest, unavailable: UnavailableOfferings,
           reservations_left: Availability | None = None,
           zone_ids: Mapping[str, str] | None = None,
           subnet_exhausted: Callable[[str], bool] | None = None,
           batch: EC2Batcher | None = None) -> Launched:
    """Send the fleet. Capacity errors mark their offerings unavailable (a reservation's: the
    reservation counts as empty); no instance at all raises InsufficientCapacityError when
    capacity was the reason, CloudProviderError else.

    `subnet_exhausted(subnet id)`: EC2 found a subnet full; whether its zone has another
    subnet to launch into. Only a zone left without one is marked unavailable (for every
    type), as Karpenter scopes the error to the subnet.

    `batch`: send it through the CreateFleet batcher (with others asking the same)."""
    resource = f"nodeclaim {request.nodeclaim_name}"
    with aws_call("ec2:CreateFleet", resource):
        response: Mapping[str, Any] = (batch.create_fleet(request.to_api()) if batch
                                       else ec2.create_fleet(**request.to_api()))
    by_subnet = {c.subnet_id: c.zone for c in request.candidates}
    images = {(c.instance_type, c.zone): c.image_id for c in request.candidates}
    reservations = {(c.instance_type, c.zone): c.reservation_id for c in request.candidates}
    capacity_failures: list[str] = []

    other_failures: list[tuple[str, str]] = []
    warnings: dict[str, str] = {}
    for error in response.get("Errors", []):
        code = str(error.get("ErrorCode", ""))
        override: Mapping[str, Any] = error.get("LaunchTemplateAndOverrides", {}).get(
            "Overrides", {}
        )
        instance_type = str(override.get("InstanceType", ""))
        zone = str(
            override.get("AvailabilityZone") or by_subnet.get(str(override.get("SubnetId", "")), "")
        )
        # Counted per offering error, as Karpenter counts them (zone id from the subnets).
        provider_metrics.launch_failed(zone, (zone_ids or {}).get(zone, ""),
                                       request.capacity_type, code,
                                       str(error.get("ErrorMessage", "")))
        subnet_id = str(override.get("SubnetId", ""))
        if code == NO_FREE_ADDRESSES and subnet_exhausted is not None and subnet_id and zone:
            if not subnet_exhausted(subnet_id):
                unavailable.mark_zone_unavailable(zone, request.capacity_type, code)
            capacity_failures.append(f"{subnet_id}/{zone}: {code}")
            continue
        if code in CAPACITY_ERROR_CODES:
            group = request.placement_scope
            if group and zone and SPREAD_LIMIT in str(error.get("ErrorMessage", "")):
                # A spread group holds seven instances per zone, of any type: the zone is
                # full for every type of this launch (Karpenter's spread limit handling).
                for candidate in request.candidates:
                    if candidate.zone == zone and request.capacity_type != RESERVED:
                        unavailable.mark_unavailable(candidate.instance_type, zone,
                                                     request.capacity_type, code, group)
                capacity_failures.append(f"{zone}: spread placement group {group} is full")
                continue
            if instance_type and zone and request.capacity_type != RESERVED:
                unavailable.mark_unavailable(instance_type, zone, request.capacity_type, code,
                                             group)
            reservation = reservations.get((instance_type, zone))
            if reservation and reservations_left is not None:
                reservations_left.mark_unavailable(reservation)
            capacity_failures.append(f"{instance_type}/{zone}: {code}")
        elif code == SPOT_SERVICE_LINKED_ROLE and request.capacity_type != RESERVED:
            # No spot launch can work until the role exists: spot is out for every
            # offering (for the ICE cache's three minutes), and the NodeClaim says why.
            unavailable.mark_capacity_type_unavailable(SPOT, code)
            capacity_failures.append(f"{instance_type}/{zone}: {code}")
            warnings[SPOT_SLR_EVENT] = SPOT_SLR_NOTE
        else:
            other_failures.append((code, str(error.get("ErrorMessage", ""))))
    for instance in response.get("Instances", []):
        ids = instance.get("InstanceIds", [])
        if not ids:
            continue
        override = instance.get("LaunchTemplateAndOverrides", {}).get("Overrides", {})
        subnet_id = str(override.get("SubnetId", ""))
        instance_type = str(instance.get("InstanceType") or override.get("InstanceType", ""))
        zone = str(override.get("AvailabilityZone") or by_subnet.get(subnet_id, ""))
        lifecycle = str(instance.get("Lifecycle", request.capacity_type))
        kind = SPOT if lifecycle == SPOT else ON_DEMAND
        return Launched(
            instance_id=ids[0],
            instance_type=instance_type,
            zone=zone,
            subnet_id=subnet_id,
            capacity_type=RESERVED if request.capacity_type == RESERVED else kind,
            image_id=images.get((instance_type, zone), str(override.get("ImageId", ""))),
            reservation_id=reservations.get((instance_type, zone)),
        )
    if capacity_failures and not other_failures:
        summary = "; ".join(capacity_failures[:10])
        raise InsufficientCapacityError(
            describe_failure("ec2:CreateFleet", resource, "InsufficientCapacity", summary),
            call="ec2:CreateFleet",
            resource=resource,
            code="InsufficientCapacity",
            cloud_message=summary,
            warnings=tuple(warnings.items()),
        )
    code, message = (
        other_failures[0] if other_failures else ("NoInstances", "the fleet launched nothing")
    )
    raise CloudProviderError(
        describe_failure("ec2:CreateFleet", resource, code, message),
        call="ec2:CreateFleet",
        resource=resource,
        code=code,
        cloud_message=message,
        warnings=tuple(warnings.items()),
        reason=reason_message(f"{code}: {message}")[0],
    )
