"""Karpenter's launch template suite (pkg/providers/launchtemplate/suite_test.go, v1.14.1):
the network interface, EFA and enclave tests, ported: each test names its It/Entry. The
NodeClaim the scheduler would make is launched through the real provider on moto, and the
launch template data sent is read from the FakeEC2 recorder (as the other ports of this suite
in tests/aws/test_launch_templates_karpenter.py).

Where Karpenter's pod asks for two EFA devices, the NodeClaim here asks for them and is
limited to c6in.32xlarge (two EFA network cards), as Karpenter's instance type filter keeps
only types with two EFA devices.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.offerings import launchable
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.scheduling.pricing import OfflinePriceSource
from nodewright.scheduling.requirements import Requirements
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.world import CLUSTER, FakeClock, World, node_class, nodeclaim

EFA_TYPE = "c6in.32xlarge"
TRACKING = {"tcpEstablishedTimeout": 86400, "udpStreamTimeout": 120, "udpTimeout": 45}
EXPECTED_TRACKING = {"TcpEstablishedTimeout": 86400, "UdpStreamTimeout": 120, "UdpTimeout": 45}
FOUR_INTERFACES = [
    {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
    {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
    {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
    {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "interface"},
]


@pytest.fixture
def ipv6(clients: AwsClients, world: World, clock: FakeClock) -> AwsCloudProvider:
    """A provider for an IPv6 cluster (its kube-dns address is IPv6)."""
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            kube_dns_ip="fd4b:121b:812b::a")


def claim(types: list[str] | None = None, requests: dict[str, str] | None = None) -> NodeClaim:
    body = nodeclaim(requirements=[
        {"key": "node.kubernetes.io/instance-type", "operator": "In",
         "values": types or ["m5.large"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    ]).model_dump(by_alias=True, exclude_none=True, mode="json")
    if requests:
        body["spec"]["resources"] = {"requests": requests}
    return NodeClaim.model_validate(body)


def efa_claim() -> NodeClaim:
    """What Karpenter's pod asking for two EFA devices becomes."""
    return claim([EFA_TYPE], {"vpc.amazonaws.com/efa": "2"})


def interfaces(ec2: FakeEC2) -> list[dict[str, Any]]:
    [data] = list(ec2.template_data())
    return list(data["NetworkInterfaces"])


# --- Public IP Association ------------------------------------------------------------------


@pytest.mark.parametrize("value", [
    pytest.param(True, id="AssociatePublicIPAddress is true (EFA)"),
    pytest.param(False, id="AssociatePublicIPAddress is false (EFA)"),
])
def test_public_ip_association_with_efa(provider: AwsCloudProvider, world: World, ec2: FakeEC2,
                                        value: bool) -> None:
    """Context("Public IP Association") DescribeTable("should set 'AssociatePublicIPAddress'
    based on EC2NodeClass"), its two EFA Entries: the first EFA interface carries it."""
    provider.create(efa_claim(), node_class(associatePublicIPAddress=value))
    first = interfaces(ec2)[0]
    assert first["InterfaceType"] == "efa"
    assert first["AssociatePublicIpAddress"] is value


# --- Enclave Options ------------------------------------------------------------------------


def test_enclaves_are_disabled_by_default(provider: AwsCloudProvider, world: World,
                                          ec2: FakeEC2) -> None:
    """Context("Enclave Options") It("should default enclave options to disabled")"""
    provider.create(nodeclaim(), node_class())
    templates = list(ec2.template_data())
    assert templates and all(t["EnclaveOptions"] == {"Enabled": False} for t in templates)


def ensure_all(provider: AwsCloudProvider, nodeclaim_: NodeClaim) -> None:
    """Karpenter's LaunchTemplateProvider.EnsureAll: the templates of every offering of the
    NodeClaim's types, without a launch. (No instance type has eks.amazonaws.com/nip-slots
    capacity unless a NodeOverlay adds it, so the launch filters would refuse the NodeClaim:
    Karpenter's test calls EnsureAll for the same reason.)"""
    spec = node_class()
    resolution = provider.resolve(spec)
    requirements = Requirements.from_node_selector(
        [r.to_manifest() for r in nodeclaim_.spec.requirements])
    choices = launchable(provider.get_instance_types(spec), requirements,
                         sorted({s.zone for s in resolution.subnets}),
                         sorted({i.architecture for i in resolution.images}))
    provider._templates_for(nodeclaim_, spec, resolution, choices)


def test_nip_slots_enable_enclaves(provider: AwsCloudProvider, world: World,
                                   ec2: FakeEC2) -> None:
    """Context("Enclave Options") It("should enable enclave options when nip-slots is in the
    nodeclaim's resource requests")"""
    ensure_all(provider, claim(["m5.xlarge"], {"eks.amazonaws.com/nip-slots": "1"}))
    templates = list(ec2.template_data())
    assert templates and all(t["EnclaveOptions"] == {"Enabled": True} for t in templates)


def test_enclave_templates_are_not_the_plain_ones(provider: AwsCloudProvider, world: World,
                                                  ec2: FakeEC2) -> None:
    """Ours: a NodeClaim asking for enclave slots never reuses a template without them."""
    ensure_all(provider, claim(["m5.xlarge"]))
    ensure_all(provider, claim(["m5.xlarge"], {"eks.amazonaws.com/nip-slots": "1"}))
    assert [t["EnclaveOptions"]["Enabled"] for t in ec2.template_data()] == [False, True]


# --- Networking: IPv6 -----------------------------------------------------------------------


def test_ipv6_efa_interfaces_with_a_public_address(ipv6: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("should provision a v6 address and set v6 primary IP as true when running in
    an ipv6 cluster") DescribeTable("should set Primary IPv6 as true and provision a IPv6
    address") Entry("AssociatePublicIPAddress is set as true and EFA is true")"""
    ipv6.create(efa_claim(), node_class(associatePublicIPAddress=True))
    first = interfaces(ec2)[0]
    assert (first["InterfaceType"], first["AssociatePublicIpAddress"]) == ("efa", True)
    assert (first["Ipv6AddressCount"], first["PrimaryIpv6"]) == (1, True)


def test_ipv6_efa_interfaces_without_a_public_address(ipv6: AwsCloudProvider,
                                                      ec2: FakeEC2) -> None:
    """The same DescribeTable's Entry("AssociatePublicIPAddress is not set and EFA is
    true"): no public address asked (Karpenter's lo.FromPtr reads it as false)."""
    ipv6.create(efa_claim(), node_class())
    first = interfaces(ec2)[0]
    assert first["InterfaceType"] == "efa"
    assert first.get("AssociatePublicIpAddress", False) is False
    assert (first["Ipv6AddressCount"], first["PrimaryIpv6"]) == (1, True)


# --- Connection Tracking: propagation across all ENIs ---------------------------------------


def test_connection_tracking_on_every_efa_interface(provider: AwsCloudProvider, world: World,
                                                    ec2: FakeEC2) -> None:
    """Context("propagation across all ENIs") It("should apply ConnectionTracking to every
    EFA ENI in the launch template")"""
    provider.create(efa_claim(), node_class(connectionTracking=TRACKING))
    found = interfaces(ec2)
    assert len(found) > 1
    assert all(i["InterfaceType"] == "efa" for i in found)
    assert all(i["ConnectionTrackingSpecification"] == EXPECTED_TRACKING for i in found)


def test_connection_tracking_on_every_listed_interface_but_efa_only(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2
) -> None:
    """Context("propagation across all ENIs") It("should apply ConnectionTracking to every
    user-configured NetworkInterface in the launch template except efa-only")"""
    provider.create(claim([EFA_TYPE]), node_class(networkInterfaces=FOUR_INTERFACES,
                                                  connectionTracking=TRACKING))
    found = interfaces(ec2)
    assert len(found) == 4
    for interface in found:
        if interface["InterfaceType"] == "efa-only":
            assert "ConnectionTrackingSpecification" not in interface
        else:
            assert interface["ConnectionTrackingSpecification"] == EXPECTED_TRACKING


# --- Network Interfaces ---------------------------------------------------------------------


@pytest.mark.parametrize("requests", [
    pytest.param(None, id="when pod does not request EFA"),
    pytest.param({"vpc.amazonaws.com/efa": "2"}, id="when pod does request EFA"),
])
def test_the_node_classs_interfaces_are_launched_as_listed(
    provider: AwsCloudProvider, world: World, ec2: FakeEC2, requests: dict[str, str] | None,
) -> None:
    """Context("Network Interfaces") DescribeTable("should configure network interfaces with
    same configuration as NodeClass"), one test per Entry: spec.networkInterfaces wins over
    what the pods ask for."""
    provider.create(claim([EFA_TYPE], requests), node_class(networkInterfaces=FOUR_INTERFACES))
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"])
            for i in interfaces(ec2)] == [(0, 0, "interface"), (0, 1, "efa-only"),
                                          (1, 0, "efa-only"), (1, 1, "interface")]


def test_no_prefixes_on_efa_only_interfaces(provider: AwsCloudProvider, world: World,
                                            ec2: FakeEC2) -> None:
    """Context("Network Interfaces") It("should not set prefix count on EFA-only
    interfaces")"""
    listed = [FOUR_INTERFACES[0], FOUR_INTERFACES[1], FOUR_INTERFACES[3]]
    provider.create(claim([EFA_TYPE]), node_class(networkInterfaces=listed, ipPrefixCount=2))
    found = interfaces(ec2)
    assert [(i["InterfaceType"], i.get("Ipv4PrefixCount")) for i in found] == [
        ("interface", 2), ("efa-only", None), ("interface", 2)]


def test_no_ipv6_addresses_on_efa_only_interfaces(ipv6: AwsCloudProvider, ec2: FakeEC2) -> None:
    """Context("Network Interfaces") It("should not set Ipv6 specs on EFA-only interfaces")"""
    ipv6.create(claim([EFA_TYPE]), node_class(networkInterfaces=FOUR_INTERFACES[:2]))
    primary, efa_only = interfaces(ec2)
    assert (primary["InterfaceType"], primary["PrimaryIpv6"], primary["Ipv6AddressCount"]) == (
        "interface", True, 1)
    assert efa_only["InterfaceType"] == "efa-only"
    assert efa_only.get("PrimaryIpv6", False) is False and "Ipv6AddressCount" not in efa_only
