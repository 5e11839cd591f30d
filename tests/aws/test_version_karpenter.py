"""Karpenter's version provider tests (pkg/providers/version/version_test.go and
pkg/providers/version/suite_test.go, v1.14.1), ported: each test names its Entry or It.

SupportsDefaultBind is `supports_default_bind` (Bottlerocket's RAID0 bind command); the
version the controller launches for is the API server's, or EKS's with EKS_CONTROL_PLANE
(the operator's cloud, as tests/operator/test_cluster_settings.py builds it).
"""

from __future__ import annotations

import pytest

from nodewright.cloud.aws.userdata.bottlerocket import supports_default_bind
from tests.operator.test_cluster_settings import aws_cloud, describe_calls

__all__ = ["describe_calls"]  # the fixture, used by name


@pytest.mark.parametrize(("version", "expected"), [
    pytest.param("1.45.0", False, id="1.45.0"),
    pytest.param("1.46.0", True, id="1.46.0"),
    pytest.param("1.47.0", True, id="1.47.0"),
    pytest.param("2.0.0", True, id="2.0.0"),
    pytest.param("v1.45.0", False, id="v1.45.0"),
    pytest.param("v1.46.0", True, id="v1.46.0"),
    pytest.param("1.9.0", False, id="1.9.0"),
    pytest.param("latest", True, id="latest"),
    pytest.param("invalid", False, id="invalid"),
    pytest.param("1", False, id="1"),
    pytest.param("", False, id="empty"),
    pytest.param("1.46", False, id="1.46"),
    pytest.param("abc.def.ghi", False, id="abc.def.ghi"),
])
def test_bottlerocket_versions_that_bind_by_default(version: str, expected: bool) -> None:
    """version_test.go Describe("SupportsDefaultBind") DescribeTable("should return correct
    result for version"), one test per Entry (named by the test id)."""
    assert supports_default_bind(version) is expected


def test_an_eks_control_plane_version_comes_from_describe_cluster(
    describe_calls: list[str],
) -> None:
    """suite_test.go Context("with EKS_CONTROL_PLANE=true") It("should resolve Kubernetes
    Version via Describe Cluster with no errors")"""
    assert aws_cloud(eks_control_plane=True).cluster().kubernetes_version == "1.31"
    assert describe_calls == ["prod"]


def test_otherwise_the_version_comes_from_the_api_server(describe_calls: list[str]) -> None:
    """suite_test.go Context("with EKS_CONTROL_PLANE=false") It("should resolve Kubernetes
    Version via K8s API")"""
    assert aws_cloud().cluster().kubernetes_version == "1.33"
