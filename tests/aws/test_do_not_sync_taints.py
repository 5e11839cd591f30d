"""The startup-taint race, closed as Karpenter v1.14.1 closes it: every AMI family but
Custom registers its node with karpenter.sh/do-not-sync-taints=true (the kubelet already
carries the startup taints), so registration does not re-apply a startup taint an agent may
have removed by then. Ported from pkg/providers/launchtemplate/suite_test.go, whose Its
call InjectDoNotSyncTaintsLabel; ours is node_identity.with_do_not_sync_taints."""

from __future__ import annotations

import base64

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.node_identity import DO_NOT_SYNC_TAINTS_LABEL, with_do_not_sync_taints
from nodewright.cloud.aws.provider import AwsCloudProvider

from .world import custom_node_class, node_class, nodeclaim


def test_the_custom_family_gets_no_do_not_sync_taints_label() -> None:
    """launchtemplate/suite_test.go: It("should not add the do not sync taints label to nodes
    when AMI type is custom")."""
    assert with_do_not_sync_taints("Custom", {}) == {}


@pytest.mark.parametrize(
    "family",
    [
        "AL2",  # It("should add the do not sync taints label to nodes when AMI type is al2")
        "AL2023",  # It("... when AMI type is al2023")
        "Bottlerocket",  # It("... when AMI type is br")
        "Windows2022",  # It("... when AMI type is windows")
    ],
)
def test_every_other_family_gets_the_do_not_sync_taints_label(family: str) -> None:
    """launchtemplate/suite_test.go: the four Its 'should add the do not sync taints label to
    nodes when AMI type is al2 / al2023 / br / windows'."""
    assert with_do_not_sync_taints(family, {}) == {DO_NOT_SYNC_TAINTS_LABEL: "true"}


def launched_user_data(clients: AwsClients) -> str:
    """Every launch template's user data (one template per image and max-pods count)."""
    texts = []
    for template in clients.ec2.describe_launch_templates()["LaunchTemplates"]:
        versions = clients.ec2.describe_launch_template_versions(
            LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"]
        texts += [base64.b64decode(v["LaunchTemplateData"]["UserData"]).decode()
                  for v in versions]
    assert texts
    return "\n".join(texts)


def test_an_al2023_node_boots_with_the_label_in_its_kubelet_flags(
    provider: AwsCloudProvider, clients: AwsClients
) -> None:
    provider.create(nodeclaim(), node_class())

    assert "karpenter.sh/do-not-sync-taints=true" in launched_user_data(clients)


def test_a_custom_node_boots_without_the_label(
    provider: AwsCloudProvider, clients: AwsClients
) -> None:
    """A Custom image's user data is the user's: registration keeps syncing its taints."""
    custom = custom_node_class()
    provider.create(nodeclaim(), custom)

    assert "do-not-sync-taints" not in launched_user_data(clients)
