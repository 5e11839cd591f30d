"""CLUSTER_ENDPOINT reaches what nodes boot with; unset, eks:DescribeCluster's answer does."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.aws import provider
from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.config import OperatorConfig
from nodewright.operator.main import build_cloud
from nodewright.runtime import VirtualClock
from nodewright.runtime.clock import SystemClock

DESCRIBED = EksCluster(ClusterInfo(name="prod", endpoint="https://described.eks.amazonaws.com",
                                   ca_bundle="Q0E="), kubernetes_version="1.31")


@pytest.fixture(autouse=True)
def described(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(provider, "describe_cluster", lambda eks, name: DESCRIBED)


def aws_cloud(endpoint: str | None) -> InterruptibleAwsCloud:
    config = OperatorConfig(cluster_name="prod", region="us-west-2", cluster_endpoint=endpoint)
    cloud: Any
    cloud, _ = build_cloud(config, cluster=InMemoryCluster(VirtualClock()),  # type: ignore[arg-type]
                           clock=SystemClock())
    assert isinstance(cloud, InterruptibleAwsCloud)
    return cloud


def test_the_configured_endpoint_replaces_the_described_one() -> None:
    cluster = aws_cloud("https://private.example.com:6443").cluster()
    assert cluster.info.endpoint == "https://private.example.com:6443"
    assert (cluster.info.ca_bundle, cluster.kubernetes_version) == ("Q0E=", "1.31")


def test_without_one_the_described_endpoint_is_used() -> None:
    assert aws_cloud(None).cluster().info.endpoint == "https://described.eks.amazonaws.com"
