"""Karpenter's instance type compatibility suite
(pkg/providers/instancetype/compatibility/suite_test.go, v1.14.1), ported: each test names
its DescribeTable and Entry. Karpenter's IsCompatibleWithNodeClass(info, nodeClass, pg) is
whether `build_catalog` keeps the type for the node class's settings (an incompatible type
is left out of the catalog, where Karpenter's instance type provider leaves it out too).
The instance type is Karpenter's makeInstanceTypeInfo: an x86_64 m5.large-like type, with
the network info, processor features, placement strategies or hypervisor each table sets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from nodewright.scheduling.allocatable import NodeSettings, node_settings
from nodewright.scheduling.catalog import build_catalog
from tests.aws.test_instancetype_karpenter import A1_MEDIUM
from tests.aws.world import node_class

REGION = "us-west-2"


def instance_type_info(name: str = "m5.large", network_info: dict[str, Any] | None = None,
                       **extra: Any) -> dict[str, Any]:
    """makeInstanceTypeInfo."""
    info: dict[str, Any] = {
        "InstanceType": name, "SupportedUsageClasses": ["on-demand"],
        "ProcessorInfo": {"SupportedArchitectures": ["x86_64"]},
        "VCpuInfo": {"DefaultVCpus": 2}, "MemoryInfo": {"SizeInMiB": 8192}, **extra}
    if network_info is not None:
        info["NetworkInfo"] = network_info
    return info


def network_info(cards: int, devices: int, max_efa: int | None) -> dict[str, Any]:
    """makeNetworkInfo."""
    info: dict[str, Any] = {
        "EnaSupport": "supported",
        "NetworkCards": [{"NetworkCardIndex": i, "MaximumNetworkInterfaces": devices}
                         for i in range(cards)]}
    if max_efa is not None:
        info["EfaInfo"] = {"MaximumEfaInterfaces": max_efa}
    return info


def compatible(info: dict[str, Any], settings: NodeSettings) -> bool:
    offered = [{"InstanceType": info["InstanceType"], "Location": f"{REGION}a"}]
    return len(build_catalog([info], offered, REGION, settings=settings)) == 1


def interfaces(*listed: tuple[int, int, str]) -> list[dict[str, Any]]:
    return [{"networkCardIndex": card, "deviceIndex": device, "interfaceType": kind}
            for card, device, kind in listed]


FAMILIES = {
    "Custom": {"amiFamily": "Custom", "amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}]},
    "AL2023": {"amiSelectorTerms": [{"alias": "al2023@latest"}]},
    "Bottlerocket": {"amiSelectorTerms": [{"alias": "bottlerocket@latest"}]},
}


@pytest.mark.parametrize(("name", "family", "expected"), [
    pytest.param("a1.medium", "Custom", True, id="a1.medium w/ Custom AMI"),
    pytest.param("a1.large", "Custom", True, id="a1.large w/ Custom AMI"),
    pytest.param("t3.medium", "Custom", True, id="t3.medium w/ Custom AMI"),
    pytest.param("a1.medium", "AL2023", False, id="a1.medium w/ AL2023 AMI"),
    pytest.param("t3.medium", "AL2023", True, id="t3.medium w/ AL2023 AMI"),
    pytest.param("a1.large", "Bottlerocket", True, id="a1.large w/ Bottlerocket"),
])
def test_ami_family_compatibility(name: str, family: str, expected: bool) -> None:
    """Context("AMIFamilyCompatibility") DescribeTable("should handle various instance types
    across different AMI families"), one test per Entry: AL2023 does not boot on a1."""
    settings = node_settings(node_class=node_class(**FAMILIES[family]))
    assert compatible(instance_type_info(name), settings) is expected


def test_a1_has_no_offering_with_al2023() -> None:
    """instancetype/suite_test.go Context("AMI Compatibility") DescribeTable("should mark
    availability of a1 instance type offerings based on AMI") Entry("when AMI is AL2023"):
    the a1 type is left out of the AL2023 catalog (Karpenter keeps it with every offering
    unavailable)."""
    nc = node_class(amiSelectorTerms=[{"alias": "al2023@latest"}])
    offered = [{"InstanceType": "a1.medium", "Location": z} for z in ("us-west-2a",
                                                                         "us-west-2b")]
    assert build_catalog([A1_MEDIUM], offered, REGION,
                         settings=node_settings(node_class=nc)) == []


@pytest.mark.parametrize(("listed", "info", "expected"), [
    pytest.param(interfaces((0, 0, "interface"), (0, 1, "efa-only")), network_info(1, 2, 1),
                 True, id="compatible instance with EFA support and single EFA interface"),
    pytest.param(interfaces((0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only")),
                 network_info(2, 2, 2), True,
                 id="compatible instance with EFA support and multiple EFA interfaces"),
    pytest.param(interfaces((0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only")),
                 network_info(2, 2, 1), False, id="EFA interfaces exceed maximum supported"),
    pytest.param(interfaces((0, 0, "interface"), (0, 1, "efa-only")), network_info(1, 4, None),
                 False, id="instance does not support with EFA"),
    pytest.param(interfaces((0, 0, "interface")),
                 {"EnaSupport": "unsupported",
                  "NetworkCards": [{"NetworkCardIndex": 0, "MaximumNetworkInterfaces": 4}]},
                 False, id="instance does not support with ENA"),
    pytest.param(interfaces((1, 0, "interface")), network_info(1, 4, None), False,
                 id="network card index exceeds available cards"),
    pytest.param(interfaces((0, 5, "interface")), network_info(1, 4, None), False,
                 id="device index exceeds maximum ENIs"),
])
def test_network_interface_compatibility(listed: list[dict[str, Any]], info: dict[str, Any],
                                         expected: bool) -> None:
    """Context("NetworkInterfaceCompatibility") DescribeTable("should validate network
    interface compatibility with instance types"), one test per Entry."""
    settings = node_settings(node_class=node_class(networkInterfaces=listed))
    assert compatible(instance_type_info(network_info=info), settings) is expected


@pytest.mark.parametrize(("name", "strategies", "group", "expected"), [
    pytest.param("m5.large", ["cluster"], None, True, id="nil placement group"),
    pytest.param("m5.large", ["cluster", "partition", "spread"], "cluster", True,
                 id="cluster strategy supported"),
    pytest.param("t3.medium", ["partition", "spread"], "cluster", False,
                 id="cluster strategy not supported"),
    pytest.param("m5.large", ["cluster", "partition", "spread"], "partition", True,
                 id="partition strategy supported"),
    pytest.param("t3.medium", ["spread"], "partition", False,
                 id="partition strategy not supported"),
    pytest.param("m5.large", ["spread"], "spread", True, id="spread strategy supported"),
    pytest.param("t3.medium", ["cluster"], "spread", False, id="spread strategy not supported"),
])
def test_placement_group_compatibility(name: str, strategies: list[str], group: str | None,
                                       expected: bool) -> None:
    """Context("PlacementGroupCompatibility") DescribeTable("should handle placement group
    strategy compatibility"), one test per Entry (the group's strategy, as the provider
    passes it to the catalog)."""
    settings = replace(node_settings(node_class=node_class()), placement_strategy=group)
    info = instance_type_info(name, PlacementGroupInfo={"SupportedStrategies": strategies})
    assert compatible(info, settings) is expected


@pytest.mark.parametrize(("nested", "features", "expected"), [
    pytest.param(None, [], True, id="nil CPUOptions passes regardless of features"),
    pytest.param("enabled", ["nested-virtualization"], True,
                 id="nestedVirtualization=enabled + feature present"),
    pytest.param("enabled", [], False, id="nestedVirtualization=enabled + feature absent"),
    pytest.param("disabled", [], True, id="nestedVirtualization=disabled passes regardless"),
])
def test_nested_virtualization_compatibility(nested: str | None, features: list[str],
                                             expected: bool) -> None:
    """Context("NestedVirtualizationCompatibility") DescribeTable("should gate instance types
    on ProcessorInfo.SupportedFeatures when nestedVirtualization is enabled"), one test per
    Entry."""
    spec = {"cpuOptions": {"nestedVirtualization": nested}} if nested else {}
    info = instance_type_info(ProcessorInfo={"SupportedArchitectures": ["x86_64"],
                                             "SupportedFeatures": features})
    assert compatible(info, node_settings(node_class=node_class(**spec))) is expected


@pytest.mark.parametrize(("hypervisor", "tracking", "expected"), [
    pytest.param("nitro", True, True, id="nitro instance with connection tracking"),
    pytest.param("xen", True, False, id="non-nitro instance with connection tracking"),
    pytest.param("xen", False, True, id="non-nitro instance without connection tracking"),
    pytest.param("nitro", False, True, id="nitro instance without connection tracking"),
])
def test_connection_tracking_compatibility(hypervisor: str, tracking: bool,
                                           expected: bool) -> None:
    """Context("ConnectionTrackingCompatibility") DescribeTable("should filter non-Nitro
    instances when ConnectionTracking is set"), one test per Entry: EC2 takes tracking
    timeouts only on Nitro types."""
    spec = {"connectionTracking": {"tcpEstablishedTimeout": 300}} if tracking else {}
    settings = node_settings(node_class=node_class(**spec))
    assert compatible(instance_type_info(Hypervisor=hypervisor), settings) is expected
