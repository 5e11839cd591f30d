"""A registered Node's memory replaces the estimate for its instance type and image set, as
Karpenter v1.14.1's discovered capacity cache does. Ported from
pkg/controllers/providers/instancetype/capacity/suite_test.go (It names in each test); the
rest are the conditions pkg/providers/instancetype/instancetype.go
(UpdateInstanceTypeCapacityFromNode) and the controller's predicates put on it."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.quantity import MEMORY, parse_quantity
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.discovered_capacity import DISCOVERED_CAPACITY_TTL_SECONDS
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.discovered_capacity import DiscoveredCapacity
from nodewright.controllers.registry import build_controllers
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.scheduling.catalog import InstanceType
from nodewright.state import ClusterState

from .world import K8S_VERSION, X86_IMAGE, FakeClock, World, node_class, seed_public_parameter

MIB = 1024 * 1024
AL2023_X86 = (f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/"
              "standard/recommended/image_id")
AL2023_NVIDIA = (f"/aws/service/eks/optimized-ami/{K8S_VERSION}/amazon-linux-2023/x86_64/"
                 "nvidia/recommended/image_id")
# t3.medium: 4096 MiB, less VM_MEMORY_OVERHEAD_PERCENT (7.5 %, rounded up): 3788 MiB.
ESTIMATED_T3_MEDIUM = (4096 - 308) * MIB * 1000


class Registration:
    """A cluster with the default EC2NodeClass, and Nodes of ours registering in it."""

    def __init__(self, provider: AwsCloudProvider) -> None:
        self.cluster = InMemoryCluster(VirtualClock())
        self.state = ClusterState(VirtualClock())
        self.controller = DiscoveredCapacity(self.cluster, self.state, provider)
        self._add(node_class().to_manifest())

    def _add(self, body: dict[str, Any]) -> dict[str, Any]:
        stored = self.cluster.create(body)
        self.state.observe(WatchEvent("ADDED", stored))
        return stored

    def node(self, name: str, instance_type: str, memory: str, image_id: str,
             *, registered: bool = True, managed: bool = True,
             extra_labels: dict[str, str] | None = None) -> WatchEvent:
        """A NodeClaim that booted `image_id` and its Node reporting `memory`; the event the
        Node's watch delivers."""
        provider_id = f"aws:///us-west-2a/i-{name}"
        claim = self._add({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}})
        claim = self.cluster.patch("NodeClaim", name, {"status": {
            "providerID": provider_id, "nodeName": name, "imageID": image_id}},
            subresource="status")
        self.state.observe(WatchEvent("MODIFIED", claim))
        labels = {"node.kubernetes.io/instance-type": instance_type,
                  "kubernetes.io/arch": "amd64", "karpenter.sh/nodepool": "default",
                  **(extra_labels or {})}
        if managed:
            labels["karpenter.k8s.aws/ec2nodeclass"] = "default"
        if registered:
            labels["karpenter.sh/registered"] = "true"
        node = self._add({"apiVersion": "v1", "kind": "Node",
                          "metadata": {"name": name, "labels": labels},
                          "spec": {"providerID": provider_id},
                          "status": {"capacity": {"memory": memory, "cpu": "2"}}})
        return WatchEvent("ADDED", node)

    def registers(self, event: WatchEvent) -> None:
        """The event goes through the controller's watch, then its keys are reconciled."""
        for key in self.controller.watches[0].keys(event):
            self.controller.reconcile(key)


def t3_medium(provider: AwsCloudProvider, nc: EC2NodeClass | None = None) -> InstanceType:
    return next(t for t in provider.get_instance_types(nc or node_class())
                if t.name == "t3.medium")


@pytest.fixture
def registration(provider: AwsCloudProvider, world: World) -> Registration:
    return Registration(provider)


def test_a_registered_node_s_memory_replaces_the_estimate(
        provider: AwsCloudProvider, registration: Registration) -> None:
    """capacity/suite_test.go: It("should update discovered capacity based on existing
    nodes")."""
    assert t3_medium(provider).capacity[MEMORY] == ESTIMATED_T3_MEDIUM
    before = t3_medium(provider).allocatable[MEMORY]

    registration.registers(registration.node("t3-1", "t3.medium", "3840Mi", X86_IMAGE))

    learned = t3_medium(provider)
    assert learned.capacity[MEMORY] == parse_quantity("3840Mi")
    # The plans see it: what pods may use moves by the same amount.
    assert learned.allocatable[MEMORY] - before == parse_quantity("3840Mi") - ESTIMATED_T3_MEDIUM


def test_a_new_image_release_plans_with_the_estimate_again(
        provider: AwsCloudProvider, registration: Registration, clients: AwsClients,
        clock: FakeClock, other_x86_image: str) -> None:
    """capacity/suite_test.go: It("should use VM_MEMORY_OVERHEAD_PERCENT calculation after
    AMI update"). The release: the alias parameter names another image, read again once
    the parameter cache's day is over."""
    node = registration.node("t3-1", "t3.medium", "3840Mi", X86_IMAGE)
    registration.registers(node)
    assert t3_medium(provider).capacity[MEMORY] == parse_quantity("3840Mi")

    seed_public_parameter(clients.region, AL2023_X86, other_x86_image)
    clock.advance(25 * 3600)
    assert other_x86_image in {i.id for i in provider.resolve(node_class()).images}
    registration.controller.reconcile(node.key)  # the node still runs the old image

    assert t3_medium(provider).capacity[MEMORY] == ESTIMATED_T3_MEDIUM


def test_the_image_that_matches_need_not_be_the_first_of_the_node_class(
        provider: AwsCloudProvider, registration: Registration, nvidia_image: str) -> None:
    """capacity/suite_test.go: It("should properly update discovered capacity when matching
    AMI is not the first in the list"). The node class resolves the NVIDIA image and the
    standard one; a CPU type's Node booted the standard one."""
    images = [i.id for i in provider.resolve(node_class()).images]
    assert nvidia_image in images and X86_IMAGE in images

    registration.registers(registration.node("t3-1", "t3.medium", "4Gi", X86_IMAGE))

    assert t3_medium(provider).capacity[MEMORY] == parse_quantity("4Gi")


def test_a_node_that_booted_another_image_than_its_type_gets_now_teaches_nothing(
        provider: AwsCloudProvider, registration: Registration, nvidia_image: str) -> None:
    """instancetype.go UpdateInstanceTypeCapacityFromNode: "Ensure NodeClaim AMI is
    current": the image mapped to the type must be the NodeClaim's."""
    registration.registers(registration.node("t3-1", "t3.medium", "3840Mi", nvidia_image))

    assert t3_medium(provider).capacity[MEMORY] == ESTIMATED_T3_MEDIUM


def test_a_smaller_reading_wins_and_a_larger_one_is_ignored(
        provider: AwsCloudProvider, registration: Registration) -> None:
    """instancetype.go: the cache is updated when the Node's memory is less than or equal
    to what it holds."""
    registration.registers(registration.node("t3-1", "t3.medium", "3840Mi", X86_IMAGE))
    registration.registers(registration.node("t3-2", "t3.medium", "3900Mi", X86_IMAGE))
    assert t3_medium(provider).capacity[MEMORY] == parse_quantity("3840Mi")

    registration.registers(registration.node("t3-3", "t3.medium", "3800Mi", X86_IMAGE))
    assert t3_medium(provider).capacity[MEMORY] == parse_quantity("3800Mi")


def test_what_was_learned_is_kept_sixty_days(
        provider: AwsCloudProvider, registration: Registration, clock: FakeClock) -> None:
    """cache.go: DiscoveredCapacityCacheTTL = 60 * 24 * time.Hour."""
    registration.registers(registration.node("t3-1", "t3.medium", "3840Mi", X86_IMAGE))
    clock.advance(DISCOVERED_CAPACITY_TTL_SECONDS - 3600)
    assert t3_medium(provider).capacity[MEMORY] == parse_quantity("3840Mi")

    clock.advance(3600)
    assert t3_medium(provider).capacity[MEMORY] == ESTIMATED_T3_MEDIUM


def test_only_a_registration_of_one_of_our_nodes_is_reconciled(
        registration: Registration) -> None:
    """controller.go Register: Create events of registered Nodes (hydration at start-up),
    Update events when the Node becomes registered, never later updates nor deletes; and
    nodeutils.IsManaged: the Node carries its EC2NodeClass label."""
    keys = registration.controller.watches[0].keys
    unregistered = registration.node("t3-1", "t3.medium", "3840Mi", X86_IMAGE,
                                     registered=False)
    assert list(keys(unregistered)) == []
    body = {**unregistered.object, "metadata": {
        **unregistered.object["metadata"],
        "labels": {**unregistered.object["metadata"]["labels"],
                   "karpenter.sh/registered": "true"}}}
    assert list(keys(WatchEvent("MODIFIED", body))) == ["t3-1"]
    assert list(keys(WatchEvent("MODIFIED", body))) == []
    assert list(keys(WatchEvent("DELETED", body))) == []

    assert list(keys(registration.node("t3-2", "t3.medium", "3840Mi", X86_IMAGE))) == ["t3-2"]
    assert list(keys(registration.node("t3-3", "t3.medium", "3840Mi", X86_IMAGE,
                                       managed=False))) == []


def test_a_node_without_its_ec2nodeclass_label_teaches_nothing(
        provider: AwsCloudProvider, registration: Registration) -> None:
    """controller.go Reconcile: nodeutils.IsManaged first."""
    event = registration.node("t3-1", "t3.medium", "3840Mi", X86_IMAGE, managed=False)
    registration.controller.reconcile(event.key)

    assert t3_medium(provider).capacity[MEMORY] == ESTIMATED_T3_MEDIUM


def test_the_aws_provider_runs_the_controller(provider: AwsCloudProvider) -> None:
    """operator.go: the capacity controller is among the AWS provider's controllers."""
    clock = VirtualClock()
    names = {r.name for r in build_controllers(InMemoryCluster(clock), provider,
                                               clock).reconcilers}
    assert "providers.instancetype.capacity" in names


@pytest.fixture
def other_x86_image(clients: AwsClients, world: World) -> str:
    """Another x86_64 image moto ships."""
    x86 = clients.ec2.describe_images(
        Owners=["amazon"], Filters=[{"Name": "architecture", "Values": ["x86_64"]}]
    )["Images"]
    return sorted(i["ImageId"] for i in x86 if i["ImageId"] != X86_IMAGE)[0]


@pytest.fixture
def nvidia_image(clients: AwsClients, other_x86_image: str) -> str:
    """That image, published as the AL2023 NVIDIA image."""
    seed_public_parameter(clients.region, AL2023_NVIDIA, other_x86_image)
    return other_x86_image
