"""Karpenter's instance profile provider suite (pkg/providers/instanceprofile/suite_test.go,
v1.14.1) and its node class instance profile reconciler tests
(pkg/controllers/nodeclass/instanceprofile_test.go), ported where they apply: each test
names its It/Entry. IAM is moto.

Nodewright names and places the profiles it creates its own way (`<cluster>_<digest>` under
`/nodewright/<cluster>/`, tagged with the node class), where Karpenter uses
`/karpenter/<region>/<cluster>/<node class uid>/`: the tests check ours.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instance_profiles import (
    delete_profile,
    ensure_instance_profile,
    list_cluster_profiles,
    profile_name,
    profile_path,
    profile_tags,
)
from nodewright.cloud.provider import CloudProviderError
from tests.aws.world import CLUSTER

NODE_ROLE = "KarpenterNodeRole-demo"


@pytest.fixture
def iam(clients: AwsClients) -> AwsClients:
    for role in (NODE_ROLE, "role-1", "role-2", "role-3"):
        clients.iam.create_role(RoleName=role, AssumeRolePolicyDocument="{}")
    return clients


def ensure(clients: AwsClients, node_class: str, role: str, cluster: str = CLUSTER) -> str:
    return ensure_instance_profile(clients.iam, cluster=cluster, region=clients.region,
                                   node_class=node_class, role=role, instance_profile=None)


@pytest.mark.parametrize("role", [
    pytest.param(f"CustomPath/{NODE_ROLE}", id="with custom paths"),
    pytest.param(NODE_ROLE, id="without custom paths"),
])
def test_the_profile_holds_the_role_by_its_name(iam: AwsClients, role: str) -> None:
    """DescribeTable("should support IAM roles"), its two Entries: a role given with a path
    is added to the profile by its bare name (IAM refuses `path/name` there)."""
    name = ensure(iam, "default", role)
    profile = iam.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    assert [r["RoleName"] for r in profile["Roles"]] == [NODE_ROLE]


def test_a_profile_is_created_with_our_path_and_name(iam: AwsClients) -> None:
    """It("should create an instance profile with the correct path and name")"""
    name = ensure(iam, "default", NODE_ROLE)
    profile = iam.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    assert name == profile_name(CLUSTER, iam.region, "default")
    assert profile["Path"] == profile_path(CLUSTER)
    assert [p["InstanceProfileName"] for p in
            iam.iam.list_instance_profiles()["InstanceProfiles"]] == [name]


def test_the_profiles_of_one_node_class(iam: AwsClients) -> None:
    """It("should list all instance profiles for a NodeClass"): the node class tag tells the
    cluster's profiles apart."""
    first = ensure(iam, "nodeclass-1", "role-1")
    ensure(iam, "nodeclass-2", "role-2")

    mine = [p for p in list_cluster_profiles(iam.iam, CLUSTER) if p.node_class == "nodeclass-1"]
    assert [(p.name, p.roles) for p in mine] == [(first, ("role-1",))]


def test_the_profiles_of_one_cluster(iam: AwsClients) -> None:
    """It("should list all instance profiles for a Cluster"): another cluster's profile is
    not among them."""
    first = ensure(iam, "nodeclass-1", "role-1")
    second = ensure(iam, "nodeclass-2", "role-2")
    # Another cluster's controller made this one (under its own cluster's path).
    other = "other-cluster_0123456789abcdef0123"
    iam.iam.create_instance_profile(
        InstanceProfileName=other, Path=profile_path("other-cluster"),
        Tags=[{"Key": k, "Value": v} for k, v in profile_tags(
            "other-cluster", iam.region, "some-node-class").items()])
    iam.iam.add_role_to_instance_profile(InstanceProfileName=other, RoleName="role-3")

    assert sorted(p.name for p in list_cluster_profiles(iam.iam, CLUSTER)) == sorted(
        [first, second])


def test_a_profile_is_deleted_by_its_name(iam: AwsClients) -> None:
    """It("should delete an instance profile with the correct name")"""
    name = ensure(iam, "default", NODE_ROLE)
    [owned] = list_cluster_profiles(iam.iam, CLUSTER)

    delete_profile(iam.iam, owned)

    assert list_cluster_profiles(iam.iam, CLUSTER) == []
    with pytest.raises(iam.iam.exceptions.NoSuchEntityException):
        iam.iam.get_instance_profile(InstanceProfileName=name)


def test_profiles_listed_without_tags_are_still_told_apart(iam: AwsClients) -> None:
    """Ours: real IAM's ListInstanceProfiles leaves the tags out (moto includes them), so the
    node class of each profile is read with GetInstanceProfile. Read from the listing, every
    profile would belong to no node class, and garbage collection would delete the profiles
    of node classes that still exist."""

    def as_iam_lists(parsed: dict[str, Any], **_: Any) -> None:
        for profile in parsed.get("InstanceProfiles", []):
            profile.pop("Tags", None)

    iam.iam.meta.events.register("after-call.iam.ListInstanceProfiles", as_iam_lists)
    first = ensure(iam, "nodeclass-1", "role-1")

    assert [(p.name, p.node_class) for p in list_cluster_profiles(iam.iam, CLUSTER)] == [
        (first, "nodeclass-1")]


# --- pkg/controllers/nodeclass/instanceprofile_test.go --------------------------------------
# Karpenter's reconcile of the node class's instance profile is `ensure_instance_profile`
# (what the node class resolution calls); its InstanceProfileReady is whether it returns.


class IamCalls:
    """The IAM operations the client sends, by name."""

    def __init__(self, clients: AwsClients) -> None:
        self.names: list[str] = []
        clients.iam.meta.events.register("provide-client-params.iam.*", self._record)

    def _record(self, model: Any, **_: Any) -> None:
        self.names.append(model.name)


def test_a_missing_profile_is_created_with_the_role_and_tags(iam: AwsClients) -> None:
    """It("should create the instance profile when it doesn't exist"), It("should properly tag
    new instance profiles")"""
    name = ensure(iam, "default", "role-1")
    profile = iam.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
    assert [r["RoleName"] for r in profile["Roles"]] == ["role-1"]
    assert {t["Key"]: t["Value"] for t in profile["Tags"]}.items() >= {
        f"kubernetes.io/cluster/{CLUSTER}": "owned",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "eks:eks-cluster-name": CLUSTER,
        "topology.kubernetes.io/region": iam.region}.items()


def test_a_profile_with_the_right_role_is_left_alone(iam: AwsClients) -> None:
    """It("should not call CreateInstanceProfile or AddRoleToInstanceProfile when instance
    profile exists with correct role")"""
    ensure(iam, "default", "role-1")
    calls = IamCalls(iam)
    ensure(iam, "default", "role-1")
    assert "CreateInstanceProfile" not in calls.names
    assert "AddRoleToInstanceProfile" not in calls.names


def test_a_named_instance_profile_is_used_as_it_is(iam: AwsClients) -> None:
    """It("should resolve the specified instance profile into the status when using
    instanceProfile field"), It("should not call the the IAM API when specifying an instance
    profile") (nothing is created or changed; Nodewright reads the profile to check it
    exists)."""
    iam.iam.create_instance_profile(InstanceProfileName="test-instance-profile")
    calls = IamCalls(iam)
    name = ensure_instance_profile(iam.iam, cluster=CLUSTER, region=iam.region,
                                   node_class="default", role=None,
                                   instance_profile="test-instance-profile")
    assert name == "test-instance-profile"
    assert not {"CreateInstanceProfile", "AddRoleToInstanceProfile",
                "RemoveRoleFromInstanceProfile"} & set(calls.names)


def test_node_classes_with_one_role_get_a_profile_each(iam: AwsClients) -> None:
    """It("should allow different NodeClasses with same role to create instance profiles
    independently")"""
    first = ensure(iam, "nodeclass-1", "role-1")
    second = ensure(iam, "nodeclass-2", "role-1")
    assert first != second
    for name in (first, second):
        profile = iam.iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]
        assert [r["RoleName"] for r in profile["Roles"]] == ["role-1"]


def test_a_failed_profile_read_is_an_error_and_creates_nothing(iam: AwsClients) -> None:
    """It("should return error on transient failures getting instance profile")"""
    def fail(**_: Any) -> None:
        from botocore.exceptions import ClientError
        raise ClientError({"Error": {"Code": "ServiceFailure",
                                     "Message": "simulated transient error"}},
                          "GetInstanceProfile")

    iam.iam.meta.events.register("before-call.iam.GetInstanceProfile", fail)
    with pytest.raises(CloudProviderError, match="simulated transient error"):
        ensure(iam, "default", "role-1")
    assert iam.iam.list_instance_profiles()["InstanceProfiles"] == []
