"""The AWS provider's metrics, as Karpenter v1.14.1 counts them: one launch failure per
CreateFleet offering error (zone, zone id, capacity type, reason), one termination failure
per failed TerminateInstances, and the rendered user data's size per EC2NodeClass, removed
with the node class's launch templates. Ported from pkg/providers/instance/suite_test.go and
pkg/providers/launchtemplate/suite_test.go (It names in each test)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError
from tests.controllers.metric_samples import sample_value

from .failing_calls import Answer, error, failing, response
from .world import World, node_class, nodeclaim

ON_DEMAND_ONLY = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}


def launch_failures(zone: str, zone_id: str, capacity_type: str, reason: str) -> float:
    return sample_value(
        "karpenter_cloudprovider_instance_launch_failures_total",
        {"zone": zone, "zone_id": zone_id, "capacity_type": capacity_type, "reason": reason},
    ) or 0.0


def termination_failures(zone: str, zone_id: str) -> float:
    return sample_value(
        "karpenter_cloudprovider_instance_termination_failures_total",
        {"zone": zone, "zone_id": zone_id}) or 0.0


def user_data_bytes(name: str) -> float | None:
    return sample_value("karpenter_ec2nodeclasses_userdata_bytes",
                                             {"nodeclass": name})


def fleet_errors(code: str, message: str, zone: str | None = None, count: int = 1) -> Answer:
    """A fleet that launched nothing: its first `count` overrides failed with `code` (in
    `zone` when given, else their own)."""

    def answer(request: Mapping[str, Any]) -> Any:
        overrides = request["LaunchTemplateConfigs"][0]["Overrides"][:count]
        return response(200, {"Instances": [], "Errors": [
            {"LaunchTemplateAndOverrides": {"Overrides": {
                "InstanceType": o["InstanceType"],
                "AvailabilityZone": zone or o["AvailabilityZone"]}},
             "Lifecycle": "on-demand", "ErrorCode": code, "ErrorMessage": message}
            for o in overrides]})

    return answer


def zone_id_of(provider: AwsCloudProvider, zone: str) -> str:
    (subnet,) = [s for s in provider.resolve(node_class()).subnets if s.zone == zone][:1]
    return subnet.zone_id


def test_each_create_fleet_offering_error_counts_one_launch_failure(
    provider: AwsCloudProvider, world: World,
) -> None:
    """instance/suite_test.go: It("should emit a zone-dimensioned launch failure metric for
    each CreateFleet offering error") — two offering errors count two, the zone id comes
    from the node class's subnets, the reason is ToReasonMessage's."""
    claim = nodeclaim(requirements=[ON_DEMAND_ONLY])
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_errors("RequestLimitExceeded",
                                                "Request limit exceeded.", count=2))
        with pytest.raises(CloudProviderError):
            provider.create(claim, node_class())
        overrides = calls.params["CreateFleet"][0]["LaunchTemplateConfigs"][0]["Overrides"][:2]
    zones = [o["AvailabilityZone"] for o in overrides]
    zone = zones[0]
    zone_id = zone_id_of(provider, zone)
    assert zone_id
    before = launch_failures(zone, zone_id, "on-demand", "RequestLimitExceeded")
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_errors("RequestLimitExceeded",
                                                "Request limit exceeded.", zone=zone, count=2))
        with pytest.raises(CloudProviderError):
            provider.create(claim, node_class())

    assert launch_failures(zone, zone_id, "on-demand", "RequestLimitExceeded") - before == 2


def test_an_unknown_error_in_an_unknown_zone_counts_as_launch_failed_without_zone_id(
    provider: AwsCloudProvider, world: World,
) -> None:
    """instance/suite_test.go: It("should record the generic launch failure reason and an
    empty zone_id for an unrecognized error in an unknown zone")."""
    before = launch_failures("unknown-zone-9z", "", "on-demand", "LaunchFailed")
    with failing(provider.clients.ec2) as calls:
        calls.queue("CreateFleet", fleet_errors("SomeBrandNewEC2ErrorCode", "unexpected.",
                                                zone="unknown-zone-9z"))
        with pytest.raises(CloudProviderError):
            provider.create(nodeclaim(requirements=[ON_DEMAND_ONLY]), node_class())

    assert launch_failures("unknown-zone-9z", "", "on-demand", "LaunchFailed") - before == 1


def test_a_failed_terminate_counts_one_termination_failure_in_its_zone(
    provider: AwsCloudProvider, world: World,
) -> None:
    """instance/suite_test.go: It("should emit a zone-dimensioned termination failure metric
    when TerminateInstances errors")."""
    instance = provider.create(nodeclaim(), node_class())
    zone = instance.zone
    zone_id = zone_id_of(provider, zone)
    before = termination_failures(zone, zone_id)
    with failing(provider.clients.ec2) as calls:
        calls.queue("TerminateInstances", error("RequestLimitExceeded", "Request limit exceeded."))
        with pytest.raises(CloudProviderError):
            provider.delete(instance.provider_id)

    assert termination_failures(zone, zone_id) - before == 1


def test_a_terminate_that_succeeds_counts_nothing(
    provider: AwsCloudProvider, world: World,
) -> None:
    instance = provider.create(nodeclaim(), node_class())
    before = termination_failures(instance.zone, zone_id_of(provider, instance.zone))

    provider.delete(instance.provider_id)

    assert termination_failures(instance.zone, zone_id_of(provider, instance.zone)) == before


def created_user_data(provider: AwsCloudProvider) -> list[int]:
    ec2 = provider.clients.ec2
    sizes = []
    for template in ec2.describe_launch_templates()["LaunchTemplates"]:
        for version in ec2.describe_launch_template_versions(
                LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"]:
            sizes.append(len(base64.b64decode(version["LaunchTemplateData"]["UserData"])))
    return sizes


def test_the_rendered_user_data_size_is_recorded_per_node_class(
    provider: AwsCloudProvider, world: World,
) -> None:
    """launchtemplate/suite_test.go: It("should record the rendered user data size, keyed by
    nodeclass") — the raw (pre-base64) size of one of the node class's templates."""
    provider.create(nodeclaim(), node_class("sized"))

    size = user_data_bytes("sized")
    assert size is not None
    assert size in created_user_data(provider)
    assert size < 16384


def test_the_user_data_gauge_goes_with_the_node_class_templates(
    provider: AwsCloudProvider, world: World,
) -> None:
    """launchtemplate/suite_test.go: It("should delete the user data gauge when the nodeclass
    launch templates are deleted") — removed, not zeroed."""
    provider.create(nodeclaim(), node_class("going"))
    assert user_data_bytes("going") is not None

    provider.delete_node_class_resources("going")

    assert user_data_bytes("going") is None
