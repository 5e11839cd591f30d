"""Karpenter's instance profile garbage collection suite
(pkg/controllers/nodeclass/garbagecollection/suite_test.go, v1.14.1), ported: each test
names its It. The controller is `CloudGarbageCollection` over the in-memory API server and
the AWS provider over moto; profile-A is made under our path with our tags (Karpenter's
suite puts it under /karpenter/<region>/<cluster>/<uid>/).
"""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.instance_profiles import (
    PROFILE_ANNOTATION,
    profile_path,
    profile_tags,
)
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.cleanup import CloudGarbageCollection
from nodewright.runtime.clock import VirtualClock
from tests.aws.world import CLUSTER, World, node_class

PROFILE = "profile-A"


@pytest.fixture
def cluster(clients: AwsClients, world: World) -> InMemoryCluster:
    clients.iam.create_role(RoleName="role-A", AssumeRolePolicyDocument="{}")
    clients.iam.create_instance_profile(
        InstanceProfileName=PROFILE, Path=profile_path(CLUSTER),
        Tags=[{"Key": k, "Value": v}
              for k, v in profile_tags(CLUSTER, clients.region, "default").items()])
    clients.iam.add_role_to_instance_profile(InstanceProfileName=PROFILE, RoleName="role-A")
    api = InMemoryCluster(VirtualClock())
    api.create(node_class().to_manifest())
    return api


def collect(cluster: InMemoryCluster, provider: AwsCloudProvider) -> set[str]:
    """Run the garbage collection once; the profiles left."""
    CloudGarbageCollection(cluster, provider).reconcile("")
    return {p["InstanceProfileName"] for p in
            provider.clients.iam.list_instance_profiles()["InstanceProfiles"]}


def _claim(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "default-abcde", "annotations": annotations},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


def test_a_profile_a_nodeclaim_names_is_kept(cluster: InMemoryCluster,
                                             provider: AwsCloudProvider) -> None:
    """It("should not delete active profiles")"""
    cluster.create(_claim({PROFILE_ANNOTATION: PROFILE}))
    provider.profiles.unprotect(PROFILE)
    assert PROFILE in collect(cluster, provider)


def test_the_profile_a_status_names_is_kept(cluster: InMemoryCluster,
                                            provider: AwsCloudProvider) -> None:
    """It("should not delete current profiles")"""
    cluster.patch("EC2NodeClass", "default", {"status": {"instanceProfile": PROFILE}},
                  subresource="status")
    provider.profiles.unprotect(PROFILE)
    assert PROFILE in collect(cluster, provider)


def test_a_protected_profile_is_kept(cluster: InMemoryCluster,
                                     provider: AwsCloudProvider) -> None:
    """It("should not delete protected profiles")"""
    provider.profiles.protect(PROFILE)
    assert PROFILE in collect(cluster, provider)


def test_a_profile_nothing_needs_is_deleted(cluster: InMemoryCluster,
                                            provider: AwsCloudProvider) -> None:
    """It("should delete inactive profiles which are not current or protected"): the
    NodeClaim without the annotation does not keep it."""
    cluster.create(_claim({}))
    provider.profiles.unprotect(PROFILE)
    assert PROFILE not in collect(cluster, provider)
