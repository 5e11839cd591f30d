"""Karpenter's instance type controller suite, ported: aws/karpenter-provider-aws v1.14.1
pkg/controllers/providers/instancetype/suite_test.go (Describe "InstanceType"). Each story
names its It.

Karpenter's providers.instancetype singleton refreshes DescribeInstanceTypes and
DescribeInstanceTypeOfferings into its instance type provider every 12 hours; ours reads them
when the catalog is asked for and keeps them 12 hours (controller/nodewright/cloud/aws/
catalog.py), so "the controller reconciled" is here "the provider listed the instance types"
over moto, with EC2's answers replaced as Karpenter's fake EC2 sets them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError

from .conftest import CallRecorder
from .failing_calls import answer, failing
from .world import node_class

# The types EC2 answers with (Karpenter's fake.MakeInstances is its own short list), each
# offered in the zones given (fake.MakeInstanceOfferings).
OFFERED = {
    "m5.large": ["us-west-2a"],
    "c5.xlarge": ["us-west-2b"],
    "t3.medium": ["us-west-2c"],
    "m6g.large": ["us-west-2a", "us-west-2b"],
}


@pytest.fixture
def answers(clients: AwsClients) -> Iterator[None]:
    """DescribeInstanceTypes answers only OFFERED's types, DescribeInstanceTypeOfferings
    only OFFERED's zones."""
    def types(parsed: dict[str, Any], **_: Any) -> None:
        parsed["InstanceTypes"] = [t for t in parsed.get("InstanceTypes", [])
                                   if t["InstanceType"] in OFFERED]

    def offerings(parsed: dict[str, Any], **_: Any) -> None:
        parsed["InstanceTypeOfferings"] = [
            o for o in parsed.get("InstanceTypeOfferings", [])
            if o["Location"] in OFFERED.get(o["InstanceType"], [])]

    events = clients.ec2.meta.events
    events.register("after-call.ec2.DescribeInstanceTypes", types)
    events.register("after-call.ec2.DescribeInstanceTypeOfferings", offerings)
    yield
    events.unregister("after-call.ec2.DescribeInstanceTypes", types)
    events.unregister("after-call.ec2.DescribeInstanceTypeOfferings", offerings)


def test_the_instance_types_are_those_ec2_describes(
    provider: AwsCloudProvider, answers: None, recorder: CallRecorder,
) -> None:
    """It("should update instance type date with response from the DescribeInstanceTypes
    API"): as many types as EC2 described, each one of them. Asked as Karpenter asks: HVM
    types of the two architectures, 100 a page."""
    listed = provider.get_instance_types(node_class())

    assert sorted(it.name for it in listed) == sorted(OFFERED)
    (asked,) = recorder.calls_of("ec2:DescribeInstanceTypes")
    assert asked["Filters"] == [
        {"Name": "supported-virtualization-type", "Values": ["hvm"]},
        {"Name": "processor-info.supported-architecture", "Values": ["x86_64", "arm64"]}]
    assert asked["MaxResults"] == 100


def test_each_types_offerings_are_in_the_zones_ec2_offers_it(
    provider: AwsCloudProvider, answers: None, recorder: CallRecorder,
) -> None:
    """It("should update instance type offering date with response from the
    DescribeInstanceTypesOfferings API"): every offering of a type is in a zone
    DescribeInstanceTypeOfferings named for it. Asked as Karpenter asks: by availability
    zone, 1,000 a page."""
    listed = provider.get_instance_types(node_class())

    assert len(listed) == len(OFFERED)
    for it in listed:
        assert it.offerings
        assert sorted({o.zone for o in it.offerings}) == OFFERED[it.name], it.name
    (asked,) = recorder.calls_of("ec2:DescribeInstanceTypeOfferings")
    assert asked["LocationType"] == "availability-zone"
    assert asked["MaxResults"] == 1000


def test_no_instance_types_described_is_an_error(
    provider: AwsCloudProvider, clients: AwsClients,
) -> None:
    """It("should not update instance type date with response from the DescribeInstanceTypes
    API is empty"): listing the instance types fails (Karpenter's "no instance types
    found"), it does not answer an empty catalog."""
    with failing(clients.ec2) as calls:
        calls.queue("DescribeInstanceTypes", answer({"InstanceTypes": []}))
        with pytest.raises(CloudProviderError, match="no instance types found"):
            provider.get_instance_types(node_class())


def test_no_instance_type_offerings_described_is_an_error(
    provider: AwsCloudProvider, clients: AwsClients,
) -> None:
    """It("should not update instance type offering date with response from the
    DescribeInstanceTypesOfferings API"): with no offering described, listing the instance
    types fails (Karpenter's "no instance types offerings found"). Karpenter's It empties
    both answers; here the types are described and only the offerings are missing."""
    with failing(clients.ec2) as calls:
        calls.queue("DescribeInstanceTypeOfferings", answer({"InstanceTypeOfferings": []}))
        with pytest.raises(CloudProviderError, match="no instance type offerings found"):
            provider.get_instance_types(node_class())


def test_an_empty_answer_is_asked_again_at_the_next_listing(
    provider: AwsCloudProvider, clients: AwsClients, recorder: CallRecorder,
) -> None:
    """(ours) An empty answer is not kept for the 12 hours a described catalog is: as a
    failed call, it is asked again the next time the types are listed."""
    with failing(clients.ec2) as calls:
        calls.queue("DescribeInstanceTypes", answer({"InstanceTypes": []}))
        with pytest.raises(CloudProviderError):
            provider.get_instance_types(node_class())

    assert provider.get_instance_types(node_class())
    assert len(recorder.calls_of("ec2:DescribeInstanceTypes")) == 2
