"""The stack against what Karpenter v1.14.1 provisions (its getting-started CloudFormation,
website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml at
the v1.14.1 tag, the same file as v1.13/ and preview/): the controller's permissions come in
Karpenter's six managed policies, each within IAM's size limit; listing instance profiles
stays inside the cluster's own profile path; and a node class names a role the controller
may pass. The real infra/ program runs under Pulumi mocks (tests/infra/infra_harness.py).
"""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest
from infra_harness import ACCOUNT_ID, ProgramRun, run_program_with_outputs

from infra.config import StackConfigError
from infra.controller_policy import (
    PolicyTarget,
    PolicyTooLargeError,
    controller_policy_document,
    controller_policy_documents,
)
from nodewright.cloud.aws.actions import ActionUse
from nodewright.cloud.aws.instance_profiles import profile_path

POLICY = "aws:iam/policy:Policy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
# IAM's quota for a customer managed policy: 6,144 characters, white space not counted.
MANAGED_POLICY_MAX_CHARACTERS = 6144
LONGEST_CLUSTER_NAME = "c" * 40  # nodewright:clusterName allows 1-40 characters

# Karpenter's CloudFormation attaches six managed policies to the controller role, each named
# KarpenterController<Group>Policy-<cluster>; ours are NodewrightController<Group>Policy-
# <cluster>, each with our statements that stand for the Karpenter statements of that policy.
KARPENTER_POLICY_GROUPS: dict[str, set[str]] = {
    # AllowScopedEC2InstanceAccessActions, AllowScopedEC2LaunchTemplateAccessActions,
    # AllowScopedEC2InstanceActionsWithTags, AllowScopedResourceCreationTagging,
    # AllowScopedResourceTagging, AllowScopedDeletion.
    "NodeLifecycle": {
        "AllowLaunchWithExistingResources", "AllowLaunchWithOwnedLaunchTemplates",
        "AllowScopedCreationWithTags", "AllowTaggingOnCreation", "AllowScopedResourceTagging",
        "AllowScopedDeletion",
    },
    # AllowPassingInstanceRole, AllowScopedInstanceProfile{Creation,Tag,}Actions.
    "IAMIntegration": {
        "AllowPassingNodeRole", "AllowScopedInstanceProfileCreation",
        "AllowScopedInstanceProfileTagging", "AllowScopedInstanceProfileActions",
    },
    # AllowAPIServerEndpointDiscovery.
    "EKSIntegration": {"AllowClusterDiscovery"},
    # AllowInterruptionQueueActions.
    "Interruption": {"AllowInterruptionQueueActions"},
    # AllowZonalShiftStatusReadOnly.
    "ZonalShift": {"AllowZonalShiftStatusReadOnly"},
    # AllowRegionalReadActions, AllowSSMReadActions, AllowPricingReadActions,
    # AllowUnscopedInstanceProfileListAction, AllowInstanceProfileReadActions.
    "ResourceDiscovery": {
        "AllowRegionalReadActions", "AllowPublicParameterReads", "AllowPricingReads",
        "AllowListingOwnInstanceProfiles", "AllowInstanceProfileReads",
    },
}


def policy_characters(document: str) -> int:
    """The size IAM holds against the quota: every character but white space."""
    return sum(not character.isspace() for character in document)


@pytest.fixture(scope="module")
def longest() -> ProgramRun:
    """The dev stack in GovCloud (the longest partition) with the longest cluster name."""
    return run_program_with_outputs(
        "dev", {"clusterName": LONGEST_CLUSTER_NAME, "aws:region": "us-gov-west-1"})


def test_each_controller_policy_fits_iams_managed_policy_quota(longest: ProgramRun) -> None:
    """Karpenter v1.14.1 cloudformation.yaml: the controller's statements are split over six
    managed policies. In one policy they take about 5,800 characters plus 18 per character of
    the cluster name, over IAM's 6,144 from a 19-character name on: `pulumi up` would fail
    with LimitExceeded (PolicySize) for a valid stack."""
    sizes = {policy.inputs["name"]: policy_characters(policy.inputs["policy"])
             for policy in longest.of_type(POLICY)}

    assert sizes
    assert {name: size for name, size in sizes.items()
            if size > MANAGED_POLICY_MAX_CHARACTERS} == {}


def test_the_controller_role_gets_karpenters_six_managed_policies(dev: ProgramRun) -> None:
    """Karpenter v1.14.1 cloudformation.yaml: NodeLifecycle, IAMIntegration, EKSIntegration,
    Interruption, ResourceDiscovery and ZonalShift policies, each attached to the controller
    role, holding between them every statement of the controller's policy and no other."""
    policies = {policy.name: policy.inputs for policy in dev.of_type(POLICY)}
    sids = {
        inputs["name"]: {statement["Sid"]
                         for statement in json.loads(inputs["policy"])["Statement"]}
        for inputs in policies.values()
    }

    assert sids == {f"NodewrightController{group}Policy-nodewright-dev": statements
                    for group, statements in KARPENTER_POLICY_GROUPS.items()}
    attached = {
        attachment.inputs["policyArn"] for attachment in dev.of_type(ATTACHMENT)
        if attachment.inputs["role"] == "NodewrightController-nodewright-dev"
    }
    assert attached == {f"arn:aws:iam::{ACCOUNT_ID}:policy/{name}" for name in sids}


def test_without_interruption_the_interruption_policy_is_left_out() -> None:
    """Karpenter's InterruptionPolicy grants the queue; with no queue there is no policy."""
    run = run_program_with_outputs("dev", {"interruption": False})

    names = {policy.inputs["name"] for policy in run.of_type(POLICY)}

    assert names == {f"NodewrightController{group}Policy-nodewright-dev"
                     for group in KARPENTER_POLICY_GROUPS if group != "Interruption"}


def _allows(document: dict[str, Any], action: str, resource: str) -> bool:
    def listed(value: str | list[str]) -> list[str]:
        return [value] if isinstance(value, str) else value

    return any(
        action in listed(statement["Action"])
        and any(fnmatch.fnmatchcase(resource, pattern) for pattern in listed(statement["Resource"]))
        for statement in document["Statement"]
    )


def test_listing_instance_profiles_stays_inside_the_clusters_own_path() -> None:
    """IAM authorizes ListInstanceProfiles against instance-profile<PathPrefix>. Karpenter's
    AllowUnscopedInstanceProfileListAction grants every path; ours grants the path the
    cluster's profiles are created under (garbage collection lists that prefix), so a
    controller cannot list another cluster's profiles, or the account's."""
    document = controller_policy_document(PolicyTarget(
        cluster_name="demo", region="us-west-2", partition="aws", account_id=ACCOUNT_ID,
        node_role_arn=f"arn:aws:iam::{ACCOUNT_ID}:role/NodewrightNode-demo", queue_arn=None))
    profiles = f"arn:aws:iam::{ACCOUNT_ID}:instance-profile"

    assert _allows(document, "iam:ListInstanceProfiles", f"{profiles}{profile_path('demo')}")
    assert not _allows(document, "iam:ListInstanceProfiles",
                       f"{profiles}{profile_path('demo-staging')}")
    assert not _allows(document, "iam:ListInstanceProfiles", f"{profiles}/nodewright/")
    assert not _allows(document, "iam:ListInstanceProfiles", f"{profiles}/")


@pytest.mark.parametrize("key", ["nodeClasses", "teams"])
def test_a_node_class_may_not_name_a_role_the_controller_cannot_pass(key: str) -> None:
    """Karpenter's AllowPassingInstanceRole (ours AllowPassingNodeRole) lets the controller
    pass the node role alone, and only that role has the EC2_LINUX access entry nodes join
    with: a node class naming another role could never get its instance profile (IAM's
    AddRoleToInstanceProfile needs iam:PassRole) nor launch. The stack refuses it at
    preview, naming the field."""
    spec = {"role": "KarpenterNodeRole-legacy"}
    config: dict[str, Any] = (
        {"nodeClasses": {"gpu": spec}} if key == "nodeClasses"
        else {"teams": {"payments": {"nodeClass": spec}}}
    )
    field = "nodeClasses.gpu.role" if key == "nodeClasses" else "teams.payments.nodeClass.role"

    with pytest.raises(StackConfigError) as caught:
        run_program_with_outputs("dev", config)

    assert str(caught.value).startswith(f"nodewright:{field}: ")
    assert "NodewrightNode-nodewright-dev" in str(caught.value)


@pytest.mark.parametrize("role", [
    "NodewrightNode-nodewright-dev",
    f"arn:aws:iam::{ACCOUNT_ID}:role/NodewrightNode-nodewright-dev",
])
def test_a_node_class_may_name_the_stacks_node_role(role: str) -> None:
    run = run_program_with_outputs("dev", {"nodeClasses": {"gpu": {"role": role}}})

    (gpu,) = [r for r in run.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
              if r.inputs["metadata"]["name"] == "gpu"]
    assert gpu.inputs["spec"]["role"] == role


def test_cluster_admins_get_nodepools_nodeclaims_and_node_classes_through_admin(
    dev: ProgramRun,
) -> None:
    """Karpenter v1.14.1 charts/karpenter/templates/aggregate-clusterrole.yaml: a ClusterRole
    labelled rbac.authorization.k8s.io/aggregate-to-admin, bound to nobody, that adds
    NodePools, NodeClaims and EC2NodeClasses (get, list, watch, create, delete, patch) to the
    built-in `admin` role. The stack declares it besides the controller's own ClusterRole."""
    roles = {role.name: role.inputs
             for role in dev.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")}
    verbs = ["get", "list", "watch", "create", "delete", "patch"]

    admin = roles["nodewright-admin"]
    assert admin["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert admin["rules"] == [
        {"apiGroups": ["karpenter.sh"],
         "resources": ["nodepools", "nodepools/status", "nodeclaims", "nodeclaims/status"],
         "verbs": verbs},
        {"apiGroups": ["karpenter.k8s.aws"], "resources": ["ec2nodeclasses"], "verbs": verbs},
    ]
    bindings = dev.of_type("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert [binding.inputs["roleRef"]["name"] for binding in bindings] == [
        "nodewright-controller"]


def test_a_managed_policy_over_iams_quota_is_refused_before_aws_sees_it() -> None:
    """Were AWS_ACTIONS to grow a group past the quota, the stack stops at preview with the
    group named instead of failing half-way through `pulumi up`."""
    many = tuple(ActionUse(f"ec2:DescribeSomething{index:03}", "describe", "padding")
                 for index in range(400))

    with pytest.raises(PolicyTooLargeError, match="the ResourceDiscovery policy has"):
        controller_policy_documents(PolicyTarget(
            cluster_name="demo", region="us-west-2", partition="aws", account_id=ACCOUNT_ID,
            node_role_arn=f"arn:aws:iam::{ACCOUNT_ID}:role/NodewrightNode-demo",
            queue_arn=None), many)
