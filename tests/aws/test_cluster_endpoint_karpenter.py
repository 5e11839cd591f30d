"""Karpenter's operator suite, ported: aws/karpenter-provider-aws v1.14.1
pkg/operator/suite_test.go (Describe "Operator": ResolveClusterEndpoint). Each story names
its It.

Karpenter resolves the endpoint nodes join once, at start: CLUSTER_ENDPOINT when set, else
eks:DescribeCluster's. Ours is the operator's AWS cloud (InterruptibleAwsCloud, built with
the operator's settings), which reads the cluster when a node class is first resolved and
again every five minutes; the stories build it over moto's EKS and read the endpoint both
from the cloud and from the AL2023 user data of the launch template sent."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
from nodewright.cloud.aws.userdata import mime
from nodewright.cloud.provider import CloudProviderError
from nodewright.scheduling.pricing import OfflinePriceSource
from tests.aws.fake_ec2 import FakeEC2

from .conftest import CallRecorder
from .failing_calls import error, failing
from .world import CLUSTER, FakeClock, World, node_class, nodeclaim

CONFIGURED = "https://api.test-cluster.k8s.local"


def operator_cloud(clients: AwsClients, clock: FakeClock, **settings: Any
                   ) -> InterruptibleAwsCloud:
    return InterruptibleAwsCloud(clients, CLUSTER, clock=clock, prices=OfflinePriceSource(),
                                 kube_dns_ip="172.20.0.10", **settings)


def joined_endpoints(ec2: FakeEC2) -> set[str]:
    """The API server endpoint each launch template's NodeConfig tells nodeadm."""
    found = set()
    for name in ec2.launch_templates():
        ours = mime.split_parts(ec2.user_data(name))[-1]
        found.add(yaml.safe_load(ours.body)["spec"]["cluster"]["apiServerEndpoint"])
    return found


def test_the_configured_endpoint_is_the_one_nodes_join(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2,
) -> None:
    """It("should resolve endpoint if set via configuration"): CLUSTER_ENDPOINT, not what
    EKS describes."""
    cloud = operator_cloud(clients, clock, cluster_endpoint=CONFIGURED)

    assert cloud.cluster().info.endpoint == CONFIGURED
    cloud.create(nodeclaim(), node_class())
    assert joined_endpoints(ec2) == {CONFIGURED}


def test_without_a_configured_endpoint_eks_describes_it(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2,
    recorder: CallRecorder,
) -> None:
    """It("should resolve endpoint if not set, via call to API"): eks:DescribeCluster of
    the cluster's name, its endpoint."""
    described = clients.eks.describe_cluster(name=CLUSTER)["cluster"]["endpoint"]
    cloud = operator_cloud(clients, clock)

    assert cloud.cluster().info.endpoint == described
    assert recorder.calls_of("eks:DescribeCluster")[-1] == {"name": CLUSTER}
    cloud.create(nodeclaim(), node_class())
    assert joined_endpoints(ec2) == {described}


def test_a_failed_describe_cluster_is_an_error_and_launches_nothing(
    clients: AwsClients, world: World, clock: FakeClock, ec2: FakeEC2,
) -> None:
    """It("should propagate error if API fails"): the cluster cannot be read, which is an
    error naming eks:DescribeCluster, and no node is launched without its endpoint."""
    cloud = operator_cloud(clients, clock)
    with failing(clients.eks) as calls:
        calls.queue("DescribeCluster", error("AccessDeniedException", "test error", 403),
                    times=2)
        with pytest.raises(CloudProviderError, match="eks:DescribeCluster"):
            cloud.cluster()
        with pytest.raises(CloudProviderError, match="eks:DescribeCluster"):
            cloud.create(nodeclaim(), node_class())
    assert ec2.calls("CreateFleet") == []
