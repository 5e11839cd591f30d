"""The EC2NodeClass finalizer's cleanup order, as in the AWS provider v1.14.1
(pkg/controllers/nodeclass/controller.go lines 214-249, finalize): once no NodeClaim uses
the node class, it deletes the instance profiles created for it
(cleanupManagedInstanceProfiles, lines 227-229) and only then its launch templates
(launchTemplateProvider.DeleteAll, lines 231-233). A profile IAM refuses to delete is an
error that ends the attempt, so the launch templates are still there for the next one.

Before, Nodewright deleted the launch templates first: a profile IAM kept left the node
class half cleaned up, its templates gone and its profile still there."""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import CloudProviderError

from .conftest import CallRecorder
from .failing_calls import error, failing
from .world import node_class, nodeclaim


def _templates_of(clients: AwsClients, name: str) -> set[str]:
    return {
        t["LaunchTemplateName"]
        for t in clients.ec2.describe_launch_templates(
            Filters=[{"Name": "tag:karpenter.k8s.aws/ec2nodeclass", "Values": [name]}],
        )["LaunchTemplates"]
    }


def test_the_instance_profile_goes_before_the_launch_templates(
    provider: AwsCloudProvider,
    recorder: CallRecorder,
) -> None:
    provider.create(nodeclaim(), node_class())
    assert provider.resolve(node_class()).instance_profile is not None
    start = len(recorder.actions)

    provider.delete_node_class_resources("default")

    actions = recorder.actions[start:]
    assert "iam:DeleteInstanceProfile" in actions and "ec2:DeleteLaunchTemplate" in actions
    assert actions.index("iam:DeleteInstanceProfile") < actions.index("ec2:DeleteLaunchTemplate")


def test_a_profile_iam_keeps_leaves_the_launch_templates_for_the_next_attempt(
    provider: AwsCloudProvider,
    clients: AwsClients,
) -> None:
    provider.create(nodeclaim(), node_class())
    profile = provider.resolve(node_class()).instance_profile
    launched = _templates_of(clients, "default")
    assert launched and profile is not None

    with failing(clients.iam) as calls:
        calls.queue("DeleteInstanceProfile", error("AccessDenied", "not allowed", 403))
        with pytest.raises(CloudProviderError, match="AccessDenied"):
            provider.delete_node_class_resources("default")

    assert _templates_of(clients, "default") == launched
    report = provider.delete_node_class_resources("default")  # the finalizer's next try
    assert report.deleted_profiles == (profile,)
    assert _templates_of(clients, "default") == set()
