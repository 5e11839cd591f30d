"""The NodeClaim tagging controller names a registered NodeClaim's instance after its Node.

Ported from aws/karpenter-provider-aws v1.14.1 pkg/controllers/nodeclaim/tagging/suite_test.go
(Describe "TaggingController"): an instance in moto carrying the tags a launch writes (the
cluster's ownership tag, karpenter.sh/nodepool, eks:eks-cluster-name), a NodeClaim in the
in-memory API server whose status points at it, and the controller run once. The CreateTags
calls are checked against the controller policy by tests/aws/test_least_privilege.py (its
AllowScopedResourceTagging statement, as Karpenter's).
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws import tags
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclaim.tagging import (
    CLUSTER_NAME_TAGGED_ANNOTATION,
    TAGGED_ANNOTATION,
    NodeClaimTagging,
)
from nodewright.controllers.registry import build_controllers
from nodewright.runtime import VirtualClock

from .conftest import CallRecorder
from .world import CLUSTER, X86_IMAGE, World

LAUNCH_TAGS = {
    f"kubernetes.io/cluster/{CLUSTER}": "owned",
    tags.NODEPOOL: "default",
    tags.EKS_CLUSTER: CLUSTER,
}


def launched(clients: AwsClients, world: World, extra: dict[str, str] | None = None) -> str:
    """A running instance as a launch left it; its providerID."""
    chosen = {**LAUNCH_TAGS, **(extra or {})}
    (instance,) = clients.ec2.run_instances(
        ImageId=X86_IMAGE, InstanceType="m5.large", MinCount=1, MaxCount=1,
        SubnetId=world.subnets[f"{world.region}a"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [
            {"Key": key, "Value": value} for key, value in chosen.items()]}],
    )["Instances"]
    return f"aws:///{world.region}a/{instance['InstanceId']}"


def instance_tags(clients: AwsClients, provider_id: str) -> dict[str, str]:
    instance_id = provider_id.rsplit("/", 1)[1]
    raw = clients.ec2.describe_instances(InstanceIds=[instance_id])
    return {t["Key"]: t["Value"]
            for t in raw["Reservations"][0]["Instances"][0].get("Tags", [])}


class Tagging:
    """The controller over an in-memory API server."""

    def __init__(self, provider: AwsCloudProvider) -> None:
        self.clock = VirtualClock()
        self.cluster = InMemoryCluster(self.clock)
        self.controller = NodeClaimTagging(self.cluster, provider, self.clock)

    def nodeclaim(self, name: str = "default", *, provider_id: str = "", node_name: str = "",
                  finalizers: list[str] | None = None) -> dict[str, Any]:
        created = self.cluster.create({
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, **({"finalizers": finalizers} if finalizers else {})},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}})
        status = {key: value for key, value in (("providerID", provider_id),
                                                ("nodeName", node_name)) if value}
        if status:
            created = self.cluster.patch("NodeClaim", name, {"status": status},
                                         subresource="status")
        return created

    def annotations(self, name: str = "default") -> dict[str, str]:
        claim = self.cluster.get("NodeClaim", name)
        return dict(claim["metadata"].get("annotations") or {})


def test_an_instance_without_a_node_is_not_tagged(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("shouldn't tag instances without a Node")"""
    owned = launched(clients, world)
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id=owned)

    tagging.controller.reconcile("default")

    assert TAGGED_ANNOTATION not in tagging.annotations()
    assert "Name" not in instance_tags(clients, owned)


def test_a_malformed_provider_id_is_left_alone(
    provider: AwsCloudProvider, clients: AwsClients, world: World, recorder: CallRecorder,
) -> None:
    """It("shouldn't tag nodeclaim with a malformed provderID") — logged, not retried."""
    owned = launched(clients, world)
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id="Bad providerID", node_name="default")

    tagging.controller.reconcile("default")

    assert TAGGED_ANNOTATION not in tagging.annotations()
    assert "Name" not in instance_tags(clients, owned)
    assert recorder.calls_of("ec2:CreateTags") == []


def test_a_missing_nodeclaim_is_handled(provider: AwsCloudProvider) -> None:
    """It("should gracefully handle missing NodeClaim")"""
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id="aws:///us-west-2a/i-0123456789abcdef0", node_name="default")
    tagging.cluster.delete("NodeClaim", "default")

    assert tagging.controller.reconcile("default").requeue_after is None


def test_a_missing_instance_is_handled(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("should gracefully handle missing instance") — no error, no annotation."""
    owned = launched(clients, world)
    clients.ec2.terminate_instances(InstanceIds=[owned.rsplit("/", 1)[1]])
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id=owned, node_name="default")

    tagging.controller.reconcile("default")

    assert TAGGED_ANNOTATION not in tagging.annotations()


def test_a_deleting_nodeclaim_is_not_tagged(
    provider: AwsCloudProvider, clients: AwsClients, world: World,
) -> None:
    """It("shouldn't tag nodeclaim with deletion timestamp set")"""
    owned = launched(clients, world)
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id=owned, node_name="default", finalizers=["testing/finalizer"])
    tagging.cluster.delete("NodeClaim", "default")

    tagging.controller.reconcile("default")

    assert TAGGED_ANNOTATION not in tagging.annotations()
    assert "Name" not in instance_tags(clients, owned)


@pytest.mark.parametrize("custom", [
    pytest.param((tags.NAME, tags.EKS_CLUSTER), id="with the karpenter.sh/nodeclaim tag"),
    pytest.param((tags.NAME, tags.NODECLAIM), id="with the eks:eks-cluster-name tag"),
    pytest.param((tags.NODECLAIM, tags.EKS_CLUSTER), id="with the Name tag"),
    pytest.param((tags.NAME,), id="with the karpenter.sh/nodeclaim and eks:eks-cluster-name tags"),
    pytest.param((tags.NODECLAIM,), id="with the Name and eks:eks-cluster-name tags"),
    pytest.param((tags.EKS_CLUSTER,), id="with the karpenter.sh/nodeclaim and Name tags"),
    pytest.param((tags.NODECLAIM, tags.EKS_CLUSTER, tags.NAME), id="with nothing to tag"),
])
def test_a_registered_instance_gets_what_it_lacks(
    provider: AwsCloudProvider, clients: AwsClients, world: World, recorder: CallRecorder,
    custom: tuple[str, ...],
) -> None:
    """DescribeTable("should tag taggable instances"), one test per Entry (named by the test
    id, which names the tags written): the keys the instance already has (here `custom-tag`)
    keep their value, the others are written, and the NodeClaim is annotated either way."""
    owned = launched(clients, world, {key: "custom-tag" for key in custom})
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id=owned, node_name="default")

    tagging.controller.reconcile("default")

    assert tagging.annotations()[TAGGED_ANNOTATION] == "true"
    assert tagging.annotations()[CLUSTER_NAME_TAGGED_ANNOTATION] == "true"
    expected = {tags.NAME: "default", tags.NODECLAIM: "default", tags.EKS_CLUSTER: CLUSTER}
    found = instance_tags(clients, owned)
    for key, value in expected.items():
        assert found[key] == ("custom-tag" if key in custom else value)
    # The launch wrote eks:eks-cluster-name already (LAUNCH_TAGS, as Karpenter's BeforeEach).
    lacking = set(expected) - set(custom) - {tags.EKS_CLUSTER}
    written = [{t["Key"] for t in call["Tags"]} for call in recorder.calls_of("ec2:CreateTags")]
    assert written == ([lacking] if lacking else [])


def test_a_tagged_nodeclaim_is_not_looked_at_again(
    provider: AwsCloudProvider, clients: AwsClients, world: World, recorder: CallRecorder,
) -> None:
    """Karpenter's isTaggable: both annotations "true" end the work (no DescribeInstances)."""
    owned = launched(clients, world)
    tagging = Tagging(provider)
    tagging.nodeclaim(provider_id=owned, node_name="default")
    tagging.controller.reconcile("default")
    describes = len(recorder.calls_of("ec2:DescribeInstances"))

    tagging.controller.reconcile("default")

    assert len(recorder.calls_of("ec2:DescribeInstances")) == describes
    assert len(recorder.calls_of("ec2:CreateTags")) == 1


def test_at_most_one_create_tags_call_a_second(
    provider: AwsCloudProvider, clients: AwsClients, world: World, recorder: CallRecorder,
) -> None:
    """Karpenter sleeps a second after each CreateTags (its pool is CreateFleet's); ours asks
    to run again when the second is over instead."""
    tagging = Tagging(provider)
    for name in ("first", "second"):
        tagging.nodeclaim(name, provider_id=launched(clients, world), node_name=name)

    tagging.controller.reconcile("first")
    waiting = tagging.controller.reconcile("second")

    assert waiting.requeue_after is not None and waiting.requeue_after > 0
    assert len(recorder.calls_of("ec2:CreateTags")) == 1
    tagging.clock.advance(waiting.requeue_after)
    tagging.controller.reconcile("second")
    assert len(recorder.calls_of("ec2:CreateTags")) == 2


def test_a_launch_leaves_the_name_to_the_registered_node(
    provider: AwsCloudProvider, clients: AwsClients,
) -> None:
    """The launch writes no Name (Karpenter's launch tags have none); the AWS controller
    process runs the tagging controller, which writes the Node's."""
    from .world import node_class, nodeclaim

    instance = provider.create(nodeclaim(), node_class())
    assert "Name" not in instance_tags(clients, instance.provider_id)
    tagging = Tagging(provider)
    built = build_controllers(tagging.cluster, provider, tagging.clock)
    controller = built.get("nodeclaim.tagging", NodeClaimTagging)
    assert controller is not None
    tagging.nodeclaim(instance.nodeclaim_name, provider_id=instance.provider_id,
                      node_name="ip-10-0-1-23.us-west-2.compute.internal")

    controller.reconcile(instance.nodeclaim_name)

    assert instance_tags(clients, instance.provider_id)["Name"] == (
        "ip-10-0-1-23.us-west-2.compute.internal")
