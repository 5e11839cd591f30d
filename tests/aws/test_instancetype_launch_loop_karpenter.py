"""Karpenter's instancetype suite (pkg/providers/instancetype/suite_test.go, v1.14.1): the Its
that need a provision -> CreateFleet -> provision loop over the AWS provider (the
Insufficient Capacity Error Cache retries) and local zones. Each test names its It.

Karpenter's ExpectProvisioned is `Provisioning.provision` (tests/aws/provisioning_loop.py):
the pending pods planned against the provider's instance types, each planned NodeClaim
launched by `AwsCloudProvider.create` on moto. Its `InsufficientCapacityPools` is FakeEC2's
`insufficient_capacity`: CreateFleet reports those overrides as InsufficientInstanceCapacity
and launches from the others. Karpenter's test zones test-zone-1a/1b are us-west-2a/2b.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.aws.unavailable import UNAVAILABLE_OFFERING_TTL_SECONDS
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.provisioning_loop import Provisioning, publish_accelerated_images
from tests.aws.test_instancetype_karpenter import DL1_24XLARGE, pod_manifest
from tests.aws.world import CLUSTER, FakeClock, World, node_class

ZONE_A, ZONE_B = "us-west-2a", "us-west-2b"
LOCAL_ZONE, LOCAL_ZONE_ID = "us-west-2-lax-1a", "usw2-lax1-az1"
ZONE = "topology.kubernetes.io/zone"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ACCELERATOR = "karpenter.k8s.aws/instance-accelerator-name"
ON_DEMAND = [{"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]}]


class Repriced:
    """The offline prices, with some on-demand prices a story chooses."""

    def __init__(self, on_demand: dict[str, float]) -> None:
        self._offline = OfflinePriceSource()
        self._on_demand = on_demand

    def on_demand(self, instance_type: str, region: str) -> float | None:
        return self._on_demand.get(instance_type) or self._offline.on_demand(instance_type,
                                                                             region)

    def spot(self, instance_type: str, zone: str) -> float | None:
        return self._offline.spot(instance_type, zone)


@pytest.fixture
def accelerated_images(clients: AwsClients, world: World) -> None:
    publish_accelerated_images(clients)


@pytest.fixture
def ec2(clients: AwsClients, accelerated_images: None) -> Iterator[FakeEC2]:
    fake = FakeEC2.attach(clients.ec2)
    yield fake
    fake.detach()


def provisioning(provider: AwsCloudProvider, requirements: list[dict[str, Any]],
                 **spec: Any) -> Provisioning:
    return Provisioning(provider, node_class(**spec), requirements)


def prefers_zone(pod: dict[str, Any], zone: str) -> dict[str, Any]:
    pod["spec"]["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "preference": {"matchExpressions": [
            {"key": ZONE, "operator": "In", "values": [zone]}]}}]}}
    return pod


def test_the_next_attempt_launches_another_type_after_an_ice(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2
) -> None:
    """It("should launch instances of different type on second reconciliation attempt with
    Insufficient Capacity Error Cache fallback"). The NodePool is narrowed to Karpenter's
    inferentia2 types. Karpenter's first-fit packs both one-device pods on the inf2.24xlarge;
    Nodewright's planner packs by price, so here the inf2.24xlarge is priced below two
    inf2.xlarge (the packing is the cheaper plan), as it is Karpenter's first choice."""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock,
                                prices=Repriced({"inf2.24xlarge": 0.8}))
    ec2.insufficient_capacity("inf2.24xlarge", ZONE_A, "on-demand")
    loop = provisioning(provider, [*ON_DEMAND, {"key": INSTANCE_TYPE, "operator": "In",
                                                "values": ["inf2.xlarge", "inf2.24xlarge"]}])
    pods = [pod_manifest(f"neuron-{n}", {ZONE: ZONE_A}, {"aws.amazon.com/neuron": "1"})
            for n in range(2)]

    loop.provision(pods)
    # It tried to pack them on a single inf2.24xlarge, then hit the capacity error.
    assert [loop.node_of(pod) for pod in pods] == [None, None]
    assert ec2.instance_types() == {"inf2.24xlarge"}

    loop.provision(pods)
    nodes = [node for pod in pods if (node := loop.node_of(pod)) is not None]
    assert [node.instance_type for node in nodes] == ["inf2.xlarge"] * 2
    assert len({node.instance_id for node in nodes}) == 2
    accelerators = {it.name: it.labels.get(ACCELERATOR)
                    for it in provider.get_instance_types(node_class())}
    assert accelerators["inf2.xlarge"] == "inferentia2"


def test_the_next_attempt_launches_in_another_zone_after_an_ice(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should launch instances in a different zone on second reconciliation attempt with
    Insufficient Capacity Error Cache fallback"): the pod prefers us-west-2a, where the
    g5.12xlarge has no capacity; the next attempt takes us-west-2b."""
    ec2.insufficient_capacity("g5.12xlarge", ZONE_A, "on-demand")
    loop = provisioning(provider, ON_DEMAND)
    pod = prefers_zone(pod_manifest("gpu", {INSTANCE_TYPE: "g5.12xlarge"},
                                    {"nvidia.com/gpu": "1"}), ZONE_A)

    loop.provision([pod])
    assert loop.node_of(pod) is None
    assert {o.zone for o in ec2.overrides()} == {ZONE_A}

    loop.provision([pod])
    node = loop.node_of(pod)
    assert node is not None
    assert (node.instance_type, node.zone) == ("g5.12xlarge", ZONE_B)


def test_smaller_types_launch_when_the_larger_one_has_no_capacity(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2
) -> None:
    """It("should launch smaller instances than optimal if larger instance launch results in
    Insufficient Capacity Error"): two 1-CPU pods, m5.large or m5.xlarge. Karpenter's
    first-fit packs both on the m5.xlarge; Nodewright's planner packs by price, and an
    m5.xlarge costs exactly two m5.large, so here it is priced a little lower (optimal)."""
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock,
                                prices=Repriced({"m5.xlarge": 0.15}))
    ec2.insufficient_capacity("m5.xlarge", ZONE_A, "on-demand")
    loop = provisioning(provider, [*ON_DEMAND, {"key": INSTANCE_TYPE, "operator": "In",
                                                "values": ["m5.large", "m5.xlarge"]}])
    pods = [pod_manifest(f"app-{n}", {ZONE: ZONE_A}, {"cpu": "1"}) for n in range(2)]

    loop.provision(pods)
    assert [loop.node_of(pod) for pod in pods] == [None, None]

    loop.provision(pods)
    nodes = [loop.node_of(pod) for pod in pods]
    assert [node.instance_type if node else None for node in nodes] == ["m5.large"] * 2


def test_an_offering_launches_again_once_its_ice_expires(
    provider: AwsCloudProvider, clock: FakeClock, ec2: FakeEC2
) -> None:
    """It("should launch instances on later reconciliation attempt with Insufficient Capacity
    Error Cache expiry"): Karpenter deletes the cache entry; here its three minutes pass."""
    ec2.insufficient_capacity("inf2.24xlarge", ZONE_A, "on-demand")
    loop = provisioning(provider, [*ON_DEMAND, {"key": ZONE, "operator": "In",
                                                "values": [ZONE_A]}])
    pod = pod_manifest("neuron", {INSTANCE_TYPE: "inf2.24xlarge"},
                       {"aws.amazon.com/neuron": "2"})

    loop.provision([pod])
    assert loop.node_of(pod) is None
    loop.provision([pod])  # still in the cache: nothing to launch
    assert loop.node_of(pod) is None

    # The capacity shortage is over, and the cache entry expires.
    ec2.refused.clear()
    clock.advance(UNAVAILABLE_OFFERING_TTL_SECONDS + 1)
    loop.provision([pod])
    node = loop.node_of(pod)
    assert node is not None and node.instance_type == "inf2.24xlarge"


def test_a_habana_type_launches_in_another_zone_after_an_ice(
    provider: AwsCloudProvider, clients: AwsClients, ec2: FakeEC2
) -> None:
    """It("should launch instances in a different zone on second reconciliation attempt with
    Insufficient Capacity Error Cache fallback (Habana)"). moto has no dl1.24xlarge: EC2's
    answers to DescribeInstanceTypes and DescribeInstanceTypeOfferings gain Karpenter's
    (offered in us-west-2a and 2b, as its fake)."""

    def with_dl1(parsed: dict[str, Any], **_: Any) -> None:
        if not parsed.get("NextToken"):
            parsed.setdefault("InstanceTypes", []).append(DL1_24XLARGE)

    def dl1_offered(parsed: dict[str, Any], **_: Any) -> None:
        if not parsed.get("NextToken"):
            parsed.setdefault("InstanceTypeOfferings", []).extend(
                {"InstanceType": "dl1.24xlarge", "Location": zone,
                 "LocationType": "availability-zone"} for zone in (ZONE_A, ZONE_B))

    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypes", with_dl1)
    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypeOfferings",
                                     dl1_offered)
    ec2.insufficient_capacity("dl1.24xlarge", ZONE_A, "on-demand")
    loop = provisioning(provider, ON_DEMAND)
    pod = prefers_zone(pod_manifest("gaudi", {INSTANCE_TYPE: "dl1.24xlarge"},
                                    {"habana.ai/gaudi": "1"}), ZONE_A)

    loop.provision([pod])
    assert loop.node_of(pod) is None

    loop.provision([pod])
    node = loop.node_of(pod)
    assert node is not None
    assert (node.instance_type, node.zone) == ("dl1.24xlarge", ZONE_B)


def test_on_demand_is_launched_when_spot_has_no_capacity(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """It("should launch on-demand capacity if flexible to both spot and on-demand, but spot is
    unavailable"): every type's spot capacity in us-west-2a is out; the first attempt asks
    for spot (the cheaper), the next falls back to on-demand."""
    for instance_type in provider.get_instance_types(node_class()):
        ec2.insufficient_capacity(instance_type.name, ZONE_A, "spot")
    loop = provisioning(provider, [
        {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]},
        {"key": ZONE, "operator": "In", "values": [ZONE_A]}])
    pod = pod_manifest("app")

    loop.provision([pod])
    assert loop.node_of(pod) is None
    assert ec2.last("CreateFleet")["TargetCapacitySpecification"][
        "DefaultTargetCapacityType"] == "spot"

    loop.provision([pod])
    node = loop.node_of(pod)
    assert node is not None and node.capacity_type == "on-demand"


def test_instances_launch_in_a_local_zone(
    provider: AwsCloudProvider, clients: AwsClients, world: World, ec2: FakeEC2
) -> None:
    """It("should launch instances in local zones"): the node class's only subnet is in a
    local zone. moto has no local zones, so EC2's answers say so: DescribeSubnets puts the
    subnet in us-west-2-lax-1a, and DescribeInstanceTypeOfferings offers there what it
    offers in us-west-2a."""
    subnet = world.subnets[ZONE_A]

    def in_local_zone(parsed: dict[str, Any], **_: Any) -> None:
        for raw in parsed.get("Subnets", []):
            if raw["SubnetId"] == subnet:
                raw.update(AvailabilityZone=LOCAL_ZONE, AvailabilityZoneId=LOCAL_ZONE_ID)

    def offered_locally(parsed: dict[str, Any], **_: Any) -> None:
        offerings = parsed.setdefault("InstanceTypeOfferings", [])
        offerings.extend([{**o, "Location": LOCAL_ZONE} for o in offerings
                          if o["Location"] == ZONE_A])

    clients.ec2.meta.events.register("after-call.ec2.DescribeSubnets", in_local_zone)
    clients.ec2.meta.events.register("after-call.ec2.DescribeInstanceTypeOfferings",
                                     offered_locally)
    loop = provisioning(provider, ON_DEMAND, subnetSelectorTerms=[{"id": subnet}])
    pod = pod_manifest("local", {ZONE: LOCAL_ZONE})

    loop.provision([pod])

    node = loop.node_of(pod)
    assert node is not None and node.zone == LOCAL_ZONE
    assert {(o.zone, o.subnet_id) for o in ec2.overrides()} == {(LOCAL_ZONE, subnet)}
