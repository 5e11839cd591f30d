"""Karpenter's cloud provider suite (pkg/cloudprovider/suite_test.go, v1.14.1): the NodeClaim's
hash annotations, capacity reservation accounting on launch and termination, and
Context("MinValues")'s CreateFleet requests. Each test names its It.

Where Karpenter's CloudProvider.Create returns the NodeClaim it annotates, Nodewright's
provisioner writes the annotations when it creates the NodeClaim (a story in the in-memory
cluster); the launches themselves run through the real provider on moto.
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, cast

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODECLASS_HASH_VERSION_VALUE,
    node_class_hash,
)
from nodewright.api.nodeclaim import NodeClaim
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.controllers.nodeclaim.finalize import instance_gone
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.test_instancetype_karpenter import pod_manifest, provisioned
from tests.aws.world import CLUSTER, FakeClock, World, node_class, nodeclaim
from tests.controllers.conftest import WORKSHOP
from tests.harness import World as Cluster

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
ZONE = "us-west-2a"
RESERVATION = "cr-m5.large-1a"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"


# --- Create: hash annotations ---------------------------------------------------------------


def provisioned_claim_annotations() -> tuple[dict[str, str], Any]:
    cluster = Cluster()
    cluster.apply(WORKSHOP)
    cluster.scale("inflate", 1)
    cluster.advance(10)
    (claim,) = cluster.nodeclaims()
    (node_class_object,) = [o for o in cluster.cluster.list("EC2NodeClass")]
    return claim["metadata"].get("annotations") or {}, node_class_object


def test_a_launched_nodeclaim_carries_the_node_class_hash() -> None:
    """It("should return NodeClass Hash on the nodeClaim"): the hash of the node class it
    launched from (the one drift compares)."""
    annotations, raw = provisioned_claim_annotations()
    assert annotations[NODECLASS_HASH] == node_class_hash(EC2NodeClass.model_validate(raw))


def test_a_launched_nodeclaim_carries_the_hash_version() -> None:
    """It("should return NodeClass Hash Version on the nodeClaim") (Nodewright's hash
    version: its hash is its own, see docs/karpenter-differences.md)"""
    annotations, _ = provisioned_claim_annotations()
    assert annotations[NODECLASS_HASH_VERSION] == NODECLASS_HASH_VERSION_VALUE


def test_the_provider_annotates_a_nodeclaim_with_exactly_three_keys() -> None:
    """It("should expect a strict set of annotation keys"): what the AWS provider adds to a
    launched NodeClaim is the node class hash, its version and the instance profile the
    instance runs with (the karpenter.sh/ annotations are core's, from the NodePool)."""
    annotations, raw = provisioned_claim_annotations()
    provider_keys = {key for key in annotations if key.startswith("karpenter.k8s.aws/")}
    assert provider_keys == {NODECLASS_HASH, NODECLASS_HASH_VERSION,
                             "karpenter.k8s.aws/instance-profile-name"}
    assert annotations["karpenter.k8s.aws/instance-profile-name"] == \
        raw["status"]["instanceProfile"]


# --- Capacity Reservations ------------------------------------------------------------------


@pytest.fixture
def reservations(clients: AwsClients) -> FakeCapacityReservations:
    fake = FakeCapacityReservations(clients)
    fake.add(FakeReservation(RESERVATION, "m5.large", ZONE, available=10, total=10,
                             tags={"team": "ml"}))
    return fake


@pytest.fixture
def reserving(clients: AwsClients, world: World, clock: FakeClock,
              reservations: FakeCapacityReservations) -> AwsCloudProvider:
    return AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                            wall_clock=lambda: NOW)


def reserved_claim() -> NodeClaim:
    return nodeclaim(requirements=[
        {"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
        {"key": CAPACITY_TYPE, "operator": "In", "values": ["reserved"]}])


RESERVING_CLASS = node_class(capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}])


def test_a_launch_into_a_reservation_takes_one_of_its_slots(
    reserving: AwsCloudProvider
) -> None:
    """Context("Capacity Reservations") It("should mark capacity reservations as launched")"""
    instance = reserving.create(reserved_claim(), RESERVING_CLASS)

    assert instance.labels["karpenter.k8s.aws/capacity-reservation-id"] == RESERVATION
    assert reserving.reservations.count(RESERVATION) == 9


def test_a_reservation_slot_comes_back_once_its_instance_is_gone(
    reserving: AwsCloudProvider, clients: AwsClients
) -> None:
    """Context("Capacity Reservations") It("should mark capacity reservations as terminated"):
    while EC2 still shows the instance, the slot stays taken; once it is gone, it is free
    again (Karpenter's Delete, here the termination finalizer's check)."""
    instance = reserving.create(reserved_claim(), RESERVING_CLASS)
    claim = {"metadata": {"labels": dict(instance.labels)}}
    context = cast(Any, SimpleNamespace(cloud=reserving))
    still_there = {"on": True}

    def shutting_down(parsed: dict[str, Any], **_: Any) -> None:
        if still_there["on"]:
            for group in parsed.get("Reservations", []):
                for described in group.get("Instances", []):
                    described["State"] = {"Code": 32, "Name": "shutting-down"}

    clients.ec2.meta.events.register("after-call.ec2.DescribeInstances", shutting_down)

    assert instance_gone(context, instance.provider_id, claim) is False
    assert reserving.reservations.count(RESERVATION) == 9

    still_there["on"] = False
    assert instance_gone(context, instance.provider_id, claim) is True
    assert reserving.reservations.count(RESERVATION) == 10


RESERVATION_KINDS = [("default", False), ("default", True), ("capacity-block", False)]


@pytest.mark.parametrize(("kind", "interruptible"), RESERVATION_KINDS,
                         ids=["default-non-interruptible", "default-interruptible",
                              "capacity-block"])
def test_a_reserved_nodeclaim_carries_its_reservation_labels(
    kind: str, interruptible: bool, clients: AwsClients, world: World, clock: FakeClock,
    ec2: FakeEC2,
) -> None:
    """Context("Capacity Reservations") DescribeTable("should include capacity reservation
    labels"), Entry("when the capacity reservation type is default non-interruptible"),
    Entry("... default interruptible") and Entry("... capacity-block"): one reservation of
    each kind for m5.large in one zone; a pod selecting a type and an interruptibility gets
    a NodeClaim labelled with that reservation's id, type and interruptible flag."""
    FakeCapacityReservations(clients).add(*(
        FakeReservation(f"cr-m5.large-1a-{k}-{str(flag).lower()}", "m5.large", ZONE,
                        available=10, total=10, reservation_type=k, interruptible=flag,
                        tags={"team": "ml"})
        for k, flag in RESERVATION_KINDS))
    provider = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                wall_clock=lambda: NOW)
    claim = nodeclaim(requirements=[
        {"key": INSTANCE_TYPE, "operator": "In", "values": ["m5.large"]},
        {"key": CAPACITY_TYPE, "operator": "In", "values": ["reserved"]},
        {"key": "karpenter.k8s.aws/capacity-reservation-type", "operator": "In",
         "values": [kind]},
        {"key": "karpenter.k8s.aws/capacity-reservation-interruptible", "operator": "In",
         "values": [str(interruptible).lower()]}])
    # moto's CreateFleet knows neither capacity blocks nor reserved-capacity targets: EC2's
    # answer is given.
    ec2.respond("CreateFleet", {"Errors": [], "Instances": [{
        "InstanceIds": ["i-0123456789abcdef0"], "InstanceType": "m5.large",
        "LaunchTemplateAndOverrides": {"Overrides": {
            "InstanceType": "m5.large", "AvailabilityZone": ZONE}}}]})

    instance = provider.create(claim, RESERVING_CLASS)

    assert instance.labels[CAPACITY_TYPE] == "reserved"
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-id"] == (
        f"cr-m5.large-1a-{kind}-{str(interruptible).lower()}")
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-type"] == kind
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-interruptible"] == (
        str(interruptible).lower())


# --- MinValues ------------------------------------------------------------------------------


def spot_pod(name: str) -> dict[str, Any]:
    return pod_manifest(name, requests={"cpu": "900m"})


def launch_each(provider: AwsCloudProvider, claims: Any, keys: list[dict[str, Any]]) -> None:
    """Launch every planned NodeClaim, as the provisioner would, with its types and the
    NodePool's minValues requirements."""
    for number, planned in enumerate(claims):
        types = [name for name, _ in planned.instance_types]
        provider.create(nodeclaim(f"min-{number}", uid=f"uid-min-{number}", requirements=[
            {"key": INSTANCE_TYPE, "operator": "In", "values": types},
            {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot"]}, *keys]),
            node_class())


# A 1-vCPU type (room for one 0.9-CPU pod) and an 8-vCPU one (room for both).
SMALL, LARGE = "t2.small", "c5.2xlarge"


@pytest.mark.parametrize("requirements", [
    pytest.param([{"key": INSTANCE_TYPE, "operator": "In", "values": [SMALL, LARGE],
                   "minValues": 2}],
                 id="CreateFleet input should respect minValues for In operator requirement "
                    "from NodePool"),
    pytest.param([{"key": INSTANCE_TYPE, "operator": "Exists", "minValues": 2},
                  {"key": INSTANCE_TYPE, "operator": "In", "values": [SMALL, LARGE],
                   "minValues": 1}],
                 id="CreateFleet input should respect minValues for Exists Operator in "
                    "requirement from NodePool"),
])
def test_min_values_keep_two_types_in_every_fleet(
    provider: AwsCloudProvider, ec2: FakeEC2, requirements: list[dict[str, Any]]
) -> None:
    """Context("MinValues"), its first two Its (the test ids): two pods that one 8-vCPU node
    would hold go onto two NodeClaims, as each must keep both types (and the 1-vCPU one holds
    one pod); each fleet request offers both."""
    capacity = {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot"]}
    result = provisioned([spot_pod("one"), spot_pod("two")], [capacity, *requirements])

    assert len(result.nodeclaims) == 2
    launch_each(provider, result.nodeclaims, [])
    for request in ec2.calls("CreateFleet"):
        assert ec2.instance_types(request) == {SMALL, LARGE}


def test_min_values_of_several_keys_shape_every_fleet(
    provider: AwsCloudProvider, ec2: FakeEC2
) -> None:
    """Context("MinValues") It("CreateFleet input should respect minValues from multiple keys in
    NodePool"): at least 2 types and 3 families: all three types (1, 4 and 8 vCPUs, three
    families) stay in each NodeClaim and in each fleet request."""
    types = [SMALL, "m5.xlarge", LARGE]
    requirements = [
        {"key": CAPACITY_TYPE, "operator": "In", "values": ["spot"]},
        {"key": INSTANCE_TYPE, "operator": "In", "values": types, "minValues": 2},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
         "values": ["t2", "m5", "c5"], "minValues": 3},
    ]
    result = provisioned([spot_pod("one"), spot_pod("two")], requirements)

    assert len(result.nodeclaims) == 2
    launch_each(provider, result.nodeclaims, [])
    for request in ec2.calls("CreateFleet"):
        assert ec2.instance_types(request) == set(types)
        assert {name.split(".")[0] for name in ec2.instance_types(request)} == {"t2", "m5", "c5"}


# --- Subnet Compatibility -------------------------------------------------------------------


def test_each_node_class_launches_into_its_own_subnets(
    provider: AwsCloudProvider, ec2: FakeEC2, world: World
) -> None:
    """Context("Subnet Compatibility") It("should launch instances into subnets that are
    excluded by another NodePool"): one node class selects the discovery subnets, another
    only the subnet the first leaves out; each fleet uses its own."""
    provider.create(nodeclaim(), node_class())
    provider.create(nodeclaim("other-abcde", uid="uid-other"), node_class(
        "other", subnetSelectorTerms=[{"tags": {"team": "other"}}]))

    first, second = ec2.calls("CreateFleet")
    assert {o.subnet_id for o in ec2.overrides(first)} <= set(world.subnets.values())
    assert {o.subnet_id for o in ec2.overrides(second)} == {world.other_subnet}


def test_a_node_class_selecting_nothing_leaves_pods_to_another_nodepool() -> None:
    """Context("Subnet Compatibility") It("should launch instances with an alternate NodePool
    when a NodeClass selects 0 subnets, security groups, or amis"): in the in-memory cluster,
    a second NodePool's EC2NodeClass selects nothing; the pod still gets a node, from the
    NodePool whose node class is ready."""
    cluster = Cluster()
    broken = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
              "metadata": {"name": "misconfigured"},
              "spec": {"role": "KarpenterNodeRole", "amiFamily": "Custom",
                       "amiSelectorTerms": [{"tags": {"Name": "nothing"}}],
                       "subnetSelectorTerms": [{"tags": {"Name": "nothing"}}],
                       "securityGroupSelectorTerms": [{"tags": {"Name": "nothing"}}]}}
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "misconfigured"},
            "spec": {"weight": 100, "template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "misconfigured"}, "requirements": []}}}}
    cluster.apply(WORKSHOP, broken, pool)
    cluster.scale("inflate", 1)

    assert cluster.settle()
    (claim,) = cluster.nodeclaims()
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
