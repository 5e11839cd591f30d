"""CLUSTER_CA_BUNDLE and EKS_CONTROL_PLANE, as Karpenter v1.14.1's options
(pkg/operator/options/options.go) and version provider (pkg/providers/version/version.go)
use them: each given setting replaces what eks:DescribeCluster says, the Kubernetes version
is the API server's unless the control plane is EKS's, and with the endpoint, the CA bundle
and the kube-dns address all known, eks:DescribeCluster is never called."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yaml

from nodewright.cloud.aws import provider
from nodewright.cloud.aws.cluster_info import EksCluster
from nodewright.cloud.aws.interruptible import InterruptibleAwsCloud
from nodewright.cloud.aws.userdata.bootstrap import ClusterInfo
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster.kube.cluster import trusted_ca_bundle
from nodewright.cluster.memory import InMemoryCluster
from nodewright.operator.config import ConfigError, OperatorConfig, parse_ca_bundle
from nodewright.operator.main import build_cloud, controller_options
from nodewright.runtime import VirtualClock
from nodewright.runtime.clock import SystemClock

DESCRIBED = EksCluster(ClusterInfo(name="prod", endpoint="https://described.eks.amazonaws.com",
                                   ca_bundle="Q0E=", service_cidr="172.20.0.0/16"),
                       kubernetes_version="1.31")
OWN_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
                          ).decode()
ENDPOINT = "https://api.k8s.example.com:6443"


class ServerWithVersion(InMemoryCluster):
    """The API server answering /version with 1.33."""

    def server_minor_version(self) -> str:
        return "1.33"


@pytest.fixture
def describe_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    calls: list[str] = []

    def describe(eks: Any, name: str) -> EksCluster:
        calls.append(name)
        return DESCRIBED

    monkeypatch.setattr(provider, "describe_cluster", describe)
    return calls


def aws_cloud(*, kube_dns: str | None = "172.20.0.10", **settings: Any) -> InterruptibleAwsCloud:
    config = OperatorConfig(cluster_name="prod", region="us-west-2", **settings)
    cluster = ServerWithVersion(VirtualClock())
    if kube_dns:
        cluster.create({"apiVersion": "v1", "kind": "Service",
                        "metadata": {"name": "kube-dns", "namespace": "kube-system"},
                        "spec": {"clusterIP": kube_dns}})
    cloud: Any
    cloud, _ = build_cloud(config, cluster=cluster, clock=SystemClock())  # type: ignore[arg-type]
    assert isinstance(cloud, InterruptibleAwsCloud)
    return cloud


def test_the_ca_bundle_setting_replaces_the_described_one(describe_calls: list[str]) -> None:
    cluster = aws_cloud(cluster_ca_bundle=OWN_CA).cluster()

    assert cluster.info.ca_bundle == OWN_CA
    assert cluster.info.endpoint == "https://described.eks.amazonaws.com"


def test_by_default_the_version_is_the_api_servers(describe_calls: list[str]) -> None:
    """version.go UpdateVersion: EKS_CONTROL_PLANE off reads the API server's version."""
    assert aws_cloud().cluster().kubernetes_version == "1.33"


def test_an_eks_control_plane_takes_its_version_from_eks(describe_calls: list[str]) -> None:
    """version.go UpdateVersion: EKS_CONTROL_PLANE on asks eks:DescribeCluster."""
    assert aws_cloud(eks_control_plane=True).cluster().kubernetes_version == "1.31"


def test_with_endpoint_ca_and_kube_dns_known_eks_is_never_asked(
    describe_calls: list[str],
) -> None:
    cluster = aws_cloud(cluster_endpoint=ENDPOINT, cluster_ca_bundle=OWN_CA).cluster()

    assert describe_calls == []
    assert (cluster.info.endpoint, cluster.info.ca_bundle) == (ENDPOINT, OWN_CA)
    assert cluster.kubernetes_version == "1.33"
    assert (cluster.info.dns_ip, cluster.info.service_cidr) == ("172.20.0.10", "172.20.0.0/16")


@pytest.mark.parametrize("missing", ["cluster_endpoint", "cluster_ca_bundle", "kube_dns",
                                     "eks_control_plane"])
def test_eks_is_asked_for_whatever_the_settings_leave_out(
    describe_calls: list[str], missing: str,
) -> None:
    settings: dict[str, Any] = {"cluster_endpoint": ENDPOINT, "cluster_ca_bundle": OWN_CA}
    if missing == "eks_control_plane":
        settings["eks_control_plane"] = True
    elif missing == "kube_dns":
        settings["kube_dns"] = None
    else:
        del settings[missing]

    aws_cloud(**settings).cluster()

    assert describe_calls == ["prod"]


def test_an_ipv6_kube_dns_makes_an_ipv6_cluster_without_eks(describe_calls: list[str]) -> None:
    cluster = aws_cloud(cluster_endpoint=ENDPOINT, cluster_ca_bundle=OWN_CA,
                        kube_dns="fd30:1234:5678::a").cluster()

    assert describe_calls == []
    assert cluster.ip_family == "ipv6"
    assert cluster.info.service_cidr == "fd30:1234:5678::/108"


@pytest.mark.parametrize("text", ["not base64!", base64.b64encode(b"hello").decode()])
def test_a_ca_bundle_that_is_not_base64_pem_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="base64-encoded PEM CA bundle"):
        parse_ca_bundle(text)


def test_the_environment_sets_both(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from nodewright.operator.config import add_arguments, load

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = load(parser.parse_args([]), {"CLUSTER_NAME": "prod", "CLUSTER_CA_BUNDLE": OWN_CA,
                                          "EKS_CONTROL_PLANE": "true"})
    assert (config.cluster_ca_bundle, config.eks_control_plane) == (OWN_CA, True)
    with pytest.raises(ConfigError, match="CLUSTER_CA_BUNDLE"):
        load(parser.parse_args([]), {"CLUSTER_NAME": "prod", "CLUSTER_CA_BUNDLE": "x"})


class ServerDown(InMemoryCluster):
    def server_minor_version(self) -> str:
        raise ConnectionError("connection refused")


def test_an_unreadable_api_server_version_is_a_cloud_error(describe_calls: list[str]) -> None:
    """Reconcilers handle CloudProviderError (the node class stays unresolved, retried);
    any other exception would be a crash."""
    config = OperatorConfig(cluster_name="prod", region="us-west-2")
    cloud: Any
    cloud, _ = build_cloud(config, cluster=ServerDown(VirtualClock()),  # type: ignore[arg-type]
                           clock=SystemClock())
    with pytest.raises(CloudProviderError, match="connection refused"):
        cloud.cluster()


def kubeconfig(path: Any, cluster: dict[str, str]) -> str:
    file = path / "kubeconfig"
    file.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": ENDPOINT, **cluster}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    return str(file)


def test_the_drift_hash_takes_the_ca_bundle_setting_else_the_ca_the_client_trusts(
        tmp_path: Any) -> None:
    """Karpenter's operator hashes node classes with CLUSTER_CA_BUNDLE, else with the CA of
    its rest config (a kubeconfig's certificate-authority-data or file, in a pod the service
    account's ca.crt)."""
    pem = base64.b64decode(OWN_CA)
    (tmp_path / "ca.crt").write_bytes(pem)
    by_data = kubeconfig(tmp_path, {"certificate-authority-data": OWN_CA})
    assert trusted_ca_bundle(by_data) == OWN_CA
    by_file = kubeconfig(tmp_path, {"certificate-authority": str(tmp_path / "ca.crt")})
    assert trusted_ca_bundle(by_file) == OWN_CA
    assert trusted_ca_bundle(str(tmp_path / "missing")) is None

    from_client = controller_options(OperatorConfig(cluster_name="prod", kubeconfig=by_file))
    setting = "Q0E="
    from_setting = controller_options(OperatorConfig(cluster_name="prod", kubeconfig=by_file,
                                                     cluster_ca_bundle=setting))
    assert from_client.cluster_ca_bundle == OWN_CA
    assert from_setting.cluster_ca_bundle == setting
