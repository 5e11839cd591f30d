"""The Kubernetes version the controller launches for, and the range it supports.

As Karpenter v1.14.1's version provider and controller (pkg/providers/version/version.go,
pkg/controllers/providers/version/controller.go): the version is the API server's, or
eks:DescribeCluster's with EKS_CONTROL_PLANE, read again every 5 minutes; a newly
discovered version outside 1.26-1.36 is reported once as an error and still used.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from nodewright.cloud.aws import provider as provider_module
from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
from nodewright.cloud.aws.kubernetes_version import (
    MAX_K8S_VERSION,
    MIN_K8S_VERSION,
    VersionWatch,
    compatibility_problem,
)
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo
from nodewright.scheduling.pricing import OfflinePriceSource

from .world import CLUSTER, K8S_VERSION, FakeClock, World, node_class

NOT_COMPATIBLE = "karpenter is not compatible with kubernetes version"


class Answers:
    """What eks:DescribeCluster and the API server's /version say, and how often asked."""

    def __init__(self) -> None:
        self.eks = K8S_VERSION
        self.server = K8S_VERSION
        self.asked: list[str] = []

    def describe(self, eks: Any, name: str) -> EksCluster:
        self.asked.append("eks")
        return EksCluster(ClusterInfo(name=name, endpoint="https://eks.example.com",
                                      ca_bundle="Q0E=", service_cidr="172.20.0.0/16"),
                          kubernetes_version=self.eks)

    def server_version(self) -> str:
        self.asked.append("server")
        return self.server


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> Answers:
    found = Answers()
    monkeypatch.setattr(provider_module, "describe_cluster", found.describe)
    return found


def cloud(clients: AwsClients, answers: Answers, clock: FakeClock, *,
          eks_control_plane: bool) -> InterruptibleAwsCloud:
    return InterruptibleAwsCloud(clients=clients, cluster_name=CLUSTER, clock=clock,
                                 prices=OfflinePriceSource(), kube_dns_ip="172.20.0.10",
                                 eks_control_plane=eks_control_plane,
                                 server_version=answers.server_version)


def test_the_supported_range_is_karpenters() -> None:
    """version.go MinK8sVersion, MaxK8sVersion and SupportedK8sVersions."""
    assert (MIN_K8S_VERSION, MAX_K8S_VERSION) == ("1.26", "1.36")
    assert [minor for minor in range(20, 45) if compatibility_problem(f"1.{minor}") is None
            ] == list(range(26, 37))


@pytest.mark.parametrize(("version", "compatible"), [
    ("1.25", False), ("1.26", True), ("1.33", True), ("1.33+", True), ("v1.36", True),
    ("1.36", True), ("1.37", False), ("2.0", False),
])
def test_versions_outside_the_range_are_not_compatible(version: str, compatible: bool) -> None:
    """version.go validateK8sVersion."""
    problem = compatibility_problem(version)
    assert (problem is None) is compatible
    if not compatible:
        assert problem is not None and NOT_COMPATIBLE in problem


def test_a_new_version_out_of_range_is_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    """version.go UpdateVersionWithValidation: the check runs when the version changes."""
    watch = VersionWatch()
    with caplog.at_level(logging.DEBUG, logger="nodewright.cloud.aws.kubernetes_version"):
        for version in ("1.35", "1.35", "1.37", "1.37", "1.37"):
            assert watch.observe(version) == version
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and NOT_COMPATIBLE in errors[0] and "1.37" in errors[0]
    discovered = [r for r in caplog.records if r.getMessage() == "discovered kubernetes version"]
    assert [r.__dict__["version"] for r in discovered] == ["1.35", "1.37"]


def test_the_eks_version_is_read_again_every_five_minutes(
    clients: AwsClients, answers: Answers,
) -> None:
    """controllers/providers/version/suite_test.go It("should update Version with response
    from the DescribeCluster API") — and Karpenter's 5 minute requeue."""
    clock = FakeClock()
    aws = cloud(clients, answers, clock, eks_control_plane=True)
    answers.eks = "1.30"
    assert aws.cluster().kubernetes_version == "1.30"

    answers.eks = "1.31"
    clock.advance(60)
    assert aws.cluster().kubernetes_version == "1.30"
    clock.advance(241)
    assert aws.cluster().kubernetes_version == "1.31"
    assert "server" not in answers.asked


def test_the_api_servers_version_is_read_at_most_every_five_minutes(
    clients: AwsClients, answers: Answers,
) -> None:
    """EKS_CONTROL_PLANE off: /version, cached as Karpenter's version provider keeps it."""
    clock = FakeClock()
    aws = cloud(clients, answers, clock, eks_control_plane=False)
    answers.server = "1.32"
    for _ in range(3):
        assert aws.cluster().kubernetes_version == "1.32"
    assert answers.asked.count("server") == 1

    answers.server = "1.33"
    clock.advance(301)
    assert aws.cluster().kubernetes_version == "1.33"
    assert answers.asked.count("server") == 2


def test_resolving_a_node_class_reports_an_unsupported_version_and_still_uses_it(
    clients: AwsClients, world: World, answers: Answers, caplog: pytest.LogCaptureFixture,
) -> None:
    """The version AMI aliases resolve for is checked as it is discovered; out of range it is
    logged as an error, not refused (Karpenter's controller returns the error and keeps the
    version)."""
    clock = FakeClock()
    aws = cloud(clients, answers, clock, eks_control_plane=False)
    with caplog.at_level(logging.ERROR, logger="nodewright.cloud.aws.kubernetes_version"):
        aws.resolve(node_class())
        assert not caplog.records
        answers.server = "1.37"
        clock.advance(301)
        aws.resolve(node_class())
        clock.advance(61)
        aws.resolve(node_class())
    assert [r.getMessage() for r in caplog.records] == [
        f"validating kubernetes version, {NOT_COMPATIBLE} 1.37 (supported: 1.26 to 1.36)"]
    assert aws.versions.observe("1.37") == "1.37"
