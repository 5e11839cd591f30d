"""The EC2NodeClass status fields as Karpenter v1.14.1 writes them (an audit of
pkg/apis/v1/ec2nodeclass_status.go and pkg/controllers/nodeclass/{ami,subnet,securitygroup,
instanceprofile,capacityreservation}.go against what the node class status controller
stores): the order of an AMI's requirements, no empty lists, and the fields a failed lookup
leaves as they were.

Each story runs the status controller (`NodeClassStatus`) against the in-memory API server
and moto (tests/aws/world.py), and reads the EC2NodeClass back as `kubectl get -o yaml` would.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from nodewright.cloud.aws.amis import Image
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_class_resolution import Resolution
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.status import NodeClassStatus
from nodewright.runtime.clock import VirtualClock
from tests.aws.reservations import FakeCapacityReservations, FakeReservation
from tests.aws.world import ACCOUNT, World, node_class

GPU = "karpenter.k8s.aws/instance-gpu-count"
ACCELERATOR = "karpenter.k8s.aws/instance-accelerator-count"


def requirement_keys(resolution: Resolution) -> list[list[str]]:
    return [[r.key for r in ami.requirements] for ami in resolution.to_status().amis or []]


def test_an_ami_s_requirements_are_in_karpenter_s_order() -> None:
    """ami.go sorts each image's requirements by key length, then key: a standard AL2023
    image reads arch, gpu-count, accelerator-count (Nodewright wrote the accelerator count
    before the GPU count)."""
    standard = Image("ami-standard", "al2023-standard", "amd64", "2026-01-01T00:00:00Z",
                     False, variants=("standard",))
    assert requirement_keys(Resolution(images=(standard,))) == [
        ["kubernetes.io/arch", GPU, ACCELERATOR]]


def test_a_windows_image_s_requirements_start_with_the_os() -> None:
    """windows.go's requirements (os, windows-build) plus the architecture, sorted as ami.go
    sorts them: kubernetes.io/os is the shortest key."""
    windows = Image("ami-windows", "windows-2022", "amd64", "2026-01-01T00:00:00Z", False,
                    windows_build="10.0.20348")
    assert requirement_keys(Resolution(images=(windows,))) == [
        ["kubernetes.io/os", "kubernetes.io/arch", "node.kubernetes.io/windows-build"]]


@pytest.fixture
def cluster() -> InMemoryCluster:
    return InMemoryCluster(VirtualClock())


def reconcile(cluster: InMemoryCluster, provider: AwsCloudProvider) -> dict[str, Any]:
    NodeClassStatus(cluster, provider, VirtualClock()).reconcile("default")
    status: dict[str, Any] = cluster.get("EC2NodeClass", "default").get("status") or {}
    return status


def edit_spec(cluster: InMemoryCluster, **spec: Any) -> None:
    body = cluster.get("EC2NodeClass", "default")
    cluster.patch("EC2NodeClass", "default", {
        "spec": spec, "metadata": {"resourceVersion": body["metadata"]["resourceVersion"]}})


def test_subnets_that_no_longer_match_leave_no_empty_list(
    cluster: InMemoryCluster, provider: AwsCloudProvider, world: World,
) -> None:
    """subnet.go and securitygroup.go set a nil list when the terms match nothing (omitted
    from the object); Nodewright stored `subnets: []` and `securityGroups: []`."""
    cluster.create(node_class().to_manifest())
    assert reconcile(cluster, provider)["subnets"]
    nothing = [{"tags": {"team": "nobody"}}]
    edit_spec(cluster, subnetSelectorTerms=nothing, securityGroupSelectorTerms=nothing)
    status = reconcile(cluster, provider)
    assert "subnets" not in status
    assert "securityGroups" not in status
    assert status["amis"]


def test_a_role_that_cannot_be_used_keeps_the_profile_in_status(
    cluster: InMemoryCluster, provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """instanceprofile.go returns the Create error before writing status.instanceProfile:
    the nodes' profile stays in status. Nodewright removed it, so once the role was fixed
    the node class started from nothing and made a second profile for the same role."""
    cluster.create(node_class().to_manifest())
    profile = reconcile(cluster, provider)["instanceProfile"]

    edit_spec(cluster, role="KarpenterNodeRole-typo")
    status = reconcile(cluster, provider)
    assert status["instanceProfile"] == profile
    ready = {c["type"]: c["status"] for c in status["conditions"]}
    assert ready["InstanceProfileReady"] == "False"

    edit_spec(cluster, role="KarpenterNodeRole-demo")
    assert reconcile(cluster, provider)["instanceProfile"] == profile
    names = [p["InstanceProfileName"]
             for p in clients.iam.list_instance_profiles()["InstanceProfiles"]]
    assert names == [profile]


@pytest.fixture
def reservations(clients: AwsClients) -> Iterator[FakeCapacityReservations]:
    fake = FakeCapacityReservations(clients)
    fake.add(FakeReservation("cr-m5large1a1", "m5.large", "us-west-2a", available=10,
                             owner=ACCOUNT, tags={"team": "ml"}, interruptible=False))
    yield fake


def test_a_failed_reservation_lookup_keeps_the_reservations(
    cluster: InMemoryCluster, provider: AwsCloudProvider, clients: AwsClients, world: World,
    reservations: FakeCapacityReservations,
) -> None:
    """capacityreservation.go returns the DescribeCapacityReservations error before touching
    status.capacityReservations; Nodewright emptied it for the length of an EC2 outage."""
    cluster.create(node_class(capacityReservationSelectorTerms=[{"tags": {"team": "ml"}}])
                   .to_manifest())
    listed = reconcile(cluster, provider)["capacityReservations"]
    assert [r["id"] for r in listed] == ["cr-m5large1a1"]
    assert listed[0]["interruptible"] is False and listed[0]["state"] == "active"

    def throttled(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "RequestLimitExceeded", "Message": "slow down"}},
                          "DescribeCapacityReservations")

    clients.ec2.meta.events.register_first(
        "before-call.ec2.DescribeCapacityReservations", throttled)
    edit_spec(cluster, tags={"team": "payments", "cost-center": "7"})  # a new resolution
    assert reconcile(cluster, provider)["capacityReservations"] == listed
