"""Karpenter's instance profile provider suite (pkg/providers/instanceprofile/suite_test.go,
v1.14.1) and its node class instance profile reconciler tests
(pkg/controllers/nodeclass/instanceprofile_test.go), ported where they apply: each test
names its It/Entry. IAM is moto.

Nodewright names and places the profiles it creates its own way (`<cluster>_<digest>` under
`/nodewright/<cluster>/`, tagged with the node class and region), where Karpenter uses
`/karpenter/<region>/<cluster>/<node class uid>/` and a random name: the tests check ours.
The digest is of the node class (name, uid, generation) and its role, so a role change gets
a new profile as Karpenter's random name does.
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instance_profiles import (
    NodeClassIdentity,
    ProfileMemory,
    delete_profile,
    ensure_instance_profile,
    list_cluster_profiles,
    profile_name,
    profile_path,
    profile_tags,
)
from nodewright.cloud.provider import CloudProviderError
from tests.aws.world import CLUSTER, FakeClock

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
    assert name == profile_name(CLUSTER, iam.region, "default", role=NODE_ROLE)
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


def test_another_regions_cluster_of_the_same_name_keeps_its_profiles(iam: AwsClients) -> None:
    """Ours (Karpenter's path holds the region for this): IAM is global, so a cluster of the
    same name in another region has profiles with our path and ownership tag; only the
    region tag tells them apart, and garbage collection must not take them."""
    mine = ensure(iam, "default", "role-1")
    # The other region's controller made this one (its calls are not ours).
    theirs = profile_name(CLUSTER, "eu-west-1", "default", role="role-2")
    iam.iam.create_instance_profile(
        InstanceProfileName=theirs, Path=profile_path(CLUSTER),
        Tags=[{"Key": k, "Value": v}
              for k, v in profile_tags(CLUSTER, "eu-west-1", "default").items()])

    assert [p.name for p in list_cluster_profiles(iam.iam, CLUSTER, iam.region)] == [mine]
    assert theirs in [p.name for p in list_cluster_profiles(iam.iam, CLUSTER)]


def test_protection_can_be_set_and_lifted(iam: AwsClients) -> None:
    """It("should reflect IsProtected updates"): the profiles garbage collection must leave
    alone, in the provider's memory (protection is set by the reconcile, not by creation)."""
    memory = ProfileMemory()
    name = ensure(iam, "default", NODE_ROLE)
    memory.unprotect(name)
    assert not memory.is_protected(name)
    memory.protect(name)
    assert memory.is_protected(name)
    memory.unprotect(name)
    assert not memory.is_protected(name)


# Context("Role Cache")


def ensure_remembering(clients: AwsClients, memory: ProfileMemory, role: str) -> str:
    return ensure_instance_profile(clients.iam, cluster=CLUSTER, region=clients.region,
                                   node_class="default", role=role, instance_profile=None,
                                   memory=memory)


def test_a_role_that_exists_is_not_remembered_as_missing(iam: AwsClients) -> None:
    """Context("Role Cache") It("should not cache role not found errors when the role
    exists")"""
    memory = ProfileMemory()
    ensure_remembering(iam, memory, "role-1")
    assert memory.missing_roles.get("role-1") is None


def test_a_missing_role_is_remembered(iam: AwsClients) -> None:
    """Context("Role Cache") It("should cache role not found errors when the role does not"):
    and the profile made for it is not left behind."""
    memory = ProfileMemory()
    with pytest.raises(CloudProviderError, match="non-existent-role"):
        ensure_remembering(iam, memory, "non-existent-role")
    assert memory.missing_roles.get("non-existent-role") is not None
    assert iam.iam.list_instance_profiles()["InstanceProfiles"] == []


def test_no_profile_is_created_for_a_role_remembered_as_missing(iam: AwsClients) -> None:
    """Context("Role Cache") It("should not attempt to create instance profile when role is
    cached as not found"): until the memory lapses (a minute)."""
    clock = FakeClock()
    memory = ProfileMemory(clock)
    memory.missing_roles.put("non-existent-role", "role not found")
    calls = IamCalls(iam)
    with pytest.raises(CloudProviderError, match="not found"):
        ensure_remembering(iam, memory, "non-existent-role")
    assert calls.names == []
    assert iam.iam.list_instance_profiles()["InstanceProfiles"] == []

    iam.iam.create_role(RoleName="non-existent-role", AssumeRolePolicyDocument="{}")
    clock.advance(61)
    assert ensure_remembering(iam, memory, "non-existent-role")


# --- instanceprofile_test.go: the status's profile and role changes ------------------------
# The node class's reconcile is `ensure_instance_profile` given the node class's identity:
# its uid, its generation (a role change is a new generation) and status.instanceProfile.


class NodeClass:
    """An EC2NodeClass as the reconcile sees it: each spec change is a new generation, and
    the status names the profile the last reconcile chose."""

    def __init__(self, clients: AwsClients, memory: ProfileMemory | None = None,
                 name: str = "default", uid: str = "uid-1") -> None:
        self.clients = clients
        self.memory = memory or ProfileMemory()
        self.name, self.uid = name, uid
        self.generation = 0
        self.role: str | None = None
        self.instance_profile: str | None = None
        self.status: str | None = None

    def apply(self, *, role: str | None = None, instance_profile: str | None = None) -> None:
        self.role, self.instance_profile = role, instance_profile
        self.generation += 1

    def reconcile(self) -> str:
        self.status = ensure_instance_profile(
            self.clients.iam, cluster=CLUSTER, region=self.clients.region,
            node_class=NodeClassIdentity(self.name, self.uid, self.generation, self.status),
            role=self.role, instance_profile=self.instance_profile, memory=self.memory)
        return self.status


def profiles(clients: AwsClients) -> dict[str, list[str]]:
    """Every instance profile in the account, with its roles."""
    return {p["InstanceProfileName"]: [r["RoleName"] for r in p["Roles"]]
            for p in clients.iam.list_instance_profiles()["InstanceProfiles"]}


@pytest.fixture
def roles(iam: AwsClients) -> AwsClients:
    for role in ("role-A", "role-B", "role-C", "other-role"):
        iam.iam.create_role(RoleName=role, AssumeRolePolicyDocument="{}")
    return iam


def test_a_role_change_creates_a_new_profile_and_keeps_the_old(roles: AwsClients) -> None:
    """It("should create a new instance profile when spec.role changes"): the nodes launched
    with the old profile keep their role (Nodewright swapped the role in place before)."""
    node_class = NodeClass(roles)
    node_class.apply(role="role-A")
    initial = node_class.reconcile()
    assert profiles(roles) == {initial: ["role-A"]}

    node_class.apply(role="role-B")
    new = node_class.reconcile()

    assert new != initial
    assert profiles(roles) == {initial: ["role-A"], new: ["role-B"]}


def test_every_role_transition_gets_a_profile_of_its_own(roles: AwsClients) -> None:
    """It("should handle multiple role transitions"): back to role A is a fourth profile."""
    node_class = NodeClass(roles)
    seen = []
    for role in ("role-A", "role-B", "role-C", "role-A"):
        node_class.apply(role=role)
        seen.append(node_class.reconcile())
    assert len(set(seen)) == 4
    assert len(profiles(roles)) == 4


def test_a_status_profile_without_a_role_is_replaced(roles: AwsClients) -> None:
    """It("should add the role to the instance profile when it exists without a role"): a new
    profile carries the role; the one the status named is left as it is."""
    roles.iam.create_instance_profile(InstanceProfileName="profile-A")
    node_class = NodeClass(roles)
    node_class.status = "profile-A"
    node_class.apply(role="role-A")

    chosen = node_class.reconcile()

    assert chosen != "profile-A"
    assert profiles(roles) == {"profile-A": [], chosen: ["role-A"]}


def test_a_status_profile_with_another_role_is_replaced(roles: AwsClients) -> None:
    """It("should update the role for the instance profile when the wrong role exists")"""
    roles.iam.create_instance_profile(InstanceProfileName="profile-A")
    roles.iam.add_role_to_instance_profile(InstanceProfileName="profile-A", RoleName="role-A")
    node_class = NodeClass(roles)
    node_class.status = "profile-A"
    node_class.apply(role="other-role")

    chosen = node_class.reconcile()

    assert profiles(roles) == {"profile-A": ["role-A"], chosen: ["other-role"]}


def test_a_status_profile_with_the_role_is_kept_without_a_write(roles: AwsClients) -> None:
    """It("should not call CreateInstanceProfile or AddRoleToInstanceProfile when instance
    profile exists with correct role"), with the profile the status names (a profile made
    before profiles followed role changes, or by Karpenter, stays in use)."""
    roles.iam.create_instance_profile(InstanceProfileName="profile-A")
    roles.iam.add_role_to_instance_profile(InstanceProfileName="profile-A", RoleName="role-A")
    node_class = NodeClass(roles)
    node_class.status = "profile-A"
    node_class.apply(role="role-A")
    calls = IamCalls(roles)

    assert node_class.reconcile() == "profile-A"
    assert calls.names == ["GetInstanceProfile"]
    assert profiles(roles) == {"profile-A": ["role-A"]}


def test_a_reconcile_repeated_before_the_status_is_written_creates_nothing_more(
    roles: AwsClients,
) -> None:
    """Ours, for Karpenter's recreation cache Its ("should use the cached instance profile
    when spec.role is changed", "should update the cache when a new instance profile is
    created"): a second reconcile that does not see the status yet (or another replica)
    finds the profile the first created, by its name."""
    node_class = NodeClass(roles)
    node_class.apply(role="role-A")
    first = node_class.reconcile()
    node_class.status = None  # the status write was lost
    calls = IamCalls(roles)

    assert node_class.reconcile() == first
    assert "CreateInstanceProfile" not in calls.names
    assert len(profiles(roles)) == 1


def test_a_new_profile_is_protected(roles: AwsClients) -> None:
    """It("should mark new instance profile as protected")"""
    node_class = NodeClass(roles)
    node_class.apply(role="role-A")
    name = node_class.reconcile()
    assert node_class.memory.is_protected(name)


def test_the_replaced_profile_is_protected(roles: AwsClients) -> None:
    """It("should mark old instance profile as protected"): NodeClaims launched with it a
    moment ago may not be visible to garbage collection yet."""
    node_class = NodeClass(roles)
    node_class.apply(role="role-A")
    old = node_class.reconcile()
    node_class.memory.unprotect(old)

    node_class.apply(role="role-B")
    node_class.reconcile()

    assert node_class.memory.is_protected(old)


def test_switching_to_an_instance_profile_protects_the_created_one(roles: AwsClients) -> None:
    """It("should mark old instance profile as protected when switching from spec.role to
    spec.instanceProfile")"""
    roles.iam.create_instance_profile(InstanceProfileName="new-profile")
    node_class = NodeClass(roles)
    node_class.apply(role="role-A")
    old = node_class.reconcile()
    node_class.memory.unprotect(old)

    node_class.apply(instance_profile="new-profile")

    assert node_class.reconcile() == "new-profile"
    assert node_class.memory.is_protected(old)


def test_a_failed_role_attachment_deletes_the_new_profile(roles: AwsClients) -> None:
    """It("should attempt to delete the instance profile if there was a creation failure")"""
    def fail(**_: Any) -> None:
        from botocore.exceptions import ClientError
        raise ClientError({"Error": {"Code": "ServiceFailure",
                                     "Message": "failed to attach role"}},
                          "AddRoleToInstanceProfile")

    roles.iam.meta.events.register("before-call.iam.AddRoleToInstanceProfile", fail)
    calls = IamCalls(roles)
    node_class = NodeClass(roles)
    node_class.apply(role="role-A")

    with pytest.raises(CloudProviderError, match="failed to attach role"):
        node_class.reconcile()

    assert profiles(roles) == {}
    assert calls.names.count("DeleteInstanceProfile") == 1


def test_a_transient_failure_reading_the_status_profile_creates_nothing(
    roles: AwsClients,
) -> None:
    """It("should return error on transient failures getting instance profile"), with the
    role changed since the status's profile was made."""
    roles.iam.create_instance_profile(InstanceProfileName="profile-A")
    roles.iam.add_role_to_instance_profile(InstanceProfileName="profile-A", RoleName="role-A")

    def fail(**_: Any) -> None:
        from botocore.exceptions import ClientError
        raise ClientError({"Error": {"Code": "ServiceFailure",
                                     "Message": "simulated transient error"}},
                          "GetInstanceProfile")

    roles.iam.meta.events.register("before-call.iam.GetInstanceProfile", fail)
    node_class = NodeClass(roles)
    node_class.status = "profile-A"
    node_class.apply(role="role-B")

    with pytest.raises(CloudProviderError, match=r"GetInstanceProfile.*simulated transient"):
        node_class.reconcile()
    assert list(profiles(roles)) == ["profile-A"]
