"""Karpenter's EC2NodeClass controller suite, ported: aws/karpenter-provider-aws v1.14.1
pkg/controllers/nodeclass/suite_test.go, Describe("NodeClass Termination"). Each story names
its It.

Karpenter's nodeclass controller finalizer is our NodeClassTermination
(controller/nodewright/controllers/nodeclass/cleanup.py) with the AWS provider as its
cleaner, over moto (EC2, IAM) and the in-memory API server. Where Karpenter's suite
reconciles the node class before deleting it (which creates the instance profile for its
role), ours resolves it through the provider, which creates that profile. The launch
templates of a node class are those our launches create, tagged as the cluster's and the
node class's (Karpenter's test stores them in its fake EC2 with those tags)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws import tags
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.api import NotFoundError, Object
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.cleanup import FINALIZER, WAIT_SECONDS, NodeClassTermination
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import Result
from nodewright.scheduling.pricing import OfflinePriceSource

from .conftest import CallRecorder
from .failing_calls import error, failing
from .world import CLUSTER, FakeClock, World, node_class, nodeclaim

REF = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
IAM_WRITES = ("iam:DeleteInstanceProfile", "iam:RemoveRoleFromInstanceProfile")


@dataclass
class Termination:
    """The API server holding the EC2NodeClass, and its finalizer over the provider."""

    cluster: InMemoryCluster
    provider: AwsCloudProvider
    controller: NodeClassTermination

    def apply(self, model: EC2NodeClass) -> EC2NodeClass:
        """The node class stored and reconciled (the finalizer added); its resolution
        creates the instance profile for its role."""
        self.cluster.create(model.model_dump(by_alias=True, exclude_none=True, mode="json"))
        self.controller.reconcile("default")
        assert self.node_class()["metadata"]["finalizers"] == [FINALIZER]
        stored = EC2NodeClass.model_validate(self.node_class())
        self.provider.resolve(stored)
        return stored

    def delete(self) -> Result:
        self.cluster.delete("EC2NodeClass", "default")
        return self.controller.reconcile("default")

    def node_class(self) -> Object:
        return self.cluster.get("EC2NodeClass", "default")

    def gone(self) -> bool:
        try:
            self.node_class()
        except NotFoundError:
            return True
        return False


def termination(provider: AwsCloudProvider) -> Termination:
    cluster = InMemoryCluster(VirtualClock())
    return Termination(cluster, provider, NodeClassTermination(cluster, provider))


@pytest.fixture
def finalizer(provider: AwsCloudProvider) -> Termination:
    return termination(provider)


def profiles(clients: AwsClients) -> dict[str, list[str]]:
    """Every instance profile IAM has, with its roles."""
    listed = clients.iam.list_instance_profiles()["InstanceProfiles"]
    return {p["InstanceProfileName"]: [r["RoleName"] for r in p.get("Roles", [])]
            for p in listed}


def template_names(clients: AwsClients) -> set[str]:
    return {t["LaunchTemplateName"]
            for t in clients.ec2.describe_launch_templates()["LaunchTemplates"]}


def template(clients: AwsClients, name: str, extra_tags: dict[str, str]) -> str:
    """A launch template of the cluster (its ownership tags and a NodePool's, which the
    controller policy's deletion needs, as Karpenter's) with `extra_tags`."""
    tagged = {**tags.ownership_tags(CLUSTER), tags.NODEPOOL: "default", **extra_tags}
    clients.ec2.create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-ekslinux"},
        TagSpecifications=[{"ResourceType": "launch-template",
                            "Tags": tags.as_aws(tagged)}])  # type: ignore[typeddict-item]
    return name


def iam_writes(recorder: CallRecorder) -> list[str]:
    return [action for action in recorder.actions if action in IAM_WRITES]


@pytest.fixture
def failures(clients: AwsClients) -> Iterator[Any]:
    with failing(clients.ec2) as calls:
        yield calls


def test_a_failed_launch_template_deletion_keeps_the_node_class(
    finalizer: Termination, clients: AwsClients, failures: Any,
) -> None:
    """It("should not delete the NodeClass if launch template deletion fails"): the
    reconcile fails (retried), the finalizer stays."""
    finalizer.apply(node_class())
    template(clients, "karpenter-made", {tags.NODECLASS: "default"})
    failures.queue("DeleteLaunchTemplate",
                   error("UnauthorizedOperation", "delete Launch Template Error", 403))

    result = finalizer.delete()

    assert result.requeue_after is not None and result.requeue_after > 0
    assert not finalizer.gone()
    assert finalizer.node_class()["metadata"]["finalizers"] == [FINALIZER]
    assert "karpenter-made" in template_names(clients)


def test_a_launch_template_of_no_node_class_is_left_alone(
    finalizer: Termination, clients: AwsClients,
) -> None:
    """It("should not delete the launch template not associated with the nodeClass"): a
    template of the cluster without the node class's tag (and one of another node class)
    outlives the node class, which goes."""
    finalizer.apply(node_class())
    template(clients, "of-the-cluster", {})
    template(clients, "of-another-node-class", {tags.NODECLASS: "other"})

    finalizer.delete()

    assert template_names(clients) == {"of-the-cluster", "of-another-node-class"}
    assert finalizer.gone()


def test_the_node_classs_launch_templates_are_deleted(
    finalizer: Termination, clients: AwsClients,
) -> None:
    """It("should succeed to delete the launch template"): both of its templates go, then
    the node class."""
    stored = finalizer.apply(node_class())
    finalizer.provider.create(nodeclaim(), stored)  # the launch's own templates
    template(clients, "made-earlier", {tags.NODECLASS: "default"})
    assert len(template_names(clients)) >= 2

    finalizer.delete()

    assert template_names(clients) == set()
    assert finalizer.gone()


def test_the_instance_profile_goes_with_the_node_class(
    finalizer: Termination, clients: AwsClients,
) -> None:
    """It("should succeed to delete the instance profile with no NodeClaims")."""
    finalizer.apply(node_class())
    (created,) = profiles(clients).items()
    assert created[1] == ["KarpenterNodeRole-demo"]

    finalizer.delete()

    assert profiles(clients) == {}
    assert finalizer.gone()


def test_an_instance_profile_without_its_role_still_goes(
    finalizer: Termination, clients: AwsClients,
) -> None:
    """It("should succeed to delete the instance profile when no roles exist with no
    NodeClaims"): its role removed by hand first."""
    finalizer.apply(node_class())
    (name,) = profiles(clients)
    clients.iam.remove_role_from_instance_profile(InstanceProfileName=name,
                                                  RoleName="KarpenterNodeRole-demo")
    assert profiles(clients) == {name: []}

    finalizer.delete()

    assert profiles(clients) == {}
    assert finalizer.gone()


def test_a_node_class_whose_profile_never_existed_goes(
    finalizer: Termination, clients: AwsClients, recorder: CallRecorder,
) -> None:
    """It("should succeed to delete the NodeClass when the instance profile doesn't
    exist"): deleted before it was ever resolved."""
    finalizer.cluster.create(node_class().model_dump(by_alias=True, exclude_none=True,
                                                     mode="json"))
    finalizer.controller.reconcile("default")
    assert profiles(clients) == {}

    finalizer.delete()

    assert profiles(clients) == {}
    assert iam_writes(recorder) == []
    assert finalizer.gone()


def test_the_node_class_waits_for_every_nodeclaim_that_uses_it(
    finalizer: Termination, clients: AwsClients,
) -> None:
    """It("should not delete the EC2NodeClass until all associated NodeClaims are
    terminated"): asked again every 10 minutes while one is left; the profile stays until
    the last is gone."""
    for name in ("claim-one", "claim-two"):
        finalizer.cluster.create({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                                  "metadata": {"name": name},
                                  "spec": {"nodeClassRef": REF, "requirements": []}})
    finalizer.apply(node_class())
    (name, roles), = profiles(clients).items()
    assert roles == ["KarpenterNodeRole-demo"]

    assert finalizer.delete().requeue_after == WAIT_SECONDS == 600
    assert list(profiles(clients)) == [name]
    assert not finalizer.gone()

    finalizer.cluster.delete("NodeClaim", "claim-one")
    assert finalizer.controller.reconcile("default").requeue_after == 600
    assert list(profiles(clients)) == [name]
    assert not finalizer.gone()

    finalizer.cluster.delete("NodeClaim", "claim-two")
    finalizer.controller.reconcile("default")
    assert profiles(clients) == {}
    assert finalizer.gone()


def test_a_named_instance_profile_is_never_deleted(
    finalizer: Termination, clients: AwsClients, recorder: CallRecorder,
) -> None:
    """It("should not call the IAM API when deleting a NodeClass with an instanceProfile
    specified"): the user's profile keeps its role and stays; no profile is deleted and no
    role removed (what Karpenter's It counts)."""
    clients.iam.create_instance_profile(InstanceProfileName="test-instance-profile")
    clients.iam.add_role_to_instance_profile(InstanceProfileName="test-instance-profile",
                                             RoleName="KarpenterNodeRole-demo")
    body = node_class().model_dump(by_alias=True, exclude_none=True, mode="json")
    del body["spec"]["role"]
    body["spec"]["instanceProfile"] = "test-instance-profile"
    finalizer.apply(EC2NodeClass.model_validate(body))
    assert profiles(clients) == {"test-instance-profile": ["KarpenterNodeRole-demo"]}

    finalizer.delete()

    assert profiles(clients) == {"test-instance-profile": ["KarpenterNodeRole-demo"]}
    assert iam_writes(recorder) == []
    assert finalizer.gone()


def test_an_isolated_vpc_leaves_the_instance_profile(
    clients: AwsClients, world: World, clock: FakeClock, recorder: CallRecorder,
) -> None:
    """It("should skip instance profile cleanup in isolated VPCs"): the profile created for
    the role stays (ISOLATED_VPC makes no IAM call in the finalizer), the node class goes."""
    isolated = AwsCloudProvider(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                isolated_vpc=True)
    finalizer = termination(isolated)
    finalizer.apply(node_class())
    created = profiles(clients)
    assert len(created) == 1

    finalizer.delete()

    assert iam_writes(recorder) == []
    assert profiles(clients) == created
    assert finalizer.gone()
