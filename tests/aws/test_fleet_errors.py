"""How CreateFleet failures are classified, as Karpenter's pkg/errors and its instance
provider (pkg/providers/instance/instance.go updateUnavailableOfferingsCache,
combineFleetErrors) classify them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nodewright.cloud.aws.errors import reason_message
from nodewright.cloud.aws.fleet import SPOT_SLR_EVENT, SPOT_SLR_NOTE
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError, InsufficientCapacityError

from .failing_calls import Answer, failing, response
from .world import World, node_class, nodeclaim


def fleet_error(code: str, message: str = "", lifecycle: str = "on-demand") -> Answer:
    """A fleet that launched nothing: the request's first override failed with `code`."""

    def answer(request: Mapping[str, Any]) -> Any:
        override = request["LaunchTemplateConfigs"][0]["Overrides"][0]
        return response(200, {"Instances": [], "Errors": [{
            "LaunchTemplateAndOverrides": {"Overrides": override}, "Lifecycle": lifecycle,
            "ErrorCode": code, "ErrorMessage": message}]})

    return answer


def offering_available(provider: AwsCloudProvider, name: str, zone: str,
                       capacity_type: str) -> bool:
    (found,) = [t for t in provider.get_instance_types(node_class()) if t.name == name]
    return next(o.available for o in found.offerings
                if (o.zone, o.capacity_type) == (zone, capacity_type))


def spot_claim() -> Any:
    return nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": ["m5.large", "c5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
    ])


@pytest.mark.parametrize("code", ["VcpuLimitExceeded", "MaxFleetCountExceeded",
                                  "InsufficientInstanceCapacity"])
def test_quota_errors_are_capacity_errors_that_mark_the_offering(
    provider: AwsCloudProvider, world: World, code: str,
) -> None:
    """pkg/errors unfulfillableCapacityErrorCodes: VcpuLimitExceeded and
    MaxFleetCountExceeded are capacity errors, so the NodeClaim is replaced and the offering
    is left out for three minutes instead of failing every launch alike."""
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_error(code, "quota"))
        with pytest.raises(InsufficientCapacityError):
            provider.create(nodeclaim(), node_class())
        first = calls.params["CreateFleet"][0]["LaunchTemplateConfigs"][0]["Overrides"][0]
    assert not offering_available(provider, first["InstanceType"], first["AvailabilityZone"],
                                  "on-demand")


def test_the_spot_service_linked_role_error_turns_spot_off_and_says_why(
    provider: AwsCloudProvider, world: World,
) -> None:
    """instance.go: IsServiceLinkedRoleCreationNotPermitted ⇒
    MarkCapacityTypeUnavailable(spot) and the SpotServiceLinkedRoleCreationFailure event
    (events.go); combineFleetErrors counts it as a capacity error."""
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_error(
            "AuthFailure.ServiceLinkedRoleCreationNotPermitted",
            "The provided credentials do not have permission to create the service-linked "
            "role for EC2 Spot Instances.", lifecycle="spot"))
        with pytest.raises(InsufficientCapacityError) as raised:
            provider.create(spot_claim(), node_class())
    assert raised.value.warnings == ((SPOT_SLR_EVENT, SPOT_SLR_NOTE),)
    assert SPOT_SLR_NOTE == ('Attempted to launch a spot instance but failed due to '
                             '"AuthFailure.ServiceLinkedRoleCreationNotPermitted"')
    zone = f"{world.region}b"
    for name in ("m5.large", "c5.large", "t3.medium"):
        assert not offering_available(provider, name, zone, "spot")
        assert offering_available(provider, name, zone, "on-demand")
    # The next spot NodeClaim has nothing to launch until the three minutes are over.
    with pytest.raises(InsufficientCapacityError):
        provider.create(spot_claim(), node_class())
    provider.clock.advance(181)  # type: ignore[attr-defined]
    assert offering_available(provider, "m5.large", zone, "spot")


def test_other_fleet_errors_stay_launch_failures(provider: AwsCloudProvider,
                                                 world: World) -> None:
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_error("InvalidParameterValue", "bad"))
        with pytest.raises(CloudProviderError) as raised:
            provider.create(nodeclaim(), node_class())
    assert not isinstance(raised.value, InsufficientCapacityError)
    assert raised.value.warnings == ()
    assert raised.value.reason == "LaunchFailed"


def test_an_unauthorized_fleet_carries_karpenters_reason(provider: AwsCloudProvider,
                                                        world: World) -> None:
    """The NodeClaim's Launched condition takes the CreateError reason ToReasonMessage
    gives (pkg/errors), here Unauthorized."""
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_error(
            "UnauthorizedOperation", "You are not authorized to perform this operation."))
        with pytest.raises(CloudProviderError) as raised:
            provider.create(nodeclaim(), node_class())
    assert raised.value.reason == "Unauthorized"


@pytest.mark.parametrize(("text", "reason", "message"), [
    ("AuthFailure.ServiceLinkedRoleCreationNotPermitted: no", "SpotSLRCreationFailed",
     "User does not have sufficient permission to create the Spot ServiceLinkedRole to "
     "launch spot instances"),
    ("UnauthorizedOperation: You are not authorized to perform this operation.",
     "Unauthorized", "User is not authorized to perform this operation because no "
     "identity-based policy allows it"),
    ("UnauthorizedOperation: You are not authorized to perform this operation with an "
     "explicit deny in a permissions boundary", "Unauthorized",
     "User is not authorized to perform this operation due to a permission boundary"),
    ("UnauthorizedOperation: ... with an explicit deny in a service control policy",
     "Unauthorized",
     "User is not authorized to perform this operation due to a service control policy"),
    ("AuthFailure: Not authorized for images: [ami-1]", "AMIAuthorizationFailure",
     "User is not authorized for AMI used in instance launch"),
    ("InvalidParameter: security groups and subnet belong to different networks",
     "SecurityGroupSubnetVPCMismatch", "Security groups and subnets must be in the same VPC."),
    ("MaxFleetCountExceeded: too many", "FleetQuotaExceeded",
     "A fleet launch was requested but this would exceed your fleet request quota"),
    ("VcpuLimitExceeded: quota", "VCPULimitExceeded",
     "An instance was requested that would exceed your VCPU quota"),
    ("InvalidUserData.Malformed: User data is limited to 16384 bytes",
     "UserDataSizeLimitExceeded", "Rendered user data exceeds the EC2 user data size limit"),
    ("Something: else", "LaunchFailed", "Instance launch failed"),
])
def test_failures_map_to_karpenters_reasons_and_messages(text: str, reason: str,
                                                         message: str) -> None:
    """pkg/errors/errors.go ToReasonMessage (v1.14.1 has no test file for pkg/errors)."""
    assert reason_message(text) == (reason, message)
