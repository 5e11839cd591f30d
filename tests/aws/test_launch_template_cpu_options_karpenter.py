"""Karpenter's launch template CPU options, ported: aws/karpenter-provider-aws v1.14.1
pkg/providers/launchtemplate/cpuoptions_test.go (Describe "cpuOptions"). Each story names
its It.

Karpenter's cpuOptions helper turns spec.cpuOptions into the launch template's
LaunchTemplateCpuOptionsRequest; ours writes CpuOptions in the CreateLaunchTemplate request
(controller/nodewright/cloud/aws/launch_templates.py). The stories launch through the AWS
provider on moto and read the request as sent: CpuOptions is left out where Karpenter's
helper returns nil, and otherwise carries only NestedVirtualization, as Karpenter's."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.provider import AwsCloudProvider
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import node_class, nodeclaim

# A type that supports nested virtualization (enabled keeps only those).
NESTED_TYPES = ["c7i.large"]


def launch(provider: AwsCloudProvider, ec2: FakeEC2, **spec: Any) -> list[dict[str, Any]]:
    """The LaunchTemplateData of every template the launch created."""
    provider.create(nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": NESTED_TYPES},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]), node_class(**spec))
    templates = list(ec2.template_data())
    assert templates
    return templates


def test_no_cpu_options_without_the_field(provider: AwsCloudProvider, ec2: FakeEC2) -> None:
    """It("should return nil for nil input")."""
    for data in launch(provider, ec2):
        assert "CpuOptions" not in data


def test_no_cpu_options_for_empty_cpu_options(provider: AwsCloudProvider,
                                              ec2: FakeEC2) -> None:
    """It("should return nil for empty CPUOptions"): `cpuOptions: {}`."""
    for data in launch(provider, ec2, cpuOptions={}):
        assert "CpuOptions" not in data


@pytest.mark.parametrize("value", [
    pytest.param("enabled", id="should set NestedVirtualization when enabled"),
    pytest.param("disabled", id="should set NestedVirtualization when disabled"),
])
def test_nested_virtualization_is_sent_as_given(provider: AwsCloudProvider, ec2: FakeEC2,
                                                value: str) -> None:
    """It("should set NestedVirtualization when enabled") and It("should set
    NestedVirtualization when disabled") (the ids)."""
    for data in launch(provider, ec2, cpuOptions={"nestedVirtualization": value}):
        assert data["CpuOptions"] == {"NestedVirtualization": value}
