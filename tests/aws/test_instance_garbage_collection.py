"""Instance garbage collection finds instances by Karpenter's tags, on moto.

Ported from aws/karpenter-provider-aws v1.14.1
pkg/controllers/nodeclaim/garbagecollection/suite_test.go (Describe "GarbageCollection"):
the instances are seeded into EC2 with the tags a Karpenter-compatible controller writes
(`karpenter.sh/nodepool`, `karpenter.k8s.aws/ec2nodeclass`, `eks:eks-cluster-name`), none of
them with a `karpenter.sh/nodeclaim` tag, and the GC controller runs against the provider.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from nodewright.cloud.aws import tags
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import NodeClaimNotFoundError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclaim.garbagecollection import InstanceGarbageCollection
from nodewright.runtime import VirtualClock, WatchEvent
from nodewright.state import ClusterState

from .world import CLUSTER, X86_IMAGE, World

KARPENTER_TAGS = {
    f"kubernetes.io/cluster/{CLUSTER}": "owned",
    tags.NODEPOOL: "default",
    tags.NODECLASS: "default",
    tags.EKS_CLUSTER: CLUSTER,
}


def seed(clients: AwsClients, world: World, count: int = 1,
         instance_tags: dict[str, str] | None = None) -> list[str]:
    """Instances as another controller left them: running, tagged, no NodeClaim tag."""
    chosen = KARPENTER_TAGS if instance_tags is None else instance_tags
    reservation = clients.ec2.run_instances(
        ImageId=X86_IMAGE, InstanceType="m5.large", MinCount=count, MaxCount=count,
        SubnetId=world.subnets[f"{world.region}a"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [
            {"Key": key, "Value": value} for key, value in chosen.items()]}],
    )
    return [instance["InstanceId"] for instance in reservation["Instances"]]


def provider_id(world: World, instance_id: str) -> str:
    return f"aws:///{world.region}a/{instance_id}"


class Collector:
    """The GC controller over an in-memory API server, its clock `offset` after launch."""

    def __init__(self, provider: AwsCloudProvider, offset: timedelta) -> None:
        launched = min((i.launch_time for i in provider.list()), default=None)
        assert launched is not None, "seed instances first"
        self.clock = VirtualClock(launched + offset)
        self.cluster = InMemoryCluster(self.clock)
        self.state = ClusterState(self.clock)
        self.state.lock.concurrent = True  # as the operator runs it: terminations together
        self.controller = InstanceGarbageCollection(self.cluster, provider, self.clock,
                                                    self.state)

    def add(self, kind: str, manifest: dict[str, Any]) -> None:
        created = self.cluster.create(manifest)
        if "status" in manifest:
            created = self.cluster.patch(kind, manifest["metadata"]["name"],
                                         {"status": manifest["status"]}, subresource="status")
        self.state.observe(WatchEvent("ADDED", created))  # type: ignore[arg-type]

    def nodeclaim(self, name: str, owned: str) -> None:
        self.add("NodeClaim", {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []},
            "status": {"providerID": owned}})

    def node(self, name: str, owned: str) -> None:
        self.add("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                          "spec": {"providerID": owned}})

    def node_exists(self, name: str) -> bool:
        return any(n["metadata"]["name"] == name for n in self.cluster.list("Node"))

    def run(self) -> None:
        self.controller.reconcile("")


def gone(provider: AwsCloudProvider, owned: str) -> bool:
    try:
        provider.get(owned)
    except NodeClaimNotFoundError:
        return True
    return False


def which_gone(provider: AwsCloudProvider, world: World, instances: list[str]) -> list[bool]:
    """`gone` for each instance, asked at once (as the controllers would): the provider's
    DescribeInstances batcher answers them together instead of one batch window each."""
    with ThreadPoolExecutor(max_workers=len(instances)) as pool:
        return list(pool.map(lambda i: gone(provider, provider_id(world, i)), instances))


def test_an_instance_without_a_nodeclaim_owner_is_deleted(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should delete an instance if there is no NodeClaim owner") — an instance with
    Karpenter's tags and no karpenter.sh/nodeclaim tag (never written, or launched by
    Karpenter before a migration) is collected."""
    (instance,) = seed(clients, world)
    Collector(provider, timedelta(minutes=1)).run()
    assert gone(provider, provider_id(world, instance))


def test_the_node_of_an_unowned_instance_goes_with_it(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should delete an instance along with the node if there is no NodeClaim owner
    (to quicken scheduling)")."""
    (instance,) = seed(clients, world)
    collector = Collector(provider, timedelta(minutes=1))
    collector.node("node-a", provider_id(world, instance))
    collector.run()
    assert gone(provider, provider_id(world, instance))
    assert not collector.node_exists("node-a")


def test_many_unowned_instances_are_all_deleted(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should delete many instances if they all don't have NodeClaim owners")."""
    instances = seed(clients, world, count=100)
    Collector(provider, timedelta(minutes=1)).run()
    assert all(which_gone(provider, world, instances))


def test_instances_without_karpenters_tags_are_not_listed_even_with_nodeclaims(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should not delete all instances if they all have NodeClaim owners") — the
    instances carry only the cluster's ownership tag, each has its NodeClaim."""
    seed(clients, world)  # something listed, for the collector's clock
    instances = seed(clients, world, count=100,
                     instance_tags={f"kubernetes.io/cluster/{CLUSTER}": "owned"})
    collector = Collector(provider, timedelta(minutes=1))
    for index, instance in enumerate(instances):
        collector.nodeclaim(f"claim-{index}", provider_id(world, instance))
    collector.run()
    assert not any(which_gone(provider, world, instances))
    assert len(collector.cluster.list("NodeClaim")) == 100


def test_an_instance_inside_the_resolution_window_is_kept(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should not delete an instance if it is within the NodeClaim resolution window
    (1m)")."""
    (instance,) = seed(clients, world)
    Collector(provider, timedelta(0)).run()
    assert not gone(provider, provider_id(world, instance))


def test_an_instance_no_nodepool_launched_is_kept(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should not delete an instance if it was not launched by a NodeClaim") — no
    karpenter.sh/nodepool tag: not Karpenter's to collect."""
    seed(clients, world)
    untagged = {k: v for k, v in KARPENTER_TAGS.items() if k != tags.NODEPOOL}
    (instance,) = seed(clients, world, instance_tags=untagged)
    Collector(provider, timedelta(minutes=1)).run()
    assert not gone(provider, provider_id(world, instance))


@pytest.mark.parametrize("missing", [tags.NODECLASS, tags.EKS_CLUSTER])
def test_an_instance_without_the_node_class_or_eks_tag_is_kept(
    provider: AwsCloudProvider, clients: AwsClients, world: World, missing: str,
) -> None:
    """Karpenter's List filter: both tag keys and this cluster's eks:eks-cluster-name."""
    seed(clients, world)
    partial = {k: v for k, v in KARPENTER_TAGS.items() if k != missing}
    (instance,) = seed(clients, world, instance_tags=partial)
    other_cluster = {**KARPENTER_TAGS, tags.EKS_CLUSTER: "another"}
    (foreign,) = seed(clients, world, instance_tags=other_cluster)
    Collector(provider, timedelta(minutes=1)).run()
    assert not gone(provider, provider_id(world, instance))
    assert not gone(provider, provider_id(world, foreign))


def test_an_owned_instance_and_its_node_are_kept(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should not delete the instance or node if it already has a NodeClaim that
    matches it")."""
    (instance,) = seed(clients, world)
    collector = Collector(provider, timedelta(minutes=1))
    collector.nodeclaim("claim-a", provider_id(world, instance))
    collector.node("node-a", provider_id(world, instance))
    collector.run()
    assert not gone(provider, provider_id(world, instance))
    assert collector.node_exists("node-a")


def test_many_owned_instances_and_their_nodes_are_kept(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should not delete many instances or nodes if they already have NodeClaim owners
    that match it")."""
    seed(clients, world)
    no_node_class = {k: v for k, v in KARPENTER_TAGS.items() if k != tags.NODECLASS}
    instances = seed(clients, world, count=100, instance_tags=no_node_class)
    collector = Collector(provider, timedelta(minutes=1))
    for index, instance in enumerate(instances):
        collector.nodeclaim(f"claim-{index}", provider_id(world, instance))
        collector.node(f"node-{index}", provider_id(world, instance))
    collector.run()
    assert not any(which_gone(provider, world, instances))
    assert all(collector.node_exists(f"node-{i}") for i in range(100))
